"""Download a release from a Hub dataset repo and verify every byte before it is called done.

1. Resolve the revision to a commit id once; every download is pinned to it,
   so a push landing meanwhile cannot mix two versions.
2. Download ``COMPLETE.json``; without it the release is incomplete and is
   refused (``allow_incomplete`` downloads what is there, checks what the
   receipts vouch for, and says so).
3. Download every file ``COMPLETE.json`` lists into a temporary folder beside
   the output (``.<name>.pull-<commit>``), check each file's size and SHA-256
   against ``COMPLETE.json`` and each receipt against ``COMPLETE.json``.
4. Only then rename the temporary folder to the output. On any failure the
   temporary folder is removed: nothing partial is left under the output name.
"""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from .._io import fsync_dir
from ..errors import HubError, TokbinError
from ..records import FileEntry
from ..release import COMPLETE_NAME, RECEIPTS_DIR, Complete, Receipt
from .files import check_files, check_receipts
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
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
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
        if COMPLETE_NAME in tree:
            download(COMPLETE_NAME)
            complete = Complete.read(staging / COMPLETE_NAME)
            entries = list(complete.files)
        elif allow_incomplete:
            complete = None
            entries = None
        else:
            raise HubError(f"{repo_id}@{commit}", f"release is incomplete: {COMPLETE_NAME} is missing", hint="a push may still be running; --allow-incomplete downloads what is there")

        names = [e.path for e in entries] if entries is not None else [p for p in tree if p not in _GIT_FILES and p != COMPLETE_NAME]
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
    with tqdm(total=len(names), unit="file", desc="download", disable=not progress) as bar, ThreadPoolExecutor(max_workers=max_workers) as pool:
        for _ in pool.map(download, names):
            bar.update(1)
