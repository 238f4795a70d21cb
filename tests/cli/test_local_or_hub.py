"""A name that is no local path and reads NS/NAME is tried as a Hub repo.

When that fails too, the error says both readings.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hub_server import TOKEN, HubServer, cli, client_env
from release_fixtures import stories, write_corpus

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def env(tmp_path):
    with HubServer(token=TOKEN) as hub:
        home = tmp_path / "hf-home"
        home.mkdir()
        yield {
            **os.environ,
            **client_env(hub, home, TOKEN),
            "HF_TOKBIN_HUB_BACKOFF": "0.05",
            "HF_TOKBIN_HUB_ATTEMPTS": "3",
            "PYTHONPATH": str(ROOT),
        }


def assert_both_readings(done, name: str) -> None:
    assert done.returncode == 1, done.stderr
    error = done.stderr.strip().splitlines()[-1]
    assert error.count(name) >= 1 and "no local file or folder" in error and "repo not found" in error, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "command, name",
    [
        (
            ["build", "--corpus", "out/corpus", "--tokenizer", "byte", "--doc-sep", "0", "--out", "release"],
            "out/corpus",
        ),
        (["verify", "out/release"], "out/release"),
        (["corpus", "import", "out/shards", "--out", "corpus"], "out/shards"),
    ],
)
def test_a_missing_relative_path_names_the_local_reading_and_the_hub_reading(
    env, tmp_path, monkeypatch, command, name
):
    monkeypatch.chdir(tmp_path)  # the command runs here; out/ does not exist
    assert_both_readings(cli(env, *command), name)
    assert not (tmp_path / "release").exists() and not (tmp_path / "corpus").exists()


def test_a_missing_tokenizer_folder_names_both_readings(env, tmp_path):
    corpus = write_corpus(tmp_path / "corpus", [("train", stories(5, 1))])
    done = cli(env, "build", "--corpus", corpus, "--tokenizer", "out/tokenizer", "--out", tmp_path / "release")
    assert_both_readings(done, "out/tokenizer")
