"""Where a build's corpus comes from, and where its input shard ``i`` is read: one interface, three places.

- a corpus folder on disk (``hf-tokbin corpus``): :class:`LocalShards`;
- a Hub dataset repo holding a corpus folder (pushed with ``hf-tokbin push``):
  its ``_MANIFEST.json`` fetched at the pinned commit, its shards read as
  :class:`HubShards` (offline: the whole snapshot from the cache, :class:`LocalShards`);
- any other Hub dataset repo of Parquet files (a plain
  ``huggingface_hub.upload_folder``, FineWeb-style, no manifest):
  :class:`HubShards`. Its corpus manifest is synthesized from the Hub's own
  listing at the pinned commit (:func:`synthesize_hub_manifest`): each Hub
  file is one input shard, named by its path, with the size and SHA-256 the
  Hub reports (LFS metadata) and its rows from the Parquet footer (read
  with range requests, no download). ``datasets`` decides which files make
  which split (the repo's ``configs:`` or its file names), exactly as
  ``load_dataset`` would.

The build asks only ``shards.local_path(i, scratch)`` (a context manager) for
the bytes of input shard ``i``; it never asks where they came from. A Hub
shard is streamed to the part's scratch folder, its size and SHA-256 checked
against the manifest while it is written, and deleted when the part is done:
one shard per worker on disk at a time, whatever the size of the repo. A
resumed build skips finished parts before asking for their shards, so it
downloads only the unfinished ones.

Every revision is resolved to a commit id first (40 lowercase hex digits,
checked: :func:`hf_tokbin.hub.revision.resolve_commit`), and every later
read names that commit.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from .._io import fsync_path
from ..errors import BuildError, CorpusInputError, FormatError, HubError
from ..formats.corpus_manifest import MANIFEST_NAME, SPLITS, CorpusManifest, CorpusShard
from ..formats.corpus_shard import check_text_field, iter_shard_texts
from ..formats.records import FileEntry
from ..formats.rules import is_repo_id, split_name

HUB_SHARD_SUFFIXES = (".parquet",)


def iter_texts(root: str | os.PathLike, manifest: CorpusManifest, split: str, batch_rows: int = 1024):
    """The texts of one split, in corpus order, streamed shard by shard."""
    for shard in manifest.shards:
        if shard.split != split:
            continue
        path = Path(root) / shard.path
        for _, texts in iter_shard_texts(path, path, batch_rows):  # checked: strings, no null, valid UTF-8
            yield from texts.to_pylist()


# -- where input shard i is read ----------------------------------------------------------------


@dataclass(frozen=True)
class LocalShards:
    """Input shards that are files of a local corpus folder (plain values: pickles to Ray workers)."""

    root: str

    def check(self, manifest: CorpusManifest) -> None:
        for shard in manifest.shards:
            if not (Path(self.root) / shard.path).is_file():
                raise BuildError(Path(self.root) / shard.path, "corpus shard listed in _MANIFEST.json is missing")

    @contextlib.contextmanager
    def local_path(self, shard: CorpusShard, scratch: Path) -> Iterator[Path]:
        yield Path(self.root) / shard.path

    def open_for_sample(self, shard: CorpusShard):
        return open(Path(self.root) / shard.path, "rb")

    def location(self, shard: CorpusShard) -> str:
        """Where the shard is, for messages."""
        return os.fspath(Path(self.root) / shard.path)


@dataclass(frozen=True)
class HubShards:
    """Input shards that are files of a Hub dataset repo at one commit, fetched one at a time and checked."""

    repo_id: str
    commit: str
    endpoint: str | None = None  # None: huggingface_hub's (HF_ENDPOINT)

    def _url(self, path: str) -> str:
        return f"datasets/{self.repo_id}@{self.commit}/{path}"

    def _fs(self):
        from huggingface_hub import HfFileSystem

        return HfFileSystem(endpoint=self.endpoint) if self.endpoint else HfFileSystem()

    def check(self, manifest: CorpusManifest) -> None:
        """Nothing to check before the parts: each shard is checked as it is fetched."""

    @contextlib.contextmanager
    def local_path(self, shard: CorpusShard, scratch: Path) -> Iterator[Path]:
        """The shard streamed into ``scratch``, its size and SHA-256 checked as it is written; deleted afterwards."""
        scratch.mkdir(parents=True, exist_ok=True)
        suffix = os.path.splitext(shard.path)[1]
        fd, name = tempfile.mkstemp(prefix=".hub-shard-", suffix=suffix, dir=scratch)
        path = Path(name)
        try:
            digest, size = hashlib.sha256(), 0
            with os.fdopen(fd, "wb") as out, self._open(shard.path) as remote:
                while size <= shard.size:
                    chunk = remote.read(min(8 << 20, shard.size + 1 - size))
                    if not chunk:
                        break
                    digest.update(chunk)
                    out.write(chunk)
                    size += len(chunk)  # stops one byte past the expected size: a longer file is refused, not stored
            if size != shard.size or digest.hexdigest() != shard.sha256:
                raise HubError(
                    f"{self.repo_id}@{self.commit}/{shard.path}",
                    "a Hub file differs from what the Hub's listing says (size or SHA-256)",
                    expected=f"{shard.size} bytes, sha256 {shard.sha256}",
                    got=f"{size}{'+' if size > shard.size else ''} bytes, sha256 {digest.hexdigest()}",
                )
            fsync_path(path)
            yield path
        finally:
            path.unlink(missing_ok=True)

    def _open(self, path: str):
        try:
            return self._fs().open(self._url(path), "rb", block_size=0)
        except Exception as e:  # noqa: BLE001 - the client's errors vary by version; one line naming the file
            from ..hub.retry import fetch_error

            raise fetch_error(f"{self.repo_id}@{self.commit}/{path}", "corpus shard", e) from e

    def location(self, shard: CorpusShard) -> str:
        return f"{self.repo_id}@{self.commit}/{shard.path}"

    def open_for_sample(self, shard: CorpusShard):
        """A seekable remote file: pyarrow reads the footer and the first row group with range requests."""
        return self._fs().open(self._url(shard.path), "rb")


# -- resolving a --corpus argument ----------------------------------------------------------------


@dataclass(frozen=True)
class CorpusSource:
    """A resolved ``--corpus``: the folder holding its manifest, where shards are read, and what run_config.json records."""

    root: Path  # holds _MANIFEST.json (for a plain Hub repo: the synthesized one)
    source: str  # "local" or the Hub repo id
    revision: str | None  # the commit of a Hub corpus
    shards: LocalShards | HubShards


def resolve_corpus(name: str, revision: str | None = None) -> tuple[Path, str, str | None]:
    """A corpus folder, or a Hub dataset repo holding one fetched at a pinned revision: ``(root, source, revision)``.

    source is "local" or the repo id, revision the resolved commit of a Hub corpus.
    """
    path = Path(name)
    if path.exists():
        if not (path / MANIFEST_NAME).is_file():
            raise FormatError(path, f"not a corpus folder: no {MANIFEST_NAME}", hint="write one with hf-tokbin corpus")
        return path, "local", None
    _check_repo_id(name)
    root = _fetch_corpus_folder(name, revision)
    if not (root / MANIFEST_NAME).is_file():
        raise FormatError(name, f"Hub repo holds no corpus {MANIFEST_NAME}", hint="build it with hf-tokbin build --corpus NS/NAME, or publish a corpus folder with hf-tokbin push")
    return root, name, root.name


def _check_repo_id(name: str) -> None:
    if not is_repo_id(name):
        raise FormatError(name, "corpus not found", expected="a corpus folder or a Hub dataset repo NS/NAME")


def _fetch_corpus_folder(name: str, revision: str | None) -> Path:
    """The whole repo at its commit (checked), from the cache when offline."""
    from huggingface_hub import HfApi, constants, snapshot_download
    from huggingface_hub.file_download import _cache_commit_hash_for_specific_revision

    from ..errors import TokbinError
    from ..hub.retry import fetch_error
    from ..hub.revision import escaped, is_commit_id, resolve_commit, shown

    where = f"{name}@{shown(revision or 'main')}"
    try:
        # The server's commit id names a folder in the cache: check it first, and fetch at that id only.
        # Offline, the cache's own ref (written below, by an earlier online run) gives it.
        commit = revision if constants.HF_HUB_OFFLINE else resolve_commit(HfApi(), name, revision, "dataset")
        root = Path(snapshot_download(name, repo_type="dataset", revision=commit))
        if not is_commit_id(revision) and not constants.HF_HUB_OFFLINE:
            # Fetching at a commit id records no ref; record it, so an offline build of the branch finds this snapshot.
            _cache_commit_hash_for_specific_revision(str(root.parent.parent), revision or "main", commit)
    except TokbinError:
        raise
    except Exception as e:
        raise escaped(fetch_error(where, "corpus", e)) from e
    if not is_commit_id(root.name):
        raise HubError(where, "the cached corpus snapshot is not named by a commit id", got=shown(root.name))
    return root


def resolve_corpus_source(name: str, revision: str | None = None, config: str | None = None, splits: Sequence[str] | None = None, work_dir: str | os.PathLike | None = None) -> CorpusSource:
    """What ``--corpus NAME`` means: a local corpus folder, a Hub corpus folder, or a plain Hub dataset repo.

    ``config`` and ``splits`` choose among a plain repo's ``datasets``
    configs and splits (default: the default config, its train and
    validation splits). ``work_dir`` receives a synthesized manifest (default:
    a new temporary folder).
    """
    path = Path(name)
    if path.exists():
        if config is not None or splits:
            raise CorpusInputError(name, "--corpus-config and --corpus-split apply to a Hub dataset repo", got="a local folder")
        if revision is not None:  # it would be recorded without having applied
            raise CorpusInputError(name, "--corpus-revision applies to a Hub corpus only, not to a local folder", got=revision)
        if not (path / MANIFEST_NAME).is_file():
            raise FormatError(path, "not a corpus folder: no " + MANIFEST_NAME, hint="write one with hf-tokbin corpus import or hf-tokbin corpus tinystories")
        return CorpusSource(path, "local", None, LocalShards(os.fspath(path.resolve())))
    _check_repo_id(name)
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:  # no listing offline: only a corpus folder fetched before, from the cache
        root, source, commit = resolve_corpus(name, revision)
        return CorpusSource(root, source, commit, LocalShards(os.fspath(root)))
    commit, files = _hub_listing(name, revision)
    if MANIFEST_NAME in files and _is_corpus_manifest(name, commit):
        if config is not None or splits:
            raise CorpusInputError(name, "--corpus-config and --corpus-split apply to a plain dataset repo; this one holds an hf_tokbin corpus", got=f"{config} {list(splits or [])}")
        # Only the manifest comes down (it is in the cache already): each shard is fetched, and checked against
        # the manifest's SHA-256, by the part that encodes it, on whichever node runs it; a dry run reads footers only.
        return CorpusSource(_cached_manifest_folder(name, commit), name, commit, HubShards(name, commit, _endpoint()))
    manifest = synthesize_hub_manifest(name, commit, files, config, splits)
    root = Path(work_dir) if work_dir is not None else _temporary_folder("hf_tokbin-hub-corpus-")
    root.mkdir(parents=True, exist_ok=True)
    manifest.write(root)
    return CorpusSource(root, name, commit, HubShards(name, commit, _endpoint()))


def _temporary_folder(prefix: str) -> Path:
    """A new temporary folder, removed when the process exits (it holds only what this process derived)."""
    import atexit
    import shutil

    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, True)
    return path


def _endpoint() -> str | None:
    return os.environ.get("HF_ENDPOINT") or None


def _hub_listing(repo_id: str, revision: str | None) -> tuple[str, dict]:
    """The repo's commit (checked) and its files at that commit: path -> RepoFile (size, lfs)."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    from ..errors import TokbinError
    from ..hub.retry import fetch_error
    from ..hub.revision import escaped, resolve_commit, shown

    where = f"{repo_id}@{shown(revision or 'main')}"
    api = HfApi()
    try:
        commit = resolve_commit(api, repo_id, revision, "dataset")
        tree = list(api.list_repo_tree(repo_id, repo_type="dataset", revision=commit, recursive=True, expand=False))
    except TokbinError:
        raise
    except Exception as e:  # noqa: BLE001
        raise escaped(fetch_error(where, "corpus", e)) from e
    return commit, {f.path: f for f in tree if isinstance(f, RepoFile)}


