"""Publish a release (or raw corpus) folder to a Hub dataset repo in verified commits.

1. Check every local file against its record (``COMPLETE.json`` or the corpus
   ``_MANIFEST.json``) before anything goes up.
2. Create the repo (and branch) if needed; read the branch head and list
   every remote file at that head with its size and SHA-256: files already
   there and equal are skipped, so a re-run resumes and a second push of the
   same release makes no commit.
3. Commit the rest in batches (a part's files with its receipt; at most
   ``files_per_commit`` files and ``bytes_per_commit`` bytes; at most
   ``commits_per_hour`` commits in any hour), each with ``parent_commit`` set
   to the head we last verified, so a branch moved by someone else stops the
   push (HTTP 412) instead of mixing histories. The first commit also deletes
   every remote file the folder does not hold (a stale ``COMPLETE.json``, the
   shards of an earlier, bigger release or corpus), but ``.gitattributes``,
   which the Hub writes itself: the branch ends up holding exactly the
   folder, and ``load_dataset`` never mixes old and new shards.
   Each file is hashed again as its commit is prepared: a file that changed
   since the local check stops the push instead of going up under the
   digest of its old content.
4. After each commit, read every file it carried back *at that commit id*
   (``get_paths_info(revision=commit)``): size, and LFS SHA-256 (or the git
   blob id of a small regular file) must equal the local value.
5. Last, the record file (``COMPLETE.json``) alone, verified the same way.

If the commit call itself fails (5xx, dropped connection), the commit may
have landed anyway: the branch head is re-read, and if it moved, the files at
the new head are compared with the batch before anything is retried.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Iterable

from tqdm.auto import tqdm

from ..errors import HubError, VerificationError
from .files import Upload, publish_plan
from .retry import (
    CommitRateLimiter,
    RetryPolicy,
    as_hub_error,
    call_with_retry,
    is_transient,
    notify,
    short_reason,
    status_of,
)

REPO_TYPE = "dataset"
# Files the Hub writes into a new repo itself: never deleted by a push.
HUB_OWNED_FILES = frozenset({".gitattributes"})


@dataclass(frozen=True)
class HubLimits:
    """Batching limits that keep a push inside the Hub's recommendations."""

    files_per_commit: int = 100  # the Hub recommends < 100 files per commit
    bytes_per_commit: int = 20 * 2**30  # bounds the work redone when a commit fails
    paths_per_request: int = 100  # paths per get_paths_info call
    commits_per_hour: int = 100  # stays under the Hub's hourly commit quota

    def __post_init__(self):
        for name in ("files_per_commit", "bytes_per_commit", "paths_per_request", "commits_per_hour"):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= 1):
                raise HubError(None, f"{name} must be a positive integer", got=value)


@dataclass(frozen=True)
class PushSummary:
    repo_id: str
    revision: str
    head: str
    commits: int
    files_uploaded: int
    bytes_uploaded: int
    files_already_there: int
    kind: str
    final_path: str
    files_deleted: int = 0  # remote files the folder does not hold, deleted by the first commit

    def __str__(self) -> str:
        if self.commits == 0:
            what = f"already published: all {self.files_already_there} files present and verified, no commit made"
        else:
            what = f"{self.files_uploaded} files ({self.bytes_uploaded:,} bytes) in {self.commits} verified commits, {self.files_already_there} already there"
            if self.files_deleted:
                what += f", {self.files_deleted} remote files the folder does not hold deleted"
        return f"{self.repo_id}@{self.revision}: {what}; {self.final_path} verified at {self.head}"


@dataclass(frozen=True)
class RemoteFile:
    """What the Hub says a file is at one commit."""

    size: int
    sha256: str | None  # LFS files only
    blob_id: str

    @classmethod
    def from_repo_file(cls, info) -> "RemoteFile":
        lfs = getattr(info, "lfs", None)
        return cls(info.size, lfs.sha256 if lfs is not None else None, info.blob_id)


