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

:func:`check_hub_limits` is the Hub's repository limits as a pure function of
paths (and sizes), for push and for build planning alike.
"""

from __future__ import annotations

import collections
import hashlib
import os
import posixpath
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG
from typing import Callable, Iterable, Mapping

from .._io import sha256_bytes, sha256_file
from ..errors import HubError, VerificationError
from ..formats.corpus_manifest import MANIFEST_NAME, CorpusManifest
from ..formats.records import FileEntry
from ..formats.release import (
    CARD_NAME,
    COMPLETE_NAME,
    RECEIPTS_DIR,
    SHARDS_DIR,
    TOKENS_DIR,
    Complete,
)
from ..formats.rules import is_folder_name
from ..verify.checks import check_files, check_receipts

_BLOB_CHUNK = 1 << 20

# The Hub's repository limits (https://huggingface.co/docs/hub/repositories-recommendations,
# https://huggingface.co/docs/hub/storage-limits): a folder holds fewer than 10k entries (files
# and subfolders), a repo fewer than 100k files, a file at most 50 GB (20 GB recommended).
HUB_MAX_ENTRIES_PER_FOLDER = 10_000
HUB_MAX_FILES_PER_REPO = 100_000
HUB_MAX_FILE_SIZE = 50 * 1000**3

# Files up to this size (receipts, JSON records, the card) are read into memory once at commit
# time: the bytes checked are the bytes sent. Bigger files are hashed once, by the client, before
# any request, and sent from their path; a rewrite is noticed by its size and mtime, and the
# read-back of a plain git blob re-checks the file's SHA-256 with its blob id.
INLINE_MAX_BYTES = 2**20

# The folders a record's own files live in: remote files there that the record does not list
# belong to another release or corpus, and would be mixed with this one.
LAYOUT_DIRS = {"release": (SHARDS_DIR, RECEIPTS_DIR, TOKENS_DIR), "corpus": ("data",)}


def folder_entries(paths: Iterable[str]) -> dict[str, int]:
    """Entries (files and subfolders) directly inside each folder of a repo holding ``paths`` ("" is the top)."""
    children: dict[str, set[str]] = collections.defaultdict(set)
    for path in paths:
        parts = path.split("/")
        for depth in range(len(parts)):
            children["/".join(parts[:depth])].add(parts[depth])
    return {folder: len(names) for folder, names in children.items()}


def check_hub_limits(
    paths: Iterable[str], sizes: Mapping[str, int] | None = None, where=None, hint: str | None = None
) -> None:
    """Raise :class:`HubError` when a repo holding ``paths`` would break one of the Hub's limits.

    ``sizes`` (path -> bytes) is optional: build planning knows the paths before any file exists.
    """
    paths = list(paths)
    for folder, count in sorted(folder_entries(paths).items()):
        if count > HUB_MAX_ENTRIES_PER_FOLDER:
            name = f"{folder}/" if folder else "the repo's top folder"
            raise HubError(
                where,
                f"{name} would hold {count:,} entries, the Hub allows "
                f"at most {HUB_MAX_ENTRIES_PER_FOLDER:,} per folder",
                hint=hint or "fewer, bigger parts (a larger shard size)",
            )
    if len(paths) > HUB_MAX_FILES_PER_REPO:
        raise HubError(
            where,
            f"the repo would hold {len(paths):,} files, the Hub recommends at most {HUB_MAX_FILES_PER_REPO:,}",
            hint=hint or "fewer, bigger parts, or one repo per release",
        )
    for path, size in sorted((sizes or {}).items()):
        if size > HUB_MAX_FILE_SIZE:
            raise HubError(
                where,
                f"{path} is {size:,} bytes, the Hub's largest file is {HUB_MAX_FILE_SIZE:,} bytes",
                hint=hint or "smaller shards",
            )


def normalize_path_in_repo(prefix: str | None) -> str:
    """``--path-in-repo`` as a folder prefix ("" or "a/b/"): relative, no ``.``/``..``, nothing hidden."""
    if prefix is None or prefix.strip("/") == "":
        return ""
    if not isinstance(prefix, str) or "\\" in prefix or prefix.startswith("/"):
        raise HubError(None, "path in repo must be a relative folder such as releases/v1", got=repr(prefix))
    parts = prefix.strip("/").split("/")
    for part in parts:
        if not is_folder_name(part):
            raise HubError(
                None,
                "path in repo must be a relative folder such as releases/v1 (no empty, '.', '..' or hidden parts)",
                got=repr(prefix),
            )
    return posixpath.join(*parts) + "/"


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

    def to_dict(self) -> dict:
        """What a push would add (``push --dry-run --json``): the file's identity, not its bytes."""
        return {"path": self.path, "size": self.size, "sha256": self.sha256}

    def git_blob_id(self) -> str:
        """Git's object id of the content: SHA-1 of ``b"blob <size>\\0"`` + content.

        The Hub stores small text files as plain git blobs and reports only this id for them.
        The content read is checked against ``sha256`` in the same pass, so the id is never
        that of a file changed since its record vouched for it.
        """
        digest, sha = hashlib.sha1(b"blob %d\0" % self.size), hashlib.sha256()
        if isinstance(self.source, bytes):
            digest.update(self.source)
            sha.update(self.source)
        else:
            with open(self.source, "rb") as file:
                while chunk := file.read(_BLOB_CHUNK):
                    digest.update(chunk)
                    sha.update(chunk)
        self.check_digest(
            sha.hexdigest(), self.size if isinstance(self.source, bytes) else os.path.getsize(self.source)
        )
        return digest.hexdigest()

    @property
    def is_small(self) -> bool:
        """Read into memory once at commit time (see ``INLINE_MAX_BYTES``)."""
        return self.size <= INLINE_MAX_BYTES

    def inline(self) -> "Upload":
        """This upload with a small file's bytes read once into memory and checked against the record.

        What the client then hashes, sends and what the read-back compares are these bytes;
        a big file stays a path (it goes up as LFS, whose SHA-256 the Hub checks on receipt).
        """
        if isinstance(self.source, bytes) or not self.is_small:
            return self
        with open(self.source, "rb") as file:
            data = file.read(INLINE_MAX_BYTES + 1)
        self.check_digest(hashlib.sha256(data).hexdigest(), len(data))
        return Upload(self.path, self.size, self.sha256, data)

    def check_digest(self, sha256: str, size: int) -> None:
        """Raise unless ``size`` and ``sha256`` (of the bytes about to go up) are the record's."""
        if size != self.size or sha256 != self.sha256:
            raise VerificationError(
                self.source if not isinstance(self.source, bytes) else self.path,
                "file changed after it was checked, before it went up",
                expected=f"{self.size} bytes, SHA-256 {self.sha256}",
                got=f"{size} bytes, SHA-256 {sha256}",
                hint="something is still writing to the folder; wait for it, then re-run push",
            )


