"""Publish a release (or raw corpus) folder to a Hub dataset repo in verified commits.

1. Check every local file against its record (``COMPLETE.json`` or the corpus
   ``_MANIFEST.json``) before any request.
2. Read the branch head and every remote file under the target folder
   (``path_in_repo``, default the repo's top) with its size and SHA-256, without
   changing anything: files already there and equal are kept, so a re-run resumes
   and a second push of the same release makes no commit.
3. Decide, before the first upload: remote files the folder does not hold are
   **left alone** unless ``delete`` patterns (fnmatch, relative to the target
   folder, as ``hf upload --delete``) or ``mirror`` name them; one left inside
   the record's own layout (``shards/``, ``receipts/``, ``tokens/``; a corpus's
   ``data/``) would mix two releases, so the push refuses it. The Hub's limits
   (entries per folder, files per repo, file size) are checked on the tree the
   branch would end up with, and the dataset card's YAML is validated by the
   Hub (``/api/validate-yaml``, retried). ``dry_run`` stops here and says what
   would be added, kept and deleted.
4. Create the repo (visibility only when asked: ``private=None`` sends none) and
   branch if needed. Deletions go first, then the files in batches (a part's
   files with its receipt; at most ``files_per_commit`` operations, deletions
   counted, and ``bytes_per_commit`` bytes; at most ``commits_per_hour`` commits
   in any hour), each with ``parent_commit`` set to the head we last verified,
   so a branch moved by someone else stops the push (HTTP 412). A
   ``COMPLETE.json`` already on the branch that differs is deleted in the first
   commit, so the branch never looks complete while its files change.
5. Small files are read once, checked against the record and sent from
   memory; a big file's SHA-256 as the client computes it must equal the
   record's. After each commit every file it carried is read back *at that
   commit id*: size, and LFS SHA-256 (or the git blob id of the bytes sent)
   must equal what the record vouches for.
6. Last, the record file (``COMPLETE.json``) alone, verified the same way.

If the commit call itself fails (5xx, dropped connection), the commit may
have landed anyway, now or later: the branch head is re-read, and a head
that is our commit (parent, message and files) is accepted, also when the
retry is answered 412 or "file to delete does not exist".
"""

from __future__ import annotations

import fnmatch
import hashlib
import itertools
import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence
from urllib.parse import quote

from tqdm.auto import tqdm

from .._io import counted, sha256_file
from ..errors import HubError, VerificationError
from ..formats.release import CARD_NAME
from ..formats.rules import is_repo_id
from .bounded import Deadline
from .files import (
    LAYOUT_DIRS,
    PublishPlan,
    Upload,
    check_hub_limits,
    check_local_file,
    left_out,
    normalize_path_in_repo,
    publish_plan,
)
from .retry import (
    CommitRateLimiter,
    RetryPolicy,
    as_hub_error,
    call_with_retry,
    is_transient,
    listing_timeout_from_env,
    notify,
    scrub,
    short_reason,
    status_of,
)
from .revision import MAX_PAGE_BYTES, bounded_listing, get_json, json_objects

REPO_TYPE = "dataset"
# Files the Hub writes into a new repo itself: never deleted by a push.
HUB_OWNED_FILES = frozenset({".gitattributes"})


@dataclass(frozen=True)
class HubLimits:
    """Batching limits that keep a push inside the Hub's recommendations."""

    files_per_commit: int = 100  # operations (additions and deletions): the Hub recommends < 100 per commit
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
    files_deleted: int = 0  # remote files the folder does not hold, deleted as asked (--delete, --mirror)
    path_in_repo: str = ""  # the folder of the repo the release lives in ("" = the top)
    files_left_alone: int = 0  # remote files the folder does not hold, kept
    pr_url: str | None = None
    left_out: tuple[str, ...] = ()  # the folder's files outside the release layout, not published

    def __str__(self) -> str:
        return self._done() + left_out_line(self.left_out)

    def _done(self) -> str:
        if self.commits == 0:
            what = f"already published: all {self.files_already_there} files present and verified, no commit made"
        else:
            what = (
                f"{self.files_uploaded} files ({self.bytes_uploaded:,} bytes) in "
                f"{self.commits} verified commits, {self.files_already_there} already there"
            )
            if self.files_deleted:
                what += f", {self.files_deleted} remote files the folder does not hold deleted"
        if self.files_left_alone:
            what += f", {self.files_left_alone} other remote files left alone"
        where = f"{self.repo_id}@{self.revision}" + (f" in {self.path_in_repo}" if self.path_in_repo else "")
        line = f"{where}: {what}; {self.path_in_repo}{self.final_path} verified at {self.head}"
        return line + (f"; pull request {self.pr_url}" if self.pr_url else "")


