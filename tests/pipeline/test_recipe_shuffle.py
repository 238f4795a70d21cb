"""``build --shuffle-seed S``: each part's documents in a seeded order, the parts' blocks interleaved in the llm.c
files.

Every document is kept exactly once (compared with the build in corpus
order, part by part), the order differs from the corpus order, the release
verifies, and ``run_config.json`` records the seed. A corpus stored by
category (one shard per category) trains mixed from the first llm.c file on,
the same bytes whatever num_proc, batch size, engine or a killed finish; verify
fails when the llm.c files are in another order than the seed's.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest
from release_edits import edit_json, refused, reseal
from release_fixtures import stories, write_corpus

from hf_tokbin.cli import main
from hf_tokbin.errors import BuildError
from hf_tokbin.formats import llmc, megatron
from hf_tokbin.formats.llmc_order import PARTS_SCOPE, llmc_order
from hf_tokbin.formats.preview import read_preview
from hf_tokbin.formats.run_config import RunConfig
from hf_tokbin.pipeline import build, plan_build
from hf_tokbin.pipeline.shuffle import permutation
from hf_tokbin.readers import LlmcSplit
from hf_tokbin.tokenizer import resolve_tokenizer
from hf_tokbin.verify.release import verify_release

pytestmark = pytest.mark.slow  # shuffled builds, one on Ray

SEED = 20261201


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(
        tmp_path_factory.mktemp("shuffle") / "corpus",
        [("train", stories(120, 1)), ("train", stories(45, 2)), ("validation", stories(30, 3))],
    )


def run(corpus, out, **options):
    build(
        plan_build(corpus, resolve_tokenizer("byte", doc_sep_id=0), out, max_tokens_per_file=3000, **options),
        progress=False,
    )
    return out


def documents(root, split, part):
    pair = megatron.MegatronPair(root / "shards" / split / f"{part}.idx")
    return [pair[i].tolist() for i in range(len(pair))]


@pytest.fixture(scope="module")
def releases(corpus, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("releases")
    plain = run(corpus, tmp / "plain")
    one = run(corpus, tmp / "one", shuffle_seed=SEED, num_proc=1, batch_size=7)
    two = run(corpus, tmp / "two", shuffle_seed=SEED, num_proc=2, batch_size=16)
    return plain, one, two


def test_a_shuffled_build_is_byte_identical_across_num_proc_and_batch_size(releases):
    _, one, two = releases
    assert (one / "COMPLETE.json").read_bytes() == (
        two / "COMPLETE.json"
    ).read_bytes()  # every file's size and SHA-256
    files = json.loads((one / "COMPLETE.json").read_text())["files"]
    assert all((one / f["path"]).read_bytes() == (two / f["path"]).read_bytes() for f in files)
    verify_release(one)


def test_every_document_exactly_once_and_not_in_corpus_order(releases):
    plain, shuffled, _ = releases
    for split, part in (("train", "part-000000"), ("train", "part-000001"), ("validation", "part-000002")):
        before, after = documents(plain, split, part), documents(shuffled, split, part)
        assert sorted(map(tuple, before)) == sorted(
            map(tuple, after)
        )  # the same multiset: nothing lost, nothing added
        assert after != before
        order = permutation(SEED, int(part.split("-")[1]), len(before))
        assert after == [before[k] for k in order]  # the recorded permutation, exactly


def test_llmc_files_hold_the_shuffled_order_too(releases):
    """The llm.c stream is the pairs' documents in the seeded block order (formats/llmc_order.py), each as its layout
    puts it."""
    plain, shuffled, _ = releases
    for split, llmc_split in (("train", "train"), ("validation", "val")):
        stream = LlmcSplit.open(shuffled, llmc_split)
        ids = np.concatenate([np.asarray(p) for p in stream.parts])
        pairs = [documents(shuffled, split, part.stem) for part in sorted((shuffled / "shards" / split).glob("*.idx"))]
        blocks = llmc_order(SEED, split, [len(p) for p in pairs])
        in_order = [
            d
            for p, first, count in zip(blocks.part, blocks.first, blocks.count)
            for d in pairs[p][first : first + count]
        ]
        # [sep] + doc for llm.c, doc + [eod] for Megatron
        assert ids.tolist() == [t for d in in_order for t in [0, *d[:-1]]]
    manifest = llmc.TokensManifest.read(next((plain / "tokens").glob("*/*")) / llmc.MANIFEST_NAME)
    assert len([f for f in manifest.files if f.split == "train"]) > 1


def test_run_config_records_the_seed_and_corpus_order_records_none(releases):
    plain, shuffled, _ = releases
    obj = json.loads((shuffled / "run_config.json").read_text())
    assert obj["shuffle"] == {
        "seed": SEED,
        "scope": "documents within each part, and the parts' blocks interleaved in the llm.c files",
    }
    assert RunConfig.read(shuffled / "run_config.json").shuffle_seed == SEED
    assert "shuffle" not in json.loads((plain / "run_config.json").read_text())
    assert RunConfig.read(plain / "run_config.json").shuffle_seed is None


def test_a_resume_with_another_seed_is_refused(corpus, releases):
    _, shuffled, _ = releases
    with pytest.raises(BuildError, match="holds a different build"):
        run(corpus, shuffled, shuffle_seed=SEED + 1)


@pytest.mark.parametrize("seed", [-1, 2**63, "7", True])
def test_a_bad_seed_is_one_clear_error(corpus, tmp_path, seed):
    with pytest.raises(BuildError, match="--shuffle-seed must be an integer"):
        plan_build(corpus, resolve_tokenizer("byte", doc_sep_id=0), tmp_path / "r", shuffle_seed=seed)
    assert not (tmp_path / "r").exists()


def test_cli_shuffle_seed(corpus, tmp_path, releases, capsys):
    argv = ["build", "--corpus", str(corpus), "--tokenizer", "byte", "--doc-sep-id", "0", "--quiet", "--out"]
    assert main([*argv, str(tmp_path / "cli"), "--max-tokens-per-file", "3000", "--shuffle-seed", str(SEED)]) == 0
    assert (tmp_path / "cli" / "COMPLETE.json").read_bytes() == (releases[1] / "COMPLETE.json").read_bytes()
    assert main([*argv, str(tmp_path / "bad"), "--shuffle-seed", "-3"]) == 1
    assert "--shuffle-seed must be an integer" in capsys.readouterr().err


RAY_DRIVER = """
import os, subprocess, sys
command = ["hf-tokbin", "build", "--corpus", {corpus!r}, "--tokenizer", "byte", "--doc-sep-id", "0",
           "--max-tokens-per-file", "3000", "--shuffle-seed", "{seed}", "--quiet", "--out", {out!r},
           "--engine", "ray", "--ray-address", os.environ["RAY_ADDRESS"]]