def compare(upload: Upload, remote: RemoteFile | None) -> tuple[str, object, object] | None:
    """None when the remote file is the local one, else (rule, expected, got)."""
    if remote is None:
        return ("file is missing from the commit", f"{upload.size} bytes", "no file")
    if remote.size != upload.size:
        return ("remote size differs from the local file", upload.size, remote.size)
    if remote.sha256 is not None:
        if remote.sha256 != upload.sha256:
            return ("remote LFS SHA-256 differs from the local file", upload.sha256, remote.sha256)
        return None
    local_blob = upload.git_blob_id()
    if remote.blob_id != local_blob:
        return ("remote git blob id differs from the local file", local_blob, remote.blob_id)
    return None


def pack_batches(groups: Iterable[tuple[Upload, ...]], limits: HubLimits) -> list[list[Upload]]:
    """Pack groups, in order and never split, into batches within the per-commit limits.

    A single group over a limit becomes a batch of its own.
    """
    batches: list[list[Upload]] = []
    current: list[Upload] = []
    current_bytes = 0
    for group in groups:
        group_bytes = sum(u.size for u in group)
        if current and (len(current) + len(group) > limits.files_per_commit or current_bytes + group_bytes > limits.bytes_per_commit):
            batches.append(current)
            current, current_bytes = [], 0
        current.extend(group)
        current_bytes += group_bytes
    if current:
        batches.append(current)
    return batches


@dataclass
class _Publisher:
    """The calls of one push, against one branch, with retries; ``head`` is the last verified commit."""

    api: object  # huggingface_hub.HfApi
    repo_id: str
    revision: str
    limits: HubLimits
    retry: RetryPolicy
    head: str = ""
    on_verified: Callable[[Upload], None] = field(default=lambda upload: None)

    def call(self, what: str, fn):
        try:
            return call_with_retry(self.retry, what, fn)
        except HubError:
            raise
        except Exception as error:
            raise as_hub_error(f"{self.repo_id}@{self.revision}", what, error) from error

    def ensure_repo(self, private: bool) -> None:
        self.call("create repo", lambda: self.api.create_repo(self.repo_id, repo_type=REPO_TYPE, private=private, exist_ok=True))
        if self.revision != "main":
            self.call("create branch", lambda: self.api.create_branch(self.repo_id, branch=self.revision, repo_type=REPO_TYPE, exist_ok=True))

    def read_head(self) -> str:
        info = self.call("read branch head", lambda: self.api.dataset_info(self.repo_id, revision=self.revision))
        return info.sha

    def remote_tree(self, commit: str) -> dict[str, RemoteFile]:
        """Every file at ``commit`` with its size and digests."""
        entries = self.call("list files", lambda: list(self.api.list_repo_tree(self.repo_id, repo_type=REPO_TYPE, revision=commit, recursive=True)))
        return {e.path: RemoteFile.from_repo_file(e) for e in entries if hasattr(e, "blob_id")}  # files, not folders

    def remote_files(self, paths: list[str], commit: str) -> dict[str, RemoteFile]:
        """Size and digests of ``paths`` at ``commit`` (absent paths are left out)."""
        found: dict[str, RemoteFile] = {}
        step = self.limits.paths_per_request
        for start in range(0, len(paths), step):
            chunk = paths[start : start + step]
            infos = self.call("read file info", lambda: self.api.get_paths_info(self.repo_id, chunk, repo_type=REPO_TYPE, revision=commit))
            for info in infos:
                if hasattr(info, "blob_id"):  # a file, not a folder
                    found[info.path] = RemoteFile.from_repo_file(info)
        return found

    def verify(self, uploads: list[Upload], commit: str, deleted: Iterable[str] = ()) -> None:
        """Read every upload back at ``commit``; raise naming the first file that differs."""
        deleted = list(deleted)
        remote = self.remote_files([u.path for u in uploads] + deleted, commit)
        for upload in uploads:
            problem = compare(upload, remote.get(upload.path))
            if problem is not None:
                rule, expected, got = problem
                raise HubError(_file_uri(self.repo_id, commit, upload.path), rule, expected=expected, got=got, hint="the Hub did not store what was sent; the push stopped before COMPLETE.json")
            self.on_verified(upload)
        for path in deleted:
            if path in remote:
                raise HubError(_file_uri(self.repo_id, commit, path), "file should have been deleted by the commit")

    def commit(self, uploads: list[Upload], deletions: list[str], message: str) -> str:
        """Create one commit on top of ``head``; return its id (after recovering a commit that landed)."""
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete

        # The client hashes each file as the operation is made: what goes up, under that digest.
        additions = [CommitOperationAdd(path_in_repo=u.path, path_or_fileobj=_source(u)) for u in uploads]
        for operation, upload in zip(additions, uploads):
            _check_unchanged(upload, operation.upload_info)
        operations = additions + [CommitOperationDelete(path_in_repo=p) for p in deletions]
        where = f"{self.repo_id}@{self.revision}"
        for attempt in range(1, self.retry.attempts + 1):
            step = "upload files"
            try:
                # Called bare: this loop is the retry (a retried call inside it would retry attempts² times).
                self.api.preupload_lfs_files(self.repo_id, additions=additions, repo_type=REPO_TYPE, revision=self.revision)
                step = "commit"
                info = self.api.create_commit(self.repo_id, operations, commit_message=message, repo_type=REPO_TYPE, revision=self.revision, parent_commit=self.head)
                return info.oid
            except HubError:
                raise
            except Exception as error:
                if status_of(error) == 412:
                    raise HubError(where, "the branch moved: someone else pushed to it during this push", expected=f"head {self.head}", got=f"head {self.read_head()}", hint="check the other commit, then re-run push: it resumes from the new head") from error
                if not is_transient(error) or attempt == self.retry.attempts:
                    raise as_hub_error(where, step, error) from error
                # The commit may have landed although its answer was lost: look before retrying.
                head = self.read_head()
                if head != self.head:
                    if self._holds(head, uploads, deletions):
                        notify(f"commit: {short_reason(error)}, but the commit landed as {head}")
                        return head
                    raise HubError(where, "the branch moved during a failed commit and does not hold this batch: someone else pushed", expected=f"head {self.head}", got=f"head {head}", hint="check the other commit, then re-run push") from error
                wait = self.retry.delay(attempt, error)
                notify(f"{step}: {short_reason(error)}; the head did not move; retrying in {wait:g}s (attempt {attempt + 1}/{self.retry.attempts})")
                self.retry.sleep(wait)
        raise AssertionError("unreachable")  # the loop returns or raises

    def _holds(self, commit: str, uploads: list[Upload], deletions: list[str]) -> bool:
        remote = self.remote_files([u.path for u in uploads] + deletions, commit)
        return all(compare(u, remote.get(u.path)) is None for u in uploads) and not any(p in remote for p in deletions)


