"""``hf-tokbin verify NS/NAME``: check a release on the Hub without downloading its token files.

At one checked commit id (:func:`hf_tokbin.hub.revision.resolve_commit`):

1. ``COMPLETE.json`` is downloaded (bounded by the tree's size and checked
   against its git blob id or LFS SHA-256), and every path it lists must be
   part of the release layout.
2. The Hub's own tree at that commit is compared with it: every path of the
   release layout is ``COMPLETE.json``'s (with ``path_in_repo``, under that
   folder), and every file has the
   listed size and, for LFS files, the listed SHA-256. Every file that
   disagrees is named. Files outside the layout (a ``NOTES.md``, a LICENSE,
   a card image added by hand; ``push`` keeps them) are no part of the
   release: reported, not failed (``strict`` fails on them).
3. The records (everything but the token files, and any token file the Hub
   does not store in LFS, whose digest the tree does not give) are downloaded
   and checked against ``COMPLETE.json``, then the rules of ``hf-tokbin verify``
   that the records decide are applied
   (:func:`hf_tokbin.verify.release.verify_release_records`).
4. ``download_sample=K`` also downloads the Megatron pairs of K parts, spread
   over the release, and checks them as ``hf-tokbin verify`` does.

A pushed corpus folder (``_MANIFEST.json`` and no ``COMPLETE.json``) is checked
as a corpus: every shard the manifest lists is in the tree with its size and,
for LFS files, its SHA-256; a shard outside LFS (whose digest the tree does not
give) is downloaded and hashed.

Downloads go to a temporary folder, removed at the end.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import HubError, VerificationError
from ..formats.corpus_manifest import MANIFEST_NAME as CORPUS_MANIFEST_NAME
from ..formats.corpus_manifest import CorpusManifest
from ..formats.records import FileEntry
from ..formats.release import COMPLETE_NAME, RECEIPTS_DIR, Complete, Receipt, is_layout_path, megabytes
from .download import DownloadLimits, Expected, safe_folder, tree_expected
from .layout import check_path, is_token_file
from .pull import (
    GIT_FILES,
    RECORDS_DIR,
    Wanted,
    disagreement_error,
    fetch_all,
    named_on_the_hub,
    open_snapshot,
    tree_disagreements,
)
from .retry import RetryPolicy
from .revision import shown


@dataclass(frozen=True)
class RemoteReport:
    repo_id: str
    commit: str
    files: int
    bytes: int
    downloaded: int  # bytes downloaded to check
    sampled: tuple[str, ...]  # parts whose token files were downloaded and checked
    report: object  # the ReleaseReport of the records
    folder: str = ""  # --path-in-repo
    others: tuple[str, ...] = ()  # files beside the release, outside its layout: not part of it (kept by push)

    def summary(self) -> str:
        lines = self.report.summary().splitlines()
        sample = (
            f"; token files of {len(self.sampled)} part(s) downloaded and verified ({', '.join(self.sampled)})"
            if self.sampled
            else ""
        )
        lines[0] = (
            f"hf://datasets/{self.repo_id}@{self.commit}{'/' + self.folder if self.folder else ''}: "
            f"OK: {self.files} files, {megabytes(self.bytes)} on the Hub match COMPLETE.json "
            "(sizes and LFS SHA-256 at this commit); records "
            f"verified, {megabytes(self.downloaded)} downloaded{sample}"
        )
        if self.others:
            from ..verify.release import outside_the_layout

            lines.insert(1, outside_the_layout(self.others, "in the repo"))
        return "\n".join(lines)

    def record(self) -> dict:
        """The summary as a record (``verify NS/NAME --json``)."""
        records = self.report.record()
        where = {"repo": self.repo_id, "commit": self.commit, "path_in_repo": self.folder}
        return {
            **where,
            "ok": True,
            "kind": "hub release",
            "files": self.files,
            "bytes": self.bytes,
            "downloaded_bytes": self.downloaded,
            "sampled_parts": list(self.sampled),
            **{k: records[k] for k in ("formats", "splits", "warnings")},
        }


def verify_remote(
    repo_id: str, *, revision: str | None = None, endpoint: str | None = None, token: str | None = None,
    download_sample: int = 0, path_in_repo: str | None = None, retry: RetryPolicy | None = None,
    limits: DownloadLimits | None = None, max_workers: int = 8, progress: bool = True, strict: bool = False,
) -> "RemoteReport | RemoteCorpusReport":
    """Check the release in ``repo_id`` at ``revision`` against the Hub's own metadata; see the module docstring.

    Files outside the release layout (``NOTES.md``, a LICENSE) are reported
    in :attr:`RemoteReport.others`; ``strict`` fails the release on them too.
    """

    from ..verify.release import verify_release_records

    if not (isinstance(download_sample, int) and download_sample >= 0):
        raise HubError("--download-sample", "must be a non-negative integer", got=download_sample)
    snapshot = open_snapshot(repo_id, revision, endpoint, token, path_in_repo, retry, limits)
    call, commit, folder, tree, source = (
        snapshot.call, snapshot.commit, snapshot.folder, snapshot.tree, snapshot.source,
    )
    if COMPLETE_NAME not in tree and CORPUS_MANIFEST_NAME in tree:
        return _verify_remote_corpus(snapshot, repo_id, max_workers, progress)
    if COMPLETE_NAME not in tree:
        raise VerificationError(
            source.uri(""), "release is incomplete: no COMPLETE.json at this commit",
            hint="a push may still be running; --path-in-repo names a release in a folder of the repo",
        )

    with tempfile.TemporaryDirectory(prefix="hf_tokbin-verify-") as tmp:
        root = Path(tmp)
        records = safe_folder(root, RECORDS_DIR)
        with named_on_the_hub(root, records, source):
            record = call(
                f"download {COMPLETE_NAME}",
                lambda: source.fetch(COMPLETE_NAME, records, tree_expected(tree, COMPLETE_NAME, source)),
            )
            complete = Complete.read(record)
            others = _check_tree_against_complete(complete, tree, folder, source, strict)
            listed = {e.path for e in complete.files}

            def wanted(entries):
                return [Wanted(e.path, Expected(e.size, sha256=e.sha256, listed_in=COMPLETE_NAME)) for e in entries]

            def fetch(w):
                return call(f"download {w.path}", lambda: source.fetch(w.path, root, w.expected))

            small = [e for e in complete.files if not is_token_file(e.path) or tree[e.path].lfs is None]
            fetch_all(wanted(small), root, fetch, max_workers, progress)
            parts = _sample(sorted(p for p in listed if p.startswith(f"{RECEIPTS_DIR}/")), download_sample)
            by_path = {e.path: e for e in complete.files}
            sample = sorted({f.path for p in parts for f in Receipt.read(root / p).files} - {e.path for e in small})
            fetch_all(wanted(by_path[p] for p in sample), root, fetch, max_workers, progress)
            report = verify_release_records(root, complete, held=[e.path for e in small] + sample)
    downloaded = sum(e.size for e in small) + sum(by_path[p].size for p in sample) + tree[COMPLETE_NAME].size
    sampled = tuple(Path(p).stem for p in parts)
    return RemoteReport(
        repo_id, commit, len(complete.files) + 1, sum(e.size for e in complete.files), downloaded, sampled, report,
        folder, others,
    )


@dataclass(frozen=True)
class RemoteCorpusReport:
    """``verify NS/NAME`` of a pushed corpus folder: its shards on the Hub match its ``_MANIFEST.json``."""

    repo_id: str
    commit: str
    folder: str
    name: str
    shards: int
    bytes: int
    documents: dict  # split -> documents
    downloaded: int  # bytes downloaded to check (the manifest, shards outside LFS)

    def summary(self) -> str:
        where = f"hf://datasets/{self.repo_id}@{self.commit}{'/' + self.folder if self.folder else ''}"
        counts = ", ".join(f"{split} {n:,}" for split, n in self.documents.items())
        return (
            f"{where}: OK: corpus {self.name}, {self.shards} shards, {megabytes(self.bytes)} on the Hub match "
            f"{CORPUS_MANIFEST_NAME} (sizes and SHA-256 at this commit), {megabytes(self.downloaded)} downloaded; "
            f"documents: {counts}"
        )

    def record(self) -> dict:
        where = {"repo": self.repo_id, "commit": self.commit, "path_in_repo": self.folder}
        counts = {"shards": self.shards, "bytes": self.bytes, "downloaded_bytes": self.downloaded}
        return {**where, "ok": True, "kind": "hub corpus", "name": self.name, **counts, "documents": self.documents}


def _verify_remote_corpus(snapshot, repo_id: str, max_workers: int, progress: bool) -> RemoteCorpusReport:
    """Every shard ``_MANIFEST.json`` lists, in the tree at the commit with its size and SHA-256."""
    call, tree, source = snapshot.call, snapshot.tree, snapshot.source
    manifest_uri = source.uri(CORPUS_MANIFEST_NAME)
    with tempfile.TemporaryDirectory(prefix="hf_tokbin-verify-") as tmp:
        root = Path(tmp)
        records = safe_folder(root, RECORDS_DIR)
        with named_on_the_hub(root, records, source):
            expected = tree_expected(tree, CORPUS_MANIFEST_NAME, source)
            record = call(
                f"download {CORPUS_MANIFEST_NAME}", lambda: source.fetch(CORPUS_MANIFEST_NAME, records, expected)
            )
            manifest = CorpusManifest.read(record)
            shards = [FileEntry(s.path, s.size, s.sha256) for s in manifest.shards]
            for entry in shards:
                check_path("corpus", entry.path, manifest_uri)
            problems = tree_disagreements(shards, tree)
            if problems:
                rule = f"the Hub's files at this commit disagree with {CORPUS_MANIFEST_NAME}"
                raise disagreement_error(manifest_uri, rule, problems, VerificationError)
            outside_lfs = [e for e in shards if tree[e.path].lfs is None]
            wanted = [Wanted(e.path, Expected(e.size, e.sha256, listed_in=CORPUS_MANIFEST_NAME)) for e in outside_lfs]

            def fetch(w):
                return call(f"download {w.path}", lambda: source.fetch(w.path, root, w.expected))

            fetch_all(wanted, root, fetch, max_workers, progress)
    documents = {split: manifest.rows(split) for split in ("train", "validation")}
    downloaded = tree[CORPUS_MANIFEST_NAME].size + sum(e.size for e in outside_lfs)
    total = sum(e.size for e in shards)
    return RemoteCorpusReport(
        repo_id, snapshot.commit, snapshot.folder, manifest.name, len(shards), total, documents, downloaded
    )


def _check_tree_against_complete(complete: Complete, tree: dict, folder: str, source, strict: bool) -> tuple[str, ...]:
    """Check the Hub's tree against ``complete``; return the files beside the release, outside its layout.

    Raises :class:`VerificationError` naming every file that
    disagrees (and, with ``strict``, every one outside the layout).
    """
    for entry in complete.files:
        check_path("release", entry.path, source.uri(COMPLETE_NAME))
    listed = {e.path for e in complete.files}
    problems = tree_disagreements(complete.files, tree)
    unlisted = sorted(set(tree) - listed - {COMPLETE_NAME, *([] if folder else GIT_FILES)})
    # A file outside the release layout (a LICENSE, NOTES.md, a card image) is no part of the release: push
    # keeps it, so verify reports it. One inside the layout that COMPLETE.json does not list is a broken release.
    others = tuple(p for p in unlisted if not is_layout_path(p))
    problems += [
        f"{shown(p)} is on the Hub but not listed in COMPLETE.json" for p in unlisted if p not in others or strict
    ]
    if problems:
        raise disagreement_error(
            source.uri(COMPLETE_NAME),
            "the Hub's files at this commit disagree with COMPLETE.json",
            problems,
            VerificationError,
        )
    return others


def _sample(receipts: list[str], k: int) -> list[str]:
    """``k`` of the receipts, spread evenly from the first to
    the last (all of them when ``k`` is at least their number).
    """
    if k >= len(receipts):
        return receipts
    if k == 0:
        return []
    if k == 1:
        return [receipts[0]]
    step = (len(receipts) - 1) / (k - 1)
    return [receipts[round(i * step)] for i in range(k)]
