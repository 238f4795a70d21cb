"""Small file helpers shared by every writer: atomic writes, SHA-256, canonical JSON.

Every output is written to a temporary name beside its final name, fsynced and
renamed with :func:`os.replace`, so a killed process never leaves a file under
its final name that could be taken for complete.

A full disk is one line naming the file being written (:func:`naming_the_file`,
:func:`disk_full_error`), whichever library was writing.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import hashlib
import json
import os
import stat
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Iterator

TMP_SUFFIX = ".tmp"
_HASH_CHUNK = 1 << 22
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})  # no space left; disk quota exceeded


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1: "1 commit", "2 commits", "1,000 documents"."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def notify(message: str) -> None:
    """A line for the user on stderr that does not break progress bars (credentials in it masked)."""
    from tqdm.auto import tqdm

    from .errors import mask_secrets

    tqdm.write(mask_secrets(message), file=sys.stderr)


class _HiddenBar:
    """What a build asks of a tqdm bar, doing nothing: a hidden bar without importing tqdm."""

    def __init__(self, iterable=None):
        self._iterable = iterable

    def __iter__(self):
        return iter(self._iterable)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(iterable=None, *, disable: bool, **options):
    """``tqdm.auto.tqdm(iterable, **options)``, or when ``disable``
    a stand-in: a quiet build never imports tqdm (0.04 s).
    """
    if disable:
        return _HiddenBar(iterable)
    from tqdm.auto import tqdm

    return tqdm(iterable, disable=False, **options)


def tmp_path_for(path: str | os.PathLike) -> Path:
    """The temporary name a file is written under before it is renamed to ``path``."""
    path = Path(path)
    return path.with_name(f".{path.name}{TMP_SUFFIX}")


def fsync_path(path: str | os.PathLike) -> None:
    """Flush a file (or folder) written by someone else, e.g. a library's writer, to disk; errors propagate."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: str | os.PathLike) -> None:
    """Make a rename inside ``path`` durable (no-op where directories cannot be opened or synced)."""
    try:
        fsync_path(path)
    except OSError:
        pass


def commit_file(tmp: str | os.PathLike, final: str | os.PathLike) -> None:
    """Rename a finished, fsynced temporary file to its final name, durably."""
    os.replace(tmp, final)
    fsync_dir(Path(final).parent)


@contextlib.contextmanager
def naming_the_file(path: str | os.PathLike) -> Iterator[None]:
    """An OSError raised while writing ``path`` names it, if it names no file yet.

    A failed ``write()``, ``flush()`` or ``fsync()`` (a full disk) says
    ``[Errno 28] No space left on device`` and nothing else: which file it
    was is known only here.
    """
    try:
        yield
    except OSError as e:
        if e.filename is None:
            e.filename = os.fspath(path)
        raise


def refuse_link(path: str | os.PathLike, info: os.stat_result | None = None) -> None:
    """Raise unless ``path`` is missing or a regular file: a symlink, folder, FIFO or device is never written through.

    ``info`` is the path's ``lstat`` if the caller has it. A planted symlink
    (``OUT/.work/lock`` pointing at a user's file) would otherwise make a
    write land outside the folder given.
    """
    from .errors import BuildError

    if info is None:
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return
    if not stat.S_ISREG(info.st_mode):
        kind = (
            "a symlink"
            if stat.S_ISLNK(info.st_mode)
            else "a folder"
            if stat.S_ISDIR(info.st_mode)
            else "another kind of file"
        )
        raise BuildError(
            path,
            "hf_tokbin writes only regular files it creates, never through a symlink",
            got=kind,
            hint="remove it, or use another --out",
        )


