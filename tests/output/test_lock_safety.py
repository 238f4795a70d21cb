"""The build lock and every file a build creates under --out:
never through a symlink; a killed build never blocks a re-run.

Each test reproduces an attack or accident: a
pre-made ``.work/lock`` symlink, a symlinked ``.work``, a symlink at a
temporary name, a ``kill -9`` of a ``--num-proc 2`` build whose workers lived
on holding the lock, a lock left in the name of a process that is gone.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hf_tokbin._io import tmp_path_for, write_text_atomic
from hf_tokbin.corpus.write import write_tinystories_corpus
from hf_tokbin.errors import BuildError
from hf_tokbin.formats import llmc, megatron
from hf_tokbin.output.local import LOCK_NAME

CONSOLE_SCRIPT = Path(sys.executable).with_name("hf-tokbin")
SECRET = "the user's private file\n"


@pytest.fixture
def corpus(tmp_path):
    text = tmp_path / "train.txt"
    text.write_text("\n<|endoftext|>\n".join(f"Story number {i} about a cat." for i in range(200)) + "\n")
    write_tinystories_corpus(text, None, tmp_path / "corpus")
    return tmp_path / "corpus"


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "victim.txt"
    path.write_text(SECRET)
    return path


def build_args(corpus: Path, out: Path, *extra: str) -> list[str]:
    return [
        "build",
        "--corpus",
        str(corpus),
        "--tokenizer",
        "byte",
        "--doc-sep-id",
        "0",
        "--out",
        str(out),
        "--quiet",
        *extra,
    ]


def hf_tokbin(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(CONSOLE_SCRIPT), *args], capture_output=True, text=True, timeout=300)


def one_line_error(result: subprocess.CompletedProcess, *words: str) -> None:
    assert result.returncode == 1, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr and all(w in result.stderr for w in words), result.stderr


def test_a_symlinked_lock_is_refused_and_what_it_points_to_is_untouched(tmp_path, corpus, victim):
    out = tmp_path / "out"
    (out / ".work").mkdir(parents=True)
    os.symlink(victim, out / LOCK_NAME)
    one_line_error(hf_tokbin(*build_args(corpus, out)), "lock", "symlink")
    assert victim.read_text() == SECRET
    assert not (out / "run_config.json").exists()


def test_a_symlinked_work_folder_is_refused_and_nothing_is_written_through_it(tmp_path, corpus):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    os.symlink(elsewhere, out / ".work")
    one_line_error(hf_tokbin(*build_args(corpus, out)), ".work", "symlink")
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("folder", ["shards", "receipts", "tokens"])
def test_a_symlinked_folder_in_a_pre_made_output_is_refused_before_anything_is_written(tmp_path, corpus, folder):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    os.symlink(elsewhere, out / folder)
    one_line_error(hf_tokbin(*build_args(corpus, out)), folder, "symlink")
    assert list(elsewhere.iterdir()) == []


def test_a_fifo_as_the_lock_is_refused(tmp_path, corpus):
    out = tmp_path / "out"
    (out / ".work").mkdir(parents=True)
    os.mkfifo(out / LOCK_NAME)
    one_line_error(hf_tokbin(*build_args(corpus, out)), "lock", "another kind of file")


def plant_symlink(at: Path, target: Path) -> None:
    at.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, at)


def test_an_atomic_write_never_writes_through_a_symlink_at_its_temporary_name(tmp_path, victim):
    final = tmp_path / "out" / "run_config.json"
    plant_symlink(tmp_path_for(final), victim)
    with pytest.raises(BuildError, match="symlink"):
        write_text_atomic(final, "{}\n")
    assert victim.read_text() == SECRET and not final.exists()


def test_the_token_writers_never_write_through_a_symlink_at_a_temporary_name(tmp_path, victim):
    bin_path = tmp_path / "out" / "shards" / "train" / "part-000000.bin"
    plant_symlink(tmp_path_for(bin_path), victim)
    with pytest.raises(BuildError, match="symlink"):
        megatron.MegatronWriter(bin_path, 256, 0)
    llmc_folder = tmp_path / "out" / "tokens" / "byte" / "toy"
    plant_symlink(tmp_path_for(llmc_folder / llmc.file_name("train", 0)), victim)
    with pytest.raises(BuildError, match="symlink"):
        writer = llmc.LlmcWriter(llmc_folder, "train", 256)
        writer.add_document([1, 2, 3])
        writer.close()
    assert victim.read_text() == SECRET


def test_a_stale_temporary_that_is_a_hard_link_is_replaced_not_truncated(tmp_path, victim):
    final = tmp_path / "run_config.json"
    os.link(victim, tmp_path_for(final))  # a hard link to the user's file, under our temporary name
    write_text_atomic(final, "{}\n")
    assert victim.read_text() == SECRET and final.read_text() == "{}\n"


def test_a_concurrent_build_refuses_before_loading_its_inputs(tmp_path, hold_lock):
    out = tmp_path / "out"
    hold_lock(out / LOCK_NAME, "pid 1 on elsewhere")
    # The corpus does not exist: a build that loaded its inputs first would say so instead.
    one_line_error(
        hf_tokbin(*build_args(tmp_path / "no-such-corpus", out)),
        "another build is writing this output",
        "pid 1 on elsewhere",
    )


def test_a_refused_build_leaves_no_output_folder_behind(tmp_path):
    out = tmp_path / "out"
    result = hf_tokbin(*build_args(tmp_path / "no-such-corpus", out))
    assert result.returncode == 1
    assert not out.exists()


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_lock_held_in_the_name_of_a_process_that_is_gone_is_taken_over_saying_so(tmp_path, corpus, hold_lock):
    out = tmp_path / "out"
    gone = dead_pid()
    hold_lock(out / LOCK_NAME, f"pid {gone} on {socket.gethostname()}")  # its orphaned workers, still holding the file
    result = hf_tokbin(*build_args(corpus, out))
    assert result.returncode == 0, result.stderr
    assert f"taking over the lock of pid {gone}" in result.stderr
    assert (out / "COMPLETE.json").exists()


def test_a_lock_file_a_killed_build_left_is_taken_over_saying_so(tmp_path, corpus):
    out = tmp_path / "out"
    (out / ".work").mkdir(parents=True)
    (out / LOCK_NAME).write_text(f"pid {dead_pid()} on {socket.gethostname()}")  # nobody holds it any more
    result = hf_tokbin(*build_args(corpus, out))
    assert result.returncode == 0, result.stderr
    assert "taking over the lock" in result.stderr


# Runs the real command line with --num-proc 2 and kills itself (SIGKILL or SIGTERM) once its worker pool has
# answered, after writing the workers' pids to argv[2].
KILLED_DRIVER = r"""
import os, signal, sys
from hf_tokbin.engines import local

