"""Exit: ``hf-tokbin`` ends its process without tearing the interpreter down, once everything is flushed.

Freeing a build's 850 modules one by one took 0.3-0.5 s after its last file was
written. ``hf_tokbin.cli.exit_main`` (the console script and ``python -m
hf_tokbin``) runs the exit handlers, flushes stdout and stderr and ends the
process; with another thread still running it exits the usual way.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

# A command run through exit_main, in a fresh interpreter, with an exit handler, os._exit recorded, and
# optionally a thread still running.
SCRIPT = """
import atexit, os, sys, threading
import hf_tokbin.cli as cli

mark = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND)

def note(text, write=os.write, fd=mark):
    write(fd, text.encode() + b"\\n")

real_exit = os._exit
os._exit = lambda code: (note(f"os._exit {code}"), real_exit(code))
atexit.register(note, "exit handler")
if sys.argv[2] == "thread":  # a thread the command leaves running, until the interpreter's own exit has begun
    # (the main thread's join returns then): never done before exit_main looks, however busy the machine; a fixed
    # 0.2 s could end before it looked, and exit_main rightly took the quick way out.
    command = cli.main
    waits = lambda: (threading.main_thread().join(), note("thread done"))
    cli.main = lambda: (command(), threading.Thread(target=waits).start())[0]
if sys.argv[2] == "daemon":  # a daemon thread left running, as tqdm's monitor is after a progress bar
    command = cli.main
    cli.main = lambda: (command(), threading.Thread(target=threading.Event().wait, daemon=True).start())[0]
sys.stdout.write("unflushed output")  # no newline: still in the buffer when the command returns
sys.argv = ["hf-tokbin", "verify", sys.argv[1] + ".missing"]  # returns 1 with one error line
cli.exit_main()
"""


def _run(tmp_path, mode: str) -> tuple[subprocess.CompletedProcess, str]:
    mark, script = tmp_path / "mark.txt", tmp_path / "script.py"
    script.write_text(textwrap.dedent(SCRIPT))
    done = subprocess.run([sys.executable, str(script), str(mark), mode], capture_output=True, text=True, timeout=120)
    return done, mark.read_text() if mark.exists() else ""


def test_exit_main_runs_the_exit_handlers_flushes_and_ends_the_process(tmp_path):
    done, mark = _run(tmp_path, "alone")
    assert done.returncode == 1, done.stderr  # the command's own code
    assert done.stdout == "unflushed output"
    assert done.stderr.startswith("hf-tokbin verify: error:")
    assert mark.splitlines() == ["exit handler", "os._exit 1"]


def test_exit_main_exits_the_usual_way_while_a_thread_runs(tmp_path):
    done, mark = _run(tmp_path, "thread")
    assert done.returncode == 1, done.stderr
    assert done.stdout == "unflushed output"
    assert mark.splitlines() == ["thread done", "exit handler"]


def test_exit_main_ends_the_process_at_once_while_only_a_daemon_thread_runs(tmp_path):
    # The interpreter's own exit does not wait for daemon threads either; tqdm's monitor is one after any progress bar.
    done, mark = _run(tmp_path, "daemon")
    assert done.returncode == 1, done.stderr
    assert done.stdout == "unflushed output"
    assert mark.splitlines() == ["exit handler", "os._exit 1"]


def test_the_console_script_and_python_m_use_exit_main():
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    assert (
        tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]["hf-tokbin"]
        == "hf_tokbin.cli:exit_main"
    )
    assert "exit_main()" in (root / "hf_tokbin" / "__main__.py").read_text()


def _closed_stdout(*args: str, closed: int = 1) -> subprocess.CompletedProcess:
    """``python -m hf_tokbin ARGS >&-`` (``2>&-`` with ``closed=2``).

    The interpreter starts without that stream (None).
    """
    import os

    return subprocess.run(
        [sys.executable, "-m", "hf_tokbin", *args],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: os.close(closed),
    )


def test_a_failing_command_with_stdout_closed_exits_with_its_code_and_its_one_line(tmp_path):
    done = _closed_stdout("verify", str(tmp_path / "missing"))
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("hf-tokbin verify: error:") and len(done.stderr.splitlines()) == 1, done.stderr


def test_a_command_that_prints_with_stdout_closed_succeeds_as_print_does_without_a_traceback(tmp_path):
    from release_fixtures import build_release

    release = build_release(tmp_path)
    done = _closed_stdout("info", str(release))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_a_command_that_succeeds_with_stderr_closed_exits_0_and_prints_its_result(tmp_path):
    from release_fixtures import build_release

    release = build_release(tmp_path)
    done = _closed_stdout("verify", str(release), closed=2)
    assert done.returncode == 0, done.stdout
    assert done.stdout.startswith(f"{release}: OK:"), done.stdout
