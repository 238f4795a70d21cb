"""Ctrl-C during a ``--num-proc`` build: the workers exit quietly, and the command says "interrupted" on one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from release_fixtures import stories, write_corpus

ROOT = Path(__file__).resolve().parents[2]
# The build, with its driver slowed down between batch results and marking when workers have encoded: the signal
# then comes while the workers wait for their next batch (where a worker's Ctrl-C showed its traceback), whatever
# the machine's speed.
SLOW_BUILD = """
import os, signal, sys, time
from hf_tokbin.engines.local import WorkerPool

# As in a terminal: a process started with SIGINT ignored (a background job, some CI runners) keeps it ignored,
# and Ctrl-C would then never reach the build.
signal.signal(signal.SIGINT, signal.default_int_handler)

ordered = WorkerPool.map_ordered

def slow_map_ordered(self, fn, items, window=None):
    for count, result in enumerate(ordered(self, fn, items, window)):
        if count == 2:
            open(os.environ["WORKER_MARK"], "a").close()
        time.sleep(0.2)
        yield result

WorkerPool.map_ordered = slow_map_ordered
from hf_tokbin.cli import exit_main
sys.argv[0] = "hf-tokbin"
exit_main()
"""


def wait_for(path: Path, process: subprocess.Popen, seconds: float = 300.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"no worker started encoding (exit status {process.poll()})")
        time.sleep(0.05)


def test_ctrl_c_in_a_two_worker_build_prints_one_line_and_no_worker_traceback(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", [("train", stories(200, 1)), ("train", stories(200, 2))])
    mark = tmp_path / "worker-started"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WORKER_MARK": str(mark)}
    args = ["build", "--corpus", corpus, "--tokenizer", "byte", "--doc-sep", "0", "--num-proc", "2"]
    args += ["--batch-size", "4"]  # many batches: the build is still encoding when the signal comes
    with open(tmp_path / "stderr", "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-c", SLOW_BUILD, *map(str, args), "--out", tmp_path / "release"],
            env=env, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True,
        )
        try:
            wait_for(mark, process)
            os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
            code = process.wait(timeout=300)
        finally:
            if process.poll() is None:
                process.kill()
    text = (tmp_path / "stderr").read_text()
    assert code == 130, text[-3000:]
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text[-3000:]
    assert text.count("interrupted") == 1 and "hf-tokbin build: interrupted" in text.splitlines(), text[-3000:]
