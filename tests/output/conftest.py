"""A build lock held by another process, for the lock tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# Holds ``flock`` on argv[1] (made if missing), writes argv[2]
# into it when given, says "held", waits for stdin to close.
HOLDER = r"""
import fcntl, os, sys
os.makedirs(os.path.dirname(sys.argv[1]), exist_ok=True)
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
if len(sys.argv) > 2:
    os.ftruncate(fd, 0)
    os.pwrite(fd, sys.argv[2].encode(), 0)
print("held", flush=True)
sys.stdin.read()
"""


class LockHolder:
    """Another process holding ``path``'s lock until :meth:`release`; ``text`` is what it writes into the file."""

    def __init__(self, path: Path, text: str | None = None):
        args = [sys.executable, "-c", HOLDER, str(path)] + ([text] if text is not None else [])
        self.process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout.readline().strip() == "held"

    def release(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=60)


@pytest.fixture
def hold_lock():
    """``hold_lock(path, text=None)``: a :class:`LockHolder`, released at the end of the test."""
    holders = []

    def hold(path: Path, text: str | None = None) -> LockHolder:
        holders.append(LockHolder(path, text))
        return holders[-1]

    yield hold
    for holder in holders:
        holder.release()
