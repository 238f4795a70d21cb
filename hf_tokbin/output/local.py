"""A release folder on this machine's file system (``--out DIR``), and the :class:`Output` interface."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, TypeVar

from .._io import TMP_SUFFIX, sha256_file, write_text_atomic
from ..errors import BuildError
from ..formats.llmc_segments import copy_file_range_into
from ..formats.records import FileEntry

R = TypeVar("R")
LOCK_NAME = ".work/lock"  # inside the work folder: never part of a release, removed with it


@contextlib.contextmanager
def folder_lock(work: Path, location: str):
    """Hold an exclusive lock on a build's work folder; a second build of the same output refuses at once, naming the holder."""
    import fcntl

    path = work / LOCK_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
            raise BuildError(location, "another build is writing this output", got=repr(holder), hint="wait for it to finish, or use another --out") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def checked_range(where: str, data: bytes, start: int, length: int) -> bytes:
    """``data`` if it is the ``length`` bytes asked for; else the file was shorter than its record says."""
    if len(data) != length:
        raise BuildError(where, "file is shorter than its record says", expected=f"{length} bytes from byte {start}", got=f"{len(data)} bytes", hint="run the build again")
    return data


def local_matches(path: Path, entry: FileEntry) -> bool:
    """Whether ``path`` is a regular file (not a symlink) with the entry's size and SHA-256."""
    return path.is_file() and not path.is_symlink() and path.stat().st_size == entry.size and sha256_file(path) == entry.sha256


@dataclass(frozen=True)
class Output:
    """Where a release goes. Paths are relative posix paths inside the release; plain values only (it pickles to Ray workers).

    ``root`` is the folder or URL the user named; :attr:`work` the local folder this machine writes into.
    """

    root: str

    @property
    def work(self) -> Path:
        raise NotImplementedError

    def location(self, rel: str) -> str:
        """Where ``rel`` is, for messages."""
        raise NotImplementedError

    def read_bytes(self, rel: str) -> bytes | None:
        """The published bytes of ``rel``, or None if there is none."""
        raise NotImplementedError

    def write_text(self, rel: str, text: str) -> None:
        """Publish a small file directly (``run_config.json``, ``COMPLETE.json``), atomically."""
        raise NotImplementedError

    def names(self) -> list[str]:
        """The names directly inside the release ([] if it does not exist)."""
        raise NotImplementedError

    def matches(self, entry: FileEntry) -> bool:
        """Whether the published ``entry.path`` has the entry's size and SHA-256 (read back in full)."""
        raise NotImplementedError

    def publish(self, rels: Iterable[str]) -> None:
        """Make these files of :attr:`work` final at the output, in the order given."""
        raise NotImplementedError

    def fetch(self, entry: FileEntry) -> None:
        """Make ``work/entry.path`` hold the published file, checked against its size and SHA-256."""
        raise NotImplementedError

    def read_range(self, rel: str, start: int, length: int) -> bytes:
        """``length`` bytes of the published ``rel`` from byte ``start`` (an error if the file is shorter)."""
        raise NotImplementedError

    def copy_range_into(self, rel: str, start: int, length: int, fd: int) -> None:
        """Append ``length`` bytes of the published ``rel`` from byte ``start`` to the open file ``fd``."""
        raise NotImplementedError

    def remove_tree(self, rel: str) -> None:
        raise NotImplementedError

    def scratch(self) -> "Output | None":
        """This machine's unpublished work as an output of its own (None when work is published as written)."""
        return None

    def discard_work(self) -> None:
        """Remove what :attr:`work` still holds once the release is published (nothing for a local folder)."""

    def read_record(self, rel: str, reader: Callable[[Path], R]) -> R | None:
        """``reader(path)`` on the published ``rel`` (a receipt or COMPLETE.json), or None if missing."""
        raise NotImplementedError

    def lock(self):
        """A context manager: this build alone writes the output from this machine (see :func:`folder_lock`)."""
        return folder_lock(self.work, self.root)

    def remove_temporaries(self) -> None:
        """Delete half-written files a killed run left in :attr:`work`."""
        if self.work.exists():
            for stale in self.work.rglob(f".*{TMP_SUFFIX}"):
                stale.unlink()


@dataclass(frozen=True)
class LocalFolder(Output):
    """``--out DIR``: this machine writes straight into the release folder."""

    @property
    def work(self) -> Path:
        return Path(self.root)

    def location(self, rel: str) -> str:
        return str(Path(self.root) / rel)

    def read_bytes(self, rel: str) -> bytes | None:
        path = Path(self.root) / rel
        return path.read_bytes() if path.is_file() else None

    def write_text(self, rel: str, text: str) -> None:
        write_text_atomic(Path(self.root) / rel, text)

    def names(self) -> list[str]:
        root = Path(self.root)
        return sorted(p.name for p in root.iterdir()) if root.is_dir() else []

    def matches(self, entry: FileEntry) -> bool:
        return local_matches(Path(self.root) / entry.path, entry)

    def publish(self, rels: Iterable[str]) -> None:
        pass  # written in place: already final

    def fetch(self, entry: FileEntry) -> None:
        if not self.matches(entry):
            raise BuildError(self.location(entry.path), "file must match its recorded size and SHA-256", expected=entry.sha256, hint="run the build again")

    def read_range(self, rel: str, start: int, length: int) -> bytes:
        with open(Path(self.root) / rel, "rb") as file:
            data = os.pread(file.fileno(), length, start)
        return checked_range(self.location(rel), data, start, length)

    def copy_range_into(self, rel: str, start: int, length: int, fd: int) -> None:
        copy_file_range_into(Path(self.root) / rel, start, length, fd)

    def remove_tree(self, rel: str) -> None:
        shutil.rmtree(Path(self.root) / rel, ignore_errors=True)

    def read_record(self, rel: str, reader: Callable[[Path], R]) -> R | None:
        path = Path(self.root) / rel
        return reader(path) if path.exists() else None
