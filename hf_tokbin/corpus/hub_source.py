"""A Hub dataset repo as a corpus: its listing, its records and its shards, each fetched bounded and checked.

- an hf_tokbin corpus folder pushed to the Hub (``hf-tokbin push``): its
  ``_MANIFEST.json`` is fetched first (bounded by the record size rule and
  checked against the git blob id the Hub lists, see
  :func:`fetch_record`), then the files it lists at its pinned commit, each
  by the same checked download, into the Hub cache (:func:`fetch_listed_corpus_folder`;
  offline, :func:`fetch_cached_corpus_folder` reads them there);
- any other Hub dataset repo of Parquet files (a plain
  ``huggingface_hub.upload_folder``, FineWeb-style, no manifest):
  :class:`HubShards`. Its corpus manifest is synthesized from the Hub's own
  listing at the pinned commit (:func:`synthesize_hub_manifest`): each Hub
  file is one input shard, named by its path, with the size and SHA-256 the
  Hub reports (LFS metadata) and its rows from the Parquet footer (read
  with range requests, no download). ``datasets``' own rules decide which
  files make which split (the repo's ``configs:`` or its file names), as
  ``load_dataset`` would, run on the checked card and listing
  (:mod:`hf_tokbin.corpus.hub_splits`): nothing is listed or fetched twice.

Every file is fetched by the one checked download of
:mod:`hf_tokbin.hub.download` (read no further than its listed size, hashed
as it is written, renamed only once it matches). Every revision is resolved
to a commit id first (40 lowercase hex digits, checked:
:func:`hf_tokbin.hub.revision.resolve_commit`), and every later read names
that commit.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from ..errors import CorpusInputError, FormatError, HubError, TokbinError
from ..formats.corpus_manifest import FORMAT as CORPUS_FORMAT
from ..formats.corpus_manifest import LANGUAGE_CODE, LICENSE_ID, MANIFEST_NAME, SPLITS, CorpusManifest, CorpusShard
from ..formats.corpus_shard import check_text_field
from ..formats.records import FileEntry
from ..formats.rules import is_repo_id, split_name

HUB_SHARD_SUFFIXES = (".parquet",)
CARD_NAME = "README.md"


def endpoint() -> str | None:
    return os.environ.get("HF_ENDPOINT") or None


def check_repo_id(name: str) -> None:
    if not is_repo_id(name):
        raise FormatError(name, "corpus not found", expected="a corpus folder or a Hub dataset repo NS/NAME")


# -- one checked download for every file of a Hub corpus -------------------------------------------


def _source(repo_id: str, commit: str, repo_type: str = "dataset", hub_endpoint: str | None = None):
    """The checked download of ``repo_id`` at ``commit``;
    ``hub_endpoint`` the driver's (a Ray worker has no HF_ENDPOINT).
    """
    from ..hub.download import DownloadLimits, Source

    return Source(
        repo_id,
        commit,
        endpoint=hub_endpoint or endpoint(),
        token=None,
        repo_type=repo_type,
        limits=DownloadLimits.from_env(),
    )


def _fetched(repo_id: str, commit: str, what: str, fetch):
    """``fetch()``, retried on transient failures; the client's failures as one line naming the file."""
    from ..hub.download import read_error
    from ..hub.retry import RetryPolicy, call_with_retry
    from ..hub.revision import escaped

    try:
        return call_with_retry(RetryPolicy.from_env(), what, fetch)
    except TokbinError:
        raise
    except Exception as e:  # noqa: BLE001 - the client's errors vary by version; one line naming the file
        raise escaped(read_error(f"{repo_id}@{commit}", what, e, endpoint(), repo_id)) from e


def fetch_record(repo_id: str, commit: str, files: dict, path: str, folder: Path) -> Path:
    """The record ``path`` (a manifest, a card) into ``folder``: refused before any byte is written when the
    listing gives it more than the record size rule, read no further than its listed size, checked against its
    listed git blob id or SHA-256. A copy already in ``folder`` that matches them is kept (no second request)."""
    from ..hub.download import matches, safe_destination, tree_expected

    source = _source(repo_id, commit)
    expected = tree_expected(files, path, source)
    folder.mkdir(parents=True, exist_ok=True)
    if matches(safe_destination(folder, path), expected):
        return folder / path
    return _fetched(repo_id, commit, f"download {path}", lambda: source.fetch(path, folder, expected))


