"""A build killed at any moment and run again ends with the bytes of an uninterrupted build."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from release_fixtures import stories, write_corpus

from hf_tokbin.tokenizer import train_bpe

pytestmark = pytest.mark.slow  # SIGKILLed builds resumed

BUILD = "import sys; from hf_tokbin.cli import main; sys.exit(main())"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("resume")
    train_bpe(stories(200, seed=8), 500, root / "tok")
    shards = [("train", stories(400, seed=10 + i, max_words=200)) for i in range(6)] + [("validation", stories(100, seed=20))]
    write_corpus(root / "corpus", shards)
    return root


def build_command(inputs: Path, out: Path) -> list[str]:
    return [
        sys.executable, "-c", BUILD, "build", "--corpus", str(inputs / "corpus"), "--tokenizer", str(inputs / "tok"),
        "--out", str(out), "--num-proc", "2", "--max-tokens-per-file", "20000", "--quiet",
    ]


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def kill_when(command: list[str], ready) -> None:
    """Start ``command`` in its own process group and SIGKILL the group once ``ready()`` holds."""
    process = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    try:
        while not ready():
            if process.poll() is not None:
                pytest.fail("the build finished before the moment it was to be killed at")
            if time.monotonic() > deadline:
                pytest.fail("the moment to kill the build never came")
            time.sleep(0.005)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.fixture(scope="module")
def reference(inputs, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "release"
    subprocess.run(build_command(inputs, out), check=True, capture_output=True)
    return tree_bytes(out)


def _exists(path: Path):
    return lambda: path.exists()


def _any_tmp(root: Path):
    return lambda: any(root.rglob("*.tmp")) if root.exists() else False


MOMENTS = {
    "after run_config": lambda out: _exists(out / "run_config.json"),
    "while writing a part": lambda out: _any_tmp(out / "shards"),
    "after three receipts": lambda out: _exists(out / "receipts" / "part-000002.json"),
    "while packing llm.c": lambda out: _exists(out / "tokens"),
}


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_killed_build_resumes_to_the_same_bytes(inputs, reference, tmp_path, moment):
    out = tmp_path / "release"
    kill_when(build_command(inputs, out), MOMENTS[moment](out))
    assert not (out / "COMPLETE.json").exists(), "a killed build must not look complete"
    result = subprocess.run(build_command(inputs, out), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert tree_bytes(out) == reference
