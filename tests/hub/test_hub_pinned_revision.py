"""A revision recorded as pinned is a commit id: a server answering a branch name (or anything else) for the commit
of a Hub tokenizer or corpus stops the build before anything is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hostile_hub import HostileHub
from hub_server import client_env, make_corpus
from tokenizer_files import byte_level_bpe_json

from hf_tokbin.corpus.write import write_tinystories_corpus

_CLI = "import sys; from hf_tokbin.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.fixture
def hub():
    with HostileHub() as server:
        yield server


@pytest.fixture
def env(hub, tmp_path):
    home = tmp_path / "hf-home"
    home.mkdir()
    return {**os.environ, **client_env(hub, home), "HF_TOKBIN_HUB_BACKOFF": "0.05", "HF_TOKBIN_HUB_ATTEMPTS": "2"}


def tokenizer_repo(root):
    from tokenizers.pre_tokenizers import ByteLevel

    root.mkdir(parents=True)
    vocab = {c: i for i, c in enumerate(sorted(ByteLevel.alphabet()))}
    (root / "tokenizer.json").write_text(json.dumps(byte_level_bpe_json(vocab=vocab)))
    (root / "generation_config.json").write_text(json.dumps({"eos_token_id": 0}))
    return root


def local_corpus(root):
    text = root / "train.txt"
    text.write_text("One story.\n<|endoftext|>\nAnother story.\n")
    write_tinystories_corpus(text, None, root / "corpus")
    return root / "corpus"


def build(env, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", _CLI, "build", *map(str, args), "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("answer", ["main", "v1.0", "0123456789abcdef"])
def test_a_hub_tokenizer_whose_commit_is_not_a_commit_id_is_refused(hub, env, tmp_path, answer):
    hub.seed_repo("tester/tok", tokenizer_repo(tmp_path / "model"), repo_type="model")
    hub.reported_sha = answer
    out = tmp_path / "release"
    result = build(env, "--corpus", local_corpus(tmp_path), "--tokenizer", "tester/tok", "--out", out)
    assert result.returncode == 1, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert "commit id" in result.stderr and "40 lowercase hex digits" in result.stderr
    assert not (out / "run_config.json").exists()


def test_a_hub_tokenizer_at_a_checked_commit_records_that_commit(hub, env, tmp_path):
    commit = hub.seed_repo("tester/tok", tokenizer_repo(tmp_path / "model"), repo_type="model")
    out = tmp_path / "release"
    result = build(env, "--corpus", local_corpus(tmp_path), "--tokenizer", "tester/tok", "--out", out)
    assert result.returncode == 0, result.stderr
    assert json.loads((out / "run_config.json").read_text())["tokenizer"]["revision"] == commit
    assert (
        f"pinned revision: `{commit}`" in (out / "README.md").read_text() or commit in (out / "README.md").read_text()
    )


def test_a_hub_corpus_whose_commit_is_a_branch_name_is_refused(hub, env, tmp_path):
    corpus, _ = make_corpus(tmp_path / "corpus")
    hub.seed_repo("tester/corpus", corpus)
    hub.reported_sha = "main"
    out = tmp_path / "release"
    result = build(env, "--corpus", "tester/corpus", "--tokenizer", "byte", "--doc-sep-id", "0", "--out", out)
    assert result.returncode == 1, result.stderr
    assert "commit id" in result.stderr and not (out / "run_config.json").exists()
