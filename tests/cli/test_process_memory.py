"""The command's process keeps freed memory for its next batch (``hf_tokbin.cli.reuse_freed_memory``).

glibc hands a freed large buffer back to the kernel and pyarrow's mimalloc
purges its pages, so every batch faulted in and zeroed fresh pages: a quarter
to a third of a build's CPU time on a 2-core VM. ``exit_main`` (the console
script, ``python -m hf_tokbin``) sets the process up before numpy or pyarrow
load; a setting the user made wins, a library user's process is left alone, and
a glibc it cannot reach through ctypes leaves the command to run untuned.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

# Runs exit_main with a command that reports the process's settings as JSON: the pool pyarrow allocates from,
# OpenBLAS's threads, whether a 64 MiB buffer came from the heap or from a mapping of its own, and the heap's size once
# a 24 MiB buffer is freed.
SCRIPT = """
import ctypes, json, os, sys
import hf_tokbin.cli as cli

def report():
    import pyarrow as pa
    buffer = bytearray(64 << 20)
    address = ctypes.addressof((ctypes.c_char * 1).from_buffer(buffer))
    with open("/proc/self/maps") as maps:
        for line in maps:
            span, *rest = line.split()
            low, high = (int(x, 16) for x in span.split("-"))
            if low <= address < high:
                region = rest[4] if len(rest) > 4 else "", high - low
    del buffer  # above the 32 MiB kept free: handed back
    kept = bytearray(24 << 20)
    del kept  # below it: stays in the heap for the next batch
    with open("/proc/self/maps") as maps:
        ranges = [line.split()[0].split("-") for line in maps if line.rstrip().endswith("[heap]")]
        heap = sum(int(high, 16) - int(low, 16) for low, high in ranges)
    print(json.dumps({
        "pool": pa.default_memory_pool().backend_name,
        "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
        "region": region[0],
        "region_bytes": region[1],
        "heap_bytes_after_free": heap,
    }))
    return 0

cli.main = report
cli.exit_main()
"""

# The variables that tune glibc's malloc: a developer's or a CI image's own (some set MALLOC_MMAP_THRESHOLD_
# globally) are not the test's.
GLIBC_TUNING = ("GLIBC_TUNABLES", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_")


def _is_glibc() -> bool:
    try:
        return sys.platform.startswith("linux") and bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (
        ValueError,
        OSError,
        AttributeError,
    ):  # musl's confstr fails with EINVAL: the module must still be collected
        return False


glibc = pytest.mark.skipif(not _is_glibc(), reason="glibc's malloc only")


def _settings(**env) -> dict:
    environment = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ARROW_DEFAULT_MEMORY_POOL", "OPENBLAS_NUM_THREADS", *GLIBC_TUNING)
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env={**environment, **env}, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@glibc
def test_the_command_allocates_from_a_heap_it_keeps():
    settings = _settings()
    assert (
        settings["pool"] == "system"
    )  # Arrow's buffers through glibc, kept like the others (not mimalloc's purged pages)
    assert settings["openblas_threads"] == "1"
    assert (
        settings["region"] == "[heap]"
    )  # without the setting, glibc maps a 64 MiB buffer on its own and unmaps it on free
    assert (
        settings["heap_bytes_after_free"] >= 24 << 20
    )  # kept for the next batch (glibc's own trim threshold is 128 KiB)


@glibc
def test_what_the_user_set_wins():
    settings = _settings(
        ARROW_DEFAULT_MEMORY_POOL="mimalloc", OPENBLAS_NUM_THREADS="2", GLIBC_TUNABLES="glibc.malloc.check=0"
    )
    assert settings["pool"] == "mimalloc"
    assert settings["openblas_threads"] == "2"
    assert settings["region"] != "[heap]"  # the user tuned glibc: its default, a mapping of its own, is left as it is
    assert settings["region_bytes"] > 64 << 20


def test_a_library_users_process_is_left_alone():
    # Importing hf_tokbin (the API, or the CLI module) changes nothing: only exit_main does.
    code = (
        "import os, hf_tokbin, hf_tokbin.cli, hf_tokbin.api; "
        "print(os.environ.get('ARROW_DEFAULT_MEMORY_POOL'), os.environ.get('OPENBLAS_NUM_THREADS'))"
    )
    environment = {
        k: v for k, v in os.environ.items() if k not in ("ARROW_DEFAULT_MEMORY_POOL", "OPENBLAS_NUM_THREADS")
    }
    done = subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["None", "None"]


def test_the_command_runs_where_python_has_no_ctypes():
    # A Python built without libffi (a pyenv build on a machine without libffi-dev) has no ctypes: the command runs
    # untuned.
    code = (
        "import sys; sys.modules['ctypes'] = None; import hf_tokbin.cli as cli; "
        "sys.argv = ['hf-tokbin', '--version']; cli.exit_main()"
    )
    environment = {k: v for k, v in os.environ.items() if k not in GLIBC_TUNING}
    done = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("hf-tokbin ")


class _NoMallopt:
    def __getattr__(self, name):
        raise AttributeError(name)  # as ctypes reports a symbol the library does not export


def _no_ctypes(monkeypatch):
    monkeypatch.setitem(sys.modules, "ctypes", None)


def _no_dlopen(monkeypatch):
    import ctypes

    def refuse(name, *args, **kwargs):
        raise OSError(f"{name}: cannot dlopen in a static interpreter")

    monkeypatch.setattr(ctypes, "CDLL", refuse)


def _no_mallopt(monkeypatch):
    import ctypes

    monkeypatch.setattr(ctypes, "CDLL", lambda name, *args, **kwargs: _NoMallopt())


@pytest.mark.parametrize(
    "break_ctypes", [_no_ctypes, _no_dlopen, _no_mallopt], ids=["no ctypes", "no dlopen", "no mallopt"]
)
def test_a_failure_to_tune_glibc_is_silent(monkeypatch, break_ctypes):
    # The tuning only saves time: a glibc it cannot reach leaves the command to run as it would have.
    import hf_tokbin.cli as cli

    for name in ("ARROW_DEFAULT_MEMORY_POOL", "OPENBLAS_NUM_THREADS", *GLIBC_TUNING):
        monkeypatch.delenv(name, raising=False)  # also restores the two variables the call sets
    monkeypatch.setattr(os, "confstr", lambda name: "glibc 2.36", raising=False)  # glibc, on any platform
    break_ctypes(monkeypatch)
    cli.reuse_freed_memory()
    assert os.environ["ARROW_DEFAULT_MEMORY_POOL"] == "system"  # the variables are still set: they need no ctypes