def listed_digests(entry) -> tuple[int | None, str | None, str | None]:
    """``(size, sha256, git blob id)`` of a file as the Hub lists it (a ``RepoFile`` or ``HfFileSystem`` info)."""
    get = entry.get if isinstance(entry, dict) else lambda key: getattr(entry, key, None)
    lfs = get("lfs")
    sha256 = None if lfs is None else lfs.get("sha256") if isinstance(lfs, dict) else getattr(lfs, "sha256", None)
    return get("size"), sha256, get("blob_id")


HUB_URL_TYPES = ("dataset", "model", "space")


def parse_hub_url(url: str):
    """The parts of an ``hf://`` URL (``huggingface_hub.HfUri``: type,
    id, revision or None, path_in_repo), read without a request.

    ``HfFileSystem.resolve_path`` parses it the same way (``parse_hf_uri``), then asks for the repo's info to see it
    exists: a request bounded in neither bytes nor time (a server sending it a byte at a time held the command
    before any bounded request). The caller resolves the revision by the bounded request
    (:func:`hf_tokbin.hub.revision.resolve_commit`), which says as much.
    """
    from huggingface_hub import parse_hf_uri

    parsed = parse_hf_uri(url)
    if parsed.type not in HUB_URL_TYPES:
        raise CorpusInputError(
            url, "an hf:// input is a file, folder or glob of a dataset, model or space repo", got=parsed.type
        )
    return parsed


def fetch_hub_file(uri: str, size: int | None, sha256: str | None, git_blob_id: str | None, folder: Path) -> Path:
    """An ``hf://`` file at a commit, fetched into ``folder`` by the checked download (its listed size and digest)."""
    from ..hub.download import Expected

    resolved = parse_hub_url(uri)
    if not isinstance(size, int) or (sha256 is None and git_blob_id is None):
        raise HubError(uri, "the Hub lists no size and digest for this file: it cannot be checked", got=f"size {size}")
    source = _source(resolved.id, resolved.revision, resolved.type)
    expected = Expected(
        size, sha256=sha256, git_blob_id=None if sha256 else git_blob_id, listed_in="the Hub's listing"
    )
    folder.mkdir(parents=True, exist_ok=True)
    return _fetched(
        resolved.id,
        resolved.revision,
        "download corpus input",
        lambda: source.fetch(resolved.path_in_repo, folder, expected),
    )


@dataclass(frozen=True)
class HubShards:
    """Input shards that are files of a Hub dataset repo at one commit, fetched one at a time and checked."""

    repo_id: str
    commit: str
    endpoint: str | None = None  # None: huggingface_hub's (HF_ENDPOINT)

    def check(self, manifest: CorpusManifest) -> None:
        """Nothing to check before the parts: each shard is checked as it is fetched."""

    @contextlib.contextmanager
    def local_path(self, shard: CorpusShard, scratch: Path) -> Iterator[Path]:
        """The shard fetched into ``scratch`` by the checked download
        (size and SHA-256 of the manifest); deleted afterwards.
        """
        from ..hub.download import Expected

        scratch.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=".hub-shard-", dir=scratch))
        try:
            source = _source(self.repo_id, self.commit, hub_endpoint=self.endpoint)
            expected = Expected(shard.size, sha256=shard.sha256, listed_in="the corpus manifest")
            yield _fetched(
                self.repo_id, self.commit, "download corpus shard", lambda: source.fetch(shard.path, folder, expected)
            )
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def location(self, shard: CorpusShard) -> str:
        return f"{self.repo_id}@{self.commit}/{shard.path}"

    def open_for_sample(self, shard: CorpusShard):
        """A seekable remote file of ``shard.size`` bytes: pyarrow reads the footer and the first row group with range
        requests, each answer read no further than the range asked
        (:meth:`hf_tokbin.hub.download.Source.read_range`).
        """
        source = _source(self.repo_id, self.commit, hub_endpoint=self.endpoint)

        def read(start: int, length: int) -> bytes:
            return _fetched(
                self.repo_id, self.commit, f"read {shard.path}", lambda: source.read_range(shard.path, start, length)
            )

        return io.BufferedReader(RangeFile(read, shard.size), buffer_size=1 << 20)


