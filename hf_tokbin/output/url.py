"""A release written to an fsspec URL (``s3://``, ``gs://``, ``hf://buckets/...``, ``file://``, ``memory://``).

The build writes every file exactly as it does into a local folder, but into
a local scratch folder on whichever machine runs the task::

    $HF_TOKBIN_CACHE/out/<key>/        (default ~/.cache/hf_tokbin/out/<key>/)

where ``<key>`` is the first 16 hex digits of the SHA-256 of the URL, a
newline and ``run_config.json``'s text, so two different builds never share
a scratch folder. It then publishes the files to the URL with fsspec, in an
order that keeps the completion rules of a local folder (on an object store
an object appears only once its upload has finished):

1. per part: the part's Megatron pair, its llm.c segment
   ``.work/llmc/part-NNNNNN.tokens|.ends``, the segment's sizes and digests
   ``.work/llmc/part-NNNNNN.json`` (``{"files": [{"path", "size", "sha256"},
   ...]}``, canonical JSON) and, last, the receipt;
2. per llm.c file (a pack task, on any node): the file, made from ranged
   reads of the segments at the URL (:meth:`UrlFolder.copy_range_into`);
3. at the finish (on the driver, which reads records only): ``_MANIFEST.json``,
   ``stats.json``, ``README.md`` and, last, ``COMPLETE.json``; then the remote
   ``.work/`` and the local scratch folder are deleted.

Nothing about the URL or its credentials is written into any release file;
credentials come from the backend's own configuration (environment
variables, ``~/.aws``, ``hf auth login``...) on every machine.

An endpoint that cannot be reached (refused, reset, timed out, no such host)
is one :class:`BuildError` naming the URL, whichever HTTP library the
backend uses (:func:`connection_errors`); every other error passes unchanged.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import socket
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .._io import commit_file, naming_the_file, refuse_link, tmp_path_for, write_all
from ..errors import BuildError
from ..formats.records import FileEntry
from .local import LocalFolder, Output, checked_range, local_matches

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


# The HTTP libraries of fsspec's backends, and their errors meaning "the endpoint
# cannot be reached" (not an HTTP status, which is an answer): httpx/httpx2
# (huggingface_hub's hf://), aiohttp (http://, gcsfs, s3fs via aiobotocore),
# requests. Their HTTP status errors are not among these.
_CONNECTION_ERRORS = (
    ("httpx2", "TransportError"),
    ("httpx", "TransportError"),
    ("aiohttp", "ClientConnectionError"),
    ("requests", "ConnectionError"),
    ("requests", "Timeout"),
)


def connection_errors() -> tuple[type[BaseException], ...]:
    """The exception types that mean a URL's endpoint cannot be reached.

    Python's own (refused, reset, aborted; name resolution) and those of the
    HTTP libraries above that are loaded: a library never imported raised nothing.
    """
    found = [ConnectionError, socket.gaierror, TimeoutError]
    for module_name, name in _CONNECTION_ERRORS:
        module = sys.modules.get(module_name)
        error = getattr(module, name, None) if module is not None else None
        if isinstance(error, type) and issubclass(error, BaseException):
            found.append(error)
    return tuple(found)


def _raise_if_unreachable(missing: FileNotFoundError) -> None:
    """Some backends (fsspec's http://) report an unreachable endpoint as a missing file: raise the connection error it
    stands for."""
    if isinstance(missing.__cause__, connection_errors()):
        raise missing.__cause__


def _naming_the_url(method):
    """An UrlFolder method whose unreachable endpoint is one BuildError naming the --out URL."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except connection_errors() as e:  # evaluated only when an error is raised
            detail = " ".join(str(e).split())[:300]
            raise BuildError(
                self.url,
                "--out URL must be reachable",
                expected="its storage endpoint answering",
                got=f"{type(e).__name__}: {detail}" if detail else type(e).__name__,
                hint="check the URL, the network and the backend's endpoint settings (e.g. HF_ENDPOINT), then run the "
                "build again: it resumes",
            ) from None

    return wrapper


def scratch_key(url: str, run_config_text: str) -> str:
    return hashlib.sha256(f"{url}\n{run_config_text}".encode()).hexdigest()[:16]


def scratch_root(key: str) -> Path:
    """The local scratch folder of a URL build on this machine."""
    base = os.environ.get("HF_TOKBIN_CACHE") or Path.home() / ".cache" / "hf_tokbin"
    return Path(base) / "out" / key


@dataclass(frozen=True)
class UrlFolder(Output):
    """``--out URL``: this machine writes into a scratch folder (``work``) and publishes to the URL.

    Holds the URL and the scratch folder only (it pickles to Ray workers); the
    filesystem comes from fsspec's cache on every call.
    """

    scratch_folder: str = ""

    @property
    def url(self) -> str:
        return self.root

    @property
    def work(self) -> Path:
        return Path(self.scratch_folder)

    def _fs(self):
        from fsspec.core import url_to_fs

        fs, root = url_to_fs(self.url)
        return fs, root.rstrip("/")

    def location(self, rel: str) -> str:
        return f"{self.url}/{rel}"

    @_naming_the_url
    def read_bytes(self, rel: str) -> bytes | None:
        fs, root = self._fs()
        try:
            return fs.cat_file(f"{root}/{rel}")
        except FileNotFoundError as e:
            _raise_if_unreachable(e)
            return None

    def _writable(self, rel: str):
        """The filesystem and full path of ``rel``, its parent folder made (object stores ignore it; file:// needs
        it)."""
        fs, root = self._fs()
        path = f"{root}/{rel}"
        fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        return fs, path

    @_naming_the_url
    def write_text(self, rel: str, text: str) -> None:
        fs, path = self._writable(rel)
        fs.pipe_file(path, text.encode("utf-8"))

    @_naming_the_url
    def publish(self, rels) -> None:
        """Upload each file of the scratch folder in order (an object appears once its upload has finished), then
        delete the local copies."""
        rels = list(rels)
        for rel in rels:
            self._upload(rel)
        for rel in rels:
            (self.work / rel).unlink(missing_ok=True)

    def _upload(self, rel: str) -> None:
        fs, path = self._writable(rel)
        fs.put_file(os.fspath(self.work / rel), path)

    @_naming_the_url
    def fetch(self, entry: FileEntry) -> None:
        """Download ``entry.path`` into the scratch folder under a temporary name unless an intact copy is there."""
        local = self.work / entry.path
        if local_matches(local, entry):
            return
        fs, root = self._fs()
        local.parent.mkdir(parents=True, exist_ok=True)
        tmp = tmp_path_for(local)
        refuse_link(tmp)  # fsspec opens the name it is given: nothing may be planted there
        tmp.unlink(missing_ok=True)
        with naming_the_file(local):  # a full disk here is this machine's scratch disk, not the URL's
            fs.get_file(f"{root}/{entry.path}", os.fspath(tmp))
        commit_file(tmp, local)
        if not local_matches(local, entry):
            raise BuildError(
                self.location(entry.path),
                "file must match its recorded size and SHA-256",
                expected=entry.sha256,
                got=f"{local.stat().st_size} bytes",
                hint="run the build again",
            )

    @_naming_the_url
    def read_range(self, rel: str, start: int, length: int) -> bytes:
        """A ranged read of the object (the backend's range request): never the whole file."""
        fs, root = self._fs()
        return checked_range(
            self.location(rel), fs.cat_file(f"{root}/{rel}", start=start, end=start + length), start, length
        )

    @_naming_the_url
    def copy_range_into(self, rel: str, start: int, length: int, fd: int) -> None:
        """Ranged reads of the object, :data:`_HASH_CHUNK` bytes at a time, appended to ``fd``."""
        fs, root = self._fs()
        end = start + length
        for first in range(start, end, _HASH_CHUNK):
            last = min(first + _HASH_CHUNK, end)
            write_all(
                fd,
                checked_range(
                    self.location(rel), fs.cat_file(f"{root}/{rel}", start=first, end=last), first, last - first
                ),
            )

    @_naming_the_url
    def matches(self, entry: FileEntry) -> bool:
        fs, root = self._fs()
        path = f"{root}/{entry.path}"
        try:
            if fs.size(path) != entry.size:
                return False
            sha = hashlib.sha256()
            with fs.open(path, "rb") as file:
                while chunk := file.read(_HASH_CHUNK):
                    sha.update(chunk)
        except FileNotFoundError as e:
            _raise_if_unreachable(e)
            return False
        return sha.hexdigest() == entry.sha256

    @_naming_the_url
    def names(self) -> list[str]:
        fs, root = self._fs()
        try:
            return [p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(root, detail=False)]
        except FileNotFoundError as e:
            _raise_if_unreachable(e)
            return []

    @_naming_the_url
    def remove_tree(self, rel: str) -> None:
        fs, root = self._fs()
        if fs.exists(f"{root}/{rel}"):
            fs.rm(f"{root}/{rel}", recursive=True)

    def scratch(self) -> Output:
        return LocalFolder(self.scratch_folder)

    def discard_work(self) -> None:
        shutil.rmtree(self.work, ignore_errors=True)

    def read_record(self, rel: str, reader):
        data = self.read_bytes(rel)
        if data is None:
            return None
        with tempfile.TemporaryDirectory(prefix="hf_tokbin-") as folder:
            path = Path(folder) / rel.rsplit("/", 1)[-1]  # a receipt or COMPLETE.json keeps its file name
            path.write_bytes(data)
            return reader(path)