@dataclass(frozen=True)
class PushPreview:
    """What a push would do (``dry_run``): nothing was changed on the Hub."""

    repo_id: str
    revision: str
    path_in_repo: str
    repo_exists: bool
    add: tuple[Upload, ...]
    keep: tuple[str, ...]  # already present and verified
    delete: tuple[str, ...]  # remote files the folder does not hold, named by --delete / --mirror
    leave: tuple[str, ...]  # remote files the folder does not hold, left alone
    commits: int
    left_out: tuple[str, ...] = ()  # the folder's files outside the release layout, not published

    def __str__(self) -> str:
        where = f"{self.repo_id}@{self.revision}" + (f" in {self.path_in_repo}" if self.path_in_repo else "")
        head = (
            f"dry run, nothing changed: {where}"
            f"{'' if self.repo_exists else ' (no such repo, or the token cannot see it: it would be created)'}: "
            f"would add {counted(len(self.add), 'file')} ({sum(u.size for u in self.add):,} bytes) "
            f"in {counted(self.commits, 'commit')}, "
            f"keep {len(self.keep)} present and verified, delete {len(self.delete)}, "
            f"leave {len(self.leave)} other remote files alone"
        )
        lines = [head]
        lines += [f"  add     {self.path_in_repo}{u.path} ({u.size:,} bytes)" for u in self.add]
        lines += [f"  keep    {self.path_in_repo}{p}" for p in self.keep]
        lines += [f"  delete  {self.path_in_repo}{p}" for p in self.delete]
        lines += [f"  leave   {self.path_in_repo}{p}" for p in self.leave]
        lines += [f"  omit    {p} (local: outside the release layout)" for p in self.left_out]
        return "\n".join(lines) + left_out_line(self.left_out)


def left_out_line(left_out: tuple[str, ...]) -> str:
    """What a push does not publish: the folder's files outside the release layout, named (empty when none)."""
    if not left_out:
        return ""
    from ..verify.release import outside_the_layout

    return f"\nleft out {outside_the_layout(left_out, 'in the folder')}"


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
    """None when the remote file is the one the record vouches for, else (rule, expected, got)."""
    if remote is None:
        return ("file is missing from the commit", f"{upload.size} bytes", "no file")
    if remote.size != upload.size:
        return ("remote size differs from the local file", upload.size, remote.size)
    if remote.sha256 is not None:
        if remote.sha256 != upload.sha256:
            return ("remote LFS SHA-256 differs from the local file", upload.sha256, remote.sha256)
        return None
    local_blob = upload.git_blob_id()  # checked against the record's SHA-256 as it is computed
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
        if current and (
            len(current) + len(group) > limits.files_per_commit
            or current_bytes + group_bytes > limits.bytes_per_commit
        ):
            batches.append(current)
            current, current_bytes = [], 0
        current.extend(group)
        current_bytes += group_bytes
    if current:
        batches.append(current)
    return batches


@dataclass(frozen=True)
class _Commit:
    """One planned commit: uploads and deletions (paths relative to the target folder), and its message."""

    uploads: tuple[Upload, ...]
    deletions: tuple[str, ...]
    summary: str
    description: str = ""


@dataclass
class _LocalFiles:
    """Every local file checked once against its record, before any request.

    A big file is hashed by the client itself (``CommitOperationAdd``), and that operation is
    the one committed later: one hash per file. ``stamps`` (size, mtime_ns) notice a file
    rewritten after its check.
    """

    operations: dict[str, object] = field(default_factory=dict)  # path -> CommitOperationAdd (big files)
    stamps: dict[str, tuple[int, int]] = field(default_factory=dict)

    @classmethod
    def check(cls, plan: PublishPlan, prefix: str, progress: bool) -> "_LocalFiles":
        from huggingface_hub import CommitOperationAdd

        local = cls()
        files = [u for u in plan.uploads if not isinstance(u.source, bytes)]

        def digest(upload: Upload):
            def hash_it(path):
                if upload.is_small:
                    return sha256_file(path)
                operation = CommitOperationAdd(path_in_repo=prefix + upload.path, path_or_fileobj=os.fspath(path))
                local.operations[upload.path] = operation
                return operation.upload_info.sha256.hex()

            return hash_it

        with tqdm(
            total=sum(u.size for u in files),
            unit="B",
            unit_scale=True,
            desc=f"checking {plan.record}",
            disable=not progress,
            leave=False,
        ) as bar:
            for upload in files:
                local.stamps[upload.path] = check_local_file(plan.root, upload, plan.record, digest(upload))
                bar.update(upload.size)
        return local

    def check_unchanged(self, upload: Upload) -> None:
        """A big file, hashed at the check, must not have been rewritten since (same size and mtime)."""
        stat = os.stat(upload.source)
        if (stat.st_size, stat.st_mtime_ns) != self.stamps.get(upload.path):
            raise VerificationError(
                upload.source,
                "file changed after it was checked, before it went up",
                hint="something is still writing to the folder; wait for it, then re-run push",
            )