# O_NOFOLLOW: the last component is never a symlink; O_EXCL: the
# file is new, so no hard link to another file is truncated.
_CREATE_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_BINARY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def create_file(path: str | os.PathLike, mode: str = "wb") -> IO:
    """Open a new regular file at ``path`` for writing: the one way hf_tokbin creates a file it writes.

    A leftover regular file (a killed run's temporary) is replaced; a symlink
    or any other kind of file there is refused (:func:`refuse_link`) before
    anything is written.
    """
    refuse_link(path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a stale temporary of ours: a new inode, never the old one's (it may be a hard link)
    try:
        fd = os.open(path, _CREATE_FLAGS, 0o644)
    except FileExistsError:
        refuse_link(path)  # planted between the unlink and the open
        raise
    except OSError as e:
        if e.errno == errno.ELOOP:
            refuse_link(path)
        raise
    text = "b" not in mode
    return os.fdopen(fd, mode, encoding="utf-8" if text else None, newline="\n" if text else None)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "wb") -> Iterator[IO]:
    """Open ``path`` for writing under a temporary name; rename it on success only."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path_for(path)
    file = create_file(tmp, mode)
    try:
        with naming_the_file(path):
            yield file
            file.flush()
            os.fsync(file.fileno())
            file.close()
        commit_file(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            file.close()  # a full disk fails the close's flush too: the first error is the one to report
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def disk_full_cause(error: BaseException) -> OSError | None:
    """The "no space left" OSError behind ``error``: itself, or
    one it was raised from or during (datasets wraps a writer's).
    """
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in DISK_FULL_ERRNOS:
            return error
        error = error.__cause__ or error.__context__
    return None


def disk_full_error(error: BaseException, where: str | os.PathLike | None = None):
    """A one-line error for a full disk behind ``error`` (None if the disk is not the cause).

    It names the file being written if the error knows it (see
    :func:`naming_the_file`), else ``where`` (the folder being written).
    """
    from .errors import BuildError

    full = disk_full_cause(error)
    if full is None:
        return None
    place = full.filename if full.filename is not None else where
    return BuildError(
        place,
        "writing needs free space on the disk" if full.errno == errno.ENOSPC else "writing needs free disk quota",
        got=f"[Errno {full.errno}] {full.strerror}",
        hint=(
            "free space on that disk, then run the same command again: "
            "finished parts are kept, partial files are not"
        ),
    )


def write_errors_of_libraries() -> tuple[type[BaseException], ...]:
    """OSError, and the errors loaded libraries wrap a writer's OSError in (datasets' DatasetGenerationError).

    A library never imported raised nothing, so only loaded ones count.
    """
    found = [OSError]
    exceptions = sys.modules.get("datasets.exceptions")
    if exceptions is not None:
        found.append(exceptions.DatasetGenerationError)
    return tuple(found)


def canonical_json(obj) -> str:
    """JSON text that is byte-identical for equal objects: fixed key order, 2-space indent, final newline."""
    return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write UTF-8 ``text`` to ``path`` under a temporary name, fsync, rename."""
    with atomic_open(path, "w") as file:
        file.write(text)


def write_json_atomic(path: str | os.PathLike, obj) -> None:
    write_text_atomic(path, canonical_json(obj))


