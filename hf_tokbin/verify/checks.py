"""The file checks verify, push and pull share: every file a record lists has its size and SHA-256."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from .._io import progress_bar, sha256_file
from ..errors import VerificationError
from ..formats.records import FileEntry
from ..formats.release import COMPLETE_NAME, RECEIPTS_DIR, Complete, Receipt


def check_files(
    root: Path,
    entries: Iterable[FileEntry],
    listed_in: str,
    progress: bool = True,
    hash_here: Callable[[str], bool] | None = None,
) -> None:
    """Check that every entry's file under ``root`` has its size and SHA-256; raise for the first (in ``entries``'
    order) that does not.

    ``listed_in`` names the record the entries come from (``COMPLETE.json``, a receipt...)
    so the error says which promise is broken. Files are hashed side by side on
    one thread per core (``hashlib`` releases the GIL): a release's files are a
    few large ones, each read once. ``hash_here(path)`` false: only the size is
    checked here, the digest by a task (:func:`check_digest`) that reads the file anyway.
    """
    from concurrent.futures import ThreadPoolExecutor

    entries = list(entries)
    threads = max(1, min(len(entries), os.cpu_count() or 1))
    with progress_bar(
        total=sum(e.size for e in entries),
        unit="B",
        unit_scale=True,
        desc=f"checking {listed_in}",
        disable=not progress,
        leave=False,
    ) as bar:
        with ThreadPoolExecutor(threads, thread_name_prefix="hf_tokbin-sha256") as pool:
            futures = [
                pool.submit(_check_file, root, entry, listed_in, hash_here is None or hash_here(entry.path))
                for entry in entries
            ]
            try:
                for entry, future in zip(entries, futures):
                    future.result()
                    bar.update(entry.size)
            finally:
                for future in futures:  # a broken file: the files not started yet are not read
                    future.cancel()


def _check_file(root: Path, entry: FileEntry, listed_in: str, digest: bool) -> None:
    check_present(root, entry, listed_in)
    if digest:
        check_digest(root, entry, listed_in)


def check_present(root: Path, entry: FileEntry, listed_in: str) -> None:
    """The entry's file is a regular file under ``root`` (no symlink on the way) of the listed size."""
    path = root / entry.path
    linked = _through_symlink(root, entry.path)
    if linked or not path.is_file():
        rule = "is reached through a symlink: a release holds only regular files" if linked else "is missing"
        raise VerificationError(path, f"file listed in {listed_in} {rule}")
    size = path.stat().st_size
    if size != entry.size:
        raise VerificationError(path, f"size differs from {listed_in}", expected=entry.size, got=size)


def check_digest(root: Path, entry: FileEntry, listed_in: str) -> None:
    """The entry's file has the listed SHA-256."""
    digest = sha256_file(root / entry.path)
    if digest != entry.sha256:
        raise VerificationError(
            root / entry.path, f"SHA-256 differs from {listed_in}", expected=entry.sha256, got=digest
        )


def _through_symlink(root: Path, rel: str) -> bool:
    """Whether ``root/rel`` or any folder on the way to it is a symlink (it could lead outside ``root``)."""
    path = root
    for part in rel.split("/"):
        path = path / part
        if path.is_symlink():
            return True
    return False


def check_receipts(root: Path, complete: Complete) -> list[Receipt]:
    """Read every receipt ``COMPLETE.json`` lists; each file a receipt names must be listed identically.

    With :func:`check_files` over ``COMPLETE.json`` this checks every file against its receipt too.
    """
    listed = {f.path: f for f in complete.files}
    receipts = []
    for path in sorted(p for p in listed if p.startswith(f"{RECEIPTS_DIR}/") and p.endswith(".json")):
        receipt = Receipt.read(root / path)
        for entry in receipt.files:
            if listed.get(entry.path) != entry:
                got = listed[entry.path].to_dict() if entry.path in listed else "not listed"
                raise VerificationError(
                    root / path,
                    f"receipt disagrees with {COMPLETE_NAME} about {entry.path}",
                    expected=entry.to_dict(),
                    got=got,
                )
        receipts.append(receipt)
    return receipts