result = subprocess.run(command, capture_output=True, text=True)
sys.stdout.write(result.stdout)
sys.stderr.write(result.stderr)
sys.exit(result.returncode)
"""


def test_a_shuffled_ray_build_equals_the_local_one(corpus, releases, tmp_path):
    """Two Ray nodes build the parts (each shuffles its own); the release is byte for byte the local one."""
    pytest.importorskip("ray")
    from ray_cluster import run_in_ray_namespace

    out = tmp_path / "ray-release"
    (tmp_path / "driver").mkdir()
    process = run_in_ray_namespace(
        RAY_DRIVER.format(corpus=str(corpus), seed=SEED, out=str(out)), tmp_path / "driver"
    )  # the default timeout: a fresh cluster's start-up takes minutes on a loaded machine
    assert process.returncode == 0, process.stderr[-4000:]
    assert (out / "COMPLETE.json").read_bytes() == (releases[1] / "COMPLETE.json").read_bytes()


# ---------------------------------------------------------------- one category per shard: the llm.c files mix them

CATEGORIES = 4


@pytest.fixture(scope="module")
def by_category(tmp_path_factory):
    """Shard k holds category k only (each text starts with its category), as a corpus stored by category is."""
    shards = [("train", [f"c{k} {text}" for text in stories(90, 10 + k, max_words=20)]) for k in range(CATEGORIES)]
    shards += [("validation", [f"c{k} {text}" for text in stories(25, 20 + k, max_words=20)]) for k in range(2)]
    return shards, write_corpus(tmp_path_factory.mktemp("categories") / "corpus", shards)


def run_categories(corpus, out, **options):
    build(
        plan_build(corpus, resolve_tokenizer("byte", doc_sep_id=0), out, max_tokens_per_file=1500, **options),
        progress=False,
    )
    return out


@pytest.fixture(scope="module")
def category_releases(by_category, tmp_path_factory):
    _, corpus = by_category
    tmp = tmp_path_factory.mktemp("category-releases")
    return {
        "plain": run_categories(corpus, tmp / "plain"),
        "one": run_categories(corpus, tmp / "one", shuffle_seed=SEED, num_proc=1, batch_size=7),
        "two": run_categories(corpus, tmp / "two", shuffle_seed=SEED, num_proc=2, batch_size=64),
        "other": run_categories(corpus, tmp / "other", shuffle_seed=SEED + 1),
    }


def llmc_texts(root, llmc_split, first_file_only=False):
    """The documents of a split's llm.c files, decoded (byte tokenizer; separator 0 before each)."""
    stream = LlmcSplit.open(root, llmc_split)
    ids = np.concatenate(
        [np.asarray(p) for p in stream.parts[:1] if first_file_only] or [np.asarray(p) for p in stream.parts]
    )
    cuts = np.flatnonzero(ids == 0)
    return [bytes(ids[a + 1 : b].astype(np.uint8)).decode() for a, b in zip(cuts, [*cuts[1:], ids.size])]


