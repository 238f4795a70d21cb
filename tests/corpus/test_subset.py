"""``build --limit N`` on a local corpus (hf_tokbin.corpus.subset): checked bytes only, and an honest record."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hf_tokbin._io import sha256_file
from hf_tokbin.cli import main
from hf_tokbin.corpus.write import write_tinystories_corpus
from hf_tokbin.errors import FormatError
from hf_tokbin.formats.corpus_manifest import CorpusSubset
from hf_tokbin.formats.run_config import RunConfig


@pytest.fixture
def corpus(tmp_path):
    (tmp_path / "train.txt").write_text("".join(f"Story {i}.\n<|endoftext|>\n" for i in range(30)))
    (tmp_path / "valid.txt").write_text("A valid story.\n<|endoftext|>\nAnother.\n")
    write_tinystories_corpus(tmp_path / "train.txt", tmp_path / "valid.txt", tmp_path / "corpus", shard_rows=10)
    return tmp_path / "corpus"


def build(corpus, out, limit: int) -> int:
    return main(
        [
            "build",
            "--corpus",
            str(corpus),
            "--tokenizer",
            "byte",
            "--doc-sep",
            "0",
            "--format",
            "megatron",
            "--out",
            str(out),
            "--limit",
            str(limit),
            "--quiet",
        ]
    )


def test_a_limit_into_the_validation_split_records_what_each_split_got(corpus, tmp_path, capsys):
    assert build(corpus, tmp_path / "out", 31) == 0
    config = json.loads((tmp_path / "out" / "run_config.json").read_text())
    assert config["corpus"]["subset"] == {
        "limit": 31,
        "cut_from_manifest_sha256": sha256_file(corpus / "_MANIFEST.json"),
        "checked": True,
        "documents": {"train": 30, "validation": 1},
        "available": {"train": 30, "validation": 2},
    }
    out = capsys.readouterr().out
    assert (
        "--limit 31: train 30 of 30 documents\n" in out
        and "--limit 31: validation 1 of 2 documents (cut by the limit)" in out
    )
    assert RunConfig.read(tmp_path / "out" / "run_config.json").corpus_subset == CorpusSubset.from_record(
        config["corpus"]["subset"]
    )
    assert main(["verify", str(tmp_path / "out")]) == 0


def test_a_substituted_shard_is_refused_before_any_of_its_documents_is_taken(corpus, tmp_path, capsys):
    """Another valid Parquet file under the manifest's digest: it used to give other documents under that digest."""
    shard = corpus / "data" / "train-00000.parquet"
    pq.write_table(pa.table({"text": [f"Other {i}." for i in range(10)], "split": ["train"] * 10}), shard)
    assert build(corpus, tmp_path / "out", 5) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(shard) in err[0] and "SHA-256" in err[0]
    assert not (tmp_path / "out").exists()


def test_a_shard_past_the_limit_is_never_read(corpus, tmp_path):
    (corpus / "data" / "validation-00000.parquet").write_bytes(b"not parquet")  # only the train shards are reached
    assert build(corpus, tmp_path / "out", 12) == 0
    assert json.loads((tmp_path / "out" / "run_config.json").read_text())["corpus"]["subset"]["documents"] == {
        "train": 12,
        "validation": 0,
    }


@pytest.mark.parametrize(
    ("edit", "rule"),
    [
        (lambda r: r.update(checked=False), "checked must be true"),
        (lambda r: r.update(limit=0), "limit must be a positive"),
        (lambda r: r["documents"].update(train=40), "add up to at most the limit"),
        (lambda r: r["documents"].update(validation=3, train=0), "more documents than the corpus holds"),
        (lambda r: r.update(cut_from_manifest_sha256="AB" * 32), "64 lowercase hex"),
        (lambda r: r.pop("available"), "keys"),
    ],
)
def test_a_hand_edited_subset_record_is_refused(edit, rule):
    record = {
        "limit": 31,
        "cut_from_manifest_sha256": "ab" * 32,
        "checked": True,
        "documents": {"train": 30, "validation": 1},
        "available": {"train": 30, "validation": 2},
    }
    edit(record)
    with pytest.raises(FormatError, match=rule):
        CorpusSubset.from_record(record, "run_config.json")
