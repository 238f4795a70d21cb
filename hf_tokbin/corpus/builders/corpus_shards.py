"""JSONL and Parquet corpus shards as a ``datasets`` builder: rows of ``text`` and ``split``.

Every input row becomes one output row, in file order, with two string
columns: ``text`` (the document, from ``text_column``) and ``split``
(``train`` or ``validation``). The split comes from, in this order of choice:

- ``split_column``: its value per row; ``train``, ``validation``, and ``val``
  (read as ``validation``). Anything else (or null) stops with the value,
  file and row named.
- ``split_rule="sha256"`` (seed 004): ``validation`` when the first eight
  bytes of SHA-256 of the exact UTF-8 text, read big-endian, are 0 modulo
  1000, else ``train``. Identical texts share a split; repeats are all kept.
- neither: every row is ``train``.

Inputs:

- ``.jsonl`` / ``.json``: JSON Lines, one object per line, UTF-8; blank lines
  are skipped. Places are named ``line N`` (1-based, as an editor shows).
- ``.parquet``: read in batches of ``batch_rows``. Places are named
  ``row N`` (0-based, as ``pyarrow`` indexes). A file ``pyarrow`` cannot
  read (not Parquet, a corrupt footer or page) stops with the file named.

A missing text column, a text that is not a string (including null), or a
string that is not valid UTF-8 (Parquet does not check it) stops with the
file and the place named. The builder yields one ``datasets``
split per ``data_files`` key (usually one); the ``split`` column, not the
``datasets`` split, says where each row belongs, so interleaved train and
validation rows are read in one pass.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass
from typing import Iterator, Literal, Optional

import datasets
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from datasets.builder import Key
from tqdm.auto import tqdm

from ...errors import CorpusInputError

JSONL_SUFFIXES = (".jsonl", ".json")
PARQUET_SUFFIXES = (".parquet",)
SPLIT_VALUES = {"train": "train", "validation": "validation", "val": "validation"}
VALIDATION_MODULUS = 1000


def sha256_split(text: str) -> str:
    """Seed 004's split of one document: ``validation`` or ``train``."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "validation" if int.from_bytes(digest[:8], "big") % VALIDATION_MODULUS == 0 else "train"


@dataclass
class CorpusShardsConfig(datasets.BuilderConfig):
    """BuilderConfig for JSONL and Parquet corpus shards.

    Args:
        text_column (`str`, defaults to "text"):
            Column (JSON key) holding each document's text.
        split_column (`str`, *optional*):
            Column giving each row's split: train, validation or val.
        split_rule (`Literal["sha256"]`, *optional*):
            Choose the split from the text by seed 004's SHA-256 rule instead.
            With neither option, every row is train.
        batch_rows (`int`, defaults to 10,000):
            Rows per yielded table.
        progress (`bool`, defaults to False):
            Show a tqdm bar of bytes read.
    """

    text_column: str = "text"
    split_column: Optional[str] = None
    split_rule: Optional[Literal["sha256"]] = None
    batch_rows: int = 10_000
    progress: bool = False

    def __post_init__(self):
        super().__post_init__()
        if self.split_column is not None and self.split_rule is not None:
            raise CorpusInputError(None, "give a split column or a split rule, not both", got=f"split_column={self.split_column!r}, split_rule={self.split_rule!r}")
        if self.split_rule not in (None, "sha256"):
            raise CorpusInputError(None, "unknown split rule", expected="sha256", got=self.split_rule)
        if not isinstance(self.batch_rows, int) or self.batch_rows < 1:
            raise CorpusInputError(None, "batch_rows must be a positive integer", got=self.batch_rows)


