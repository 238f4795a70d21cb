"""What a newcomer gives the commands: tokenizer train's corpus, build's --limit, the default tokenizer id."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from release_fixtures import stories, write_corpus


def cli(*args) -> subprocess.CompletedProcess:
    code = "import sys; from hf_tokbin.cli import main; sys.exit(main(sys.argv[1:]))"
    command = [sys.executable, "-c", code, *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    shards = [("train", stories(30, 1)), ("validation", stories(8, 2))]
    return write_corpus(tmp_path_factory.mktemp("c") / "corpus", shards)


@pytest.fixture(scope="module")
def tokenizer(corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("t") / "tokenizer"
    done = cli("tokenizer", "train", "--corpus", corpus, "--vocab-size", 300, "--out", out, "--quiet")
    assert done.returncode == 0, done.stderr
    return out


def _jsonl(folder: Path, texts: list[str]) -> Path:
    folder.mkdir(parents=True)
    for i in range(2):
        rows = texts[i::2]
        (folder / f"part-{i}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in rows))
    return folder


@pytest.mark.parametrize("given", ["folder", "glob", "file"])
def test_tokenizer_train_takes_files_folders_and_globs_as_build_corpus_does(tmp_path, given):
    texts = stories(40, 7)
    folder = _jsonl(tmp_path / "in", texts)
    corpus = {"folder": folder, "glob": f"{folder}/*.jsonl", "file": folder / "part-0.jsonl"}[given]
    done = cli("tokenizer", "train", "--corpus", corpus, "--vocab-size", 300, "--out", tmp_path / "tok", "--quiet")
    assert done.returncode == 0, done.stderr
    trained_on = sum(len(t) for t in (texts if given != "file" else texts[0::2]))
    assert f"trained on the first {trained_on:,} characters of train" in done.stdout
    assert json.loads((tmp_path / "tok" / "tokenizer.json").read_text())["model"]["vocab"]


def test_tokenizer_train_on_a_corpus_folder_is_unchanged(corpus, tokenizer, tmp_path):
    """A corpus folder is read as before: the same characters give the same tokenizer.json."""
    again = cli("tokenizer", "train", "--corpus", corpus, "--vocab-size", 300, "--out", tmp_path / "t", "--quiet")
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "t" / "tokenizer.json").read_bytes() == (tokenizer / "tokenizer.json").read_bytes()


@pytest.mark.parametrize("limit", ["0", "-3", "ten"])
def test_build_limit_must_be_a_positive_integer_in_one_line(corpus, tmp_path, limit):
    out = tmp_path / "out"
    done = cli("build", "--corpus", corpus, "--tokenizer", "byte", "--doc-sep", "0", "--out", out, "--limit", limit)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "--limit" in last and "positive integer" in last and limit in last, done.stderr
    assert not out.exists()


def test_a_limit_that_leaves_validation_empty_says_which_limit_reaches_it(corpus, tmp_path):
    done = cli("build", "--corpus", corpus, "--tokenizer", "byte", "--doc-sep", "0", "--out", tmp_path / "r",
               "--limit", 5, "--quiet")
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    # The corpus holds 30 train documents, then 8 of validation: a limit of 31 or more reaches validation.
    assert "--limit 31" in said, said
    assert "--split-rule sha256" not in said, said  # a corpus import flag: build has no such option


def _model_folder(tokenizer: Path, folder: Path, config: dict | None, tokenizer_config: dict | None) -> Path:
    folder.mkdir(parents=True)
    shutil.copy(tokenizer / "tokenizer.json", folder / "tokenizer.json")
    shutil.copy(tokenizer / "generation_config.json", folder / "generation_config.json")
    base = json.loads((tokenizer / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**base, **(tokenizer_config or {})}))
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize(
    ("config", "tokenizer_config", "expected"),
    [
        ({"_name_or_path": "meta-llama/Meta-Llama-3-8B", "model_type": "llama"}, None, "Meta-Llama-3-8B"),
        (None, {"name_or_path": "openai-community/gpt2"}, "gpt2"),
        ({"_name_or_path": "", "model_type": "llama"}, None, "models"),
        (None, None, "models"),
        ({"_name_or_path": "org/.."}, {"name_or_path": "evil\\..\\x"}, "models"),
        ({"_name_or_path": "a/b\nc"}, {"name_or_path": 42}, "models"),
        ([1, 2], {"name_or_path": "org/.hidden"}, "models"),
    ],
    ids=["config.json", "tokenizer_config.json", "empty-name", "no-name", "dot-dot", "newline", "not-an-object"],
)
def test_the_default_tokenizer_id_is_the_model_name_the_files_give(
    corpus, tokenizer, tmp_path, config, tokenizer_config, expected
):
    folder = _model_folder(tokenizer, tmp_path / "llama3" / "models", config, tokenizer_config)
    done = cli("build", "--corpus", corpus, "--tokenizer", folder, "--out", tmp_path / "r", "--dry-run", "--json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["tokenizer_id"] == expected and plan["llmc_dir"] == f"tokens/{expected}/toy"
    human = cli("build", "--corpus", corpus, "--tokenizer", folder, "--out", tmp_path / "r", "--dry-run")
    assert f"tokenizer {expected} (--tokenizer-id sets it)" in human.stdout


def test_the_build_summary_says_how_to_set_the_tokenizer_id(corpus, tokenizer, tmp_path):
    done = cli("build", "--corpus", corpus, "--tokenizer", tokenizer, "--out", tmp_path / "r", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "tokenizer id tokenizer" in done.stdout and "--tokenizer-id" in done.stdout, done.stdout