real_map = local.WorkerPool.map_ordered
def map_then_die(self, fn, items, window=None):
    for result in real_map(self, fn, items, window):
        pids = [p.pid for p in self._executor._processes.values()]
        with open(sys.argv[2], "w") as f:
            f.write(" ".join(map(str, pids)))
        os.kill(os.getpid(), getattr(signal, sys.argv[1]))
        yield result
local.WorkerPool.map_ordered = map_then_die

from hf_tokbin.cli import main
sys.exit(main(sys.argv[3:]))
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead: it holds no file
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def wait_until_gone(pids: list[int], bound: float = 60.0) -> list[int]:
    """The pids still alive after ``bound`` seconds at most (a bound on a wait, not a timed assertion)."""
    deadline = time.monotonic() + bound
    while any(map(alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [pid for pid in pids if alive(pid)]


@pytest.mark.slow  # SIGKILLed and SIGTERMed builds
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGTERM"])
def test_a_killed_build_leaves_no_worker_alive_and_the_same_command_runs_again(tmp_path, corpus, signal_name):
    out, pids_file = tmp_path / "out", tmp_path / "pids"
    driver = tmp_path / "driver.py"
    driver.write_text(KILLED_DRIVER)
    args = build_args(corpus, out, "--num-proc", "2", "--batch-size", "8")
    killed = subprocess.run(
        [sys.executable, str(driver), signal_name, str(pids_file), *args], capture_output=True, text=True, timeout=300
    )
    assert killed.returncode == -getattr(signal, signal_name), killed.stderr[-2000:]
    workers = [int(p) for p in pids_file.read_text().split()]
    assert len(workers) == 2
    try:
        assert wait_until_gone(workers) == []
    finally:
        for pid in workers:  # never leave them behind, whatever the outcome
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    rerun = hf_tokbin(*args)
    assert rerun.returncode == 0, rerun.stderr
    assert (out / "COMPLETE.json").exists()
