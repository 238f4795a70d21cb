"""The corpus stage: raw text in, a corpus folder of Parquet shards out.

Two entry points, mirroring ``hf-tokbin corpus tinystories`` and
``hf-tokbin corpus import``::

    write_tinystories_corpus("train.txt", "valid.txt", "corpus/")   # split_rule "files"
    import_corpus(["shards/"], "corpus/", split_rule="sha256")      # "column", "sha256" or "all-train"

Both read their inputs with the ``datasets`` builders of
:mod:`hf_tokbin.corpus.builders`, streamed
(:func:`hf_tokbin.corpus.private_apis.stream_builder_tables`: no Arrow cache
copy of the input, memory stays flat), and write through the one public
writer, :class:`CorpusWriter`, which ``hf_tokbin.import_dataset`` and
``build --limit`` use too. They write the folder described in
:mod:`hf_tokbin.formats.corpus_manifest`::

    DIR/_MANIFEST.json
    DIR/README.md                        dataset card, from dataset_card/corpus_card.md
    DIR/data/train-00000.parquet         train shards first, then
    DIR/data/validation-00000.parquet    validation shards; manifest order = build order

Shards. Parquet with two string columns, ``text`` and ``split``; one split per
shard. A shard holds at most ``shard_bytes`` bytes of UTF-8 text (default
256 MiB) or, if given instead, ``shard_rows`` rows; a single document larger
than the limit is a shard of its own. Row groups hold 10,000 rows counted
from the start of the shard, so the bytes of a shard depend only on the
documents and the limit, never on how the input was read. zstd compression,
dictionary encoding and statistics on ``split`` only. Parquet written by
pyarrow carries no timestamp (its ``created_by`` names the pyarrow version):
the same input, options and pyarrow version give byte-identical shards,
manifest and card. A split with no documents has no shards and is left out
of the card's ``configs:``, so ``load_dataset(DIR)`` returns only the splits
that hold documents.

Inputs. Each input file must be given once: the same file twice (also
through a symlink, a hard link or a folder that holds it) is an error, not
a duplicated corpus. Each source is recorded in the manifest under a name
without the folder it came from (see :func:`list_input_files`); two
different files that would get the same name (``a/x.jsonl b/x.jsonl``) are
an error too: give their common parent folder instead, whose files are
named by their paths inside it.

Atomic. Everything is written into a temporary folder beside ``out``
(``.NAME.tmp-XXXXXXXX``), fsynced, and renamed to ``out`` at the end; a failed
or killed run leaves no folder under ``out`` that looks complete. ``out``
must be missing or empty. ``overwrite=True`` replaces an existing folder only
if it is a corpus folder (holds ``_MANIFEST.json``), so a mistyped ``--out``
cannot delete anything else.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
import re
import shutil
import socket
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .._io import BackgroundSha256, fsync_dir, fsync_path, sha256_file, write_text_atomic
from ..cards.corpus import DATA_DIR, check_card_metadata, render_corpus_card
from ..engines.local import prefetched, usable_cores
from ..errors import CorpusInputError, FormatError
from ..formats.arrow_columns import repeated_string
from ..formats.corpus_manifest import FORMAT as CORPUS_FORMAT
from ..formats.corpus_manifest import (
    MANIFEST_NAME,
    SPLITS,
    CorpusManifest,
    CorpusShard,
    sha256_rule_name,
)
from ..formats.corpus_shard import text_lengths
from ..formats.records import FileEntry
from ..formats.rules import FOLDER_NAME_RULE, MAX_SOURCES, is_folder_name
from .inputs import InputFile, fetched_copy, list_inputs
from .private_apis import stream_builder_tables
from .tinystories_text import story_tables

DEFAULT_SHARD_BYTES = 256 << 20
ROW_GROUP_ROWS = 10_000
MAX_SHARDS_PER_SPLIT = 100_000  # five-digit names keep glob order = manifest order
CARD_NAME = "README.md"
SCHEMA = pa.schema([("text", pa.string()), ("split", pa.string())])
PARQUET_OPTIONS = {
    "compression": "zstd",
    "use_dictionary": ["split"],
    "write_statistics": ["split"],
}


@dataclass(frozen=True)
class ShardLimit:
    """When a shard is full: at ``rows`` rows, or at ``text_bytes`` bytes of UTF-8 text (exactly one is set)."""

    rows: int | None = None
    text_bytes: int | None = None

    def __post_init__(self):
        if (self.rows is None) == (self.text_bytes is None):
            raise CorpusInputError(
                None,
                "a shard limit is rows or bytes: give exactly one, not both",
                got=f"rows={self.rows}, bytes={self.text_bytes}",
            )
        value = self.rows if self.rows is not None else self.text_bytes
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise CorpusInputError(None, "a shard limit must be a positive integer", got=value)

    @classmethod
    def of(cls, shard_rows: int | None = None, shard_bytes: int | None = None) -> "ShardLimit":
        """The limit from CLI-style options; 256 MiB of text when neither is given."""
        if shard_rows is None and shard_bytes is None:
            shard_bytes = DEFAULT_SHARD_BYTES
        return cls(rows=shard_rows, text_bytes=shard_bytes)


def write_tinystories_corpus(
    train: str | os.PathLike,
    valid: str | os.PathLike | None,
    out: str | os.PathLike,
    *,
    name: str = "tinystories",
    license: str = "cdla-sharing-1.0",
    language: Sequence[str] = ("en",),
    shard_rows: int | None = None,
    shard_bytes: int | None = None,
    overwrite: bool = False,
    progress: bool = False,
    any_license: bool = False,
) -> CorpusManifest:
    """Write the stories of TinyStories text files (the TinyStories rules) as a corpus folder.

    ``train`` gives the train split, ``valid`` (optional) the validation
    split. An input without a single story is an error. ``license`` and
    ``language`` default to TinyStories' (CDLA-Sharing-1.0, English).
    """
    files = {"train": Path(train)}
    if valid is not None:
        files["validation"] = Path(valid)
    check_corpus_name(name, "--name")
    check_card_metadata(license, language, any_license)
    for path in files.values():
        _check_input_file(path)
    sources = [(path, path.name) for path in files.values()]
    _check_distinct_inputs([InputFile(os.fspath(path), source, "text") for path, source in sources])
    with CorpusWriter(out, name, ShardLimit.of(shard_rows, shard_bytes), overwrite) as corpus:
        entries = []
        for split, path in files.items():
            # The SHA-256 of the very bytes the stories are cut from, hashed on a thread of its own as they are read.
            digest, size = BackgroundSha256(), [0]
            # The TinyStories builder's own reader, without datasets (its import alone cost more than reading 100 MB).
            # keep_empty: the writer drops and counts empty stories, one policy with import_corpus.
            tables = (
                table
                for _, table in story_tables(
                    [os.fspath(path.resolve())],
                    split,
                    progress=progress,
                    keep_empty=True,
                    chunks=functools.partial(_hashed, digest, size),
                )
            )
            # Reading and cutting the stories on one thread; row groups on this one; zstd on each shard's.
            try:
                for table in prefetched(tables):
                    corpus.write_split(split, table.column("text"))
            except BaseException:
                digest.cancel()
                raise
            entries.append(FileEntry(path.name, size[0], digest.hexdigest()))
        return corpus.finish("files", tuple(entries), license, language, [p for p, _ in sources])


def _hashed(digest: BackgroundSha256, size: list[int], chunk: bytes) -> None:
    digest.update(chunk)
    size[0] += len(chunk)


def import_corpus(
    paths: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    *,
    name: str | None = None,
    text_column: str | Sequence[str] = "text",
    text_join: str = "\n\n",
    split: str = "auto",
    split_column: str | None = None,
    split_rule: str | None = None,
    split_map: dict[str, str] | None = None,
    val_per_mille: int = 1,
    limit: int | None = None,
    keep_columns: Sequence[str] = (),
    source_column: str | None = None,
    license: str = "unknown",
    language: Sequence[str] = (),
    shard_rows: int | None = None,
    shard_bytes: int | None = None,
    overwrite: bool = False,
    progress: bool = False,
    any_license: bool = False,
) -> CorpusManifest:
    """Write the rows of corpus input files (or folders, globs, ``hf://`` paths of them) as a corpus folder.

    The inputs are listed by :func:`hf_tokbin.corpus.inputs.list_inputs`
    (JSON Lines, JSON arrays, Parquet, Arrow, text; compressed or not;
    ``save_to_disk`` folders). The split of each row: ``split="auto"`` uses a
    ``split`` column (or ``split_column``) when the files have one, else all
    train; ``"sha256"`` is the Megatron release layout's rule at ``val_per_mille``; ``"all-train"``
    ignores any column. ``split_map`` maps other split names. Empty documents
    are dropped and counted (as ``corpus tinystories`` does, by the TinyStories rules).
    ``limit`` keeps the first N documents in input order. ``keep_columns``
    are copied into the shards beside ``text`` and ``split``;
    ``source_column`` is copied as a ``source`` column and its documents
    counted per split and source in the manifest. ``name`` defaults to the
    name of ``out``.
    """
    name = Path(out).name if name is None else name
    check_corpus_name(name, "--name" if name != Path(out).name else "--out")
    if limit is not None:
        check_limit(limit)
    check_card_metadata(license, language, any_license)
    if split_rule is not None:
        split = "sha256" if split_rule == "sha256" else split_rule
    inputs = list_inputs(paths)
    _check_distinct_inputs(inputs)
    with CorpusWriter(out, name, ShardLimit.of(shard_rows, shard_bytes), overwrite) as corpus:
        builder = _corpus_shards_builder(
            corpus.cache, inputs, text_column=text_column, text_join=text_join, split=split, split_column=split_column,
            split_map=split_map, val_per_mille=val_per_mille, keep_columns=keep_columns, source_column=source_column,
            progress=progress,
        )
        corpus.write_tables(limited(stream_builder_tables(builder, "input"), limit))
        sources = tuple(_source_entry(f, builder.checked, corpus.cache) for f in inputs)
        return corpus.finish(split_rule_name(builder, inputs), sources, license, language, [f.uri for f in inputs])


def _corpus_shards_builder(
    cache: str,
    inputs: list[InputFile],
    *,
    text_column: str | Sequence[str],
    text_join: str,
    split: str,
    split_column: str | None,
    split_map: dict[str, str] | None,
    val_per_mille: int,
    keep_columns: Sequence[str],
    source_column: str | None,
    progress: bool,
):
    """The ``CorpusShards`` builder reading ``inputs`` with :func:`import_corpus`'s options, its cache in ``cache``."""
    from datasets.data_files import DataFilesDict, DataFilesList

    from .builders.corpus_shards import CorpusShards

    return CorpusShards(
        cache_dir=cache,
        data_files=DataFilesDict({"input": DataFilesList([f.uri for f in inputs], [()] * len(inputs))}),
        text_columns=(text_column,) if isinstance(text_column, str) else tuple(text_column),
        text_join=text_join,
        split=split,
        split_column=split_column,
        split_map=dict(split_map or {}),
        val_per_mille=val_per_mille,
        file_splits={f.uri: f.split for f in inputs if f.split is not None},
        remote_files={f.uri: (f.size, f.sha256, f.git_blob_id) for f in inputs if f.is_remote},
        keep_columns=tuple(keep_columns),
        source_column=source_column,
        progress=progress,
    )


class CorpusWriter:
    """The corpus writer: checked tables in, a corpus folder (shards, ``_MANIFEST.json``, card) out, atomically.

    ::

        with CorpusWriter(out, name, ShardLimit.of(shard_rows=1000)) as corpus:
            corpus.write_tables(tables)        # text, split and kept columns, already checked
            manifest = corpus.finish("column", sources, license, language, inputs)

    Everything goes into a temporary folder beside ``out`` (builders' caches
    under :attr:`cache`); :meth:`finish` writes the manifest and card and
    renames it to ``out``. Leaving the block without :meth:`finish` (an
    error) removes it: nothing half-written looks like a corpus.
    """

    def __init__(self, out: str | os.PathLike, name: str, limit: ShardLimit, overwrite: bool = False):
        check_corpus_name(name)
        self.name, self.limit = name, limit
        self._folder = CorpusFolder(out, overwrite)
        self._shards: _CorpusShards | None = None

    def __enter__(self) -> "CorpusWriter":
        self._folder.__enter__()
        self.cache = self._folder.cache
        return self

    def __exit__(self, *exc) -> None:
        if self._shards is not None:
            # after finish() a no-op; else no writer thread may still write into the folder removed next
            self._shards.abort()
        self._folder.__exit__(*exc)

    def _open(self, kept: Sequence[pa.Field] = ()) -> "_CorpusShards":
        if self._shards is None:
            self._shards = _CorpusShards(self._folder.path, self.limit, kept)
        return self._shards

    def write_tables(self, tables: Iterable[pa.Table]) -> None:
        """Checked tables (``text``, ``split``, kept columns); the kept columns' types come from the first table."""
        for table in tables:
            self._open([table.schema.field(n) for n in table.column_names[2:]]).write_rows(table)

    def write_split(self, split: str, texts: pa.Array | pa.ChunkedArray) -> None:
        """Documents of one split, in order."""
        self._open().write_split(split, texts)

    def finish(
        self,
        split_rule: str,
        sources: Sequence[FileEntry],
        license: str,
        language: Sequence[str],
        inputs: Sequence[str | os.PathLike] = (),
    ) -> CorpusManifest:
        """Close the shards, write the manifest and card, move the
        folder to ``out``; ``inputs`` name the input in errors.
        """
        shards = self._open()
        manifest = CorpusManifest(
            self.name,
            split_rule,
            tuple(sources),
            tuple(shards.close()),
            license,
            tuple(language),
            shards.empty_dropped,
            shards.by_source,
        )
        return self._folder.finish(manifest, inputs, shards.schema)


def split_rule_name(builder, inputs) -> str:
    """The manifest's split rule for what the builder did: column,
    files (DatasetDict splits), sha256[-per-mille-N] or all-train.
    """
    config = builder.config
    if config.split == "sha256":
        return sha256_rule_name(config.val_per_mille)
    if config.split == "column" or (config.split == "auto" and getattr(builder, "used_split_column", False)):
        return "column"
    if config.split == "auto" and any(f.split is not None for f in inputs):
        return "files"
    return "all-train"


def limited(tables: Iterator[pa.Table], limit: int | None) -> Iterator[pa.Table]:
    """The tables up to ``limit`` rows in all (the first rows in input order), then stop reading."""
    if limit is None:
        yield from tables
        return
    left = limit
    for table in tables:
        if left <= 0:
            return
        yield table.slice(0, left)
        left -= table.num_rows


def check_limit(limit, where=None) -> None:
    """``--limit`` (corpus import, build): a positive number of documents."""
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise CorpusInputError(where, "--limit must be a positive number of documents", got=limit)


def _check_distinct_inputs(inputs: list[InputFile]) -> None:
    """Every input is a different file (local: device and inode; remote: URL) with its own source name."""
    by_file: dict[object, str] = {}
    by_name: dict[str, str] = {}
    for file in inputs:
        if file.is_remote:
            key = file.uri
        else:
            stat = os.stat(file.uri)
            key = (stat.st_dev, stat.st_ino)
        first = by_file.setdefault(key, file.uri)
        if first is not file.uri:
            raise CorpusInputError(
                file.uri,
                "the same input file is given twice",
                expected="each input file once",
                got=f"{first} and {file.uri}",
            )
        first = by_name.setdefault(file.name, file.uri)
        if first is not file.uri:
            raise CorpusInputError(
                file.uri,
                "two input files would have the same source name in the manifest",
                expected="distinct names",
                got=f"{file.name!r} for {first} and {file.uri}",
                hint="give their common parent folder instead: files in a folder are named by their paths inside it",
            )


def _source_entry(file: InputFile, checked: dict, scratch: str) -> FileEntry:
    """An input as the manifest names it: source name, size and SHA-256 of its bytes as stored (compressed or not).

    A Hub file gives the SHA-256 of the bytes fetched and checked when it was read (``checked``); one the import
    never reached (past ``limit``) is fetched by the same checked download now, so no digest is only the Hub's word.
    """
    if not file.is_remote:
        return FileEntry(file.name, os.path.getsize(file.uri), sha256_file(file.uri))
    if file.uri not in checked:
        with fetched_copy(file, Path(scratch) / "sources") as copy:
            checked[file.uri] = (copy.size, copy.sha256)
    size, sha256 = checked[file.uri]
    return FileEntry(file.name, size, sha256)


def list_input_files(paths: Sequence[str | os.PathLike]) -> list[tuple[Path, str]]:
    """``(path, source name)`` of every local input file (see :func:`hf_tokbin.corpus.inputs.list_inputs`)."""
    inputs = list_inputs(paths)
    _check_distinct_inputs(inputs)
    return [(Path(f.uri), f.name) for f in inputs]


def check_corpus_name(name, flag: str = "--name") -> None:
    """A corpus name is one folder name: the flag that gave it is named, before anything is read or written."""
    if not is_folder_name(name):
        raise CorpusInputError(
            None, f"{flag}: the corpus name must be one folder name", expected=FOLDER_NAME_RULE, got=repr(name)
        )


def _check_input_file(path: Path) -> None:
    if not path.is_file():
        raise CorpusInputError(path, "input file is missing" if not path.exists() else "input is not a file")


def _data_files(files: dict[str, list[Path]]):
    """``data_files`` for a builder, taken as given (no glob expansion: a name may hold '[' or '*')."""
    from datasets.data_files import DataFilesDict, DataFilesList

    return DataFilesDict(
        {
            split: DataFilesList([os.fspath(p.resolve()) for p in paths], [()] * len(paths))
            for split, paths in files.items()
        }
    )


class _ShardSequence:
    """The shards of one split: ``data/<split>-NNNNN.parquet``, filled in order up to the limit.

    The caller's thread cuts the rows into row groups; each shard's Parquet
    writer (zstd: most of the stage's work, without the GIL) runs on a thread
    of its own (:class:`_ShardOnThread`), so a full shard is still being
    compressed while the next one fills, and every core compresses on a
    corpus of several shards. ``slots`` bounds the bytes of the row groups
    waiting, over every shard (:func:`queued_bytes_budget`), and the shards
    open at once (:func:`shards_at_once`): memory, threads and open files do
    not grow with the corpus.
    """

    def __init__(self, root: Path, split: str, limit: ShardLimit, schema: pa.Schema, slots: _WriterSlots):
        self.root, self.split, self.limit, self.schema, self.slots = root, split, limit, schema, slots
        self.shards: list[_ShardOnThread] = []
        self._open: _ShardOnThread | None = None
        self._pending: list[pa.Array] = []  # rows not yet written as a full row group
        self._pending_rows = 0
        self._rows = 0
        self._text_bytes = 0

    def write(self, rows: pa.Table) -> None:
        """Rows with a ``text`` column (and any kept columns), in order."""
        while rows.num_rows:
            take = self._rows_that_fit(rows.column("text"))
            if take == 0:
                self._close_shard()
                continue
            self._append(rows.slice(0, take))
            rows = rows.slice(take)

    def close(self) -> list[CorpusShard]:
        if self._open is not None:
            self._close_shard()
        return [shard.sealed() for shard in self.shards]

    def abort(self) -> None:
        """Stop every shard's thread (a failed run: the folder is removed next)."""
        for shard in self.shards:
            shard.abort()

    def _rows_that_fit(self, texts) -> int:
        """How many leading rows of ``texts`` the open shard takes (0: it is full); an empty shard takes at least one.
        """
        if self.limit.rows is not None:
            fit = min(len(texts), self.limit.rows - self._rows)
        else:
            sizes = np.cumsum(text_lengths(texts))
            fit = int(np.searchsorted(sizes, self.limit.text_bytes - self._text_bytes, side="right"))
        return max(fit, 1) if self._rows == 0 else fit

    def _append(self, rows: pa.Table) -> None:
        if self._open is None:
            self._open_shard()
        self._rows += rows.num_rows
        self._text_bytes += int(text_lengths(rows.column("text")).sum())
        self._pending.append(rows)
        self._pending_rows += rows.num_rows
        while self._pending_rows >= ROW_GROUP_ROWS:
            self._write_row_group(ROW_GROUP_ROWS)

    def _write_row_group(self, rows: int) -> None:
        pending = pa.concat_tables(self._pending)
        self._open.write(pending.slice(0, rows), self.split)
        rest = pending.slice(rows)
        self._pending = [rest] if rest.num_rows else []
        self._pending_rows = len(rest)

    def _open_shard(self) -> None:
        index = len(self.shards)
        if index >= MAX_SHARDS_PER_SPLIT:
            raise CorpusInputError(
                None,
                f"too many {self.split} shards",
                expected=f"at most {MAX_SHARDS_PER_SPLIT}",
                got=index + 1,
                hint="raise --shard-bytes or --shard-rows",
            )
        (self.root / DATA_DIR).mkdir(exist_ok=True)
        self._open = _ShardOnThread(self.root, f"{DATA_DIR}/{self.split}-{index:05d}.parquet", self.schema, self.slots)
        self.shards.append(self._open)

    def _close_shard(self) -> None:
        if self._pending_rows:
            self._write_row_group(self._pending_rows)
        self._open.close(self.split, self._rows)
        self._open = None
        self._rows = self._text_bytes = 0


QUEUED_BYTES_MIN = 16 << 20
QUEUED_BYTES_MAX = 512 << 20


def queued_bytes_budget(limit: ShardLimit, cores: int | None = None) -> int:
    """The bytes of row groups the shards' threads may hold at once: a shard per core, within a fixed cap.

    The caller's thread fills one shard at a time, and starts the next only
    once the rest of the current one is queued; with (cores - 1) shards'
    worth queued, every core compresses a shard of its own (a 2.2 GB corpus
    on 2 cores: 17% less wall time than with 16 MiB queued, 180 MB more peak).
    At most ``QUEUED_BYTES_MAX`` whatever the shard size or the cores, so
    memory stays flat.
    """
    shard = limit.text_bytes or DEFAULT_SHARD_BYTES  # a row limit: the default shard's bytes as the estimate
    cores = usable_cores() if cores is None else cores
    return min(max((cores - 1) * shard, QUEUED_BYTES_MIN), QUEUED_BYTES_MAX)


def shards_at_once(cores: int | None = None) -> int:
    """The shards open at once (each a thread and an open file
    until sealed): one sealing per core, one filling per split.

    The byte budget alone does not bound them: tiny shards (``--shard-rows 10``)
    weigh nothing against it, and on a slow disk (a 0.2 s fsync) thousands were
    open at once, up to "Too many open files". At least 3: the two splits'
    filling shards never wait on each other.
    """
    return (usable_cores() if cores is None else cores) + len(SPLITS)


class _WriterSlots:
    """The bytes of row groups the shards' threads may hold at once, the shards open at once, and the first task that
    failed (raised at the next :meth:`acquire` or :meth:`open_shard`).

    A task larger than the whole budget goes alone. Bytes, not a count of row
    groups: a row group is 10,000 documents, a few MB of stories or hundreds
    of MB of web pages. A shard is open from :meth:`open_shard` until its seal
    is done (:meth:`shard_sealed`).
    """

    def __init__(self, budget: int, shards: int):
        self._budget, self._shards = budget, shards
        self._held = self._open = 0
        self._free = threading.Condition()
        self._failed: BaseException | None = None

    def open_shard(self) -> None:
        if self._failed is not None:
            raise self._failed
        with self._free:
            self._free.wait_for(lambda: self._open < self._shards)
            self._open += 1

    def shard_sealed(self, task) -> None:
        with self._free:
            self._open -= 1
            self._free.notify_all()

    def acquire(self, size: int) -> None:
        if self._failed is not None:
            raise self._failed
        with self._free:
            self._free.wait_for(lambda: self._held == 0 or self._held + size <= self._budget)
            self._held += size

    def release(self, size: int, task) -> None:
        if not task.cancelled() and task.exception() is not None and self._failed is None:
            self._failed = task.exception()
        with self._free:
            self._held -= size
            self._free.notify_all()


class _ShardOnThread:
    """One shard's ParquetWriter, fed row groups in order on a thread of its own, then sealed (fsync, SHA-256) there.

    pyarrow writes to the path, not through a Python file object: it then
    compresses and writes without taking the GIL for every page. Each queued
    task holds a slot (``slots``) until done. A task's error is raised at the
    next call on any shard, or by :meth:`sealed`.
    """

    def __init__(self, root: Path, rel: str, schema: pa.Schema, slots: _WriterSlots):
        self.root, self.rel, self.schema, self._slots = root, rel, schema, slots
        slots.open_shard()  # waits while shards_at_once() shards are open; released once sealed (see close)
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="hf_tokbin-parquet")
        self._writer: pq.ParquetWriter | None = None
        self._tasks: collections.deque = collections.deque()
        self._submit(self._open_writer)

    def write(self, group: pa.Table, split: str) -> None:
        self._submit(functools.partial(self._write_group, group, split), group.nbytes)

    def close(self, split: str, rows: int) -> None:
        self._submit(functools.partial(self._close_and_seal, split, rows))
        self._tasks[-1].add_done_callback(self._slots.shard_sealed)  # the shard's slot, once sealed (or cancelled)
        self._thread.shutdown(wait=False)

    def sealed(self) -> CorpusShard:
        """The shard's record, once every row group is written and the shard sealed."""
        while len(self._tasks) > 1:
            self._tasks.popleft().result()
        return self._tasks[0].result()

    def abort(self) -> None:
        for task in self._tasks:
            task.cancel()
        self._thread.shutdown(wait=True)
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()

    def _submit(self, work, size: int = 0) -> None:
        while self._tasks and self._tasks[0].done():
            self._tasks.popleft().result()
        self._slots.acquire(size)  # a failed write on any shard's thread stops the run here, not after the whole input
        task = self._thread.submit(work)
        task.add_done_callback(functools.partial(self._slots.release, size))
        self._tasks.append(task)

    def _open_writer(self) -> None:
        self._writer = pq.ParquetWriter(os.fspath(self.root / self.rel), self.schema, **PARQUET_OPTIONS)

    def _write_group(self, group: pa.Table, split: str) -> None:
        kept = [group.column(name).combine_chunks() for name in self.schema.names[len(SCHEMA) :]]
        columns = [group.column("text").combine_chunks(), repeated_string(split, group.num_rows), *kept]
        self._writer.write_table(pa.table(columns, schema=self.schema), row_group_size=group.num_rows)

    def _close_and_seal(self, split: str, rows: int) -> CorpusShard:
        self._writer.close()
        self._writer = None
        path = self.root / self.rel
        fsync_path(path)  # ParquetWriter closes without fsync
        return CorpusShard(self.rel, split, rows, path.stat().st_size, sha256_file(path))