class RangeFile(io.RawIOBase):
    """A read-only, seekable file of ``size`` bytes whose reads are ``read(start, length)`` calls (range requests)."""

    def __init__(self, read, size: int):
        super().__init__()
        self._read, self._size, self._position = read, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer) -> int:
        length = min(len(buffer), max(0, self._size - self._position))
        if length:
            memoryview(buffer).cast("B")[:length] = self._read(self._position, length)
            self._position += length
        return length


# -- a pushed corpus folder --------------------------------------------------------------------------


def hub_listing(repo_id: str, revision: str | None) -> tuple[str, dict]:
    """The repo's commit (checked) and its files at that commit: path -> RepoFile (size, blob id, lfs)."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    from ..hub.retry import RetryPolicy, call_with_retry, fetch_error
    from ..hub.revision import bounded_listing, escaped, resolve_commit, shown

    where = f"{repo_id}@{shown(revision or 'main')}"
    api = HfApi()
    try:
        commit = resolve_commit(api, repo_id, revision, "dataset")
        # Retried as a whole on a transient failure (list_repo_tree retried each page itself).
        tree = call_with_retry(
            RetryPolicy.from_env(),
            "list the corpus files",
            lambda: bounded_listing(api, repo_id, where, repo_type="dataset", revision=commit, recursive=True),
        )
    except TokbinError:
        raise
    except Exception as e:  # noqa: BLE001
        raise escaped(fetch_error(where, "corpus", e)) from e
    return commit, {f.path: f for f in tree if isinstance(f, RepoFile)}


def is_corpus_manifest(repo_id: str, commit: str, files: dict, work: Path) -> bool:
    """The repo's _MANIFEST.json (fetched bounded and checked) is an hf_tokbin corpus manifest (a release's llm.c
    manifest is not ours)."""
    if MANIFEST_NAME not in files:
        return False
    path = fetch_record(repo_id, commit, files, MANIFEST_NAME, work)
    try:
        record = json.loads(path.read_bytes())
    except ValueError:  # not JSON: not a corpus manifest; the plain-repo path decides what to do
        return False
    return isinstance(record, dict) and record.get("format") == CORPUS_FORMAT


def fetch_listed_corpus_folder(name: str, revision: str | None, commit: str, files: dict, records: Path) -> Path:
    """A pushed corpus folder at ``commit``: only what its manifest (fetched checked into ``records``) lists, and the
    card, after every shard was found in the Hub's listing with the manifest's size and SHA-256; the folder's
    manifest must be the checked one, byte for byte."""
    where = f"{name}@{commit}"
    manifest = listed_corpus_manifest(name, commit, files, records)
    folder = _fetch_listed_files(
        name, revision, commit, files, [MANIFEST_NAME, CARD_NAME, *(s.path for s in manifest.shards)]
    )
    if (folder / MANIFEST_NAME).read_bytes() != (records / MANIFEST_NAME).read_bytes():
        raise HubError(
            f"{where}/{MANIFEST_NAME}",
            "the corpus folder fetched differs from the manifest checked against the Hub's listing",
        )
    return folder


def _fetch_listed_files(name: str, revision: str | None, commit: str, files: dict, paths: list[str]) -> Path:
    """``paths`` of the dataset repo at ``commit``, each by the checked download (no further than its listed size,
    within its time, against its listed digest), into the Hub cache's snapshot of that commit: where an offline
    build finds them (:func:`fetch_cached_corpus_folder`). A file already there is kept only if it matches.

    ``snapshot_download`` did this before, bounded by neither size nor time: a server streaming a shard without
    end filled the disk, and its sizes were compared only at the end.
    """
    from ..hub.download import hub_snapshot_folder, matches, tree_expected
    from ..hub.revision import is_commit_id
    from .private_apis import record_cached_ref

    source = _source(name, commit)
    snapshot = hub_snapshot_folder(name, "dataset", commit)
    for path in paths:
        if path not in files:
            continue  # a card the repo lacks (the manifest and every shard were found in the listing already)
        expected = tree_expected(files, path, source, record=path in (MANIFEST_NAME, CARD_NAME))
        if not matches(snapshot / path, expected):
            _fetched(
                name,
                commit,
                f"download {path}",
                lambda path=path, expected=expected: source.fetch(path, snapshot, expected),
            )
    if not is_commit_id(revision):
        # so an offline build of the branch finds this snapshot
        record_cached_ref(snapshot, revision or "main", commit)
    return snapshot


def listed_corpus_manifest(name: str, commit: str, files: dict, records: Path) -> CorpusManifest:
    """The pushed corpus folder's manifest (fetched checked into ``records``), every shard of which the Hub lists
    with the manifest's size and SHA-256: what ``build --dry-run`` plans from, no shard fetched."""
    from ..hub.pull import disagreement_error, tree_disagreements

    manifest = CorpusManifest.read(records)
    problems = tree_disagreements(manifest.shards, files)
    if problems:
        raise disagreement_error(f"{name}@{commit}", "the corpus manifest disagrees with the Hub's listing", problems)
    return manifest