def _is_corpus_manifest(repo_id: str, commit: str) -> bool:
    """The repo's _MANIFEST.json is an hf_tokbin corpus manifest (a release holds one for llm.c too: not ours)."""
    import json

    from huggingface_hub import hf_hub_download

    try:
        with open(hf_hub_download(repo_id, MANIFEST_NAME, repo_type="dataset", revision=commit), "rb") as f:
            record = json.loads(f.read(1 << 20))
    except Exception:  # noqa: BLE001 - unreadable: not a corpus manifest; the plain-repo path decides what to do
        return False
    return isinstance(record, dict) and record.get("format") == "hf_tokbin.corpus/1"


def _cached_manifest_folder(repo_id: str, commit: str) -> Path:
    """The cache's snapshot folder of ``commit`` holding the repo's corpus ``_MANIFEST.json`` (fetched if not there)."""
    from huggingface_hub import hf_hub_download

    from ..errors import TokbinError
    from ..hub.retry import fetch_error
    from ..hub.revision import escaped

    try:
        return Path(hf_hub_download(repo_id, MANIFEST_NAME, repo_type="dataset", revision=commit)).parent
    except TokbinError:
        raise
    except Exception as e:  # noqa: BLE001
        raise escaped(fetch_error(f"{repo_id}@{commit}", "corpus", e)) from e