@dataclass
class _Prepared:
    """One commit's operations, ready to send; ``sent`` are the uploads as sent (small files in memory)."""

    sent: list[Upload]
    additions: list
    operations: list
    preupload: Future | None = None  # the LFS upload started ahead, while the previous commit ran


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
    prefix: str = ""  # the target folder in the repo, "" or ending in "/"
    local: _LocalFiles = field(default_factory=_LocalFiles)
    sent: list[Upload] = field(default_factory=list)  # the last commit's uploads as sent (small files in memory)
    pr_url: str | None = None  # the pull request the first commit opened (create_pr)

    @property
    def where(self) -> str:
        return f"{self.repo_id}@{self.revision}"

    def call(self, what: str, fn):
        try:
            return call_with_retry(self.retry, what, fn)
        except HubError:
            raise
        except Exception as error:
            raise as_hub_error(self.where, what, error) from error

    def repo_state(self) -> tuple[bool | None, str | None]:
        """(private, head of the branch) of the repo, changing nothing: (None, None) for no repo.

        A branch that does not exist yet is reported with main's head: it will be created from it.
        """
        from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

        try:
            info = self.call("read repo", lambda: self.api.dataset_info(self.repo_id, revision=self.revision))
        except HubError as error:
            cause = error.__cause__
            if isinstance(cause, RevisionNotFoundError) and not self.revision.startswith("refs/pr/"):
                info = self.call("read repo", lambda: self.api.dataset_info(self.repo_id))
            elif isinstance(cause, RepositoryNotFoundError):
                return None, None
            else:
                raise
        return bool(info.private), info.sha

    def ensure_repo(self, private: bool | None) -> None:
        # private=None sends no visibility: the Hub (or the organization's default) decides.
        self.call(
            "create repo",
            lambda: self.api.create_repo(self.repo_id, repo_type=REPO_TYPE, private=private, exist_ok=True),
        )
        if self.revision != "main" and not self.revision.startswith("refs/pr/"):
            self.call(
                "create branch",
                lambda: self.api.create_branch(self.repo_id, branch=self.revision, repo_type=REPO_TYPE, exist_ok=True),
            )

    def history(self, revision: str, max_pages: int = 5) -> Iterator[dict]:
        """The commits of ``revision``, newest first (``id``, ``title``, ``date``), page by page as read.

        Bounded (``max_pages``, each page as a listing's: :func:`~hf_tokbin.hub.revision.get_json`);
        the caller stops reading when it has seen enough, unlike ``list_repo_commits``, which reads
        the whole history.
        """
        url = f"{self.api.endpoint}/api/datasets/{self.repo_id}/commits/{quote(revision, safe='')}"
        seconds = listing_timeout_from_env()

        def too_slow() -> HubError:
            return HubError(
                self.where,
                f"reading a page of the branch's history took more than {seconds:g}s",
                hint="re-run; HF_TOKBIN_LISTING_TIMEOUT=SECONDS raises the bound",
            )

        for _ in range(max_pages):
            with Deadline(seconds, too_slow) as deadline:
                page, url = get_json(
                    self.api, deadline, url, None, MAX_PAGE_BYTES, self.where, "a page of the branch's history"
                )
            yield from json_objects(page, self.where, "a page of the branch's history", "commits")
            if not url:
                return

    def recent_commit_ages(self, window: float) -> list[float]:
        """Ages in seconds of the branch's commits of the last ``window`` seconds, newest first."""
        import datetime

        from huggingface_hub.utils import parse_datetime

        now = datetime.datetime.now(datetime.timezone.utc)
        ages: list[float] = []
        for item in self.history(self.revision):
            age = (now - parse_datetime(item["date"])).total_seconds()
            if age >= window:
                break
            ages.append(max(age, 0.0))
        return ages

    def read_head(self) -> str:
        info = self.call("read branch head", lambda: self.api.dataset_info(self.repo_id, revision=self.revision))
        return info.sha

    def remote_tree(self, commit: str) -> dict[str, RemoteFile]:
        """Every file under the target folder at ``commit``, by path relative to it, with its size and digests."""
        folder = self.prefix.rstrip("/") or None

        def listing():
            from huggingface_hub.errors import EntryNotFoundError

            try:
                return bounded_listing(
                    self.api,
                    self.repo_id,
                    self.where,
                    repo_type=REPO_TYPE,
                    revision=commit,
                    path_in_repo=folder,
                    recursive=True,
                )
            except EntryNotFoundError:  # the target folder does not exist yet
                return []

        entries = self.call("list files", listing)
        return {
            e.path[len(self.prefix) :]: RemoteFile.from_repo_file(e)
            for e in entries
            if hasattr(e, "blob_id") and e.path.startswith(self.prefix)
        }

    def remote_files(self, paths: list[str], commit: str) -> dict[str, RemoteFile]:
        """Size and digests of ``paths`` (relative to the target folder) at ``commit``; absent paths are left out."""
        found: dict[str, RemoteFile] = {}
        step = self.limits.paths_per_request
        for start in range(0, len(paths), step):
            chunk = [self.prefix + p for p in paths[start : start + step]]
            infos = self.call(
                "read file info",
                lambda: self.api.get_paths_info(self.repo_id, chunk, repo_type=REPO_TYPE, revision=commit),
            )
            for info in infos:
                if hasattr(info, "blob_id") and info.path.startswith(self.prefix):  # a file, not a folder
                    found[info.path[len(self.prefix) :]] = RemoteFile.from_repo_file(info)
        return found

    def validate_card(self, card: Upload) -> None:
        """The Hub's own check of the card's YAML metadata, done before any upload (and retried)."""
        from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

        where = card.source if not isinstance(card.source, bytes) else f"{self.where}/{self.prefix}{CARD_NAME}"
        data = card.source if isinstance(card.source, bytes) else Path(card.source).read_bytes()
        card.check_digest(hashlib.sha256(data).hexdigest(), len(data))
        try:
            content = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise VerificationError(where, "dataset card is not UTF-8", got=str(error)) from None

        def post() -> None:
            headers = build_hf_headers(token=self.api.token, library_name="hf_tokbin")
            response = get_session().post(
                f"{self.api.endpoint}/api/validate-yaml",
                json={"content": content, "repoType": REPO_TYPE},
                headers=headers,
            )
            if response.status_code == 400:
                try:
                    errors = [str(e.get("message")) for e in response.json().get("errors", []) if isinstance(e, dict)]
                except (ValueError, AttributeError):
                    errors = []
                if errors:
                    raise HubError(
                        where,
                        "the Hub refuses the dataset card's metadata",
                        got=scrub("; ".join(errors)),
                        hint=(
                            "fix the card's YAML (license and language must "
                            "be ids the Hub knows); nothing was uploaded"
                        ),
                    )
            hf_raise_for_status(response)

        self.call("validate the dataset card", post)

    def verify(self, uploads: Sequence[Upload], commit: str, deleted: Iterable[str] = ()) -> None:
        """Read every upload back at ``commit``; raise naming the first file that differs."""
        deleted = list(deleted)
        remote = self.remote_files([u.path for u in uploads] + deleted, commit)
        for upload in uploads:
            problem = compare(upload, remote.get(upload.path))
            if problem is not None:
                rule, expected, got = problem
                raise HubError(
                    self.file_uri(commit, upload.path),
                    rule,
                    expected=expected,
                    got=got,
                    hint="the Hub did not store what was sent; the push stopped before COMPLETE.json",
                )
            self.on_verified(upload)
        for path in deleted:
            if path in remote:
                raise HubError(self.file_uri(commit, path), "file should have been deleted by the commit")

    def prepare(self, uploads: Sequence[Upload], deletions: Sequence[str]) -> _Prepared:
        """The operations of one commit: small files read once into memory and checked against the
        record (those bytes are hashed, sent and read back); big files as checked before any request."""
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete

        sent, additions = [], []
        for upload in uploads:
            operation = self.local.operations.pop(upload.path, None)
            if operation is not None:
                self.local.check_unchanged(upload)
            else:
                upload = upload.inline()
                operation = CommitOperationAdd(path_in_repo=self.prefix + upload.path, path_or_fileobj=_source(upload))
                _check_unchanged(upload, operation.upload_info)
            sent.append(upload)
            additions.append(operation)
        return _Prepared(
            sent, additions, additions + [CommitOperationDelete(path_in_repo=self.prefix + p) for p in deletions]
        )

    def preupload(self, prepared: _Prepared, create_pr: bool = False) -> None:
        """Upload the LFS files of a commit (called bare: the caller's loop is the retry)."""
        if prepared.additions:
            self.api.preupload_lfs_files(
                self.repo_id,
                additions=prepared.additions,
                repo_type=REPO_TYPE,
                revision=self.revision,
                create_pr=create_pr or None,
            )

    def commit(
        self, uploads: Sequence[Upload], deletions: Sequence[str], message: str, description: str = "",
        create_pr: bool = False, prepared: _Prepared | None = None,
    ) -> str:
        """Create one commit on top of ``head``; return its id (after recovering a commit that landed).

        With ``create_pr`` the commit opens a pull request, and this publisher moves to its branch.
        The uploads as sent (small files read into memory) are kept in ``self.sent`` for the read-back.
        """
        prepared = prepared or self.prepare(uploads, deletions)
        sent, operations = prepared.sent, prepared.operations
        self.sent = sent
        uploaded_ahead = False
        if prepared.preupload is not None:
            try:
                prepared.preupload.result()
                uploaded_ahead = True
            except Exception:  # noqa: BLE001 - the loop below uploads again, with its retries and errors
                pass
        failed_before = None  # the last transient failure: the commit may have landed since
        for attempt in range(1, self.retry.attempts + 1):
            step = "upload files"
            try:
                # Called bare: this loop is the retry (a retried call inside it would retry attempts² times).
                if not (uploaded_ahead and attempt == 1):
                    self.preupload(prepared, create_pr)
                step = "commit"
                info = self.api.create_commit(
                    self.repo_id, operations, commit_message=message, commit_description=description or None,
                    repo_type=REPO_TYPE, revision=self.revision, parent_commit=None if create_pr else self.head,
                    create_pr=create_pr or None,
                )
                if create_pr:
                    self.revision, self.pr_url = info.pr_revision, info.pr_url
                return info.oid
            except HubError:
                raise
            except Exception as error:
                landed = self._recover(error, failed_before, step, attempt, sent, deletions, message, create_pr)
                if landed is not None:
                    return landed
                failed_before = error
                self.retry.pause(step, attempt, error, note="; the head did not move" if not create_pr else "")
        raise AssertionError("unreachable")  # the loop returns or raises

    def _recover(
        self, error: Exception, failed_before: Exception | None, step: str, attempt: int, sent: Sequence[Upload],
        deletions: Sequence[str], message: str, create_pr: bool,
    ) -> str | None:
        """After a failed commit attempt: the id of a commit that landed after all, else None to retry; or raise."""
        status = status_of(error)
        if failed_before is not None and status in (412, 404) and not create_pr:
            # A retry refused because the branch moved or a file to
            # delete is gone: our earlier commit may have landed late.
            landed = self._landed(sent, deletions, message)
            if landed is not None:
                notify(
                    f"commit: {short_reason(failed_before)}, then "
                    f"{short_reason(error)}: the first commit landed late, as {landed}"
                )
                return landed
        if status == 412:
            raise HubError(
                self.where, "the branch moved: someone else pushed to it during this push",
                expected=f"head {self.head}", got=f"head {self.read_head()}",
                hint="check the other commit, then re-run push: it resumes from the new head",
            ) from error
        if not is_transient(error) or attempt == self.retry.attempts:
            raise as_hub_error(self.where, step, error) from error
        if not create_pr:  # the commit may have landed although its answer was lost: look before retrying
            head = self.read_head()
            if head != self.head:
                landed = self._landed(sent, deletions, message)
                if landed is not None:
                    notify(f"commit: {short_reason(error)}, but the commit landed as {landed}")
                    return landed
                raise HubError(
                    self.where,
                    "the branch moved during a failed commit and "
                    "does not hold this batch: someone else pushed",
                    expected=f"head {self.head}",
                    got=f"head {head}",
                    hint="check the other commit, then re-run push",
                ) from error
        return None

    def _landed(self, uploads: Sequence[Upload], deletions: Sequence[str], message: str) -> str | None:
        """The branch head, if it is our commit: right on ``self.head``, with our message, holding our files."""
        head = self.read_head()
        if head == self.head:
            return None
        newest = self.call("read history", lambda: list(itertools.islice(self.history(head, max_pages=1), 2)))
        if (
            len(newest) < 2
            or newest[0].get("id") != head
            or newest[1].get("id") != self.head
            or newest[0].get("title") != message
        ):
            return None
        return head if self._holds(head, uploads, deletions) else None

    def _holds(self, commit: str, uploads: Sequence[Upload], deletions: Sequence[str]) -> bool:
        remote = self.remote_files([u.path for u in uploads] + list(deletions), commit)
        return all(compare(u, remote.get(u.path)) is None for u in uploads) and not any(p in remote for p in deletions)

    def file_uri(self, commit: str, path: str) -> str:
        return _file_uri(self.repo_id, commit, self.prefix + path)