def fetch_cached_corpus_folder(name: str, revision: str | None) -> Path:
    """Offline: the corpus folder an earlier online build fetched, its manifest first, then what that lists."""
    root = _cached_snapshot(name, revision, [MANIFEST_NAME])
    if not (root / MANIFEST_NAME).is_file():
        return root
    return _cached_snapshot(name, revision, _listed(CorpusManifest.read(root)))


def _listed(manifest: CorpusManifest) -> list[str]:
    """``snapshot_download`` patterns naming exactly the manifest, the card and the shards (fnmatch's [*?[] escaped).
    """
    return [
        re.sub(r"([*?\[])", r"[\1]", path) for path in (MANIFEST_NAME, CARD_NAME, *(s.path for s in manifest.shards))
    ]


def _cached_snapshot(name: str, revision: str | None, allow_patterns: list[str]) -> Path:
    """Offline: the cache's snapshot of the repo at ``revision`` (a commit id, or a branch whose ref an online
    build recorded), only ``allow_patterns``."""
    from huggingface_hub import snapshot_download

    from ..hub.retry import fetch_error
    from ..hub.revision import escaped, is_commit_id, shown

    where = f"{name}@{shown(revision or 'main')}"
    try:
        root = Path(snapshot_download(name, repo_type="dataset", revision=revision, allow_patterns=allow_patterns))
    except TokbinError:
        raise
    except Exception as e:
        raise escaped(fetch_error(where, "corpus", e)) from e
    if not is_commit_id(root.name):
        raise HubError(where, "the cached corpus snapshot is not named by a commit id", got=shown(root.name))
    return root


# -- a plain repo of Parquet files -----------------------------------------------------------------


def synthesize_hub_manifest(
    repo_id: str, commit: str, files: dict, config: str | None, splits: Sequence[str] | None, work: Path
) -> CorpusManifest:
    """The corpus manifest of a plain Hub dataset repo: its Parquet files per split, in ``datasets``' order."""
    where = f"{repo_id}@{commit}"
    license, language = _card_metadata(repo_id, commit, files, work)
    by_split = data_files_by_split(repo_id, commit, files, config, work)
    wanted = list(splits) if splits else [s for s in by_split if split_name(s)]
    missing = [s for s in wanted if s not in by_split]
    if missing:
        raise CorpusInputError(
            where,
            "--corpus-split names a split the dataset does not have",
            expected=", ".join(by_split) or "some split",
            got=", ".join(missing),
        )
    if not wanted:
        raise CorpusInputError(
            where,
            "the dataset has no train or validation split",
            expected="train or validation",
            got=", ".join(by_split) or "none",
            hint="choose splits with --corpus-split",
        )
    for split in wanted:
        if split_name(split) is None:
            raise CorpusInputError(
                where, f"split {split!r} is neither train nor validation", expected="train, validation or val"
            )
    shards: list[CorpusShard] = []
    for ours in SPLITS:  # train shards first, then validation: the corpus order
        for split in (s for s in wanted if split_name(s) == ours):
            for path in by_split[split]:
                shards.append(_hub_shard(repo_id, commit, files, path, ours))
    name = repo_id.split("/")[1]
    return CorpusManifest(
        name, "files", tuple(FileEntry(s.path, s.size, s.sha256) for s in shards), tuple(shards), license, language
    )