@dataclass(frozen=True)
class PublishPlan:
    """Groups of uploads that must share a commit, and the record file that goes up alone, last."""

    root: Path
    kind: str  # "release" or "corpus"
    groups: tuple[tuple[Upload, ...], ...]
    final: Upload
    record: str = COMPLETE_NAME  # the record file the uploads' sizes and digests come from

    @property
    def uploads(self) -> list[Upload]:
        return [u for group in self.groups for u in group] + [self.final]


def publish_plan(folder: str | os.PathLike, progress: bool = True, check: bool = True) -> PublishPlan:
    """Check a release or corpus folder byte for byte and say what goes up, in which groups.

    ``check=False`` reads and cross-checks the records only, for a caller that hashes each
    file itself (push hashes every file once, as the client prepares it).
    """
    root = Path(folder)
    if (root / COMPLETE_NAME).is_file():
        return release_plan(root, progress, check)
    if (root / MANIFEST_NAME).is_file():
        return corpus_plan(root, progress, check)
    raise VerificationError(
        root,
        "not a release or corpus folder",
        expected=f"{COMPLETE_NAME} (release) or {MANIFEST_NAME} (corpus)",
        got="neither",
    )


def release_plan(root: Path, progress: bool = True, check: bool = True) -> PublishPlan:
    complete = Complete.read(root / COMPLETE_NAME)
    if check:
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
    return PublishPlan(root, "release", tuple(upload_groups), final, COMPLETE_NAME)


def left_out(plan: PublishPlan) -> tuple[str, ...]:
    """The release folder's files outside the release layout: no part of the release, never uploaded (a file inside
    the layout that ``COMPLETE.json`` does not list is an error). A corpus folder: none."""
    if plan.kind != "release":
        return ()
    from ..verify.release import unlisted_files

    return tuple(unlisted_files(plan.root, {u.path for u in plan.uploads}, COMPLETE_NAME))


def corpus_plan(root: Path, progress: bool = True, check: bool = True) -> PublishPlan:
    manifest = CorpusManifest.read(root)
    shards = [FileEntry(s.path, s.size, s.sha256) for s in manifest.shards]
    if check:
        check_files(root, shards, MANIFEST_NAME, progress)
    if not (root / CARD_NAME).is_file():
        raise VerificationError(
            root / CARD_NAME,
            "a corpus folder needs its dataset card (its configs make load_dataset work)",
            hint="re-run hf-tokbin corpus",
        )
    groups = [(Upload.from_file(root, s),) for s in shards]
    groups.append((Upload.from_file(root, _entry_of(root, CARD_NAME)),))
    return PublishPlan(
        root, "corpus", tuple(groups), Upload.from_file(root, _entry_of(root, MANIFEST_NAME)), MANIFEST_NAME
    )


def check_local_file(root: Path, upload: Upload, record: str, digest: Callable[[Path], str]) -> tuple[int, int]:
    """Check that ``upload``'s file is a regular file inside ``root`` (no symlink) with the record's
    size and ``digest(path)`` (its SHA-256); return its (size, mtime_ns) stamp, to notice a later change."""
    path = Path(upload.source)
    if not path.parent.resolve().is_relative_to(Path(root).resolve()):
        raise VerificationError(
            path,
            "file is outside the folder (through a symlinked folder): push publishes only the files the build wrote",
        )
    try:
        stat = os.lstat(path)
    except FileNotFoundError:
        raise VerificationError(path, f"file listed in {record} is missing") from None
    if not S_ISREG(stat.st_mode):
        raise VerificationError(
            path,
            "not a regular file (a symlink or special file): push publishes only the files the build wrote",
            hint="replace it with the file itself, or rebuild",
        )
    if stat.st_size != upload.size:
        raise VerificationError(path, f"size differs from {record}", expected=upload.size, got=stat.st_size)
    got = digest(path)
    if got != upload.sha256:
        raise VerificationError(path, f"SHA-256 differs from {record}", expected=upload.sha256, got=got)
    return stat.st_size, stat.st_mtime_ns


def _entry_of(root: Path, name: str) -> FileEntry:
    path = root / name
    return FileEntry(name, path.stat().st_size, sha256_file(path))