def _check_unchanged(upload: Upload, upload_info) -> None:
    """The bytes about to go up must be the ones checked against the record file."""
    upload.check_digest(upload_info.sha256.hex(), upload_info.size)


def _source(upload: Upload):
    return upload.source if isinstance(upload.source, bytes) else os.fspath(upload.source)


def _file_uri(repo_id: str, commit: str, path: str) -> str:
    return f"hf://datasets/{repo_id}@{commit}/{path}"


@dataclass(frozen=True)
class _Survey:
    """What a push must do, from the local plan and the remote files under the target folder."""

    present: frozenset[str]
    pending_groups: tuple[tuple[Upload, ...], ...]
    delete: tuple[str, ...]
    leave: tuple[str, ...]
    stale_final: bool  # the branch holds another record file: it goes in the first commit
    final_pending: bool


def _survey(
    plan: PublishPlan,
    remote: dict[str, RemoteFile],
    delete_patterns: Sequence[str],
    mirror: bool,
    prefix: str,
    where: str,
) -> _Survey:
    planned = {u.path for u in plan.uploads}
    present = frozenset(u.path for u in plan.uploads if compare(u, remote.get(u.path)) is None)
    pending_groups = tuple(g for g in (tuple(u for u in group if u.path not in present) for group in plan.groups) if g)
    extra = sorted(p for p in set(remote) - planned if prefix + p not in HUB_OWNED_FILES)
    delete = tuple(p for p in extra if mirror or any(fnmatch.fnmatchcase(p, pattern) for pattern in delete_patterns))
    leave = tuple(p for p in extra if p not in delete)
    mixed = [p for p in leave if p.split("/", 1)[0] in LAYOUT_DIRS[plan.kind]]
    if mixed:
        folders = sorted({p.split("/", 1)[0] for p in mixed})
        flags = " ".join(f"--delete '{folder}/*'" for folder in folders)
        raise HubError(
            f"{where}/{prefix}{mixed[0]}",
            f"the repo holds {len(mixed)} files under {', '.join(f + '/' for f in folders)} "
            f"that this {plan.kind} does not list: they would be mixed with it",
            hint=f"delete them with {flags} or --mirror, or push to another --path-in-repo, --revision or repo",
        )
    final_pending = plan.final.path not in present or bool(pending_groups)
    stale_final = plan.final.path in remote and final_pending
    return _Survey(present, pending_groups, delete, leave, stale_final, final_pending)