def data_files_by_split(
    repo_id: str, commit: str, files: dict, config: str | None, work: Path
) -> dict[str, list[str]]:
    """The repo's data files per split, as ``load_dataset`` resolves them (``configs:`` in its card, else file
    names): ``datasets``' rules run on the card (and ``.huggingface.yaml``) fetched checked into ``work`` and on
    the listing ``files``; nothing is listed or fetched again (:mod:`hf_tokbin.corpus.hub_splits`)."""
    from . import hub_splits

    where = f"{repo_id}@{commit}"
    card, standalone = (
        fetch_record(repo_id, commit, files, name, work) if name in files else None
        for name in (CARD_NAME, hub_splits.STANDALONE_YAML_NAME)
    )
    sizes = {path: int(entry.size) for path, entry in files.items()}
    return hub_splits.data_files_by_split(where, sizes, hub_splits.card_yaml(where, card, standalone), config)


def _hub_shard(repo_id: str, commit: str, files: dict, path: str, split: str) -> CorpusShard:
    where = f"{repo_id}@{commit}/{path}"
    if not path.lower().endswith(HUB_SHARD_SUFFIXES):
        raise CorpusInputError(
            where,
            "a Hub corpus built directly must be Parquet files",
            expected=".parquet",
            got=os.path.splitext(path)[1] or "no suffix",
            hint="import it first: hf-tokbin corpus import hf://datasets/NS/NAME --out DIR",
        )
    entry = files.get(path)
    if entry is None:
        raise HubError(where, "a data file is missing from the repo's listing")
    if entry.lfs is None:
        raise CorpusInputError(
            where,
            "the Hub reports no SHA-256 for this file (not stored with LFS)",
            hint="import it first: hf-tokbin corpus import hf://datasets/NS/NAME --out DIR",
        )
    sha256 = entry.lfs.sha256 if hasattr(entry.lfs, "sha256") else entry.lfs["sha256"]
    rows = _parquet_rows(repo_id, commit, path, int(entry.size))
    try:
        return CorpusShard(path, split, rows, int(entry.size), sha256)
    except FormatError as e:
        raise HubError(where, f"the Hub's listing of this file is not usable: {e.rule}", got=e.got) from None


def _parquet_rows(repo_id: str, commit: str, path: str, size: int) -> int:
    """Rows of a Hub Parquet file from its footer (range requests); the text column must be there and hold strings."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    shards = HubShards(repo_id, commit, endpoint())
    where = f"{repo_id}@{commit}/{path}"
    try:
        with shards.open_for_sample(CorpusShard(path, "train", 0, size, "0" * 64)) as handle:
            parquet = pq.ParquetFile(handle)
            schema, rows = parquet.schema_arrow, parquet.metadata.num_rows
    except (pa.ArrowException, OSError) as e:
        raise CorpusInputError(
            where, "not a readable Parquet file", got=str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        ) from None
    check_text_field(
        schema,
        where,
        hint=(
            "import it first with --text-column: hf-tokbin corpus "
            "import hf://datasets/NS/NAME --text-column COL --out DIR"
        ),
    )
    return rows


def _card_metadata(repo_id: str, commit: str, files: dict, work: Path) -> tuple[str, tuple[str, ...]]:
    """The license and languages the repo's card states, when they are ids of the right shape; else unknown / none.

    The card is a record: fetched bounded and checked like the manifest (an oversized one is refused, not read).
    """
    if CARD_NAME not in files:
        return "unknown", ()
    path = fetch_record(repo_id, commit, files, CARD_NAME, work)
    try:
        from huggingface_hub import DatasetCard

        data = DatasetCard.load(path).data.to_dict()
    except Exception:  # noqa: BLE001 - an unreadable card: nothing stated
        return "unknown", ()
    license = data.get("license")
    license = license if isinstance(license, str) and LICENSE_ID.fullmatch(license) else "unknown"
    language = data.get("language") or []
    language = [language] if isinstance(language, str) else language
    codes = (
        tuple(c for c in language if isinstance(c, str) and LANGUAGE_CODE.fullmatch(c))
        if isinstance(language, list)
        else ()
    )
    return license, codes
