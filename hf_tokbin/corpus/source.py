"""Where a build's corpus comes from, and where its input shard ``i`` is read: one :class:`ShardSource`, two places.

- a corpus folder on disk (``hf-tokbin corpus``), or one pushed to the Hub
  and fetched whole at its pinned commit: :class:`LocalShards`;
- any other Hub dataset repo of Parquet files: :class:`~.hub_source.HubShards`
  (its manifest synthesized from the Hub's listing, see :mod:`.hub_source`).

The build asks only ``shards.local_path(shard, scratch)`` (a context manager)
for the bytes of an input shard; it never asks where they came from. A Hub
shard is fetched to the part's scratch folder, its size and SHA-256 checked
against the manifest while it is written, and deleted when the part is done:
one shard per worker on disk at a time, whatever the size of the repo. A
resumed build skips finished parts before asking for their shards, so it
downloads only the unfinished ones.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, ContextManager, Iterator, Protocol, Sequence

from ..errors import BuildError, CorpusInputError, FormatError
from ..formats.corpus_manifest import MANIFEST_NAME, CorpusManifest, CorpusShard, check_shard_file  # noqa: F401
from ..formats.corpus_shard import iter_shard_texts
from .hub_source import (
    HubShards,
    check_repo_id,
    endpoint,
    fetch_cached_corpus_folder,
    fetch_listed_corpus_folder,
    hub_listing,
    is_corpus_manifest,
    listed_corpus_manifest,
    synthesize_hub_manifest,
)


def iter_texts(root: str | os.PathLike, manifest: CorpusManifest, split: str, batch_rows: int = 1024):
    """The texts of one split, in corpus order, streamed shard by shard."""
    for shard in manifest.shards:
        if shard.split != split:
            continue
        path = Path(root) / shard.path
        for _, texts in iter_shard_texts(path, path, batch_rows):  # checked: strings, no null, valid UTF-8
            yield from texts.to_pylist()


# -- where input shard i is read ----------------------------------------------------------------


class ShardSource(Protocol):
    """Where a build reads its input shards; plain values, so it pickles to Ray workers."""

    def check(self, manifest: CorpusManifest) -> None:
        """Refuse, before any part, a corpus whose shards cannot be read."""

    def local_path(self, shard: CorpusShard, scratch: Path) -> ContextManager[Path]:
        """The shard's bytes as a local file while the context lasts (a Hub shard: fetched into ``scratch``, checked).
        """

    def open_for_sample(self, shard: CorpusShard) -> BinaryIO:
        """A seekable handle for reading a few documents (planning's sample)."""

    def location(self, shard: CorpusShard) -> str:
        """Where the shard is, for messages."""


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


# -- resolving a --corpus argument ----------------------------------------------------------------


@dataclass(frozen=True)
class CorpusSource:
    """A resolved ``--corpus``: the folder holding its manifest,
    where shards are read, and what run_config.json records.
    """

    root: Path  # holds _MANIFEST.json (for a plain Hub repo: the synthesized one)
    source: str  # "local" or the Hub repo id
    revision: str | None  # the commit of a Hub corpus
    shards: ShardSource
    subset: object = None  # a --limit corpus: what it was cut from (corpus.subset.CorpusSubset), else None


def resolve_corpus(name: str, revision: str | None = None) -> tuple[Path, str, str | None]:
    """A corpus folder, or a Hub corpus folder an earlier online build fetched (offline): ``(root, source, revision)``.

    source is "local" or the repo id, revision the resolved commit of a Hub corpus.
    """
    path = Path(name)
    if path.exists():
        if not (path / MANIFEST_NAME).is_file():
            raise FormatError(path, f"not a corpus folder: no {MANIFEST_NAME}", hint="write one with hf-tokbin corpus")
        return path, "local", None
    check_repo_id(name)
    root = fetch_cached_corpus_folder(name, revision)
    if not (root / MANIFEST_NAME).is_file():
        raise FormatError(
            name,
            f"Hub repo holds no corpus {MANIFEST_NAME}",
            hint="build it with hf-tokbin build --corpus NS/NAME, or publish a corpus folder with hf-tokbin push",
        )
    return root, name, root.name


def resolve_corpus_source(
    name: str,
    revision: str | None = None,
    config: str | None = None,
    splits: Sequence[str] | None = None,
    work_dir: str | os.PathLike | None = None,
    *,
    plan_only: bool = False,
) -> CorpusSource:
    """What ``--corpus NAME`` means: a local corpus folder, a Hub corpus folder, or a plain Hub dataset repo.

    ``config`` and ``splits`` choose among a plain repo's ``datasets``
    configs and splits (default: the default config, its train and
    validation splits). ``work_dir`` receives a synthesized manifest (default:
    a new temporary folder). ``plan_only`` (``build --dry-run``): a pushed
    corpus folder is its checked manifest and the Hub's listing, its shards
    read remotely (a sample's first rows, by range requests); a build fetches
    the folder whole (checked), so that an offline re-build finds it cached.
    """
    path = Path(name)
    if path.exists():
        if config is not None or splits:
            raise CorpusInputError(
                name, "--corpus-config and --corpus-split apply to a Hub dataset repo", got="a local folder"
            )
        if revision is not None:  # it would be recorded without having applied
            raise CorpusInputError(
                name, "--corpus-revision applies to a Hub corpus only, not to a local folder", got=revision
            )
        if not (path / MANIFEST_NAME).is_file():
            raise FormatError(
                path,
                "not a corpus folder: no " + MANIFEST_NAME,
                hint="write one with hf-tokbin corpus import or hf-tokbin corpus tinystories",
            )
        return CorpusSource(path, "local", None, LocalShards(os.fspath(path.resolve())))
    check_repo_id(name)
    from ..hub.retry import path_or_repo

    with path_or_repo(name):
        return _hub_corpus_source(name, revision, config, splits, work_dir, plan_only)


def _hub_corpus_source(
    name: str, revision: str | None, config: str | None, splits: Sequence[str] | None, work_dir, plan_only: bool
) -> CorpusSource:
    """``--corpus NS/NAME``: a Hub corpus folder (fetched whole, or listed for a plan), or a plain Hub dataset repo."""
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:  # no listing offline: only a corpus folder fetched before, from the cache
        root, source, commit = resolve_corpus(name, revision)
        return CorpusSource(root, source, commit, LocalShards(os.fspath(root)))
    commit, files = hub_listing(name, revision)
    root = Path(work_dir) if work_dir is not None else temporary_folder("hf_tokbin-hub-corpus-")
    root.mkdir(parents=True, exist_ok=True)
    if is_corpus_manifest(name, commit, files, root / ".records"):
        if config is not None or splits:
            raise CorpusInputError(
                name,
                "--corpus-config and --corpus-split apply to a plain dataset repo; this one holds an hf_tokbin corpus",
                got=f"{config} {list(splits or [])}",
            )
        if plan_only:
            listed_corpus_manifest(name, commit, files, root / ".records")
            return CorpusSource(root / ".records", name, commit, HubShards(name, commit, endpoint()))
        folder = fetch_listed_corpus_folder(name, revision, commit, files, root / ".records")
        return CorpusSource(folder, name, commit, LocalShards(os.fspath(folder)))
    manifest = synthesize_hub_manifest(name, commit, files, config, splits, root / ".records")
    manifest.write(root)
    return CorpusSource(root, name, commit, HubShards(name, commit, endpoint()))


def temporary_folder(prefix: str) -> Path:
    """A new temporary folder, removed when the process exits (it holds only what this process derived)."""
    import atexit
    import shutil

    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, True)
    return path