class _CorpusShards:
    """Routes documents to the shard sequence of their split; drops and counts empty documents.

    ``kept`` are the fields of the columns kept beside ``text`` and
    ``split`` (``--keep-columns``, and ``source`` for ``--source-column``),
    in that order; every table must give them with exactly these types.
    """

    def __init__(self, root: Path, limit: ShardLimit, kept: Sequence[pa.Field] = ()):
        self.schema = pa.schema([*SCHEMA, *kept])
        # row groups queued and shards open, over both splits
        slots = _WriterSlots(queued_bytes_budget(limit), shards_at_once())
        self._splits = {split: _ShardSequence(root, split, limit, self.schema, slots) for split in SPLITS}
        self.by_source: dict[str, dict[str, int]] = {}  # split -> source -> documents, when a source column is kept

    empty_dropped = 0  # empty documents seen and dropped (both importers: the TinyStories rules drop empty stories)

    def write_split(self, split: str, texts: pa.Array | pa.ChunkedArray) -> None:
        self._write(split, pa.table({"text": texts}))

    def _write(self, split: str, rows: pa.Table) -> None:
        rows = self._without_empty(rows)
        if "source" in rows.column_names and rows.num_rows:
            import pyarrow.compute as pc  # here, not at the top: it costs `corpus tinystories` 0.04 s to import

            counts = self.by_source.setdefault(split, {})
            for item in pc.value_counts(rows.column("source")).to_pylist():
                counts[item["values"]] = counts.get(item["values"], 0) + item["counts"]
            # The manifest, every receipt and stats.json hold one entry
            # per source; stats.json's are both splits' together.
            if len(counts) > MAX_SOURCES or len(set().union(*self.by_source.values())) > MAX_SOURCES:
                raise CorpusInputError(
                    None,
                    f"--source-column: at most {MAX_SOURCES:,} distinct sources (both splits together)",
                    got=f"more than {MAX_SOURCES:,}",
                    hint="a source names a part of the corpus (a dataset, a site), not a document",
                )
        self._splits[split].write(rows)

    def _without_empty(self, rows: pa.Table) -> pa.Table:
        lengths = text_lengths(rows.column("text"))
        kept = int(np.count_nonzero(lengths))
        if kept == rows.num_rows:
            return rows
        nonempty = pa.array(lengths > 0)
        self.empty_dropped += rows.num_rows - kept
        return rows.filter(nonempty)

    def write_rows(self, rows: pa.Table) -> None:
        """Rows (``text``, ``split``, kept columns) of mixed splits,
        in order; each split keeps the input order of its rows.
        """
        kept = self.schema.names[len(SCHEMA) :]
        for field in list(self.schema)[len(SCHEMA) :]:
            if rows.schema.field(field.name).type != field.type:
                raise CorpusInputError(
                    None,
                    f"kept column {field.name!r} changes type between input files",
                    expected=str(field.type),
                    got=str(rows.schema.field(field.name).type),
                )
        import pyarrow.compute as pc

        data = rows.select(["text", *kept])
        is_validation = pc.equal(rows.column("split"), "validation")
        validation = pc.sum(is_validation).as_py() or 0
        if validation == 0:
            self._write("train", data)
        elif validation == rows.num_rows:
            self._write("validation", data)
        else:
            self._write("train", data.filter(pc.invert(is_validation)))
            self._write("validation", data.filter(is_validation))

    def close(self) -> list[CorpusShard]:
        return [shard for split in SPLITS for shard in self._splits[split].close()]

    def abort(self) -> None:
        for shards in self._splits.values():
            shards.abort()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