def _check_unchanged(upload: Upload, upload_info) -> None:
    """The bytes about to go up must be the ones checked against the record file."""
    got = upload_info.sha256.hex()
    if upload_info.size != upload.size or got != upload.sha256:
        raise VerificationError(
            upload.source if not isinstance(upload.source, bytes) else upload.path,
            "file changed after it was checked, before it went up",
            expected=f"{upload.size} bytes, SHA-256 {upload.sha256}",
            got=f"{upload_info.size} bytes, SHA-256 {got}",
            hint="something is still writing to the folder; wait for it, then re-run push",
        )


def _source(upload: Upload):
    return upload.source if isinstance(upload.source, bytes) else os.fspath(upload.source)


def _file_uri(repo_id: str, commit: str, path: str) -> str:
    return f"hf://datasets/{repo_id}@{commit}/{path}"


def push_folder(
    folder: str | os.PathLike,
    repo_id: str,
    *,
    revision: str = "main",
    private: bool = False,
    endpoint: str | None = None,
    token: str | None = None,
    limits: HubLimits = HubLimits(),
    retry: RetryPolicy | None = None,
    rate_limiter: CommitRateLimiter | None = None,
    progress: bool = True,
) -> PushSummary:
    """Publish ``folder`` (a release or a raw corpus) to the dataset repo ``repo_id`` on branch ``revision``.

    ``token`` defaults to huggingface_hub's usual sources (``HF_TOKEN``, the saved login);
    it is never printed. Raises :class:`HubError` naming the repo and file when anything fails.
    """
    from huggingface_hub import HfApi

    _check_repo_args(repo_id, revision)
    plan = publish_plan(folder, progress)
    retry = retry or RetryPolicy.from_env()
    rate_limiter = rate_limiter or CommitRateLimiter(limits.commits_per_hour)
    publisher = _Publisher(HfApi(endpoint=endpoint, token=token), repo_id, revision, limits, retry)
    publisher.ensure_repo(private)
    publisher.head = publisher.read_head()

    remote = publisher.remote_tree(publisher.head)
    present = {u.path for u in plan.uploads if compare(u, remote.get(u.path)) is None}
    pending_groups = [tuple(u for u in group if u.path not in present) for group in plan.groups]
    batches = pack_batches([g for g in pending_groups if g], limits)
    # The branch must end up holding exactly the folder: files it does not hold go in the first commit.
    extra = sorted(set(remote) - {u.path for u in plan.uploads} - HUB_OWNED_FILES)
    # The record file must be the last thing to land: while any other file still has to go up,
    # a COMPLETE.json already on the branch (stale, or vouching for files now missing) is removed first.
    stale_final = [plan.final.path] if batches and plan.final.path in remote else []
    final_pending = plan.final.path not in present or bool(batches)
    if extra and not batches and not final_pending:
        batches = [[]]  # only deletions: the record file on the branch already vouches for the folder

    to_send = [u for batch in batches for u in batch] + ([plan.final] if final_pending else [])
    bar = tqdm(total=sum(u.size for u in to_send), unit="B", unit_scale=True, desc=f"push {repo_id}", disable=not progress)
    sent = {"files": 0}

    def on_verified(upload: Upload) -> None:
        sent["files"] += 1
        bar.update(upload.size)
        bar.set_postfix_str(f"{sent['files']}/{len(to_send)} files verified")

    publisher.on_verified = on_verified
    commits = 0
    with bar:
        for number, batch in enumerate(batches, 1):
            deletions = stale_final + extra if number == 1 else []
            message = _batch_message(batch, deletions, number, len(batches))
            publisher.head = _commit_verified(publisher, rate_limiter, batch, deletions, message)
            commits += 1
        if final_pending:
            message = f"Add {plan.final.path}: every other file is present and verified"
            publisher.head = _commit_verified(publisher, rate_limiter, [plan.final], [], message)
            commits += 1
    already_there = len(present - {plan.final.path}) if final_pending else len(present)
    return PushSummary(repo_id, revision, publisher.head, commits, len(to_send), sum(u.size for u in to_send), already_there, plan.kind, plan.final.path, len(extra))


def _batch_message(batch: list[Upload], deletions: list[str], number: int, total: int) -> str:
    parts = [f"Add {len(batch)} files ({batch[0].path} .. {batch[-1].path})"] if batch else []
    if deletions:
        parts.append(f"delete {len(deletions)} files the folder does not hold")
    return f"{', '.join(parts)}, batch {number}/{total}"


def _commit_verified(publisher: _Publisher, rate_limiter: CommitRateLimiter, uploads: list[Upload], deletions: list[str], message: str) -> str:
    rate_limiter.wait_turn()
    commit = publisher.commit(uploads, deletions, message)
    rate_limiter.record()
    publisher.verify(uploads, commit, deletions)
    return commit


def _check_repo_args(repo_id: str, revision: str) -> None:
    parts = repo_id.split("/") if isinstance(repo_id, str) else []
    if len(parts) != 2 or not all(parts):
        raise HubError(None, "repo id must be NAMESPACE/NAME", got=repo_id)
    if not revision or len(revision) == 40 and all(c in "0123456789abcdef" for c in revision):
        raise HubError(None, "push needs a branch name as revision, not a commit id", got=revision)


__all__ = ["HubLimits", "PushSummary", "push_folder", "pack_batches", "compare", "RemoteFile"]
