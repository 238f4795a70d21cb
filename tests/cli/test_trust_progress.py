"""Progress bars honour --quiet, TQDM_DISABLE and the datasets / Hub variables."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from huggingface_hub.utils import are_progress_bars_disabled, enable_progress_bars
from release_fixtures import stories, write_corpus

from hf_tokbin.cli import main
from hf_tokbin.cli.progress import DISABLING_VARIABLES, show_progress


@pytest.fixture(autouse=True)
def hub_bars_restored(monkeypatch):
    for name in DISABLING_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    yield
    enable_progress_bars()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    # Two input shards: the local engine shows its "parts" bar.
    return write_corpus(
        tmp_path_factory.mktemp("c") / "corpus", [("train", stories(5, seed=1)), ("train", stories(5, seed=2))]
    )


def build_stderr(corpus, out, env_extra: dict, *flags) -> str:
    env = {k: v for k, v in os.environ.items() if k not in DISABLING_VARIABLES} | env_extra
    command = [
        sys.executable,
        "-m",
        "hf_tokbin",
        "build",
        "--corpus",
        str(corpus),
        "--tokenizer",
        "byte",
        "--doc-sep",
        "3",
        "--out",
        str(out),
        *flags,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    return result.stderr


def test_bars_show_by_default(corpus, tmp_path):
    assert "%|" in build_stderr(corpus, tmp_path / "r", {})  # so the tests below can fail


@pytest.mark.parametrize("name", DISABLING_VARIABLES)
def test_each_variable_hides_every_bar(corpus, tmp_path, name):
    assert "%|" not in build_stderr(corpus, tmp_path / "r", {name: "1"})


def test_show_progress_reads_the_variables(monkeypatch):
    assert show_progress(False) and not are_progress_bars_disabled()
    assert not show_progress(True) and are_progress_bars_disabled()
    enable_progress_bars()
    monkeypatch.setenv("HF_DATASETS_DISABLE_PROGRESS_BARS", "TRUE")
    assert not show_progress(False)
    monkeypatch.setenv("HF_DATASETS_DISABLE_PROGRESS_BARS", "0")
    assert show_progress(False)


def test_quiet_silences_the_hub_clients_bars(corpus, tmp_path):
    enable_progress_bars()
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                "byte",
                "--doc-sep",
                "3",
                "--out",
                str(tmp_path / "r"),
                "--quiet",
            ]
        )
        == 0
    )
    assert are_progress_bars_disabled()