def synthesize_hub_manifest(repo_id: str, commit: str, files: dict, config: str | None, splits: Sequence[str] | None) -> CorpusManifest:
    """The corpus manifest of a plain Hub dataset repo: its Parquet files per split, in ``datasets``' order."""
    where = f"{repo_id}@{commit}"
    by_split = _data_files_by_split(repo_id, commit, config)
    wanted = list(splits) if splits else [s for s in by_split if split_name(s)]
    missing = [s for s in wanted if s not in by_split]
    if missing:
        raise CorpusInputError(where, "--corpus-split names a split the dataset does not have", expected=", ".join(by_split) or "some split", got=", ".join(missing))
    if not wanted:
        raise CorpusInputError(where, "the dataset has no train or validation split", expected="train or validation", got=", ".join(by_split) or "none", hint="choose splits with --corpus-split")
    shards: list[CorpusShard] = []
    for ours in SPLITS:  # train shards first, then validation: the corpus order
        for split in (s for s in wanted if split_name(s) == ours):
            for path in by_split[split]:
                shards.append(_hub_shard(repo_id, commit, files, path, ours))
    for split in wanted:
        if split_name(split) is None:
            raise CorpusInputError(where, f"split {split!r} is neither train nor validation", expected="train, validation or val")
    name = repo_id.split("/")[1]
    license, language = _card_metadata(repo_id, commit)
    return CorpusManifest(name, "files", tuple(FileEntry(s.path, s.size, s.sha256) for s in shards), tuple(shards), license, language)