def _plan_commits(
    plan: PublishPlan, survey: _Survey, limits: HubLimits, prefix: str, message: str | None
) -> list[_Commit]:
    """Deletions first (the stale record file in the very first), then the batches, then the record file alone."""
    step = limits.files_per_commit
    deletions = ([plan.final.path] if survey.stale_final else []) + list(survey.delete)
    chunks = [tuple(deletions[i : i + step]) for i in range(0, len(deletions), step)]
    batches = pack_batches(survey.pending_groups, limits)
    details = [(f"Delete {len(c)} files ({prefix}{c[0]} .. {prefix}{c[-1]})", (), c) for c in chunks]
    details += [(f"Add {len(b)} files ({prefix}{b[0].path} .. {prefix}{b[-1].path})", tuple(b), ()) for b in batches]
    if survey.final_pending:
        details.append((f"Add {prefix}{plan.final.path}: every other file is present and verified", (plan.final,), ()))
    total = len(details)
    commits = []
    for number, (detail, uploads, removed) in enumerate(details, 1):
        counter = f", commit {number}/{total}" if total > 1 else ""
        if message:
            commits.append(
                _Commit(uploads, removed, f"{message} ({number}/{total})" if total > 1 else message, detail)
            )
        else:
            commits.append(_Commit(uploads, removed, detail + counter))
    return commits


