"""The private APIs of ``datasets`` and ``huggingface_hub`` hf_tokbin relies on, each in one place and pinned.

Each has no public equivalent that does the same job; each is covered by
``tests/corpus/test_private_apis.py``, which fails when its name or signature
changes, so an upgrade that breaks one is caught in CI, not in a user's build.

- :func:`stream_builder_tables`: a builder's split as Arrow tables from its
  own ``_split_generators`` and ``_generate_tables`` (what
  ``as_streaming_dataset`` iterates). The public ``IterableDataset`` wrapper
  imports torch when it is installed (about 2 s and 300 MB) and rebatches
  for nothing: the shard writer sets its own row groups.
- :func:`record_cached_ref`: ``huggingface_hub``'s
  ``_cache_commit_hash_for_specific_revision``, which records a branch's
  commit in the cache. A corpus is fetched at the commit id checked first
  (a hostile server's commit id must never name a cache folder), and a
  fetch at a commit id records no ref; without it an offline build of the
  branch would not find the snapshot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pyarrow as pa

# (module, name, the parameters hf_tokbin passes, in order): what the pinning test checks.
PINNED = (
    ("datasets.builder", "DatasetBuilder._split_generators", ("self", "dl_manager")),
    ("datasets.builder", "ArrowBasedBuilder._generate_tables", ("self", "kwargs")),
    (
        "huggingface_hub.file_download",
        "_cache_commit_hash_for_specific_revision",
        ("storage_folder", "revision", "commit_hash"),
    ),
)
# (module, name): private tables hf_tokbin reads, checked to exist by the same test.
PINNED_TABLES = (
    ("datasets.packaged_modules", "_ALL_ALLOWED_EXTENSIONS"),
    ("datasets.packaged_modules", "_MODULE_TO_EXTENSIONS"),
    ("datasets.packaged_modules", "_MODULE_TO_METADATA_EXTENSIONS"),
    ("datasets.packaged_modules", "_MODULE_TO_METADATA_FILE_NAMES"),
)


def split_generators(builder) -> list:
    """A ``datasets`` Arrow builder's ``SplitGenerator``s, given a streaming download manager (nothing downloaded)."""
    from datasets import DownloadConfig
    from datasets.download.streaming_download_manager import StreamingDownloadManager

    return list(
        builder._split_generators(
            StreamingDownloadManager(base_path=builder.base_path, download_config=DownloadConfig())
        )
    )


def generate_tables(builder, generator) -> Iterator[pa.Table]:
    """The tables of one ``SplitGenerator`` of the builder, streamed from its own generator."""
    for _key, table in builder._generate_tables(**generator.gen_kwargs):
        yield table


def stream_builder_tables(builder, split: str) -> Iterator[pa.Table]:
    """The tables of one split of a ``datasets`` Arrow builder, streamed."""
    yield from generate_tables(builder, {str(g.name): g for g in split_generators(builder)}[split])


def record_cached_ref(snapshot: Path, revision: str, commit: str) -> None:
    """Record in the Hub cache that ``revision`` (a branch or tag) names ``commit``, whose snapshot is ``snapshot``."""
    from huggingface_hub.file_download import _cache_commit_hash_for_specific_revision

    _cache_commit_hash_for_specific_revision(str(Path(snapshot).parent.parent), revision, commit)


def all_allowed_extensions() -> list[str]:
    """Every extension ``datasets`` takes for a data or metadata file (``.parquet``, ``.jsonl``, ...)."""
    from datasets.packaged_modules import _ALL_ALLOWED_EXTENSIONS

    return list(_ALL_ALLOWED_EXTENSIONS)


def module_file_filter(module: str):
    """``keep(path)``: whether ``datasets`` keeps ``path`` among the data files of packaged module ``module``
    (``DataFilesList.filter`` with the module's extensions and metadata file names)."""
    from datasets.data_files import DataFilesList
    from datasets.packaged_modules import (
        _MODULE_TO_EXTENSIONS,
        _MODULE_TO_METADATA_EXTENSIONS,
        _MODULE_TO_METADATA_FILE_NAMES,
    )

    extensions = _MODULE_TO_EXTENSIONS[module] + _MODULE_TO_METADATA_EXTENSIONS[module]
    names = _MODULE_TO_METADATA_FILE_NAMES[module]
    return lambda path: bool(DataFilesList([path], [()]).filter(extensions=extensions, file_names=names))