class CorpusShards(datasets.ArrowBasedBuilder):
    """Rows of JSONL and Parquet files with a ``text`` and a ``split`` column."""

    BUILDER_CONFIG_CLASS = CorpusShardsConfig

    def _info(self):
        return datasets.DatasetInfo(features=datasets.Features({"text": datasets.Value("string"), "split": datasets.Value("string")}))

    def _split_generators(self, dl_manager):
        if not self.config.data_files:
            raise CorpusInputError(None, "CorpusShards needs data_files", expected="{split: [paths]}", got=self.config.data_files)
        files = dl_manager.download(self.config.data_files)
        return [datasets.SplitGenerator(name=split, gen_kwargs={"files": list(paths)}) for split, paths in files.items()]

    def _generate_shards(self, files):
        yield from files

    def _generate_tables(self, files) -> Iterator[tuple[Key, pa.Table]]:
        total = sum(os.path.getsize(path) for path in files)
        disable = None if self.config.progress else True  # None: tqdm hides the bar off a terminal
        with tqdm(total=total, unit="B", unit_scale=True, desc="read", disable=disable) as bar:
            for file_index, path in enumerate(files):
                done = 0
                for batch_index, (texts, splits, position) in enumerate(self._read_file(path)):
                    yield Key(file_index, batch_index), pa.table({"text": texts, "split": splits})
                    bar.update(position - done)
                    done = position

    def _read_file(self, path) -> Iterator[tuple[pa.Array, pa.Array, int]]:
        """Yield ``(texts, splits, bytes of the file read so far)``."""
        name = os.fspath(path).lower()
        if name.endswith(JSONL_SUFFIXES):
            return self._read_jsonl(path)
        if name.endswith(PARQUET_SUFFIXES):
            return self._read_parquet(path)
        raise CorpusInputError(path, "unknown input file type", expected=" or ".join(JSONL_SUFFIXES + PARQUET_SUFFIXES), got=os.path.splitext(name)[1] or "no suffix")

    # JSON Lines: a Python loop, so that every error names its line exactly.
    def _read_jsonl(self, path) -> Iterator[tuple[pa.Array, pa.Array, int]]:
        texts: list[str] = []
        splits: list[str] = []
        offset = 0
        with open(path, "rb") as file:
            for line_number, raw in enumerate(file, start=1):
                where = f"line {line_number}"
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise CorpusInputError(path, "invalid UTF-8", expected="UTF-8 text", got=f"byte {raw[e.start]:#04x} at byte offset {offset + e.start} ({where})") from None
                offset += len(raw)
                if not line.strip():
                    continue
                row = _parse_json_object(line, path, where)
                text = self._text_of(row, path, where)
                texts.append(text)
                splits.append(self._split_of(row.get(self.config.split_column) if self.config.split_column else None, text, path, where))
                if len(texts) == self.config.batch_rows:
                    yield pa.array(texts, pa.string()), pa.array(splits, pa.string()), offset
                    texts, splits = [], []
        if texts:
            yield pa.array(texts, pa.string()), pa.array(splits, pa.string()), offset

    def _text_of(self, row: dict, path, where: str) -> str:
        column = self.config.text_column
        if column not in row:
            raise CorpusInputError(path, f"{where}: missing text column {column!r}", expected=f"a {column!r} key", got=sorted(row)[:10])
        text = row[column]
        if not isinstance(text, str):
            raise CorpusInputError(path, f"{where}: text column {column!r} must hold a string", expected="string", got="null" if text is None else type(text).__name__)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:  # a lone surrogate from a \ud800 escape
            raise CorpusInputError(path, f"{where}: text is not valid Unicode", expected="no lone surrogates", got=repr(text[e.start : e.end])) from None
        return text

    def _split_of(self, value, text: str, path, where: str) -> str:
        if self.config.split_column is not None:
            if not isinstance(value, str) or value not in SPLIT_VALUES:  # null, numbers, lists, objects
                raise CorpusInputError(path, f"{where}: unknown split in column {self.config.split_column!r}", expected="train, validation or val", got=repr(value))
            return SPLIT_VALUES[value]
        if self.config.split_rule == "sha256":
            return sha256_split(text)
        return "train"

    # Parquet: columnar checks, Python only for the SHA-256 rule.
    def _read_parquet(self, path) -> Iterator[tuple[pa.Array, pa.Array, int]]:
        with _readable_parquet(path):
            parquet = pq.ParquetFile(path)
        text_column, split_column = self.config.text_column, self.config.split_column
        names = parquet.schema_arrow.names
        for what, column in (("text", text_column), ("split", split_column)):
            if column is not None and column not in names:
                raise CorpusInputError(path, f"missing {what} column {column!r}", expected=f"a column {column!r}", got=names)
        size = os.path.getsize(path)
        rows_total = max(parquet.metadata.num_rows, 1)
        first_row = 0
        batches = parquet.iter_batches(batch_size=self.config.batch_rows, columns=[c for c in (text_column, split_column) if c])
        while True:
            with _readable_parquet(path):  # pages are read and decoded here, batch by batch
                batch = next(batches, None)
            if batch is None:
                return
            texts = _as_strings(batch.column(text_column), path, first_row, "text", text_column)
            yield texts, self._parquet_splits(batch, texts, path, first_row), size * (first_row + batch.num_rows) // rows_total
            first_row += batch.num_rows

    def _parquet_splits(self, batch: pa.RecordBatch, texts: pa.Array, path, first_row: int) -> pa.Array:
        if self.config.split_column is not None:
            values = batch.column(self.config.split_column)
            if not pa.types.is_null(values.type):
                values = _as_strings(values, path, first_row, "split", self.config.split_column, nulls_ok=True)
            known = pc.fill_null(pc.is_in(values.cast(pa.string()), value_set=pa.array(list(SPLIT_VALUES))), False)
            if not pc.all(known).as_py():
                index = pc.index(known, False).as_py()
                raise CorpusInputError(path, f"row {first_row + index}: unknown split in column {self.config.split_column!r}", expected="train, validation or val", got=repr(values[index].as_py()))
            return pc.if_else(pc.equal(values, "val"), "validation", values)
        if self.config.split_rule == "sha256":
            return pa.array([sha256_split(text) for text in texts.to_pylist()], pa.string())
        return pa.array(["train"] * len(texts), pa.string())


