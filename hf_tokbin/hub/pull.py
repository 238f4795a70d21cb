"""Download a release (or a raw corpus) from a Hub dataset repo; nothing is called done before it is verified.

A pull trusts nothing it receives (see ``docs/security.md``):

1. The revision is resolved to a commit id, checked (40 lowercase hex digits,
   :mod:`hf_tokbin.hub.revision`); every request is pinned to it.
2. The record is fetched: ``COMPLETE.json`` for a release, ``_MANIFEST.json``
   for a corpus (a repo with neither is incomplete: refused, unless
   ``allow_incomplete``, which takes the tree's layout files and checks what
   the receipts vouch for). Every path it lists must be part of the layout
   (:func:`hf_tokbin.hub.layout.check_path`) before anything is written, and
   must agree with the Hub's tree (size, LFS SHA-256) at the commit.
3. The files are fetched into a staging folder beside the output,
   ``.<out>.pull-<commit>``, on ``max_workers`` threads, each bounded in size
   and time and checked against the record as it arrives
   (:mod:`hf_tokbin.hub.download`). A failed or killed pull keeps the staging
   folder: a re-run of the same command resumes, fetching only the files that
   are missing or do not match the record, after removing anything in it the
   pull does not want (symlinks unlinked, never followed).
4. Every rule ``hf-tokbin verify`` applies passes on the staging folder, the
   record goes in last, and only then is the folder renamed to the output.
   The output therefore never holds a record unless everything passed.

``include`` (:class:`hf_tokbin.hub.layout.Include`) fetches only some formats
and splits plus the records; such a copy is verified for what it holds, gets
``PARTIAL.json`` instead of the record, and is reported as partial. Errors
name files as ``hf://datasets/NS/NAME@COMMIT/PATH``, never the staging folder.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import stat
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from .._io import canonical_json, fsync_dir, sha256_file, write_text_atomic
from ..errors import HubError, TokbinError
from ..formats.corpus_manifest import MANIFEST_NAME as CORPUS_MANIFEST_NAME
from ..formats.corpus_manifest import CorpusManifest
from ..formats.records import FileEntry
from ..formats.release import (
    CARD_NAME,
    COMPLETE_NAME,
    PARTIAL_FORMAT,
    PARTIAL_NAME,
    RECEIPTS_DIR,
    Complete,
    Receipt,
)
from ..verify.checks import check_files
from .download import (
    DownloadLimits,
    Expected,
    Source,
    matches,
    read_error,
    safe_destination,
    safe_folder,
    tree_expected,
)
from .layout import Include, check_path, check_path_in_repo, is_token_file
from .retry import RetryPolicy, call_with_retry, notify
from .revision import bounded_listing, escaped, resolve_commit, shown

REPO_TYPE = "dataset"
RECORDS_DIR = ".records"  # inside the staging folder: the record as fetched, until it goes in last
GIT_FILES = (".gitattributes", ".gitignore")  # the repo's own files, no part of a release
_NAMED_MAX = 50  # files named in one error


@dataclass(frozen=True)
class PullSummary:
    repo_id: str
    commit: str
    out: Path
    files: int
    bytes: int
    receipts: int
    complete: bool
    kind: str = "release"  # or "corpus"
    partial: tuple[str, ...] = ()  # the --include items of a partial copy
    fetched: int = 0  # files downloaded by this run (the others were already in the staging folder)
    kept: int = 0  # files found whole in the staging folder of an interrupted pull, not downloaded again

    def __str__(self) -> str:
        head = f"{self.repo_id}@{self.commit}: "
        kept = f", {self.kept} kept from an interrupted pull" if self.kept else ""
        tail = f" ({self.fetched} downloaded now{kept}) -> {self.out}"
        if self.partial:
            record = COMPLETE_NAME if self.kind == "release" else CORPUS_MANIFEST_NAME
            return (
                head
                + (
                    f"PARTIAL copy ({', '.join(self.partial)}) of the {self.kind}: {self.files} files "
                    f"({self.bytes:,} bytes) checked against its {record}, listed in {PARTIAL_NAME}"
                )
                + tail
            )
        if self.kind == "corpus":
            return (
                head
                + f"corpus: {self.files} files ({self.bytes:,} bytes) checked against {CORPUS_MANIFEST_NAME}"
                + tail
            )
        if self.complete:
            return (
                head
                + (
                    f"{self.files} files ({self.bytes:,} bytes) checked against "
                    f"{COMPLETE_NAME} and {self.receipts} receipts, and verified"
                )
                + tail
            )
        return (
            head
            + (
                f"INCOMPLETE release (no {COMPLETE_NAME}); {self.files} files ({self.bytes:,} "
                f"bytes) downloaded, those named by {self.receipts} receipts checked"
            )
            + tail
        )


@dataclass(frozen=True)
class Wanted:
    """A file to fetch: its repo path and what it must be."""

    path: str
    expected: Expected


def pull_release(
    repo_id: str, out: str | os.PathLike, *, revision: str | None = None, endpoint: str | None = None,
    token: str | None = None, allow_incomplete: bool = False, include: Include | list[str] | None = None,
    path_in_repo: str | None = None, retry: RetryPolicy | None = None, limits: DownloadLimits | None = None,
    max_workers: int = 8, progress: bool = True,
) -> PullSummary:
    """Download the release or corpus in ``repo_id`` at ``revision`` to ``out``, verified; see the module docstring."""

    out = _checked_new_folder(Path(out))
    include = include if isinstance(include, Include) else Include.parse(include)
    snapshot = open_snapshot(repo_id, revision, endpoint, token, path_in_repo, retry, limits)
    call, commit, folder, tree = snapshot.call, snapshot.commit, snapshot.folder, snapshot.tree
    source = snapshot.source
    where = f"{repo_id}@{commit}" + (f"/{folder}" if folder else "")
    kind = "release" if COMPLETE_NAME in tree else "corpus" if CORPUS_MANIFEST_NAME in tree else None
    if kind is None and not allow_incomplete:
        raise HubError(
            where, f"release is incomplete: {COMPLETE_NAME} is missing",
            hint="a push may still be running; --allow-incomplete downloads what is there",
        )

    staging = _open_staging(out, commit)
    records = safe_folder(staging, RECORDS_DIR)
    with named_on_the_hub(staging, records, source):
        if kind is None:
            # No record: the tree's layout files, each as large as the tree says (nothing else bounds it).
            layout = [p for p in sorted(tree) if (folder or p not in GIT_FILES) and _in_layout("release", p)]
            layout = [p for p in layout if include.selects(p)]
            wanted = [Wanted(p, tree_expected(tree, p, source, record=False)) for p in layout]
            record = None
        else:
            record_name = COMPLETE_NAME if kind == "release" else CORPUS_MANIFEST_NAME
            record = call(
                f"download {record_name}",
                lambda: source.fetch(record_name, records, tree_expected(tree, record_name, source)),
            )
            wanted = _wanted_from_record(kind, record, tree, include, source)
        _remove_strays(staging, {w.path for w in wanted})
        fetched = fetch_all(
            wanted, staging, lambda w: call(f"download {w.path}", lambda: source.fetch(w.path, staging, w.expected)),
            max_workers, progress,
        )

        receipts = _check_what_came(staging, kind, record, wanted, include, source, progress)
    shutil.rmtree(records)  # our own hidden folder; rmtree unlinks symlinks, never follows them
    if out.exists():
        out.rmdir()  # empty, checked above
    os.replace(staging, out)
    fsync_dir(out.parent)
    names = [w.path for w in wanted] + (
        [] if record is None else [PARTIAL_NAME if not include.everything else record.name]
    )
    total = sum(os.lstat(out / n).st_size for n in names)
    kept = len(wanted) - fetched  # the record is fetched (or PARTIAL.json written) by every run
    return PullSummary(
        repo_id, commit, out, len(names), total, receipts, kind == "release" and include.everything, kind or "release",
        include.specs, fetched, kept,
    )


def _checked_new_folder(out: Path) -> Path:
    """``out`` if it is a folder that does not exist yet, or an empty one (a pull never writes into a folder's files).

    Checked before anything is fetched. The pull fills a staging folder beside
    ``out`` and renames it to ``out``: the current folder (``--out .``) or the
    root has no place beside it, and a parent that is a file has no place at all.
    """
    given, out = out, Path(os.path.abspath(out))
    if not out.name or out == Path.cwd():
        raise HubError(
            given,
            "--out must name a new or empty folder other than the "
            "current one (the pull renames its staging folder to it)",
            hint="give a folder name, e.g. --out release",
        )
    if out.parent.exists() and not out.parent.is_dir():
        raise HubError(out.parent, "--out: the folder it goes in is a file")
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise HubError(out, "output path exists and is a file, not a folder", hint="choose a new --out")
    if out.exists() and any(out.iterdir()):
        raise HubError(out, "output folder already exists and is not empty", hint="choose a new --out")
    return out


def _check_what_came(
    staging: Path, kind: str | None, record, wanted: list, include: Include, source, progress: bool
) -> int:
    """Every rule ``verify`` applies to what was fetched into ``staging``, before the rename; the number of receipts.
    """
    if kind is None:
        return len(_check_incomplete(staging, [w.path for w in wanted], progress))
    if not include.everything:
        return _finish_partial(staging, kind, record, wanted, include, source)
    if kind == "release":
        return _finish_release(staging, record)
    _finish_corpus(staging, record)
    return 0


@dataclass(frozen=True)
class Snapshot:
    """A Hub repo at one checked commit id: its file listing, a bounded downloader and the retrying call both use."""

    commit: str
    folder: str
    tree: dict
    source: Source
    call: object  # call(what, fn): fn() with retries; a failure is one HubError naming the repo and the operation


def open_snapshot(
    repo_id: str,
    revision: str | None,
    endpoint: str | None,
    token: str | None,
    path_in_repo: str | None,
    retry: RetryPolicy | None,
    limits: DownloadLimits | None,
) -> Snapshot:
    """Resolve ``revision`` to a checked commit id and list the
    files under ``path_in_repo`` there (pull and remote verify).
    """
    from huggingface_hub import HfApi

    folder = check_path_in_repo(path_in_repo)
    retry = retry or RetryPolicy.from_env()
    api = HfApi(endpoint=endpoint, token=token)
    where = [f"{repo_id}@{shown(revision or 'main')}"]

    def call(what: str, fn):
        try:
            return call_with_retry(retry, what, fn)
        except TokbinError:
            raise
        except Exception as error:
            raise read_error(where[0], what, error, endpoint, repo_id) from error

    commit = call("resolve revision", lambda: resolve_commit(api, repo_id, revision, REPO_TYPE))
    where[0] = f"{repo_id}@{commit}"
    tree = call("list files", lambda: list_tree(api, repo_id, commit, folder))
    source = Source(
        repo_id,
        commit,
        endpoint=endpoint,
        token=token,
        repo_type=REPO_TYPE,
        limits=limits or DownloadLimits.from_env(),
        folder=folder,
    )
    return Snapshot(commit, folder, tree, source, call)


def list_tree(api, repo_id: str, commit: str, folder: str = "") -> dict:
    """The files of the repo at ``commit`` under ``folder`` (huggingface_hub ``RepoFile``s: size, blob id, LFS
    SHA-256), by their path relative to ``folder``."""
    prefix = f"{folder}/" if folder else ""
    entries = bounded_listing(
        api,
        repo_id,
        f"{repo_id}@{commit}",
        repo_type=REPO_TYPE,
        revision=commit,
        path_in_repo=folder or None,
        recursive=True,
    )
    return {f.path[len(prefix) :]: f for f in entries if hasattr(f, "blob_id") and f.path.startswith(prefix)}


def tree_disagreements(entries, tree: dict) -> list[str]:
    """Each listed file the Hub's tree at the commit does not
    hold with the same size (and LFS SHA-256, when it has one).
    """
    problems = []
    for entry in entries:
        remote = tree.get(entry.path)
        if remote is None:
            problems.append(f"{shown(entry.path)} is not in the repo")
        elif remote.size != entry.size:
            problems.append(
                f"{shown(entry.path)} has {shown(remote.size)} bytes on the Hub, {entry.size} in the record"
            )
        elif remote.lfs is not None and (remote.lfs.sha256 != entry.sha256 or remote.lfs.size != entry.size):
            problems.append(
                f"{shown(entry.path)} has another LFS SHA-256 on the "
                f"Hub ({shown(remote.lfs.sha256)}) than in the record"
            )
    return problems


def disagreement_error(where: str, rule: str, problems: list[str], error=HubError):
    """One error naming every file in ``problems`` (up to ``_NAMED_MAX``, then how many more)."""
    named = "; ".join(problems[:_NAMED_MAX]) + (
        f"; and {len(problems) - _NAMED_MAX} more" if len(problems) > _NAMED_MAX else ""
    )
    return error(where, f"{rule} ({len(problems)} file{'s' if len(problems) != 1 else ''})", got=named)


def _wanted_from_record(kind: str, record: Path, tree: dict, include: Include, source: Source) -> list[Wanted]:
    """The files the record lists, each checked against the layout and the tree, then narrowed by ``include``."""
    if kind == "release":
        complete = Complete.read(record)
        entries = list(complete.files)
        if not entries:
            raise HubError(
                source.uri(COMPLETE_NAME),
                "lists no files: a release lists at least its run_config.json, stats.json and receipts",
            )
        for entry in entries:
            check_path(kind, entry.path, source.uri(COMPLETE_NAME))
        selected = [e for e in entries if include.selects(e.path)]
    else:
        manifest = CorpusManifest.read(record)
        entries = [FileEntry(s.path, s.size, s.sha256) for s in manifest.shards]
        for entry in entries:
            check_path(kind, entry.path, source.uri(CORPUS_MANIFEST_NAME))
        selected = [
            FileEntry(s.path, s.size, s.sha256) for s in manifest.shards if include.selects_split(s.split, s.path)
        ]
    unmatched = include.unmatched(e.path for e in entries)
    if unmatched or not (include.everything or any(kind == "corpus" or is_token_file(e.path) for e in selected)):
        what = f"{', '.join(map(shown, unmatched))} matches no file" if unmatched else "the selection holds no file"
        option = "--exclude" if unmatched and set(unmatched) <= set(include.excludes) else "--include"
        raise HubError(option, f"{what} of the {kind} at this commit", got=shown(", ".join(include.specs)))
    problems = tree_disagreements(entries, tree)
    if problems:
        raise disagreement_error(
            source.uri(record.name), "the record disagrees with the Hub's own tree at this commit", problems
        )
    record_name = COMPLETE_NAME if kind == "release" else CORPUS_MANIFEST_NAME
    wanted = [Wanted(e.path, Expected(e.size, sha256=e.sha256, listed_in=record_name)) for e in selected]
    if kind == "corpus" and CARD_NAME in tree:  # the card's configs make load_dataset work; the tree vouches for it
        wanted.append(Wanted(CARD_NAME, tree_expected(tree, CARD_NAME, source)))
    return wanted


def _in_layout(kind: str, path: str) -> bool:
    try:
        check_path(kind, path, "")
    except HubError:
        return False
    return True


def _open_staging(out: Path, commit: str) -> Path:
    """The staging folder of a pull of ``commit`` to ``out``: made, or kept from an interrupted pull (never a symlink).
    """
    staging = out.parent / f".{out.name}.pull-{commit}"
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(staging)
    except FileExistsError:
        if not stat.S_ISDIR(os.lstat(staging).st_mode):
            raise HubError(
                staging, "the staging folder of this pull is not a folder", hint="remove it and re-run"
            ) from None
    for name in (COMPLETE_NAME, CORPUS_MANIFEST_NAME, PARTIAL_NAME):  # a record goes in last, after every check
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staging / name)
    for other in sorted(out.parent.glob(f".{glob.escape(out.name)}.pull-*")):
        if other != staging:
            notify(
                f"note: {other} is left by an interrupted pull of "
                "another commit; remove it when it is no longer needed"
            )
    return staging


def _remove_strays(staging: Path, keep: set[str]) -> None:
    """Remove what a kept staging folder holds beyond the files this pull wants (another ``--include``, a planted
    file or symlink): none of it may end up in the copy. Symlinks are unlinked, never followed; folders stay."""
    for folder, dirs, files in os.walk(staging):  # does not descend into symlinked folders
        base = Path(folder)
        if base == staging and RECORDS_DIR in dirs:
            dirs.remove(RECORDS_DIR)
        for name in files + [d for d in dirs if (base / d).is_symlink()]:
            if (base / name).relative_to(staging).as_posix() not in keep:
                os.unlink(base / name)


def fetch_all(wanted: list[Wanted], staging: Path, fetch, max_workers: int, progress: bool) -> int:
    """Fetch every wanted file not already in ``staging`` with its size and SHA-256; return how many were downloaded.

    The first failure cancels the queued downloads; the running ones finish
    (they write into the staging folder, which is kept for a re-run).
    """

    def one(w: Wanted) -> bool:
        if _already_there(staging, w):
            return False
        fetch(w)
        return True

    downloaded = 0
    pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="hf_tokbin-pull")
    try:
        with tqdm(total=len(wanted), unit="file", desc="download", disable=not progress) as bar:
            pending = {pool.submit(one, w) for w in wanted}
            while pending:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for future in done:
                    downloaded += future.result()  # raises the download's error
                bar.update(len(done))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return downloaded


def _already_there(staging: Path, w: Wanted) -> bool:
    """Whether an interrupted pull left this file, a regular file of the right size and digest; a wrong one is removed.
    """
    path = safe_destination(staging, w.path)  # every folder on the way is a real folder in staging
    if matches(path, w.expected):
        return True
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a symlink, a partial file or another file: fetched again (unlink never follows a symlink)
    return False


def _finish_release(staging: Path, record: Path) -> int:
    """Every rule of ``hf-tokbin verify`` on the staging folder,
    with COMPLETE.json put in last; taken out again on failure.
    """
    from ..verify.release import verify_release

    final = staging / COMPLETE_NAME
    shutil.copyfile(record, final)
    try:
        verify_release(staging)
    except BaseException:
        os.unlink(final)
        raise
    return len([f for f in Complete.read(final).files if f.path.startswith(f"{RECEIPTS_DIR}/")])


def _finish_corpus(staging: Path, record: Path) -> None:
    manifest = CorpusManifest.read(record)
    check_files(
        staging, [FileEntry(s.path, s.size, s.sha256) for s in manifest.shards], CORPUS_MANIFEST_NAME, progress=False
    )
    shutil.copyfile(record, staging / CORPUS_MANIFEST_NAME)


def _finish_partial(
    staging: Path, kind: str, record: Path, wanted: list[Wanted], include: Include, source: Source
) -> int:
    """Verify what a partial copy holds, then write ``PARTIAL.json`` (never the record: the copy is not the whole)."""
    held = [w.path for w in wanted]
    receipts = 0
    if kind == "release":
        from ..verify.release import verify_release_records

        complete = Complete.read(record)
        by_path = {f.path: f for f in complete.files}
        check_files(staging, [by_path[p] for p in held], COMPLETE_NAME, progress=False)
        verify_release_records(staging, complete, held)
        receipts = len([p for p in held if p.startswith(f"{RECEIPTS_DIR}/")])
        files = [by_path[p].to_dict() for p in held]
        listing = {"complete": [f.to_dict() for f in complete.files]}  # what is absent, for verify and merge
    else:
        listing = {}
        files = [{"path": w.path, "size": w.expected.size, "sha256": sha256_file(staging / w.path)} for w in wanted]
    partial = {
        "format": PARTIAL_FORMAT,
        "repo": source.repo_id,
        "commit": source.commit,
        "path_in_repo": source.folder,
        "record": record.name,
        "include": list(include.specs),
        "files": sorted(files, key=lambda f: f["path"]),
        **listing,
    }
    write_text_atomic(staging / PARTIAL_NAME, canonical_json(partial))
    return receipts


def _check_incomplete(staging: Path, names: list[str], progress: bool) -> list[Receipt]:
    """Without COMPLETE.json: each receipt's files have the size and SHA-256 it names."""
    receipts = [Receipt.read(staging / p) for p in names if p.startswith(f"{RECEIPTS_DIR}/") and p.endswith(".json")]
    for receipt in receipts:
        check_files(staging, receipt.files, f"receipt {receipt.part}", progress)
    return receipts


@contextlib.contextmanager
def named_on_the_hub(staging: Path, records: Path, source: Source):
    """Re-raise an error about a file of the staging folder as one about the file on the Hub, server strings escaped.
    """
    try:
        yield
    except TokbinError as error:
        path = getattr(error, "path", None)
        if path is None or not Path(path).is_relative_to(staging):
            raise
        rel = Path(path).relative_to(records if Path(path).is_relative_to(records) else staging).as_posix()
        error.path = source.uri(rel)
        raise escaped(error) from error
