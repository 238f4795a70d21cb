"""A release written to an fsspec URL (``s3://``, ``gs://``, ``hf://buckets/...``, ``file://``, ``memory://``).

The build writes every file exactly as it does into a local folder, but into
a local scratch folder on whichever machine runs the task::

    $HF_TOKBIN_CACHE/out/<key>/        (default ~/.cache/hf_tokbin/out/<key>/)

where ``<key>`` is the first 16 hex digits of the SHA-256 of the URL, a
newline and ``run_config.json``'s text, so two different builds never share
a scratch folder. It then publishes the files to the URL with fsspec, in an
order that keeps the completion rules of a local folder (on an object store
an object appears only once its upload has finished):

1. per part: the part's Megatron pair, its llm.c staging pair
   ``.work/llmc/part-NNNNNN.bin|.idx``, the staging pair's sizes and digests
   ``.work/llmc/part-NNNNNN.json`` (``{"files": [{"path", "size", "sha256"},
   ...]}``, canonical JSON) and, last, the receipt;
2. at the finish (on the driver): ``tokens/``, ``stats.json``, ``README.md``
   and, last, ``COMPLETE.json``; then the remote ``.work/`` and the local
   scratch folder are deleted.

Nothing about the URL or its credentials is written into any release file;
credentials come from the backend's own configuration (environment
variables, ``~/.aws``, ``hf auth login``...) on every machine.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ._io import commit_file, tmp_path_for
from .errors import BuildError
from .records import FileEntry

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_HASH_CHUNK = 1 << 22  # bytes read per step when hashing a remote file


def is_url(out: str | os.PathLike) -> bool:
    """Whether ``--out`` is a URL (``SCHEME://...``) rather than a local path."""
    return isinstance(out, str) and _SCHEME.match(out) is not None


def check_url(url: str) -> None:
    """Fail at once, before any work, if no fsspec filesystem serves this URL's scheme."""
    import fsspec

    protocol = url.split("://", 1)[0]
    try:
        fsspec.get_filesystem_class(protocol)
    except (ImportError, ValueError) as e:
        raise BuildError(
            url,
            "--out URL needs an installed fsspec filesystem for its scheme",
            expected=f"a backend for {protocol}://",
            got=str(e).splitlines()[0] if str(e) else type(e).__name__,
            hint="install it (s3fs for s3://, gcsfs for gs://, adlfs for az://), or give a local folder",
        ) from None


def scratch_key(url: str, run_config_text: str) -> str:
    return hashlib.sha256(f"{url}\n{run_config_text}".encode()).hexdigest()[:16]


def scratch_root(key: str) -> Path:
    """The local scratch folder of a URL build on this machine."""
    base = os.environ.get("HF_TOKBIN_CACHE") or Path.home() / ".cache" / "hf_tokbin"
    return Path(base) / "out" / key


@dataclass(frozen=True)
class RemoteOut:
    """The release folder at ``url``; paths are relative posix paths inside it.

    Holds the URL only (it pickles to Ray workers); the filesystem comes from
    fsspec's cache on every call.
    """

    url: str

    def _fs(self):
        from fsspec.core import url_to_fs

        fs, root = url_to_fs(self.url)
        return fs, root.rstrip("/")

    def location(self, rel: str) -> str:
        """The URL of ``rel``, for messages."""
        return f"{self.url}/{rel}"

    def read_bytes(self, rel: str) -> bytes | None:
        """The bytes of ``rel``, or None if it does not exist."""
        fs, root = self._fs()
        try:
            return fs.cat_file(f"{root}/{rel}")
        except FileNotFoundError:
            return None

    def _writable(self, rel: str):
        """The filesystem and full path of ``rel``, its parent folder made (object stores ignore it; file:// needs it)."""
        fs, root = self._fs()
        path = f"{root}/{rel}"
        fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        return fs, path

    def write_bytes(self, rel: str, data: bytes) -> None:
        fs, path = self._writable(rel)
        fs.pipe_file(path, data)

    def upload(self, local: Path, rel: str) -> None:
        fs, path = self._writable(rel)
        fs.put_file(os.fspath(local), path)

    def download(self, rel: str, local: Path) -> None:
        """Copy ``rel`` to ``local`` under a temporary name, then rename it."""
        fs, root = self._fs()
        local.parent.mkdir(parents=True, exist_ok=True)
        tmp = tmp_path_for(local)
        fs.get_file(f"{root}/{rel}", os.fspath(tmp))
        commit_file(tmp, local)

    def matches(self, entry: FileEntry) -> bool:
        """Whether ``entry.path`` exists here with the entry's size and SHA-256 (read back in full)."""
        fs, root = self._fs()
        path = f"{root}/{entry.path}"
        try:
            if fs.size(path) != entry.size:
                return False
            sha = hashlib.sha256()
            with fs.open(path, "rb") as file:
                while chunk := file.read(_HASH_CHUNK):
                    sha.update(chunk)
        except FileNotFoundError:
            return False
        return sha.hexdigest() == entry.sha256

    def names(self) -> list[str]:
        """The names directly inside the folder ([] if it does not exist)."""
        fs, root = self._fs()
        try:
            return [p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(root, detail=False)]
        except FileNotFoundError:
            return []

    def remove_tree(self, rel: str) -> None:
        fs, root = self._fs()
        if fs.exists(f"{root}/{rel}"):
            fs.rm(f"{root}/{rel}", recursive=True)

    def read_record(self, rel: str, reader):
        """``reader(path)`` on a local copy of ``rel`` (a receipt or COMPLETE.json keeps its file name); None if missing."""
        data = self.read_bytes(rel)
        if data is None:
            return None
        with tempfile.TemporaryDirectory(prefix="hf_tokbin-") as folder:
            path = Path(folder) / rel.rsplit("/", 1)[-1]
            path.write_bytes(data)
            return reader(path)
