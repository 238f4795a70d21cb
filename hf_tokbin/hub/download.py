"""Bounded, checked downloads of single repo files at a pinned commit.

Each file is fetched with one ``GET .../resolve/<commit>/<path>`` with
``huggingface_hub``'s headers, through the bounded client of
:mod:`hf_tokbin.hub.bounded` (no HEAD: the size and SHA-256 come from the
record that lists the file), and:

- is read no further than its expected size: one byte more and it is refused;
- must arrive within ``grace + size / min_rate`` seconds, each read within
  ``read_timeout``: at the deadline the connection is shut down, whether the
  server is sending its headers or its body (a server sending a byte every
  few seconds cannot hold a pull);
- is written under a temporary hidden name inside the destination folder, as a
  regular file created by us (never through a symlink), and renamed to its
  final name only once its size and SHA-256 (or git blob id) match.

Limits come from :class:`DownloadLimits` (environment: ``HF_TOKBIN_PULL_READ_TIMEOUT``,
``HF_TOKBIN_PULL_MIN_RATE`` in bytes/s, ``HF_TOKBIN_PULL_GRACE`` in seconds).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .._io import sha256_file
from ..errors import HubError, VerificationError
from .bounded import Deadline, raise_for_status
from .retry import _env_number, as_hub_error, read_timeout_from_env, short_reason, status_of
from .revision import shown

_OPEN_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)


@dataclass(frozen=True)
class DownloadLimits:
    read_timeout: float = 60.0  # seconds any single read (or the connection) may take
    min_rate: float = 64 * 1024  # bytes per second a file must average, beyond the grace
    grace: float = 60.0  # seconds every file gets on top of size / min_rate
    max_record_bytes: int = 256 * 1024 * 1024  # a record whose size no other record gives (COMPLETE.json)

    def __post_init__(self):
        if not (self.read_timeout > 0 and self.min_rate > 0 and self.grace >= 0 and self.max_record_bytes > 0):
            raise HubError(None, "download limits must be positive", got=self)

    @classmethod
    def from_env(cls) -> DownloadLimits:
        return cls(
            read_timeout=read_timeout_from_env(),
            min_rate=_env_number("HF_TOKBIN_PULL_MIN_RATE", 64.0 * 1024, float),
            grace=_env_number("HF_TOKBIN_PULL_GRACE", 60.0, float),
        )

    def seconds_for(self, size: int) -> float:
        return self.grace + size / self.min_rate


@dataclass(frozen=True)
class Expected:
    """What a downloaded file must be: its size, and its SHA-256 or (for a small git file) its git blob id."""

    size: int
    sha256: str | None = None
    git_blob_id: str | None = None
    listed_in: str = "the Hub's tree"  # the record that says so, for messages


class Source:
    """One repo at one checked commit, read by requests bounded in size and time (:mod:`hf_tokbin.hub.bounded`)."""

    def __init__(
        self,
        repo_id: str,
        commit: str,
        *,
        endpoint: str | None,
        token: str | None,
        repo_type: str,
        limits: DownloadLimits,
        folder: str = "",
    ):
        self.repo_id, self.commit, self.endpoint, self.token, self.repo_type, self.limits = (
            repo_id,
            commit,
            endpoint,
            token,
            repo_type,
            limits,
        )
        # the repo folder holding the release ("" for the top), checked by layout.check_path_in_repo
        self.folder = folder

    def repo_path(self, path: str) -> str:
        """The path in the repo of the release file ``path``."""
        return f"{self.folder}/{path}" if self.folder else path

    def uri(self, path: str) -> str:
        return f"hf://{self.repo_type}s/{self.repo_id}@{self.commit}/{shown(self.repo_path(path))}"

    def fetch(self, path: str, root: Path, expected: Expected) -> Path:
        """Download ``path`` to ``root/path`` (a regular file, renamed into place once checked); return it."""
        import httpx2
        from huggingface_hub.utils import build_hf_headers

        dest = safe_destination(root, path)
        tmp = dest.with_name(f".{dest.name}.download")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)  # a killed pull's; unlink never follows a symlink
        url = self._url(path)
        timeout = httpx2.Timeout(self.limits.read_timeout)
        seconds = self.limits.seconds_for(expected.size)
        sha256 = hashlib.sha256()
        received = 0

        def too_slow() -> HubError:
            return HubError(
                self.uri(path), f"download too slow: {received:,} of {expected.size:,} bytes after {seconds:.0f}s",
                hint="re-run: it resumes (HF_TOKBIN_PULL_MIN_RATE / HF_TOKBIN_PULL_GRACE set the limits)",
            )

        try:
            # The bytes as stored: no content coding, so what is counted and hashed is what is written (and no
            # small compressed answer can expand in memory).
            headers = {**build_hf_headers(token=self.token), "Accept-Encoding": "identity"}
            with (
                Deadline(seconds, too_slow) as deadline,
                deadline.stream("GET", url, headers=headers, timeout=timeout, follow_redirects=True) as response,
            ):
                raise_for_status(response)
                announced = response.headers.get("Content-Length", "")
                if announced.isdigit() and int(announced) > expected.size:
                    raise HubError(
                        self.uri(path),
                        f"the server offers more bytes than {expected.listed_in} lists; refused before reading",
                        expected=expected.size, got=int(announced),
                    )
                fd = os.open(tmp, _OPEN_FLAGS, 0o644)
                with os.fdopen(fd, "wb") as file:
                    for chunk in response.iter_raw():
                        received += len(chunk)
                        if received > expected.size:
                            raise HubError(
                                self.uri(path),
                                f"the server sent more bytes than {expected.listed_in} lists; stopped reading",
                                expected=expected.size, got=f"over {expected.size}",
                            )
                        file.write(chunk)
                        sha256.update(chunk)
                    file.flush()
                    os.fsync(file.fileno())
            self._check_download(path, tmp, expected, received, sha256.hexdigest())
            os.replace(tmp, dest)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        return dest

    def _check_download(self, path: str, tmp: Path, expected: Expected, received: int, sha256: str) -> None:
        """The downloaded ``tmp`` of ``path`` against what was listed: its size, SHA-256 and git blob id."""
        if received != expected.size:
            raise VerificationError(
                self.uri(path), f"size differs from {expected.listed_in} (the server sent fewer bytes)",
                expected=expected.size, got=received,
            )
        if expected.sha256 is not None and sha256 != expected.sha256:
            raise VerificationError(
                self.uri(path), f"SHA-256 differs from {expected.listed_in}", expected=expected.sha256, got=sha256,
            )
        if expected.git_blob_id is not None and git_blob_id(tmp) != expected.git_blob_id:
            raise VerificationError(
                self.uri(path), f"git blob id differs from {expected.listed_in}", expected=expected.git_blob_id,
                got=git_blob_id(tmp),
            )

    def _url(self, path: str) -> str:
        from huggingface_hub import hf_hub_url

        return hf_hub_url(
            self.repo_id, self.repo_path(path), repo_type=self.repo_type, revision=self.commit, endpoint=self.endpoint
        )

    def read_range(self, path: str, start: int, length: int) -> bytes:
        """Bytes ``[start, start + length)`` of ``path`` by one range request, never more read than asked.

        The answer must be 206 for exactly that range: a server answering 200 (the whole file, of any size)
        is refused at its status line, before any byte of its body is read. It must arrive within
        ``grace + length / min_rate`` seconds, as a whole file must.
        """
        import httpx2
        from huggingface_hub.utils import build_hf_headers

        asked = f"bytes {start}-{start + length - 1}/"
        headers = {
            **build_hf_headers(token=self.token),
            "Accept-Encoding": "identity",
            "Range": f"bytes={start}-{start + length - 1}",
        }
        seconds = self.limits.seconds_for(length)
        data = bytearray()

        def too_slow() -> HubError:
            return HubError(
                self.uri(path),
                f"range read too slow: {len(data):,} of {length:,} bytes after {seconds:.0f}s",
                hint="re-run (HF_TOKBIN_PULL_MIN_RATE / HF_TOKBIN_PULL_GRACE set the limits)",
            )

        timeout = httpx2.Timeout(self.limits.read_timeout)
        with (
            Deadline(seconds, too_slow) as deadline,
            deadline.stream(
                "GET", self._url(path), headers=headers, timeout=timeout, follow_redirects=True
            ) as response,
        ):
            raise_for_status(response)
            answered = response.headers.get("Content-Range", "")
            if response.status_code != 206 or not answered.startswith(asked):
                got = f"HTTP {response.status_code}, Content-Range {shown(answered[:100]) or 'none'}"
                raise HubError(
                    self.uri(path),
                    "a range request must be answered with 206 and the range asked; refused before reading the body",
                    expected=f"206, Content-Range {asked}...",
                    got=got,
                )
            for chunk in response.iter_raw():
                data += chunk
                if len(data) > length:
                    raise HubError(
                        self.uri(path),
                        "the server sent more bytes than the range asked; stopped reading",
                        expected=length,
                        got=f"over {length}",
                    )
        if len(data) != length:
            raise VerificationError(
                self.uri(path), "the server sent fewer bytes than the range asked", expected=length, got=len(data)
            )
        return bytes(data)


def hub_cache_folder(repo_id: str, repo_type: str) -> Path:
    """The Hub cache's folder of the repo (as ``hf_hub_download`` names it): files fetched checked go into its
    ``snapshots/<commit id>/``, where an offline run finds them."""
    from huggingface_hub import constants
    from huggingface_hub.file_download import repo_folder_name

    return Path(constants.HF_HUB_CACHE) / repo_folder_name(repo_id=repo_id, repo_type=repo_type)


def hub_snapshot_folder(repo_id: str, repo_type: str, commit: str) -> Path:
    """``snapshots/<commit>/`` of the repo's cache folder, made if missing, every folder on the way a real one."""
    cache = hub_cache_folder(repo_id, repo_type)
    cache.mkdir(parents=True, exist_ok=True)
    return safe_folder(cache, f"snapshots/{commit}")


