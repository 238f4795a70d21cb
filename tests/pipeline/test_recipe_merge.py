"""``hf-tokbin merge``: one pair per split, byte-identical to megatron-core's merge of the same parts.

The reference is what Megatron-LM's ``tools/merge_datasets.py`` does: every
prefix of the split's folder in sorted order through
``IndexedDatasetBuilder.add_index``, then ``finalize``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from release_fixtures import stories, write_corpus

from hf_tokbin.cli import main
from hf_tokbin.errors import BuildError, VerificationError
from hf_tokbin.formats import megatron
from hf_tokbin.pipeline import build, plan_build
from hf_tokbin.pipeline.merge import MERGED_NAME, merge_release
from hf_tokbin.tokenizer import resolve_tokenizer


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    root = tmp_path_factory.mktemp("merge")
    corpus = write_corpus(
        root / "corpus",
        [
            ("train", stories(30, 1)),
            ("train", stories(7, 2)),
            ("validation", stories(9, 3)),
            ("train", stories(20, 4)),
        ],
    )
    out = root / "release"
    build(plan_build(corpus, resolve_tokenizer("byte", doc_sep_id=0), out), progress=False)
    return out


def megatron_merge(folder, out_prefix):
    """tools/merge_datasets.py's main(), on one folder of pairs."""
    from megatron.core.datasets.indexed_dataset import IndexedDataset, IndexedDatasetBuilder

    prefixes = sorted({p.with_suffix("") for p in folder.glob("*.idx")})
    dataset = IndexedDataset(str(prefixes[0]))
    builder = IndexedDatasetBuilder(f"{out_prefix}.bin", dtype=dataset.index.dtype)
    del dataset
    for prefix in prefixes:
        builder.add_index(str(prefix))
    builder.finalize(f"{out_prefix}.idx")


def test_merged_pairs_equal_megatron_cores_merge_byte_for_byte(release, tmp_path):
    pytest.importorskip("megatron.core.datasets.indexed_dataset")
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    record = merge_release(release, tmp_path / "merged")
    assert set(record["splits"]) == {"train", "validation"}
    for split in ("train", "validation"):
        reference = tmp_path / f"reference-{split}"
        megatron_merge(release / "shards" / split, reference)
        for suffix in ("bin", "idx"):
            assert (tmp_path / "merged" / f"{split}.{suffix}").read_bytes() == reference.with_suffix(
                f".{suffix}"
            ).read_bytes()
        # document for document: the merged pair is the parts' documents in part order
        ours = IndexedDataset(str(tmp_path / "merged" / split))
        parts = [megatron.MegatronPair(p) for p in sorted((release / "shards" / split).glob("*.idx"))]
        expected = [pair[i].tolist() for pair in parts for i in range(len(pair))]
        assert len(ours) == len(expected) == record["splits"][split]["documents"]
        assert all(ours[i].tolist() == expected[i] for i in range(len(expected)))


def test_the_record_ties_every_document_to_its_input_shard(release, tmp_path):
    record = merge_release(release, tmp_path / "merged")
    on_disk = json.loads((tmp_path / "merged" / MERGED_NAME).read_text())
    assert on_disk == record
    run_config = json.loads((release / "run_config.json").read_text())
    shards = run_config["corpus"]["shards"]
    train = record["splits"]["train"]
    assert [p["part"] for p in train["parts"]] == ["part-000000", "part-000001", "part-000003"]
    merged = megatron.MegatronPair(tmp_path / "merged" / "train.idx")
    assert [f["path"] for f in train["files"]] == ["train.bin", "train.idx"]
    assert train["files"][0]["size"] == merged.bin_size
    stop = 0
    for entry in train["parts"]:
        index = int(entry["part"].split("-")[1])
        assert entry["input_shard"]["sha256"] == shards[index]["sha256"]
        start, stop_doc = entry["documents"]
        assert start == stop  # the ranges tile the merged pair
        stop = stop_doc
        part = megatron.MegatronPair(release / entry["pair"][1]["path"])
        assert stop_doc - start == len(part) == shards[index]["rows"]
        assert all(np.array_equal(merged[start + i], part[i]) for i in range(len(part)))
        assert entry["tokens"][1] - entry["tokens"][0] == part.n_tokens
    assert stop == len(merged) == train["documents"]


def test_a_part_changed_after_verify_stops_the_merge_and_leaves_no_record(release, tmp_path, monkeypatch):
    import hf_tokbin.verify.release as verify_release_module

    copy = tmp_path / "release"
    import shutil

    shutil.copytree(release, copy)
    monkeypatch.setattr(
        verify_release_module, "verify_release", lambda root: None
    )  # the change lands after the verify
    target = copy / "shards" / "train" / "part-000001.bin"
    data = bytearray(target.read_bytes())
    data[0] ^= 1
    target.write_bytes(bytes(data))
    with pytest.raises(VerificationError, match="changed since the release was verified"):
        merge_release(copy, tmp_path / "merged")
    assert sorted(p.name for p in (tmp_path / "merged").iterdir()) == []


def test_the_merge_folder_must_be_new_or_empty(release, tmp_path):
    out = tmp_path / "merged"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(BuildError, match="new or empty"):
        merge_release(release, out)
    assert (out / "keep.txt").read_text() == "mine"


def test_cli_merge(release, tmp_path, capsys):
    assert main(["merge", str(release), "--out", str(tmp_path / "m")]) == 0
    assert "train: " in capsys.readouterr().out
    assert main(["merge", str(release), "--out", str(tmp_path / "m")]) == 1
    assert "new or empty" in capsys.readouterr().err