def changes(categories):
    return sum(a != b for a, b in zip(categories, categories[1:]))


def test_the_first_llmc_file_mixes_every_category(category_releases):
    first = [text.split(" ", 1)[0] for text in llmc_texts(category_releases["one"], "train", first_file_only=True)]
    assert len(first) > 20
    # from the first documents on, not category by category
    assert set(first[:12]) == {f"c{k}" for k in range(CATEGORIES)}
    assert changes(first) > len(first) // 2
    plain = [text.split(" ", 1)[0] for text in llmc_texts(category_releases["plain"], "train")]
    assert plain == sorted(plain) and changes(plain) == CATEGORIES - 1  # without a seed: shard after shard, as before


def test_every_document_exactly_once_in_the_llmc_files(by_category, category_releases):
    shards, _ = by_category
    for split, llmc_split in (("train", "train"), ("validation", "val")):
        corpus = sorted(text for s, texts in shards if s == split for text in texts)
        for name in ("one", "other", "plain"):
            assert sorted(llmc_texts(category_releases[name], llmc_split)) == corpus


def test_interleaved_bytes_are_the_same_whatever_num_proc_and_batch_size_and_differ_by_seed(category_releases):
    one, two, other = category_releases["one"], category_releases["two"], category_releases["other"]
    assert (one / "COMPLETE.json").read_bytes() == (two / "COMPLETE.json").read_bytes()
    files = json.loads((one / "COMPLETE.json").read_text())["files"]
    assert all((one / f["path"]).read_bytes() == (two / f["path"]).read_bytes() for f in files)
    assert llmc_texts(one, "train") != llmc_texts(other, "train")
    for release in (one, other, category_releases["plain"]):
        verify_release(release)


def tampered(release, tmp_path, change):
    copy = tmp_path / "tampered"
    shutil.copytree(release, copy)
    edit_json(copy / "run_config.json", change)
    reseal(copy)
    return copy


def test_verify_fails_when_the_llmc_files_are_in_another_order(category_releases, tmp_path):
    """The files are seed S's order; a run_config.json claiming another seed (or llm.c files in part order) is
    refused."""
    another_seed = tampered(
        category_releases["one"], tmp_path / "seed", lambda obj: obj["shuffle"].update(seed=SEED + 1)
    )
    refused(another_seed, "llm.c ids must be the Megatron documents in run_config.json's seeded block order")
    parts_order = tampered(
        category_releases["one"], tmp_path / "scope", lambda obj: obj["shuffle"].update(scope=PARTS_SCOPE)
    )
    refused(parts_order, "llm.c ids must be the Megatron documents in part order")