def _parse_json_object(line: str, path, where: str) -> dict:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as e:
        raise CorpusInputError(path, f"{where}: not valid JSON", expected="one JSON object per line", got=f"{e.msg} at column {e.colno}") from None
    if not isinstance(row, dict):
        raise CorpusInputError(path, f"{where}: not a JSON object", expected="one JSON object per line", got=type(row).__name__)
    return row


@contextlib.contextmanager
def _readable_parquet(path):
    """Turn pyarrow's errors about an unreadable file (not Parquet, corrupt footer or pages) into one naming it."""
    try:
        yield
    except (pa.ArrowException, OSError) as e:  # ArrowInvalid, ArrowIOError (= OSError), thrift errors
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CorpusInputError(path, "not a readable Parquet file", expected="a Parquet file", got=first_line) from None


def _as_strings(values: pa.Array, path, first_row: int, what: str, column: str, nulls_ok: bool = False) -> pa.Array:
    """``values`` as a plain, valid UTF-8 string array, or an error naming the first row that is not one."""
    rule = f"{what} column {column!r} must hold strings"
    value_type = values.type.value_type if pa.types.is_dictionary(values.type) else values.type
    if not (pa.types.is_string(value_type) or pa.types.is_large_string(value_type) or pa.types.is_string_view(value_type)):
        raise CorpusInputError(path, f"row {first_row}: {rule}", expected="string", got=str(values.type))
    if values.null_count and not nulls_ok:
        index = pc.index(pc.is_null(values), True).as_py()
        raise CorpusInputError(path, f"row {first_row + index}: {rule}", expected="string", got="null")
    strings = values.cast(pa.string())
    try:
        strings.validate(full=True)  # Parquet readers take string bytes as they are: check the UTF-8 here
    except pa.ArrowInvalid:
        index, sample = _first_invalid_utf8(strings)
        raise CorpusInputError(path, f"row {first_row + index}: {what} column {column!r} is not valid UTF-8", expected="UTF-8 text", got=repr(sample)) from None
    return strings


def _first_invalid_utf8(strings: pa.Array) -> tuple[int, bytes]:
    """Row and first bytes of the first value that is not UTF-8 (only called once validation failed)."""
    for index, value in enumerate(strings.view(pa.binary()).to_pylist()):
        if value is None:
            continue
        try:
            value.decode("utf-8")
        except UnicodeDecodeError as e:
            return index, value[max(e.start - 8, 0) : e.end + 8]
    raise AssertionError("validate() rejected an array whose values all decode")  # cannot happen: same rule