def _data_files_by_split(repo_id: str, commit: str, config: str | None) -> dict[str, list[str]]:
    """The repo's data files per split, as ``load_dataset`` resolves them (``configs:`` in its card, else file names)."""
    import datasets

    from ..hub.retry import fetch_error

    where = f"{repo_id}@{commit}"
    try:
        builder = datasets.load_dataset_builder(repo_id, config, revision=commit)
    except Exception as e:  # noqa: BLE001 - datasets' errors (no such config, no data files) as one line
        if isinstance(e, (ValueError, FileNotFoundError)) or type(e).__name__ in ("DataFilesNotFoundError", "EmptyDatasetError"):
            raise CorpusInputError(where, "cannot find the dataset's data files", got=str(e).splitlines()[0][:300] if str(e) else type(e).__name__) from None
        raise fetch_error(where, "corpus", e) from e
    prefix = re.compile(rf"^hf://datasets/{re.escape(repo_id)}@{commit}/")
    out: dict[str, list[str]] = {}
    for split, urls in (builder.config.data_files or {}).items():
        paths = []
        for url in urls:
            if not prefix.match(url):
                raise HubError(where, "a data file of the dataset is not a file of this repo at this commit", got=url[:200])
            paths.append(prefix.sub("", url))
        out[str(split)] = paths
    return out


