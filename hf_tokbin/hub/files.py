"""What a push publishes: files with sizes and SHA-256, grouped, checked locally first.

The Hub code knows two kinds of folder, by their record file:

- a tokenized **release** (``COMPLETE.json``, see :mod:`hf_tokbin.formats.release`):
  every file ``COMPLETE.json`` lists goes up, each part's files together with
  its receipt (one group), then ``COMPLETE.json`` alone, last. If
  ``COMPLETE.json`` does not list a ``README.md``, the dataset card is rendered
  from the release and goes up with the other files.
- a raw **corpus** (``_MANIFEST.json``, see :mod:`hf_tokbin.formats.corpus_manifest`):
  every shard the manifest lists and the ``README.md`` card go up, then
  ``_MANIFEST.json`` alone, last.

Nothing here knows token layouts: only paths, sizes, SHA-256 digests and the
grouping "a part's files and its receipt go together".
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from .._io import sha256_bytes, sha256_file
from ..errors import VerificationError
from ..formats.corpus_manifest import MANIFEST_NAME, CorpusManifest
from ..formats.records import FileEntry
from ..formats.release import (
    CARD_NAME,
    COMPLETE_NAME,
    RECEIPTS_DIR,
    Complete,
)
from ..verify.checks import check_files, check_receipts

_BLOB_CHUNK = 1 << 20


@dataclass(frozen=True)
class Upload:
    """One file to publish: its path in the repo (= relative to the folder), size, SHA-256, bytes."""

    path: str
    size: int
    sha256: str
    source: Path | bytes  # a local file, or content rendered in memory (the dataset card)

    @classmethod
    def from_file(cls, root: Path, entry: FileEntry) -> "Upload":
        return cls(entry.path, entry.size, entry.sha256, root / entry.path)

    @classmethod
    def from_bytes(cls, path: str, data: bytes) -> "Upload":
        return cls(path, len(data), sha256_bytes(data), data)

    def git_blob_id(self) -> str:
        """Git's object id of the content: SHA-1 of ``b"blob <size>\\0"`` + content.

        The Hub stores small text files as plain git blobs and reports only this id for them.
        """
        digest = hashlib.sha1(b"blob %d\0" % self.size)
        if isinstance(self.source, bytes):
            digest.update(self.source)
        else:
            with open(self.source, "rb") as file:
                while chunk := file.read(_BLOB_CHUNK):
                    digest.update(chunk)
        return digest.hexdigest()


@dataclass(frozen=True)
class PublishPlan:
    """Groups of uploads that must share a commit, and the record file that goes up alone, last."""

    root: Path
    kind: str  # "release" or "corpus"
    groups: tuple[tuple[Upload, ...], ...]
    final: Upload

    @property
    def uploads(self) -> list[Upload]:
        return [u for group in self.groups for u in group] + [self.final]


def publish_plan(folder: str | os.PathLike, progress: bool = True) -> PublishPlan:
    """Check a release or corpus folder byte for byte and say what goes up, in which groups."""
    root = Path(folder)
    if (root / COMPLETE_NAME).is_file():
        return release_plan(root, progress)
    if (root / MANIFEST_NAME).is_file():
        return corpus_plan(root, progress)
    raise VerificationError(root, "not a release or corpus folder", expected=f"{COMPLETE_NAME} (release) or {MANIFEST_NAME} (corpus)", got="neither")


def release_plan(root: Path, progress: bool = True) -> PublishPlan:
    complete = Complete.read(root / COMPLETE_NAME)
    check_files(root, complete.files, COMPLETE_NAME, progress)
    receipts = check_receipts(root, complete)
    grouped: set[str] = set()
    groups = []
    for receipt in receipts:
        members = [entry.path for entry in receipt.files] + [f"{RECEIPTS_DIR}/{receipt.part}.json"]
        grouped.update(members)
        groups.append(members)
    groups += [[f.path] for f in complete.files if f.path not in grouped]
    by_path = {f.path: Upload.from_file(root, f) for f in complete.files}
    upload_groups = [tuple(by_path[p] for p in members) for members in groups]
    if CARD_NAME not in by_path:
        # A release built before cards were written: render its card now (it is then not in COMPLETE.json).
        from ..cards.release import render_release_card

        upload_groups.append((Upload.from_bytes(CARD_NAME, render_release_card(root).encode("utf-8")),))
    final = Upload.from_file(root, _entry_of(root, COMPLETE_NAME))
    return PublishPlan(root, "release", tuple(upload_groups), final)


def corpus_plan(root: Path, progress: bool = True) -> PublishPlan:
    manifest = CorpusManifest.read(root)
    shards = [FileEntry(s.path, s.size, s.sha256) for s in manifest.shards]
    check_files(root, shards, MANIFEST_NAME, progress)
    if not (root / CARD_NAME).is_file():
        raise VerificationError(root / CARD_NAME, "a corpus folder needs its dataset card (its configs make load_dataset work)", hint="re-run hf-tokbin corpus")
    groups = [(Upload.from_file(root, s),) for s in shards]
    groups.append((Upload.from_file(root, _entry_of(root, CARD_NAME)),))
    return PublishPlan(root, "corpus", tuple(groups), Upload.from_file(root, _entry_of(root, MANIFEST_NAME)))


def _entry_of(root: Path, name: str) -> FileEntry:
    path = root / name
    return FileEntry(name, path.stat().st_size, sha256_file(path))
