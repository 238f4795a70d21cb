"""A release folder on this machine's file system (``--out DIR``), and the :class:`Output` interface."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, TypeVar

from .._io import TMP_SUFFIX, notify, refuse_link, sha256_file, write_text_atomic
from ..errors import BuildError, shown
from ..formats.llmc_segments import copy_file_range_into
from ..formats.records import FileEntry

R = TypeVar("R")
LOCK_NAME = ".work/lock"  # inside the work folder: never part of a release, removed with it


_held: dict[str, int] = {}  # lock path -> its descriptor, for every output lock this process holds


@contextlib.contextmanager
def folder_lock(work: Path, location: str):
    """Hold an exclusive lock on a build's work folder; a second build of the same output refuses at once, naming the
    holder.

    The lock is ``filelock``'s (``flock`` on ``WORK/.work/lock``), opened with
    ``O_NOFOLLOW`` in a ``.work`` that is a real folder: a symlink or any other
    kind of file there is refused before anything is written. A build takes
    it once (:func:`hf_tokbin.pipeline.run_build`); the process holding it may
    take it again freely. Forked worker processes close their copy
    (:func:`_close_in_forked_child`), so a killed build's lock is free once the
    build itself is gone; a lock still held in the name of a process of this
    machine that no longer exists is taken over, saying so.
    """
    path = work / LOCK_NAME
    key = _key(path)
    if key in _held:
        yield
        return
    real_folder(work, LOCK_NAME.split("/")[0])
    refuse_link(path)
    lock = _acquire(path, location)
    try:
        refuse_links_under(work)  # held: nothing of ours changes the tree now; a planted link would be written through
        yield
    finally:
        fd = _held.pop(key, None)
        with contextlib.suppress(OSError):
            if fd is not None:
                os.ftruncate(fd, 0)  # released cleanly: no holder named, so nobody takes it for a killed build
        lock.release()


def _acquire(path: Path, location: str):
    """The acquired ``filelock`` of ``path``; a held lock refuses at once, unless its holder is gone (then it is taken
    over)."""
    import filelock

    for attempt in (1, 2):
        lock = filelock.FileLock(path, timeout=0, thread_local=False, on_acquired=lambda fd: _claim(path, fd))
        try:
            lock.acquire()
            return lock
        except filelock.Timeout:
            holder = _holder(path)
            if attempt == 1 and _is_gone(holder) and _take_over(path, holder):
                continue
            raise BuildError(
                location,
                "another build is writing this output",
                got=repr(holder or "another process"),
                hint="wait for it to finish, or use another --out",
            ) from None
    raise AssertionError("unreachable")  # pragma: no cover


def _claim(path: Path, fd: int) -> None:
    """Called by filelock with the lock held: check the file, say if a killed build left it, name this process."""
    refuse_link(path, os.fstat(fd))
    previous = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    if previous:
        notify(
            f"hf-tokbin: {path}: taking over the lock of a build that ended without releasing it ({shown(previous)})"
        )
    os.ftruncate(fd, 0)
    os.pwrite(fd, _holder_text().encode(), 0)
    _held[_key(path)] = fd


def _key(path: Path) -> str:
    """One name per lock file, however the output was spelled (its work folder is a real folder, never a symlink)."""
    return os.path.join(os.path.realpath(path.parent), path.name)


def _holder_text() -> str:
    return f"pid {os.getpid()} on {socket.gethostname()}"


def _holder(path: Path) -> str:
    """What the lock file says about its holder ('' if nothing can be read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return ""
    try:
        return shown(os.pread(fd, 200, 0).decode("utf-8", "replace").strip())
    finally:
        os.close(fd)


def _is_gone(holder: str) -> bool:
    """Whether ``holder`` names a process of this machine that no longer runs (its orphaned workers may still hold the
    lock)."""
    match = re.fullmatch(r"pid ([0-9]+) on (.+)", holder)
    if match is None or match.group(2) != socket.gethostname():
        return False
    try:
        os.kill(int(match.group(1)), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # alive, another user's
    return False


def _take_over(path: Path, holder: str) -> bool:
    """Move aside a lock file whose holder is gone, so a new lock file can be taken; False if it changed meanwhile."""
    aside = path.with_name(f"{path.name}.gone-{os.getpid()}")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return True
    if _holder(aside) != holder:  # another build took over first: put nothing back, refuse
        return False
    os.unlink(aside)
    notify(
        f"hf-tokbin: {path}: taking over the lock of {holder}, which no longer runs (its worker processes may still "
        "hold the old file)"
    )
    return True


def _close_in_forked_child() -> None:
    """In a forked child (a worker process): close the output locks' descriptors, so only the build holds its lock."""
    for fd in _held.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_in_forked_child)


def refuse_links_under(root: Path) -> None:
    """Raise if anything under ``root`` (hidden folders included) is a symlink or neither a file nor a folder.

    A pre-made output folder could hold ``shards -> /elsewhere``: a write to
    ``shards/train/...`` would land outside ``--out``. Symlinks are never followed.
    """
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            info = os.lstat(path)
            if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
                refuse_link(path, info)


def real_folder(root: Path, rel: str) -> Path:
    """``root/rel`` as a real folder, made if missing: no component of ``rel`` may be a symlink or a file."""
    folder = Path(root)
    if folder.exists() and not folder.is_dir():
        raise BuildError(folder, "the output must be a folder, and this is a file", hint="use another --out")
    folder.mkdir(parents=True, exist_ok=True)
    for part in Path(rel).parts:
        folder = folder / part
        with contextlib.suppress(FileExistsError):
            folder.mkdir()
        info = os.lstat(folder)
        if not stat.S_ISDIR(info.st_mode):
            kind = "a symlink" if stat.S_ISLNK(info.st_mode) else "a file"
            raise BuildError(
                folder,
                "hf_tokbin writes only into real folders, never through a symlink",
                got=kind,
                hint="remove it, or use another --out",
            )
    return folder


def checked_range(where: str, data: bytes, start: int, length: int) -> bytes:
    """``data`` if it is the ``length`` bytes asked for; else the file was shorter than its record says."""
    if len(data) != length:
        raise BuildError(
            where,
            "file is shorter than its record says",
            expected=f"{length} bytes from byte {start}",
            got=f"{len(data)} bytes",
            hint="run the build again",
        )
    return data


def local_matches(path: Path, entry: FileEntry) -> bool:
    """Whether ``path`` is a regular file (not a symlink) with the entry's size and SHA-256."""
    return (
        path.is_file()
        and not path.is_symlink()
        and path.stat().st_size == entry.size
        and sha256_file(path) == entry.sha256
    )


@dataclass(frozen=True)
class Output:
    """Where a release goes. Paths are relative posix paths inside the release; plain values only (it pickles to Ray
    workers).

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
            raise BuildError(
                self.location(entry.path),
                "file must match its recorded size and SHA-256",
                expected=entry.sha256,
                hint="run the build again",
            )

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