def _send_commits(
    publisher: "_Publisher", commits: list, rate_limiter: CommitRateLimiter, create_pr: bool, progress: bool
) -> list[Upload]:
    """Make the planned commits in order, each read back at its commit id; the next batch uploads while one commits."""
    if commits:
        _seed_rate_limiter(publisher, rate_limiter)
    to_send = [u for c in commits for u in c.uploads]
    bar = tqdm(
        total=sum(u.size for u in to_send),
        unit="B",
        unit_scale=True,
        desc=f"push {publisher.repo_id}",
        disable=not progress,
    )
    verified = {"files": 0}

    def on_verified(upload: Upload) -> None:
        verified["files"] += 1
        bar.update(upload.size)
        bar.set_postfix_str(f"{verified['files']}/{len(to_send)} files verified")

    publisher.on_verified = on_verified
    with bar, ThreadPoolExecutor(max_workers=1, thread_name_prefix="hf_tokbin-upload-ahead") as ahead:
        prepared = [None] * len(commits)
        for number, planned in enumerate(commits):
            opens_pr = create_pr and number == 0
            prepared[number] = prepared[number] or publisher.prepare(planned.uploads, planned.deletions)
            following = number + 1
            if following < len(commits) and not opens_pr:
                # Throughput: the next batch's files upload while this one commits and is read back.
                prepared[following] = publisher.prepare(commits[following].uploads, commits[following].deletions)
                prepared[following].preupload = ahead.submit(publisher.preupload, prepared[following])
            rate_limiter.wait_turn()
            commit = publisher.commit(
                planned.uploads,
                planned.deletions,
                planned.summary,
                planned.description,
                create_pr=opens_pr,
                prepared=prepared[number],
            )
            rate_limiter.record()
            publisher.verify(publisher.sent, commit, planned.deletions)
            publisher.head = commit
            prepared[number] = None  # its small files' bytes
    return to_send


