"""Which thread opens or maps which token file: the driver of a local-engine run must leave them to its task threads.

A local engine runs its tasks on threads named ``hf_tokbin-task...`` (:func:`hf_tokbin.engines.local.run_in_threads`);
whatever opens or maps a token file (a Megatron or llm.c ``.bin``, an llm.c segment's ``.tokens``) on any other
thread is the driver reading tokens. Every opening of an ``.idx`` or a segment's ``.ends`` is recorded too (records:
the driver may binary-search them), so a test can see that a task read
them. ``open`` (Python's, which ``np.memmap`` and ``sha256_file`` use) and
``np.memmap`` are wrapped for the length of a ``with`` block.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import threading

import numpy as np

TASK_THREAD = "hf_tokbin-task"
_state = threading.local()  # .ranged: inside a ranged read, recorded by the caller with its length
TOKEN_SUFFIXES = (".bin", ".tokens")
RECORDED_SUFFIXES = (*TOKEN_SUFFIXES, ".idx", ".ends")


@contextlib.contextmanager
def recording_token_reads():
    """Yield a list that fills with ``(thread name, path)`` for every token file opened or mapped in the block."""
    seen: list[tuple[str, str]] = []
    real_open, real_memmap = builtins.open, np.memmap

    def note(path) -> None:
        if isinstance(path, int) or getattr(_state, "ranged", False):
            return
        name = str(path)
        if name.endswith(RECORDED_SUFFIXES):
            seen.append((threading.current_thread().name, name))

    def recording_open(file, *args, **kwargs):
        note(file)
        return real_open(file, *args, **kwargs)

    class RecordingMemmap(real_memmap):
        def __new__(cls, filename, *args, **kwargs):
            note(filename)
            return real_memmap.__new__(real_memmap, filename, *args, **kwargs)

    builtins.open, io.open, np.memmap = recording_open, recording_open, RecordingMemmap
    try:
        yield seen
    finally:
        builtins.open, io.open, np.memmap = real_open, real_open, real_memmap


@contextlib.contextmanager
def ranged_read():
    """A ranged read (a few bytes of a file, counted by the caller): its opening is not recorded."""
    _state.ranged = True
    try:
        yield
    finally:
        _state.ranged = False


def on_the_driver(seen: list[tuple[str, str]]) -> list[str]:
    """The token files opened by a thread other than the engine's tasks."""
    return sorted(
        {path for thread, path in seen if not thread.startswith(TASK_THREAD) and path.endswith(TOKEN_SUFFIXES)}
    )
