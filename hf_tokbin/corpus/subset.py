"""``build --limit N``: the first N documents of a corpus, in corpus order, as a corpus folder of their own.

Only checked bytes are read: each shard the limit reaches is taken whole
through its :class:`~.source.ShardSource` (a Hub shard fetched by the checked
download, deleted once read) and its size and SHA-256 checked against the
corpus manifest before a document of it is taken; a shard past the limit is
never read. The subset's manifest lists as its sources exactly the shards
read (with the digests that were checked), keeps the corpus's name, split
rule, license and languages, and :class:`~hf_tokbin.formats.corpus_manifest.CorpusSubset` says what it was cut
from: the limit, the corpus manifest's SHA-256, and per split the documents
taken of the documents the corpus holds (a limit that ends inside the train
split leaves validation with none, and says so).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq
from datasets.data_files import DataFilesDict, DataFilesList

from .._io import sha256_file
from ..formats.corpus_manifest import MANIFEST_NAME, SPLITS, CorpusManifest, CorpusShard, CorpusSubset
from ..formats.corpus_shard import SOURCE_COLUMN
from ..formats.records import FileEntry
from .builders.corpus_shards import CorpusShards
from .inputs import InputFile
from .source import CorpusSource, LocalShards, check_shard_file, temporary_folder
from .write import CorpusWriter, ShardLimit, check_limit

BATCH_ROWS = 10_000


def first_documents(
    found: CorpusSource, limit: int, work_dir: str | os.PathLike | None = None, source_column: str | None = None
) -> CorpusSource:
    """The first ``limit`` documents of ``found`` as a corpus
    folder (see the module docstring); its ``subset`` says how.

    A corpus with a source column (its manifest counts sources, or ``source_column`` names a plain repo's) keeps
    it as the subset's ``source`` column, so the build counts the subset by source.
    """
    check_limit(limit)
    manifest = CorpusManifest.read(found.root)
    column = SOURCE_COLUMN if manifest.documents_by_source else source_column
    base = Path(work_dir) if work_dir is not None else temporary_folder("hf_tokbin-limit-")
    root = base / manifest.name
    taken = {split: 0 for split in SPLITS}
    read: list[FileEntry] = []
    with CorpusWriter(root, manifest.name, ShardLimit.of()) as corpus:
        # The corpus reader's table checks, on rows read here (the builder reads no file).
        checker = CorpusShards(
            cache_dir=corpus.cache,
            data_files=DataFilesDict({"input": DataFilesList(["shard.parquet"], [()])}),
            split="all-train",
            source_column=column,
        )
        for shard in manifest.shards:
            left = limit - sum(taken.values())
            if left <= 0:
                break
            with found.shards.local_path(shard, base / ".shards") as path:
                check_shard_file(shard, path)  # checked before any document of it is taken
                for rows in _rows(checker, found.shards.location(shard), shard, path, left, column):
                    if column is None:
                        corpus.write_split(shard.split, rows.column("text"))
                    else:  # the checker's split is its all-train: the shard's own split goes with the source column
                        corpus.write_tables(
                            [rows.set_column(1, "split", pa.array([shard.split] * rows.num_rows, pa.string()))]
                        )
                    taken[shard.split] += rows.num_rows
            read.append(FileEntry(shard.path, shard.size, shard.sha256))
        corpus.finish(
            manifest.split_rule,
            read,
            manifest.license,
            manifest.language,
            [found.shards.location(s) for s in manifest.shards],
        )
    available = {split: sum(s.rows for s in manifest.shards if s.split == split) for split in SPLITS}
    subset = CorpusSubset(limit, sha256_file(found.root / MANIFEST_NAME), taken, available)
    return CorpusSource(root, found.source, found.revision, LocalShards(os.fspath(root.resolve())), subset)


def _rows(
    checker: CorpusShards, location: str, shard: CorpusShard, path: Path, left: int, column: str | None
) -> Iterator[pa.Table]:
    """The first ``left`` rows of a checked shard file (``text``,
    ``split``, ``source`` with a source column), in batches,
    by the corpus reader's rules (strings, UTF-8, source names)."""
    file = InputFile(location, shard.path, "parquet", shard.split)
    first_row = 0
    with pq.ParquetFile(path) as parquet:
        for batch in parquet.iter_batches(
            batch_size=BATCH_ROWS, columns=["text"] if column is None else ["text", column]
        ):
            if left <= 0:
                return
            table = pa.Table.from_batches([batch]).slice(0, left)
            yield checker.check_table(file, table, first_row)
            first_row += table.num_rows
            left -= table.num_rows