def push_folder(
    folder: str | os.PathLike, repo_id: str, *, revision: str = "main", private: bool | None = None,
    endpoint: str | None = None, token: str | None = None, limits: HubLimits = HubLimits(),
    retry: RetryPolicy | None = None, rate_limiter: CommitRateLimiter | None = None, progress: bool = True,
    path_in_repo: str | None = None, delete: Sequence[str] = (), mirror: bool = False, dry_run: bool = False,
    commit_message: str | None = None, create_pr: bool = False,
) -> PushSummary | PushPreview:
    """Publish ``folder`` (a release or a raw corpus) to the dataset repo ``repo_id`` on branch ``revision``.

    ``private``: True/False creates a new repo private/public; None (default) leaves it to the Hub.
    ``path_in_repo``: the repo folder to publish into (several releases can share a repo).
    ``delete`` (fnmatch patterns, relative to that folder) and ``mirror`` name the remote files
    the folder does not hold that may be deleted; no other remote file is ever deleted.
    ``dry_run`` returns a :class:`PushPreview` and changes nothing. ``create_pr`` opens a
    pull request against ``revision`` (main) instead of committing to it.
    ``token`` defaults to huggingface_hub's usual sources (``HF_TOKEN``, the saved login);
    it is never printed. Raises :class:`HubError` naming the repo and file when anything fails.
    """
    from huggingface_hub import HfApi

    _check_repo_args(repo_id, revision)
    prefix = normalize_path_in_repo(path_in_repo)
    delete = _check_patterns(delete)
    if create_pr and revision != "main":
        raise HubError(
            None, "--create-pr opens a pull request against main: it takes no --revision", got=revision,
            hint="to continue a pull request, push with --revision refs/pr/N",
        )
    plan = _checked_plan(folder, progress)
    local = _LocalFiles.check(plan, prefix, progress)  # every file hashed once, before any request
    omitted = left_out(plan)  # after the check above: it names a symlink among the files it hashes
    rate_limiter = rate_limiter or CommitRateLimiter(limits.commits_per_hour)
    publisher = _Publisher(
        HfApi(endpoint=endpoint, token=token), repo_id, revision, limits, retry or RetryPolicy.from_env(),
        prefix=prefix, local=local,
    )

    is_private, head = publisher.repo_state()
    _check_visibility(publisher, is_private, private)
    survey, commits = _survey_and_plan(plan, publisher, head, delete, mirror, commit_message)
    card = next((u for g in survey.pending_groups for u in g if u.path == CARD_NAME), None)
    if card is not None:
        publisher.validate_card(card)
    if dry_run:
        return _preview(plan, survey, repo_id, revision, prefix, head, len(commits), omitted)

    publisher.ensure_repo(private)
    publisher.head = publisher.read_head()
    if publisher.head != head:  # a new repo or branch, or someone pushed since the survey: decide again
        survey, commits = _survey_and_plan(plan, publisher, publisher.head, delete, mirror, commit_message)

    to_send = _send_commits(publisher, commits, rate_limiter, create_pr, progress)
    return _summary(plan, survey, publisher, len(commits), to_send, omitted)


def _checked_plan(folder: str | os.PathLike, progress: bool) -> PublishPlan:
    """What goes up; a release only once every rule a pull applies has held (``verify_release``), before any request,
    so push publishes nothing that pull refuses."""
    plan = publish_plan(folder, progress, check=False)
    if plan.kind == "release":
        from ..verify.release import verify_release

        verify_release(folder, progress=progress)
    return plan


def _check_visibility(publisher: _Publisher, is_private: bool | None, private: bool | None) -> None:
    """``--private``/``--public`` create a repo so; they refuse an existing repo of the other visibility."""
    if is_private is not None and private is not None and is_private != private:
        have, want = ("private", "public") if is_private else ("public", "private")
        raise HubError(
            publisher.where,
            f"the repo exists and is {have}; --{want} does not change an existing repo",
            hint=f"change its visibility in the repo's settings on the Hub, or push without --{want}",
        )