def sha256_file(path: str | os.PathLike) -> str:
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def write_all(fd: int, data) -> None:
    """Write every byte of ``data`` to the open file ``fd`` (``os.write`` may write fewer)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class BackgroundSha256:
    """SHA-256 of buffers fed in order, computed on one worker thread.

    hashlib releases the GIL on large buffers, so hashing one batch overlaps
    the numpy work and ``write()`` of the next: a writer hashes its output as
    it streams instead of re-reading the file at close (see
    scripts/bench_writers.py). At most ``backlog`` buffers wait, so memory
    stays bounded. A buffer must not change after it is fed.
    """

    def __init__(self, backlog: int = 4):
        self._sha = hashlib.sha256()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hf_tokbin-sha256")
        self._pending = collections.deque()
        self._backlog = backlog

    def update(self, buffer) -> None:
        self._pending.append(self._pool.submit(self._sha.update, buffer))
        while len(self._pending) > self._backlog:
            self._pending.popleft().result()

    def hexdigest(self) -> str:
        """Wait for every buffer fed, stop the worker and return the digest."""
        while self._pending:
            self._pending.popleft().result()
        self._pool.shutdown()
        return self._sha.hexdigest()

    def cancel(self) -> None:
        self._pending.clear()
        self._pool.shutdown(cancel_futures=True)


# The largest JSON record read (run_config.json, COMPLETE.json, receipts, manifests, a tokenizer's configs): a
# COMPLETE.json of a million files is ~150 MB; anything larger is refused before it is read, never held in memory.
RECORD_MAX_BYTES = 256 * 1024 * 1024


# Characters no string of a record may hold: C0/C1 controls (newline, escape), lone surrogates, line and paragraph
# separators, and the bidi controls that reorder what a terminal or editor shows (Trojan Source).
_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_CONTROL_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})


def is_control_character(char: str) -> bool:
    import unicodedata

    return char in _BIDI_CONTROLS or unicodedata.category(char) in _CONTROL_CATEGORIES


def control_character_field(obj, where: str = "") -> tuple[str, str] | None:
    """``(field, string)`` of the first key or string value under ``obj`` holding a control character, or None.

    ``field`` is written ``tokenizer.revision``, ``files[3].path``.
    """
    if isinstance(obj, str):
        return (where or "(top level)", obj) if any(map(is_control_character, obj)) else None
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, value in items:
        if isinstance(key, str) and any(map(is_control_character, key)):
            return (f"{where}.{key}" if where else key, key)
        found = control_character_field(
            value, f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}" if where else key
        )
        if found is not None:
            return found
    return None


def read_json(path: str | os.PathLike, error_type, free_text: bool = False) -> dict:
    """Read a JSON object, raising ``error_type`` (a located error) if it is not one.

    One error naming the file for whatever the file holds: not a regular file
    (a folder, a FIFO that would block), over :data:`RECORD_MAX_BYTES`, not
    UTF-8, not JSON, nested beyond Python's recursion limit, or an integer
    beyond Python's digit limit, or (every record hf_tokbin writes) a control
    character in any key or string: a newline in ``tokenizer.revision`` must
    never reach a printed recipe line. ``free_text``: a file of another tool
    (a tokenizer's configs, a chat template) whose strings may hold anything.
    """
    return parse_json(read_record_bytes(path, error_type), path, error_type, free_text)


def read_record_bytes(path: str | os.PathLike, error_type, max_bytes: int = RECORD_MAX_BYTES) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``, read once; else one ``error_type`` naming it."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it changes nothing for a regular file.
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as file:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise error_type(path, "a record must be a regular file")
            data = file.read(max_bytes + 1)
    except FileNotFoundError:
        raise error_type(path, "file is missing") from None
    except IsADirectoryError:
        raise error_type(path, "a record must be a regular file", got="a folder") from None
    except OSError as e:
        raise error_type(path, "cannot read the record", got=e.strerror or str(e)) from None
    if len(data) > max_bytes:
        raise error_type(
            path, f"record is larger than {max_bytes:,} bytes, the most a record may be", got=f"{info.st_size:,} bytes"
        )
    return data


def parse_json(data: bytes, path: str | os.PathLike, error_type, free_text: bool = False) -> dict:
    """The JSON object ``data`` (read from ``path``) holds, by :func:`read_json`'s rules."""
    try:
        obj = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise error_type(path, "not valid JSON: nested too deeply") from None
    except ValueError as e:  # UnicodeDecodeError, JSONDecodeError, an integer over the digit limit
        raise error_type(path, "not valid UTF-8 JSON", got=str(e).splitlines()[0][:200]) from None
    if not isinstance(obj, dict):
        raise error_type(path, "top level must be a JSON object", got=type(obj).__name__)
    found = None if free_text else control_character_field(obj)
    if found is not None:
        from .errors import shown

        raise error_type(
            path,
            f"{found[0]}: a record's strings hold no control characters (newline, escape, bidi control)",
            got=shown(found[1]),
        )
    return obj