def _hub_shard(repo_id: str, commit: str, files: dict, path: str, split: str) -> CorpusShard:
    where = f"{repo_id}@{commit}/{path}"
    if not path.lower().endswith(HUB_SHARD_SUFFIXES):
        raise CorpusInputError(where, "a Hub corpus built directly must be Parquet files", expected=".parquet", got=os.path.splitext(path)[1] or "no suffix", hint="import it first: hf-tokbin corpus import hf://datasets/NS/NAME --out DIR")
    entry = files.get(path)
    if entry is None:
        raise HubError(where, "a data file is missing from the repo's listing")
    if entry.lfs is None:
        raise CorpusInputError(where, "the Hub reports no SHA-256 for this file (not stored with LFS)", hint="import it first: hf-tokbin corpus import hf://datasets/NS/NAME --out DIR")
    sha256 = entry.lfs.sha256 if hasattr(entry.lfs, "sha256") else entry.lfs["sha256"]
    rows = _parquet_rows(repo_id, commit, path)
    try:
        return CorpusShard(path, split, rows, int(entry.size), sha256)
    except FormatError as e:
        raise HubError(where, f"the Hub's listing of this file is not usable: {e.rule}", got=e.got) from None


def _parquet_rows(repo_id: str, commit: str, path: str) -> int:
    """Rows of a Hub Parquet file from its footer (range requests); the text column must be there and hold strings."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    shards = HubShards(repo_id, commit, _endpoint())
    where = f"{repo_id}@{commit}/{path}"
    try:
        with shards.open_for_sample(CorpusShard(path, "train", 0, 0, "0" * 64)) as handle:
            parquet = pq.ParquetFile(handle)
            schema, rows = parquet.schema_arrow, parquet.metadata.num_rows
    except (pa.ArrowException, OSError) as e:
        raise CorpusInputError(where, "not a readable Parquet file", got=str(e).splitlines()[0][:200] if str(e) else type(e).__name__) from None
    check_text_field(schema, where, hint="import it first with --text-column: hf-tokbin corpus import hf://datasets/NS/NAME --text-column COL --out DIR")
    return rows


def _card_metadata(repo_id: str, commit: str) -> tuple[str, tuple[str, ...]]:
    """The license and languages the repo's card states, when they are ids of the right shape; else unknown / none."""
    from ..formats.corpus_manifest import LANGUAGE_CODE, LICENSE_ID

    try:
        from huggingface_hub import DatasetCard, hf_hub_download

        card = DatasetCard.load(hf_hub_download(repo_id, "README.md", repo_type="dataset", revision=commit))
        data = card.data.to_dict()
    except Exception:  # noqa: BLE001 - no card, or an unreadable one: nothing stated
        return "unknown", ()
    license = data.get("license")
    license = license if isinstance(license, str) and LICENSE_ID.fullmatch(license) else "unknown"
    language = data.get("language") or []
    language = [language] if isinstance(language, str) else language
    codes = tuple(c for c in language if isinstance(c, str) and LANGUAGE_CODE.fullmatch(c)) if isinstance(language, list) else ()
    return license, codes


def first_documents(found: CorpusSource, limit: int, work_dir: str | os.PathLike | None = None) -> CorpusSource:
    """The first ``limit`` documents of a corpus, in corpus order, as a corpus folder of their own (``build --limit``).

    The shards are read in manifest order (train, then validation) with
    ``corpus import``'s reader, each keeping its split, until ``limit``
    documents are written; reading stops there (a Hub shard past the limit is
    never fetched). The subset keeps the corpus's name, license and
    languages; its manifest's sources are the corpus's shards (with their
    manifest digests), and ``run_config.json`` still names where they came from.
    """
    from .inputs import HF_PREFIX, InputFile
    from .write import import_corpus

    manifest = CorpusManifest.read(found.root)
    if isinstance(found.shards, HubShards):
        inputs = [InputFile(f"{HF_PREFIX}datasets/{found.shards.repo_id}@{found.shards.commit}/{s.path}", s.path, "parquet", s.split, s.size, s.sha256) for s in manifest.shards]
    else:
        inputs = [InputFile(os.fspath(Path(found.shards.root) / s.path), s.path, "parquet", s.split, s.size, s.sha256) for s in manifest.shards]
    base = Path(work_dir) if work_dir is not None else _temporary_folder("hf_tokbin-limit-")
    root = base / manifest.name
    import_corpus(inputs, root, name=manifest.name, limit=limit, license=manifest.license, language=manifest.language, any_license=True)
    return CorpusSource(root, found.source, found.revision, LocalShards(os.fspath(root.resolve())))
