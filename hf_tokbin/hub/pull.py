"""Download a release from a Hub dataset repo and verify every byte before it is called done.

1. Resolve the revision to a commit id once; every download is pinned to it,
   so a push landing meanwhile cannot mix two versions.
2. Download ``COMPLETE.json``; without it the release is incomplete and is
   refused (``allow_incomplete`` downloads what is there, checks what the
   receipts vouch for, and says so). Pull handles releases only: a raw corpus
   repo (``_MANIFEST.json`` at the top) is refused, it loads with
   ``datasets.load_dataset`` or ``hf-tokbin build --corpus NS/NAME``.
3. Download every file ``COMPLETE.json`` lists into a temporary folder beside
   the output (``.<name>.pull-<commit>``), check each file's size and SHA-256
   against ``COMPLETE.json`` and each receipt against ``COMPLETE.json``. The
   first failed download cancels the ones still queued. Errors name the file
   as ``hf://datasets/NS/NAME@COMMIT/PATH``, never the temporary folder.
4. Only then rename the temporary folder to the output. On any failure the
   temporary folder is removed: nothing partial is left under the output name.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from .._io import fsync_dir
from ..errors import HubError, TokbinError
from ..formats.corpus_manifest import MANIFEST_NAME as CORPUS_MANIFEST_NAME
from ..formats.records import FileEntry
from ..formats.release import (
    COMPLETE_NAME,
    RECEIPTS_DIR,
    Complete,
    Receipt,
)
from ..verify.checks import check_files, check_receipts
from .retry import RetryPolicy, as_hub_error, call_with_retry

REPO_TYPE = "dataset"
_CLIENT_STATE = ".cache"  # huggingface_hub's download metadata inside a local_dir
_GIT_FILES = (".gitattributes", ".gitignore")


@dataclass(frozen=True)
class PullSummary:
    repo_id: str
    commit: str
    out: Path
    files: int
    bytes: int
    receipts: int
    complete: bool

    def __str__(self) -> str:
        if self.complete:
            return f"{self.repo_id}@{self.commit}: {self.files} files ({self.bytes:,} bytes) checked against {COMPLETE_NAME} and {self.receipts} receipts -> {self.out}"
        return f"{self.repo_id}@{self.commit}: INCOMPLETE release (no {COMPLETE_NAME}); {self.files} files ({self.bytes:,} bytes) downloaded, those named by {self.receipts} receipts checked -> {self.out}"


def pull_release(
    repo_id: str,
    out: str | os.PathLike,
    *,
    revision: str | None = None,
    endpoint: str | None = None,
    token: str | None = None,
    allow_incomplete: bool = False,
    cache_dir: str | os.PathLike | None = None,
    retry: RetryPolicy | None = None,
    max_workers: int = 4,
    progress: bool = True,
) -> PullSummary:
    """Download the release in ``repo_id`` at ``revision`` to ``out``, verified; see the module docstring."""
    from huggingface_hub import HfApi

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise HubError(out, "output path exists and is a file, not a folder", hint="choose a new --out")
    if out.exists() and any(out.iterdir()):
        raise HubError(out, "output folder already exists and is not empty", hint="choose a new --out")
    retry = retry or RetryPolicy.from_env()
    api = HfApi(endpoint=endpoint, token=token)
    where = f"{repo_id}@{revision or 'main'}"

    def call(what: str, fn):
        try:
            return call_with_retry(retry, what, fn)
        except TokbinError:
            raise
        except Exception as error:
            raise as_hub_error(where, what, error) from error

    commit = call("resolve revision", lambda: api.dataset_info(repo_id, revision=revision)).sha
    staging = out.parent / f".{out.name}.pull-{commit[:12]}"
    shutil.rmtree(staging, ignore_errors=True)  # left by a killed pull: start clean
    staging.mkdir(parents=True)

    def download(path: str) -> None:
        call(
            f"download {path}",
            lambda: api.hf_hub_download(repo_id, path, repo_type=REPO_TYPE, revision=commit, local_dir=staging, cache_dir=cache_dir),
        )

    try:
        tree = call("list files", lambda: [f.path for f in api.list_repo_tree(repo_id, repo_type=REPO_TYPE, revision=commit, recursive=True) if hasattr(f, "blob_id")])
        if COMPLETE_NAME not in tree and CORPUS_MANIFEST_NAME in tree:
            raise HubError(
                f"{repo_id}@{commit}",
                f"not a release: the repo holds a raw corpus ({CORPUS_MANIFEST_NAME}), and pull handles releases ({COMPLETE_NAME}) only",
                hint=f"load it with datasets.load_dataset('{repo_id}'), or build from it with hf-tokbin build --corpus {repo_id}",
            )
        if COMPLETE_NAME not in tree and not allow_incomplete:
            raise HubError(f"{repo_id}@{commit}", f"release is incomplete: {COMPLETE_NAME} is missing", hint="a push may still be running; --allow-incomplete downloads what is there")
        with _named_on_the_hub(staging, repo_id, commit):
            if COMPLETE_NAME in tree:
                download(COMPLETE_NAME)
                complete = Complete.read(staging / COMPLETE_NAME)
                names = [e.path for e in complete.files]
            else:
                complete = None
                names = [p for p in tree if p not in _GIT_FILES]
            for name in names:
                FileEntry(name, 0, "0" * 64)  # the path rules: relative, inside the folder
            _download_all(names, download, max_workers, progress)

            if complete is not None:
                check_files(staging, complete.files, COMPLETE_NAME, progress)
                receipts = check_receipts(staging, complete)
            else:
                receipts = [Receipt.read(staging / p) for p in names if p.startswith(f"{RECEIPTS_DIR}/") and p.endswith(".json")]
                for receipt in receipts:
                    check_files(staging, receipt.files, f"receipt {receipt.part}", progress)
        shutil.rmtree(staging / _CLIENT_STATE, ignore_errors=True)
        if out.exists():
            out.rmdir()  # empty, checked above
        os.replace(staging, out)
        fsync_dir(out.parent)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    pulled = names + ([COMPLETE_NAME] if complete is not None else [])
    total = sum((out / n).stat().st_size for n in pulled)
    return PullSummary(repo_id, commit, out, len(pulled), total, len(receipts), complete is not None)


def _download_all(names: list[str], download, max_workers: int, progress: bool) -> None:
    """``download(name)`` for every name on ``max_workers`` threads; the first failure cancels the queued ones."""
    pool = ThreadPoolExecutor(max_workers=max_workers)
    try:
        with tqdm(total=len(names), unit="file", desc="download", disable=not progress) as bar:
            pending = {pool.submit(download, name) for name in names}
            while pending:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for future in done:
                    future.result()  # raises the download's error
                bar.update(len(done))
    finally:
        # Waits only for the downloads already running: they write into the folder about to be removed.
        pool.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def _named_on_the_hub(staging: Path, repo_id: str, commit: str):
    """Re-raise an error about a file of the temporary folder (removed on failure) as one about the file on the Hub."""
    try:
        yield
    except TokbinError as error:
        path = getattr(error, "path", None)
        if path is None or not Path(path).is_relative_to(staging):
            raise
        uri = f"hf://datasets/{repo_id}@{commit}/{Path(path).relative_to(staging).as_posix()}"
        raise type(error)(uri, error.rule, error.expected, error.got, error.hint) from error