OWNER_NAME = ".owner"  # in a temporary folder: "PID HOST" of the run writing it


def _check_ours(out: Path) -> None:
    """``out`` is a corpus folder this tool wrote: a valid corpus manifest (format checked), and nothing but its files.

    ``--overwrite`` deletes ``out``: an llm.c token folder (whose
    ``_MANIFEST.json`` is a different record), a release, or a corpus folder
    someone added files to is refused, naming what does not belong.
    """
    import json

    try:
        record = json.loads((out / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        record = None
    if not isinstance(record, dict) or record.get("format") != CORPUS_FORMAT:
        got = (
            "no _MANIFEST.json"
            if not (out / MANIFEST_NAME).is_file()
            else f"a _MANIFEST.json of format {record.get('format')!r}"
            if isinstance(record, dict)
            else "an unreadable _MANIFEST.json"
        )
        raise CorpusInputError(
            out, f"--overwrite replaces only a corpus folder (a {MANIFEST_NAME} of format {CORPUS_FORMAT})", got=got
        )
    try:
        manifest = CorpusManifest.read(out)
    except FormatError as e:
        raise CorpusInputError(out, "--overwrite replaces only a valid corpus folder", got=str(e)) from None
    ours = {MANIFEST_NAME, CARD_NAME, DATA_DIR, *(s.path for s in manifest.shards)}
    for path in sorted(out.rglob("*")):
        rel = path.relative_to(out).as_posix()
        if rel not in ours or path.is_symlink():
            raise CorpusInputError(
                path,
                "--overwrite replaces only a corpus folder holding nothing but its own files",
                got="a file the corpus does not list",
                hint="move it away, or choose another --out",
            )


def remove_stale_temporaries(out: Path) -> list[Path]:
    """Delete the temporary folders of killed runs for ``out``:
    ``.NAME.tmp-XXXXXXXX`` and ``.NAME.old-XXXXXXXX``, ours only.

    A folder qualifies only by its exact name (mkdtemp's 8 characters) and, for
    ``.tmp-``, an owner record naming a process on this host that is gone; a
    run still in progress, or anything else, is left alone.
    """
    pattern = re.compile(re.escape(f".{out.name}.") + r"(tmp|old)-[a-z0-9_]{8}")
    removed = []
    if not out.parent.is_dir():
        return removed
    for path in out.parent.iterdir():
        match = pattern.fullmatch(path.name)
        if not match or path.is_symlink() or not path.is_dir():
            continue
        if match.group(1) == "tmp" and not _owner_is_gone(path / OWNER_NAME):
            continue
        if match.group(1) == "old" and not out.exists():
            continue  # killed between the two renames: this holds the only copy of the previous corpus
        shutil.rmtree(path)
        removed.append(path)
    return removed


def _owner_is_gone(owner: Path) -> bool:
    try:
        pid_text, host = owner.read_text(encoding="utf-8").split()
        pid = int(pid_text)
    except (OSError, ValueError, UnicodeDecodeError):
        return False  # not our record: leave the folder alone
    if host != socket.gethostname() or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


class CorpusFolder:
    """A temporary folder beside ``out``, renamed to ``out`` by :meth:`finish`; removed on failure."""

    def __init__(self, out: str | os.PathLike, overwrite: bool):
        self.out = Path(out)
        self.overwrite = overwrite
        self._check_out()

    def _check_out(self) -> None:
        out = self.out
        if not out.exists():
            return
        if not out.is_dir():
            raise CorpusInputError(out, "output exists and is not a folder")
        if not any(out.iterdir()):
            return
        if not self.overwrite:
            raise CorpusInputError(
                out, "output folder exists and is not empty", hint="pass --overwrite to replace a corpus folder"
            )
        _check_ours(out)

    def __enter__(self) -> "CorpusFolder":
        self.out.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(self.out)
        self.path = Path(tempfile.mkdtemp(prefix=f".{self.out.name}.tmp-", dir=self.out.parent))
        self.path.chmod(0o777 & ~_umask())  # mkdtemp makes it private; the corpus folder is not
        write_text_atomic(self.path / OWNER_NAME, f"{os.getpid()} {socket.gethostname()}\n")
        # The builders' lock files go here, not into the user's datasets cache.
        self.cache = os.fspath(self.path / ".builder-cache")
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.path.exists():
            shutil.rmtree(self.path, ignore_errors=True)

    def finish(
        self, manifest: CorpusManifest, inputs: Sequence[str | os.PathLike], schema: pa.Schema = SCHEMA
    ) -> CorpusManifest:
        """Write the manifest and card, then move the folder to ``out``; ``inputs`` name the input in errors."""
        if not manifest.shards:
            raise CorpusInputError(
                ", ".join(os.fspath(path) for path in inputs) or None,
                "no documents in the input",
                expected="at least one document",
                got=0,
            )
        shutil.rmtree(self.cache, ignore_errors=True)
        (self.path / OWNER_NAME).unlink()
        manifest.write(self.path)
        write_text_atomic(self.path / CARD_NAME, render_corpus_card(manifest, schema))
        fsync_dir(self.path / DATA_DIR)
        self._check_out()  # again: something may have appeared while we worked
        self._replace_out()
        return manifest

    def _replace_out(self) -> None:
        old = None
        if self.out.exists() and any(self.out.iterdir()):
            old = Path(tempfile.mkdtemp(prefix=f".{self.out.name}.old-", dir=self.out.parent))
            os.replace(self.out, old)
        with contextlib.suppress(FileNotFoundError):
            if self.out.is_dir():
                self.out.rmdir()  # an empty folder
        os.replace(self.path, self.out)
        fsync_dir(self.out.parent)
        if old is not None:
            shutil.rmtree(old)
