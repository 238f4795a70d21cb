"""The corpus stage: raw text in, a corpus folder of Parquet shards out.

Two entry points, mirroring ``hf-tokbin corpus tinystories`` and
``hf-tokbin corpus import``::

    write_tinystories_corpus("train.txt", "valid.txt", "corpus/")   # split_rule "files"
    import_corpus(["shards/"], "corpus/", split_rule="sha256")      # "column", "sha256" or "all-train"

Both read their inputs with the ``datasets`` builders of
:mod:`hf_tokbin.corpus.builders`, streamed: :func:`_stream_tables` iterates the
builder's own split and table generators (what ``as_streaming_dataset``
iterates, without the ``IterableDataset`` wrapper), so there is no Arrow
cache copy of the input and memory stays flat. They write the folder
described in :mod:`hf_tokbin.formats.corpus_manifest`::

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

import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from datasets import DownloadConfig
from datasets.data_files import DataFilesDict, DataFilesList
from datasets.download.streaming_download_manager import StreamingDownloadManager

from .._io import fsync_dir, fsync_path, sha256_file, write_text_atomic
from ..cards.corpus import DATA_DIR, render_corpus_card
from ..errors import CorpusInputError
from ..formats.corpus_manifest import (
    MANIFEST_NAME,
    SPLITS,
    CorpusManifest,
    CorpusShard,
)
from ..formats.records import FileEntry
from .builders.corpus_shards import JSONL_SUFFIXES, PARQUET_SUFFIXES, CorpusShards
from .builders.tinystories import TinyStories

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
            raise CorpusInputError(None, "a shard limit is rows or bytes: give exactly one, not both", got=f"rows={self.rows}, bytes={self.text_bytes}")
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
) -> CorpusManifest:
    """Write the stories of TinyStories text files (seed 002's rules) as a corpus folder.

    ``train`` gives the train split, ``valid`` (optional) the validation
    split. An input without a single story is an error. ``license`` and
    ``language`` default to TinyStories' (CDLA-Sharing-1.0, English).
    """
    files = {"train": Path(train)}
    if valid is not None:
        files["validation"] = Path(valid)
    limit = ShardLimit.of(shard_rows, shard_bytes)
    _check_name(name)
    for path in files.values():
        _check_input_file(path)
    sources = [(path, path.name) for path in files.values()]
    _check_distinct(sources)
    with _CorpusFolder(out, overwrite) as folder:
        builder = TinyStories(cache_dir=folder.cache, data_files=_data_files({split: [path] for split, path in files.items()}), progress=progress)
        writer = _CorpusWriter(folder.path, limit)
        for split in files:
            for table in _stream_tables(builder, split):
                writer.write_split(split, table.column("text"))
        shards = tuple(writer.close())
        return folder.finish(CorpusManifest(name, "files", _source_entries(sources), shards, license, tuple(language)), sources)


def import_corpus(
    paths: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    *,
    name: str | None = None,
    text_column: str = "text",
    split_column: str | None = None,
    split_rule: str | None = None,
    license: str = "unknown",
    language: Sequence[str] = (),
    shard_rows: int | None = None,
    shard_bytes: int | None = None,
    overwrite: bool = False,
    progress: bool = False,
) -> CorpusManifest:
    """Write the rows of JSONL and Parquet files (or folders of them) as a corpus folder.

    The split of each row comes from ``split_column``, or from
    ``split_rule="sha256"`` (seed 004), or is train for all. ``name``
    defaults to the name of ``out``.
    """
    limit = ShardLimit.of(shard_rows, shard_bytes)
    name = Path(out).name if name is None else name
    _check_name(name)
    sources = list_input_files(paths)
    rule = "column" if split_column else "sha256" if split_rule == "sha256" else "all-train"
    with _CorpusFolder(out, overwrite) as folder:
        builder = CorpusShards(
            cache_dir=folder.cache,
            data_files=_data_files({"input": [path for path, _ in sources]}),
            text_column=text_column,
            split_column=split_column,
            split_rule=split_rule,
            progress=progress,
        )
        writer = _CorpusWriter(folder.path, limit)
        for table in _stream_tables(builder, "input"):
            writer.write_rows(table.column("text"), table.column("split"))
        shards = tuple(writer.close())
        return folder.finish(CorpusManifest(name, rule, _source_entries(sources), shards, license, tuple(language)), sources)


def list_input_files(paths: Sequence[str | os.PathLike]) -> list[tuple[Path, str]]:
    """``(path, source name)`` of every input file: files as given, folders searched recursively, sorted by name.

    The source name (recorded in the manifest) is the path relative to the
    argument's parent folder: ``shards/a.parquet`` for a folder ``in/shards``,
    ``a.jsonl`` for a file ``in/a.jsonl``. In folders, names starting with ``.``
    or ``_`` are skipped (hidden files, ``_MANIFEST.json``, ``_SUCCESS``), so a
    corpus folder can itself be imported. The same file found twice, or two
    files with the same source name, is an error (:func:`_check_distinct`).
    """
    if not paths:
        raise CorpusInputError(None, "no input given", expected="JSONL or Parquet files or folders", got="nothing")
    found: list[tuple[Path, str]] = []
    suffixes = JSONL_SUFFIXES + PARQUET_SUFFIXES
    for given in map(Path, paths):
        if given.is_dir():
            inside = sorted(
                (p for p in given.rglob("*") if p.is_file() and p.name.lower().endswith(suffixes)),
                key=lambda p: p.relative_to(given).as_posix(),
            )
            inside = [p for p in inside if not any(part.startswith((".", "_")) for part in p.relative_to(given).parts)]
            if not inside:
                raise CorpusInputError(given, "folder holds no input files", expected=f"files ending in {', '.join(suffixes)}", got="none")
            found.extend((p, (Path(given.resolve().name) / p.relative_to(given)).as_posix()) for p in inside)
        else:
            _check_input_file(given)
            if not given.name.lower().endswith(suffixes):
                raise CorpusInputError(given, "unknown input file type", expected=" or ".join(suffixes), got=given.suffix or "no suffix")
            found.append((given, given.name))
    _check_distinct(found)
    return found


def _check_distinct(sources: list[tuple[Path, str]]) -> None:
    """Every input is a different file (``os.path.samefile``'s test: device and inode) with its own source name."""
    by_file: dict[tuple[int, int], Path] = {}
    by_name: dict[str, Path] = {}
    for path, name in sources:
        stat = path.stat()
        first = by_file.setdefault((stat.st_dev, stat.st_ino), path)
        if first is not path:
            raise CorpusInputError(path, "the same input file is given twice", expected="each input file once", got=f"{first} and {path}")
        first = by_name.setdefault(name, path)
        if first is not path:
            raise CorpusInputError(
                path,
                "two input files would have the same source name in the manifest",
                expected="distinct names",
                got=f"{name!r} for {first} and {path}",
                hint="give their common parent folder instead: files in a folder are named by their paths inside it",
            )


def _source_entries(sources: list[tuple[Path, str]]) -> tuple[FileEntry, ...]:
    """The inputs as the manifest names them: base name, size, SHA-256."""
    return tuple(FileEntry(source, path.stat().st_size, sha256_file(path)) for path, source in sources)


def _check_name(name) -> None:
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise CorpusInputError(None, "corpus name must be a non-empty name without '/' (not starting with '.')", got=repr(name))


def _check_input_file(path: Path) -> None:
    if not path.is_file():
        raise CorpusInputError(path, "input file is missing" if not path.exists() else "input is not a file")


def _data_files(files: dict[str, list[Path]]) -> DataFilesDict:
    """``data_files`` for a builder, taken as given (no glob expansion: a name may hold '[' or '*')."""
    return DataFilesDict({split: DataFilesList([os.fspath(p.resolve()) for p in paths], [()] * len(paths)) for split, paths in files.items()})


def _stream_tables(builder, split: str) -> Iterator[pa.Table]:
    """One split of one of our builders as Arrow tables, streamed from its own generator.

    This is what ``builder.as_streaming_dataset(split)`` iterates, minus the
    ``IterableDataset`` wrapper: with torch installed, creating one imports
    torch (about 2 s and 300 MB here) and rebatching would buy nothing, since
    the shard writer sets its own row groups. Nothing is cached on disk and
    only one block of input is in memory at a time.
    """
    dl_manager = StreamingDownloadManager(base_path=builder.base_path, download_config=DownloadConfig())
    generators = {str(g.name): g for g in builder._split_generators(dl_manager)}
    for _key, table in builder._generate_tables(**generators[split].gen_kwargs):
        yield table


class _ShardSequence:
    """The shards of one split: ``data/<split>-NNNNN.parquet``, filled in order up to the limit."""

    def __init__(self, root: Path, split: str, limit: ShardLimit):
        self.root, self.split, self.limit = root, split, limit
        self.shards: list[CorpusShard] = []
        self._writer: pq.ParquetWriter | None = None
        self._pending: list[pa.Array] = []  # rows not yet written as a full row group
        self._pending_rows = 0
        self._rows = 0
        self._text_bytes = 0

    def write(self, texts: pa.Array) -> None:
        while len(texts):
            take = self._rows_that_fit(texts)
            if take == 0:
                self._close_shard()
                continue
            self._append(texts.slice(0, take))
            texts = texts.slice(take)

    def close(self) -> list[CorpusShard]:
        if self._writer is not None:
            self._close_shard()
        return self.shards

    def _rows_that_fit(self, texts: pa.Array) -> int:
        """How many leading rows of ``texts`` the open shard takes (0: it is full); an empty shard takes at least one."""
        if self.limit.rows is not None:
            fit = min(len(texts), self.limit.rows - self._rows)
        else:
            sizes = np.cumsum(pc.binary_length(texts).to_numpy(zero_copy_only=False), dtype=np.int64)
            fit = int(np.searchsorted(sizes, self.limit.text_bytes - self._text_bytes, side="right"))
        return max(fit, 1) if self._rows == 0 else fit

    def _append(self, texts: pa.Array) -> None:
        if self._writer is None:
            self._open_shard()
        self._rows += len(texts)
        self._text_bytes += pc.sum(pc.binary_length(texts)).as_py() or 0
        self._pending.append(texts)
        self._pending_rows += len(texts)
        while self._pending_rows >= ROW_GROUP_ROWS:
            self._write_row_group(ROW_GROUP_ROWS)

    def _write_row_group(self, rows: int) -> None:
        pending = pa.chunked_array(self._pending, pa.string())
        group = pending.slice(0, rows).combine_chunks()
        self._writer.write_table(pa.table([group, pa.repeat(self.split, len(group))], schema=SCHEMA), row_group_size=rows)
        rest = pending.slice(rows)
        self._pending = list(rest.chunks)
        self._pending_rows = len(rest)

    def _open_shard(self) -> None:
        index = len(self.shards)
        if index >= MAX_SHARDS_PER_SPLIT:
            raise CorpusInputError(None, f"too many {self.split} shards", expected=f"at most {MAX_SHARDS_PER_SPLIT}", got=index + 1, hint="raise --shard-bytes or --shard-rows")
        self._path = f"{DATA_DIR}/{self.split}-{index:05d}.parquet"
        (self.root / DATA_DIR).mkdir(exist_ok=True)
        self._writer = pq.ParquetWriter(self.root / self._path, SCHEMA, **PARQUET_OPTIONS)

    def _close_shard(self) -> None:
        if self._pending_rows:
            self._write_row_group(self._pending_rows)
        self._writer.close()
        self._writer = None
        path = self.root / self._path
        fsync_path(path)  # ParquetWriter closes without fsync
        self.shards.append(CorpusShard(self._path, self.split, self._rows, path.stat().st_size, sha256_file(path)))
        self._rows = self._text_bytes = 0


class _CorpusWriter:
    """Routes documents to the shard sequence of their split."""

    def __init__(self, root: Path, limit: ShardLimit):
        self._splits = {split: _ShardSequence(root, split, limit) for split in SPLITS}

    def write_split(self, split: str, texts: pa.Array | pa.ChunkedArray) -> None:
        for chunk in _chunks(texts):
            self._splits[split].write(chunk)

    def write_rows(self, texts: pa.ChunkedArray, splits: pa.ChunkedArray) -> None:
        """Rows of mixed splits, in order; each split keeps the input order of its rows."""
        is_validation = pc.equal(splits, "validation")
        validation = pc.sum(is_validation).as_py() or 0
        if validation == 0:
            self.write_split("train", texts)
        elif validation == len(texts):
            self.write_split("validation", texts)
        else:
            self.write_split("train", texts.filter(pc.invert(is_validation)))
            self.write_split("validation", texts.filter(is_validation))

    def close(self) -> list[CorpusShard]:
        return [shard for split in SPLITS for shard in self._splits[split].close()]


def _chunks(texts: pa.Array | pa.ChunkedArray) -> Iterable[pa.Array]:
    return texts.chunks if isinstance(texts, pa.ChunkedArray) else [texts]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class _CorpusFolder:
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
            raise CorpusInputError(out, "output folder exists and is not empty", hint="pass --overwrite to replace a corpus folder")
        if not (out / MANIFEST_NAME).is_file():
            raise CorpusInputError(out, f"--overwrite replaces only a corpus folder (one holding {MANIFEST_NAME})", got="a folder without it")

    def __enter__(self) -> "_CorpusFolder":
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.path = Path(tempfile.mkdtemp(prefix=f".{self.out.name}.tmp-", dir=self.out.parent))
        self.path.chmod(0o777 & ~_umask())  # mkdtemp makes it private; the corpus folder is not
        # The builders' lock files go here, not into the user's datasets cache.
        self.cache = os.fspath(self.path / ".builder-cache")
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.path.exists():
            shutil.rmtree(self.path, ignore_errors=True)

    def finish(self, manifest: CorpusManifest, sources: list[tuple[Path, str]]) -> CorpusManifest:
        """Write the manifest and card, then move the folder to ``out``."""
        if not manifest.shards:
            raise CorpusInputError(", ".join(os.fspath(path) for path, _ in sources), "no documents in the input", expected="at least one document", got=0)
        shutil.rmtree(self.cache, ignore_errors=True)
        manifest.write(self.path)
        write_text_atomic(self.path / CARD_NAME, render_corpus_card(manifest))
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