def test_a_release_of_the_part_order_scope_verifies_in_part_order(category_releases, tmp_path):
    """Releases built before the interleave (scope "documents within each part") hold their llm.c files in part
    order."""
    old = tampered(
        category_releases["plain"], tmp_path, lambda obj: obj.update(shuffle={"seed": SEED, "scope": PARTS_SCOPE})
    )
    verify_release(old)


KILLED_FINISH = """
import os, signal, sys
from hf_tokbin.pipeline import publish as pack
real = pack.write_packed_file
def killed_after(*args, **kwargs):
    result = real(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
pack.write_packed_file = killed_after
from hf_tokbin.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_killed_finish_packs_the_same_interleaved_bytes_on_rerun(by_category, category_releases, tmp_path):
    _, corpus = by_category
    argv = [
        "build",
        "--corpus",
        str(corpus),
        "--tokenizer",
        "byte",
        "--doc-sep-id",
        "0",
        "--max-tokens-per-file",
        "1500",
        "--shuffle-seed",
        str(SEED),
        "--quiet",
        "--out",
        str(tmp_path / "release"),
    ]
    (tmp_path / "driver.py").write_text(KILLED_FINISH, encoding="utf-8")
    killed = subprocess.run(
        [sys.executable, str(tmp_path / "driver.py"), *argv], capture_output=True, text=True, timeout=600
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert (tmp_path / "release" / "receipts").is_dir() and not (tmp_path / "release" / "COMPLETE.json").exists()
    # A part whose record lost its block ends, or holds ends that do not fit its segment, is built again.
    records = tmp_path / "release" / ".work" / "llmc"
    edit_json(records / "part-000001.json", lambda obj: obj.pop("block_ends"))
    edit_json(records / "part-000002.json", lambda obj: obj["block_ends"].pop(0))
    assert main(argv) == 0
    expected = category_releases["one"]
    files = json.loads((expected / "COMPLETE.json").read_text())["files"]
    assert (tmp_path / "release" / "COMPLETE.json").read_bytes() == (expected / "COMPLETE.json").read_bytes()
    assert all((tmp_path / "release" / f["path"]).read_bytes() == (expected / f["path"]).read_bytes() for f in files)


@pytest.mark.parametrize("formats", [("llmc",), ("megatron",), ("llmc", "megatron")])
def test_the_preview_holds_the_first_documents_in_the_interleaved_order(by_category, tmp_path, formats):
    """Every format's preview rows are the llm.c order's first documents (parts mixed); verify checks them against
    the files."""
    _, corpus = by_category
    release = run_categories(corpus, tmp_path / "release", shuffle_seed=SEED, formats=formats)
    rows = read_preview(release / "preview" / "train.parquet")
    count = len(rows["document"])  # one row per document, each format's ids in its own column
    assert len(set(rows["part"][:count])) == CATEGORIES
    assert [text.split(" ", 1)[0] for text in rows["text"][:count]] == [f"c{int(p[-1])}" for p in rows["part"][:count]]
    if "llmc" in formats:
        assert rows["text"][:count] == llmc_texts(release, "train")[:count]
    verify_release(release)


def test_an_interleaved_build_to_a_url_equals_the_local_one(by_category, category_releases, tmp_path, monkeypatch):
    """At an fsspec URL the driver reads the parts' block ends from their records and the preview by ranged reads."""
    from fsspec.core import url_to_fs

    monkeypatch.setenv("HF_TOKBIN_CACHE", str(tmp_path / "cache"))
    _, corpus = by_category
    url = f"memory://shuffle/{tmp_path.name}"
    run_categories(corpus, url, shuffle_seed=SEED)
    fs, root = url_to_fs(url)
    local = category_releases["one"]
    files = json.loads((local / "COMPLETE.json").read_text())["files"]
    assert fs.cat_file(f"{root}/COMPLETE.json") == (local / "COMPLETE.json").read_bytes()
    assert all(fs.cat_file(f"{root}/{f['path']}") == (local / f["path"]).read_bytes() for f in files)