def safe_folder(root: Path, rel: str) -> Path:
    """``root/rel``, made if missing, after making sure every folder on the way is a real folder (no symlink).

    ``rel`` has passed :func:`hf_tokbin.hub.layout.check_path` (or is our own
    name); this guards against what is already on disk, such as a symlink
    planted in a staging folder kept for a re-run.
    """
    folder = root
    for part in [p for p in rel.split("/") if p]:
        folder = folder / part
        with contextlib.suppress(FileExistsError):  # made now, or by another download thread
            os.mkdir(folder)
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            raise HubError(
                folder, "expected a folder the pull made, found a symlink or a file", hint=f"remove {root} and re-run"
            )
    return folder


def safe_destination(root: Path, path: str) -> Path:
    """Where the repo file ``path`` goes under ``root``: its folders
    real folders (see :func:`safe_folder`), itself no folder.
    """
    folder, _, name = path.rpartition("/")
    dest = safe_folder(root, folder) / name
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(os.lstat(dest).st_mode):
            raise HubError(dest, "expected a file the pull wrote, found a folder", hint=f"remove {root} and re-run")
    return dest


def matches(path: Path, expected: Expected) -> bool:
    """Whether ``path`` is a regular file (not a symlink) with the expected size and digest."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(info.st_mode) or info.st_size != expected.size:
        return False
    if expected.sha256 is not None and sha256_file(path) != expected.sha256:
        return False
    return expected.git_blob_id is None or git_blob_id(path) == expected.git_blob_id


def git_blob_id(path: Path) -> str:
    """The git blob id of a file the Hub stores in git, not LFS (small: the Hub keeps larger files in LFS)."""
    from huggingface_hub.utils.sha import git_hash

    return git_hash(Path(path).read_bytes())


def tree_expected(
    tree: dict, path: str, source: Source, record: bool = True, max_bytes: int | None = None
) -> Expected:
    """What a file no record lists must be, by the Hub's tree: its size and LFS SHA-256 or git blob id.

    A ``record`` (COMPLETE.json, a manifest, a card) is at most ``max_record_bytes``, any file at most ``max_bytes``
    when given (a tokenizer.json): a larger listed size is refused before a byte is read.
    """
    entry = tree[path]
    limit = max_bytes if max_bytes is not None else source.limits.max_record_bytes if record else None
    if not (isinstance(entry.size, int) and 0 <= entry.size and (limit is None or entry.size <= limit)):
        what = "a record" if max_bytes is None else "this file"
        raise HubError(
            source.uri(path),
            f"the Hub's tree gives a size out of bounds for {what}",
            expected=f"at most {limit:,} bytes" if limit else "a size",
            got=shown(entry.size),
        )
    if entry.lfs is not None:
        return Expected(entry.size, sha256=entry.lfs.sha256 if hasattr(entry.lfs, "sha256") else entry.lfs["sha256"])
    return Expected(entry.size, git_blob_id=entry.blob_id)


def read_error(
    where: str, what: str, error: BaseException, endpoint: str | None, repo_id: str, repo_type: str = "dataset"
) -> HubError:
    """A :class:`HubError` for a failed read: the server's message (escaped), and a hint for reading (not writing)."""
    from huggingface_hub import constants
    from huggingface_hub.errors import GatedRepoError

    status = status_of(error)
    got = shown(short_reason(error))  # the status and the server's own reason, once
    page = f"{(endpoint or constants.ENDPOINT).rstrip('/')}/{'datasets/' if repo_type == 'dataset' else ''}{repo_id}"
    if isinstance(error, GatedRepoError):
        return HubError(
            where,
            f"{what} failed: the repo is gated",
            got=got,
            hint=f"request access on {page}, then use a token of the account that has it",
        )
    if status in (401, 403):
        return HubError(
            where,
            f"{what} failed: no read access",
            got=got,
            hint=(
                "check the token (HF_TOKEN, or `hf auth login`) and that it can "
                "read this repo (a fine-grained token needs read access to it)"
            ),
        )
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return HubError(
            where,
            f"{what} failed: the disk is full",
            got=got,
            hint="free space and re-run the same command: it resumes",
        )
    generic = as_hub_error(where, what, error)
    return HubError(where, generic.rule, got=got, hint=generic.hint)