def _survey_and_plan(
    plan: PublishPlan,
    publisher: _Publisher,
    head: str | None,
    delete: Sequence[str],
    mirror: bool,
    message: str | None,
) -> tuple[_Survey, list[_Commit]]:
    """The survey of the branch at ``head`` (None: no branch yet),
    checked against the Hub's limits, and the commits it needs.
    """
    prefix = publisher.prefix
    remote = publisher.remote_tree(head) if head is not None else {}
    survey = _survey(plan, remote, delete, mirror, prefix, publisher.where)
    _check_limits(plan, survey, publisher, head, prefix)
    return survey, _plan_commits(plan, survey, publisher.limits, prefix, message)


def _preview(
    plan: PublishPlan, survey: _Survey, repo_id: str, revision: str, prefix: str, head: str | None, commits: int,
    omitted: tuple[str, ...],
) -> PushPreview:
    """What a push would upload, keep, delete and leave (``--dry-run``)."""
    add = tuple(u for g in survey.pending_groups for u in g) + ((plan.final,) if survey.final_pending else ())
    keep = tuple(sorted(survey.present - ({plan.final.path} if survey.final_pending else set())))
    exists = head is not None
    return PushPreview(repo_id, revision, prefix, exists, add, keep, survey.delete, survey.leave, commits, omitted)


def _summary(
    plan: PublishPlan, survey: _Survey, publisher: _Publisher, commits: int, sent: list[Upload],
    omitted: tuple[str, ...],
) -> PushSummary:
    """What a finished push did: ``sent`` are the files it uploaded."""
    already_there = len(survey.present - {plan.final.path}) if survey.final_pending else len(survey.present)
    return PushSummary(
        publisher.repo_id,
        publisher.revision,
        publisher.head,
        commits,
        len(sent),
        sum(u.size for u in sent),
        already_there,
        plan.kind,
        plan.final.path,
        len(survey.delete),
        publisher.prefix,
        len(survey.leave),
        publisher.pr_url,
        omitted,
    )


def _seed_rate_limiter(publisher: _Publisher, rate_limiter: CommitRateLimiter) -> None:
    """Count the branch's commits of the last hour, so the cap holds across runs (a re-run after a stop)."""
    try:
        ages = publisher.call("read recent commits", lambda: publisher.recent_commit_ages(rate_limiter.window))
    except HubError as error:  # the cap still holds for this run's own commits
        notify(f"could not read the branch's recent commits ({error}); the commit cap counts this run's commits only")
        return
    rate_limiter.seed(ages)


def _check_limits(plan: PublishPlan, survey: _Survey, publisher: _Publisher, head: str | None, prefix: str) -> None:
    """The Hub's limits on the tree the branch would hold after the push."""
    if head is None:
        outside: list[str] = []
    else:
        outside = [] if not prefix else [p for p in _all_paths(publisher, head) if not p.startswith(prefix)]
    final = outside + [prefix + p for p in survey.leave] + [prefix + u.path for u in plan.uploads]
    sizes = {prefix + u.path: u.size for u in plan.uploads}
    check_hub_limits(
        final,
        sizes,
        where=f"{publisher.where}/{prefix}",
        hint="split the release into fewer, bigger parts (a larger shard size), or fewer files per folder",
    )


def _all_paths(publisher: _Publisher, head: str) -> list[str]:
    entries = publisher.call(
        "list files",
        lambda: bounded_listing(
            publisher.api, publisher.repo_id, publisher.where, repo_type=REPO_TYPE, revision=head, recursive=True
        ),
    )
    return [e.path for e in entries if hasattr(e, "blob_id")]


def _check_patterns(patterns: Sequence[str]) -> tuple[str, ...]:
    if isinstance(patterns, str):
        patterns = [patterns]
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern.strip() or pattern.startswith("/"):
            raise HubError(
                None,
                "--delete takes a file pattern relative to the pushed folder, such as 'shards/*'",
                got=repr(pattern),
            )
    return tuple(patterns)


def _check_repo_args(repo_id: str, revision: str) -> None:
    if not is_repo_id(repo_id):
        raise HubError(None, "repo id must be NAMESPACE/NAME", got=repo_id)
    if not revision or len(revision) == 40 and all(c in "0123456789abcdef" for c in revision):
        raise HubError(None, "push needs a branch name as revision, not a commit id", got=revision)


__all__ = ["HubLimits", "PushPreview", "PushSummary", "push_folder", "pack_batches", "compare", "RemoteFile"]
