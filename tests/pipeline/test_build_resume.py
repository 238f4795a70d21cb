"""A build killed at any moment and run again ends with the bytes of an uninterrupted build.

The build (``--num-proc 2``: a process and its two workers) stops itself
(SIGSTOP to its whole process group) at the moment, through a driver that
wraps one function of it; the test then SIGKILLs the group from outside. It
used to watch the output for the moment's files instead, every 5 ms: the
windows are 0.1-0.3 s wide (the whole build takes about a second), and a busy
machine that held the watcher longer killed the build after it had passed
the moment, or after it had finished.
"""

from __future__ import annotations

import contextlib
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

# Runs the real command line (argv[2:]) after wrapping the function of the moment argv[1] names: the process that
# reaches it (the build's or a worker's) stops the whole process group there.
DRIVER = r"""
import os, signal, sys

moment = sys.argv[1]


def stops_the_build_after(call, when=lambda *args, **kwargs: True):
    def wrapper(*args, **kwargs):
        result = call(*args, **kwargs)
        if when(*args, **kwargs):
            os.killpg(0, signal.SIGSTOP)  # the build's process and its workers: one group, started for this run
        return result
    return wrapper


if moment == "after run_config":
    from hf_tokbin.pipeline import run as job
    job.start_release = stops_the_build_after(job.start_release)
elif moment == "while writing a part":  # a part's pair holds its first batch under its temporary names
    from hf_tokbin.formats import megatron
    megatron.MegatronWriter.add_checked_documents = stops_the_build_after(megatron.MegatronWriter.add_checked_documents)
elif moment == "after three receipts":
    from hf_tokbin.pipeline import encode as part
    part._publish_part = stops_the_build_after(
        part._publish_part, when=lambda output, receipt, staging: receipt.part == "part-000002"
    )
elif moment == "while packing llm.c":  # the first llm.c file written, the others not yet
    from hf_tokbin.pipeline import publish as pack
    pack.write_packed_file = stops_the_build_after(pack.write_packed_file)
else:
    sys.exit(f"unknown moment {moment!r}")

from hf_tokbin.cli import main

sys.exit(main(sys.argv[2:]))
"""


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("resume")
    train_bpe(stories(200, seed=8), 500, root / "tok")
    shards = [("train", stories(400, seed=10 + i, max_words=200)) for i in range(6)] + [
        ("validation", stories(100, seed=20))
    ]
    write_corpus(root / "corpus", shards)
    (root / "driver.py").write_text(DRIVER, encoding="utf-8")
    return root


def build_args(inputs: Path, out: Path) -> list[str]:
    return [
        "build", "--corpus", str(inputs / "corpus"), "--tokenizer", str(inputs / "tok"),
        "--out", str(out), "--num-proc", "2", "--max-tokens-per-file", "20000", "--quiet",
    ]


def build_command(inputs: Path, out: Path) -> list[str]:
    return [sys.executable, "-c", BUILD, *build_args(inputs, out)]


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def kill_at(inputs: Path, out: Path, moment: str) -> None:
    """Run the build in a process group of its own until it stops itself at ``moment``; then SIGKILL the group.

    The stop is kept (a stopped process stays stopped), so how soon this sees it does not matter; the bound only
    ends a build that never gets there."""
    command = [sys.executable, str(inputs / "driver.py"), moment, *build_args(inputs, out)]
    process = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    try:
        while True:
            pid, status = os.waitpid(process.pid, os.WUNTRACED | os.WNOHANG)
            if pid and os.WIFSTOPPED(status):
                break
            if pid:
                process.returncode = os.waitstatus_to_exitcode(status)
                pytest.fail(f"the build ended ({process.returncode}) before the moment it was to be killed at")
            if time.monotonic() > deadline:
                pytest.fail("the moment to kill the build never came")
            time.sleep(0.01)
    finally:
        with contextlib.suppress(ProcessLookupError):  # nothing left of the group if it ended
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
    kill_at(inputs, out, moment)
    assert MOMENTS[moment](out)(), "the kill did not land at its moment"
    assert not (out / "COMPLETE.json").exists(), "a killed build must not look complete"
    result = subprocess.run(build_command(inputs, out), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert tree_bytes(out) == reference
