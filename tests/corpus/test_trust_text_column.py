"""A corpus shard whose text column is not UTF-8 strings is one line naming the shard, the column and the rule.

A hostile publisher (or an unlucky tool) writes a shard whose ``text`` column
holds int64, lists of strings, or string bytes that are not UTF-8 (Parquet
readers take string bytes as they are), and a manifest that matches it. The
build reads it from a local corpus folder, from a Hub corpus repo and from a
plain Hub Parquet repo (tests/hub_server.py on 127.0.0.1); ``verify CORPUS``
checks the same rule.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hub_server import HubServer, client_env
from release_fixtures import write_corpus
from tokenizer_files import gpt2_tokenizer_json, story_texts

from hf_tokbin._io import sha256_file
from hf_tokbin.formats.corpus_manifest import CorpusManifest, CorpusShard

TOKEN = "hf_text_column_test_token_0123456789"
_CLI = "import sys; from hf_tokbin.cli import main; sys.exit(main(sys.argv[1:]))"
SHARD = "data/train-00000.parquet"


def _not_utf8() -> pa.Array:
    """Three strings whose second is not UTF-8 (0xff 0xfe), made without pyarrow's validation."""
    data = b"ok" + b"\xff\xfe bad" + b"fine"
    offsets = pa.array([0, 2, 8, 12], pa.int32())
    return pa.Array.from_buffers(pa.string(), 3, [None, offsets.buffers()[1], pa.py_buffer(data)])


COLUMNS = {
    "int64": (lambda: pa.array([1, 2, 3], pa.int64()), "column 'text' must hold strings: expected string, got int64"),
    "list": (
        lambda: pa.array([["a"], ["b"], ["c"]]),
        "column 'text' must hold strings: expected string, got list<element: string>",
    ),
    "utf8": (_not_utf8, "row 1: column 'text' is not valid UTF-8: expected UTF-8 text, got b'\\xff\\xfe bad'"),
}


def tampered_corpus(root: Path, kind: str) -> Path:
    """A corpus folder whose one train shard has the ``kind`` text column, its manifest rewritten to match."""
    corpus = write_corpus(root, [("train", story_texts(3, seed=1)), ("validation", story_texts(2, seed=2))])
    path = corpus / SHARD
    pq.write_table(pa.table({"text": COLUMNS[kind][0](), "split": pa.array(["train"] * 3)}), path)
    manifest = CorpusManifest.read(corpus)
    shards = tuple(
        CorpusShard(SHARD, "train", 3, path.stat().st_size, sha256_file(path)) if s.path == SHARD else s
        for s in manifest.shards
    )
    CorpusManifest(manifest.name, manifest.split_rule, manifest.sources, shards).write(corpus)
    return corpus


def run(env: dict, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", _CLI, *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def one_error_line(result: subprocess.CompletedProcess, command: str) -> str:
    assert result.returncode == 1, result.stderr[-3000:]
    # The plan's warnings (a corpus with no validation split) may come first; the error is one line, and last.
    lines = [line for line in result.stderr.splitlines() if not line.startswith(("warning: ", "note: "))]
    assert len(lines) == 1 and lines[0].startswith(f"hf-tokbin {command}: error: "), result.stderr[-3000:]
    return lines[0]


@pytest.fixture(scope="module")
def hub():
    with HubServer(token=TOKEN) as server:
        yield server


@pytest.fixture(scope="module")
def env(hub, tmp_path_factory) -> dict:
    home = tmp_path_factory.mktemp("hf-home")
    return {
        **os.environ,
        **client_env(hub, home, TOKEN),
        "HF_TOKBIN_HUB_BACKOFF": "0.05",
        "TQDM_DISABLE": "1",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }


@pytest.mark.parametrize("kind", COLUMNS)
def test_verify_corpus_checks_the_text_column(tmp_path, kind):
    corpus = tampered_corpus(tmp_path / "corpus", kind)
    line = one_error_line(run(os.environ, "verify", corpus), "verify")
    assert line == f"hf-tokbin verify: error: {corpus / SHARD}: {COLUMNS[kind][1]}"


@pytest.mark.parametrize("kind", COLUMNS)
def test_build_from_a_local_corpus_refuses_the_shard_in_one_line(tmp_path, kind):
    corpus = tampered_corpus(tmp_path / "corpus", kind)
    line = one_error_line(
        run(os.environ, "build", "--corpus", corpus, "--tokenizer", gpt2_tokenizer_json(), "--out", tmp_path / "out"),
        "build",
    )
    assert line.endswith(f"{SHARD}: {COLUMNS[kind][1]}")
    assert not (tmp_path / "out" / "COMPLETE.json").exists()


@pytest.mark.parametrize("kind", COLUMNS)
def test_build_from_a_hub_corpus_repo_refuses_the_shard_in_one_line(hub, env, tmp_path, kind):
    repo = f"tester/tampered-corpus-{kind}"
    hub.seed_repo(repo, tampered_corpus(tmp_path / "corpus", kind))
    line = one_error_line(
        run(env, "build", "--corpus", repo, "--tokenizer", gpt2_tokenizer_json(), "--out", tmp_path / "out"), "build"
    )
    assert line.endswith(f"{SHARD}: {COLUMNS[kind][1]}")


@pytest.mark.parametrize("kind", COLUMNS)
def test_build_from_a_plain_hub_parquet_repo_refuses_the_file_in_one_line(hub, env, tmp_path, kind):
    repo = f"tester/tampered-parquet-{kind}"
    folder = tmp_path / "plain"
    (folder / "data").mkdir(parents=True)
    pq.write_table(pa.table({"text": COLUMNS[kind][0]()}), folder / "data" / "train-00000-of-00001.parquet")
    commit = hub.seed_repo(repo, folder)
    line = one_error_line(
        run(env, "build", "--corpus", repo, "--tokenizer", gpt2_tokenizer_json(), "--out", tmp_path / "out"), "build"
    )
    assert line.endswith(f"{repo}@{commit}/data/train-00000-of-00001.parquet: {COLUMNS[kind][1]}")
