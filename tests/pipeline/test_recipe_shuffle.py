"""``build --shuffle-seed S``: each part's documents in a seeded order, the same bytes whatever num_proc.

Every document is kept exactly once (compared with the build in corpus
order, part by part), the order differs from the corpus order, the release
verifies, and ``run_config.json`` records the seed.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from release_fixtures import stories, write_corpus

from hf_tokbin.cli import main
from hf_tokbin.errors import BuildError
from hf_tokbin.formats import llmc, megatron
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
    plain, shuffled, _ = releases
    for split, llmc_split in (("train", "train"), ("validation", "val")):
        stream = LlmcSplit.open(shuffled, llmc_split)
        ids = np.concatenate([np.asarray(p) for p in stream.parts])
        expected = [
            t
            for part in sorted((shuffled / "shards" / split).glob("*.idx"))
            for d in documents(shuffled, split, part.stem)
            for t in [0, *d[:-1]]
        ]
        assert ids.tolist() == expected  # [sep] + doc for llm.c, doc + [eod] for Megatron, same order
    manifest = llmc.TokensManifest.read(next((plain / "tokens").glob("*/*")) / llmc.MANIFEST_NAME)
    assert len([f for f in manifest.files if f.split == "train"]) > 1


def test_run_config_records_the_seed_and_corpus_order_records_none(releases):
    plain, shuffled, _ = releases
    obj = json.loads((shuffled / "run_config.json").read_text())
    assert obj["shuffle"] == {"seed": SEED, "scope": "documents within each part"}
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
command = ["hf-tokbin", "build", "--corpus", {corpus!r}, "--tokenizer", "byte", "--doc-sep-id", "0", "--max-tokens-per-file", "3000",
           "--shuffle-seed", "{seed}", "--quiet", "--out", {out!r}, "--engine", "ray", "--ray-address", os.environ["RAY_ADDRESS"]]
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
        RAY_DRIVER.format(corpus=str(corpus), seed=SEED, out=str(out)), tmp_path / "driver", timeout=240
    )
    assert process.returncode == 0, process.stderr[-4000:]
    assert (out / "COMPLETE.json").read_bytes() == (releases[1] / "COMPLETE.json").read_bytes()
