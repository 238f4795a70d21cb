"""Corpus inputs as a ``datasets`` builder: rows of ``text`` and ``split``, read by ``datasets``' own readers.

Every input row becomes one output row, in file order, with two string
columns: ``text`` (the document: ``text_columns`` joined by ``text_join``)
and ``split`` (``train`` or ``validation``). The files are read by
``datasets``' packaged ``json``, ``parquet``, ``arrow`` and ``text`` builders
(:mod:`hf_tokbin.corpus.inputs`: compressed files, ``hf://`` paths); this
builder only checks their tables and chooses the split.

The split (``split`` option), in this order of choice:

- ``"auto"`` (default): a ``split_column`` (default ``split``) when the file
  has one, else the split the file's container names (a ``DatasetDict``
  folder's split), else ``train``;
- ``"column"``: ``split_column`` must be present in every file;
- ``"sha256"`` (the Megatron release layout): ``validation`` when the first eight bytes of
  SHA-256 of the exact UTF-8 text, read big-endian, are below
  ``val_per_mille`` modulo 1000 (default 1: ``== 0``, the layout's rate), else
  ``train``. Identical texts share a split; repeats are all kept;
- ``"all-train"``: every row is ``train``, whatever its columns say.

Split values are ``train``, ``validation`` and ``val`` (read as
``validation``); ``split_map`` maps other names (``{"test": "validation"}``).
Any other value (or null) stops with the value, file and place named.

A missing text column, a text that is not a string (including null), or a
string that is not valid UTF-8 stops with the file and the place named:
``line N`` (1-based, as an editor shows) in JSON Lines, ``row N`` (0-based)
elsewhere.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Literal, Optional

import datasets
import pyarrow as pa
import pyarrow.compute as pc
from datasets.builder import Key
from tqdm.auto import tqdm

from ..._io import notify
from ...errors import CorpusInputError, shown
from ...formats.corpus_shard import first_bad_source
from ...formats.rules import SOURCE_NAME_RULE, SPLIT_NAMES, is_source_name
from ..inputs import InputFile, fetched_copy, locate_json_error, read_tables, reader_of
from ..tinystories_text import DELIMITER

JSONL_SUFFIXES = (".jsonl", ".json")
PARQUET_SUFFIXES = (".parquet",)
VALIDATION_MODULUS = 1000
SPLIT_POLICIES = ("auto", "column", "sha256", "all-train")


def sha256_split(text: str, val_per_mille: int = 1) -> str:
    """The Megatron release layout's split of one document: ``validation`` or ``train``.

    ``val_per_mille`` in 1000 go to validation; the layout's rate is 1.
    """
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "validation" if int.from_bytes(digest[:8], "big") % VALIDATION_MODULUS < val_per_mille else "train"


@dataclass
class CorpusShardsConfig(datasets.BuilderConfig):
    """BuilderConfig for corpus inputs (JSON, Parquet, Arrow, text; compressed or not).

    Args:
        text_column (`str`, defaults to "text"):
            Column (JSON key) holding each document's text.
        text_columns (`tuple[str, ...]`, *optional*):
            Several text columns, joined by ``text_join`` in this order (like
            Megatron's ``--json-keys``, but one document per row).
        text_join (`str`, defaults to "\\n\\n"):
            Separator between the text columns of one row.
        split (`Literal["auto", "column", "sha256", "all-train"]`, defaults to "auto"):
            How each row's split is chosen (see the module docstring).
        split_column (`str`, *optional*):
            Column giving each row's split (default ``split`` for ``auto``).
        split_rule (`Literal["sha256"]`, *optional*):
            The old spelling of ``split="sha256"``.
        split_map (`dict[str, str]`, *optional*):
            Other split names and the split they mean (train or validation).
        val_per_mille (`int`, defaults to 1):
            Validation rate of the SHA-256 rule, in 1000.
        file_splits (`dict[str, str]`, *optional*):
            The split each file's container names, by path (DatasetDict folders).
        remote_files (`dict[str, tuple]`, *optional*):
            ``(size, sha256, git blob id)`` of each ``hf://`` file as the Hub lists it: each is fetched by the
            checked download before it is read, its SHA-256 as read kept in :attr:`CorpusShards.checked`.
        keep_columns (`tuple[str, ...]`, defaults to ()):
            Columns copied beside ``text`` and ``split``, values as they are.
        source_column (`str`, *optional*):
            A string column copied as ``source`` (counted per source and split).
        batch_rows (`int`, defaults to 10,000):
            Rows per yielded table (Parquet batches).
        progress (`bool`, defaults to False):
            Show a tqdm bar of files read.
    """

    text_column: str = "text"
    text_columns: Optional[tuple] = None
    text_join: str = "\n\n"
    split: Literal["auto", "column", "sha256", "all-train"] = "auto"
    split_column: Optional[str] = None
    split_rule: Optional[Literal["sha256"]] = None
    split_map: dict = field(default_factory=dict)
    val_per_mille: int = 1
    file_splits: dict = field(default_factory=dict)
    remote_files: dict = field(default_factory=dict)
    keep_columns: tuple = ()
    source_column: Optional[str] = None
    batch_rows: int = 10_000
    progress: bool = False

    def __post_init__(self):
        super().__post_init__()
        if self.split_rule is not None:
            if self.split_column is not None:
                raise CorpusInputError(
                    None,
                    "give a split column or a split rule, not both",
                    got=f"split_column={self.split_column!r}, split_rule={self.split_rule!r}",
                )
            if self.split_rule != "sha256":
                raise CorpusInputError(None, "unknown split rule", expected="sha256", got=self.split_rule)
            self.split = "sha256"
        elif self.split_column is not None and self.split == "auto":
            self.split = "column"
        if self.split not in SPLIT_POLICIES:
            raise CorpusInputError(None, "unknown split policy", expected=" or ".join(SPLIT_POLICIES), got=self.split)
        if self.split in ("sha256", "all-train") and self.split_column is not None:
            raise CorpusInputError(
                None, f"a split column and split {self.split!r}: give one, not both", got=self.split_column
            )
        if (
            not isinstance(self.val_per_mille, int)
            or isinstance(self.val_per_mille, bool)
            or not 0 < self.val_per_mille < VALIDATION_MODULUS
        ):
            raise CorpusInputError(None, "--val-per-mille must be an integer from 1 to 999", got=self.val_per_mille)
        for name, target in self.split_map.items():
            if target not in ("train", "validation") or not isinstance(name, str) or not name:
                raise CorpusInputError(
                    None,
                    "--split-map maps a split name to train or validation",
                    expected="NAME=train or NAME=validation",
                    got=f"{name}={target}",
                )
        self.text_columns = tuple(self.text_columns) if self.text_columns else (self.text_column,)
        if len(set(self.text_columns)) != len(self.text_columns) or not all(
            isinstance(c, str) and c for c in self.text_columns
        ):
            raise CorpusInputError(None, "text columns must be distinct names", got=list(self.text_columns))
        self.keep_columns = tuple(self.keep_columns)
        reserved = {"text", "split", "source"}
        if (
            len(set(self.keep_columns)) != len(self.keep_columns)
            or reserved & set(self.keep_columns)
            or not all(isinstance(c, str) and c for c in self.keep_columns)
        ):
            raise CorpusInputError(
                None,
                "--keep-columns: distinct column names other than text, split and source",
                got=list(self.keep_columns),
                hint="--source-column COL keeps COL as 'source'",
            )
        if not isinstance(self.batch_rows, int) or self.batch_rows < 1:
            raise CorpusInputError(None, "batch_rows must be a positive integer", got=self.batch_rows)

    @property
    def column_for_split(self) -> str | None:
        if self.split in ("sha256", "all-train"):
            return None
        return self.split_column or "split"

    @property
    def split_values(self) -> dict[str, str]:
        return {**SPLIT_NAMES, **self.split_map}


class CorpusShards(datasets.ArrowBasedBuilder):
    """Rows of corpus input files with a ``text`` and a ``split`` column."""

    BUILDER_CONFIG_CLASS = CorpusShardsConfig
    # split "auto": whether the first table had a split column (the rest must match)
    used_split_column: bool | None = None

    @property
    def checked(self) -> dict:
        """``hf://`` files read so far: uri -> (size, SHA-256 of the bytes fetched, checked and read)."""
        if "_checked" not in self.__dict__:
            self._checked = {}
        return self._checked

    def _info(self):
        return datasets.DatasetInfo(
            features=datasets.Features({"text": datasets.Value("string"), "split": datasets.Value("string")})
        )

    def _split_generators(self, dl_manager):
        if not self.config.data_files:
            raise CorpusInputError(
                None, "CorpusShards needs data_files", expected="{split: [paths]}", got=self.config.data_files
            )
        # Paths as given: local files are read where they are, hf:// files from a checked copy (inputs.fetched_copy).
        return [
            datasets.SplitGenerator(name=split, gen_kwargs={"files": list(paths)})
            for split, paths in self.config.data_files.items()
        ]

    def _generate_shards(self, files):
        yield from files

    def _generate_tables(self, files) -> Iterator[tuple[Key, pa.Table]]:
        disable = None if self.config.progress else True  # None: tqdm hides the bar off a terminal
        self.used_split_column: bool | None = None  # learnt from the first file (auto), then the same for all
        for file_index, path in enumerate(tqdm(files, unit="file", desc="read", disable=disable)):
            uri = os.fspath(path)
            reader = reader_of(uri)[0]
            if reader is None:
                raise CorpusInputError(
                    uri,
                    "unknown input file type",
                    expected="a .jsonl, .json, .parquet, .arrow or .txt file",
                    got=os.path.splitext(uri)[1] or "no suffix",
                )
            listed = self.config.remote_files.get(uri, (None, None, None))
            file = InputFile(uri, os.path.basename(uri), reader, self.config.file_splits.get(uri), *listed)
            with fetched_copy(file, Path(self.cache_dir) / "inputs") as readable:
                if readable.is_remote:
                    self.checked[uri] = (readable.size, readable.sha256)
                for batch_index, table in enumerate(self._read_file(readable)):
                    yield Key(file_index, batch_index), table

    def _read_file(self, file: InputFile) -> Iterator[pa.Table]:
        first_row = 0
        delimiter_lines = 0
        try:
            for table in read_tables(file, self.cache_dir):
                for start in range(0, max(table.num_rows, 1), self.config.batch_rows):
                    part = table.slice(start, self.config.batch_rows)
                    if part.num_rows == 0:
                        continue
                    checked = self.check_table(file, part, first_row)
                    if file.reader == "text":
                        delimiter_lines += _delimiter_lines(checked["text"])
                    yield checked
                    first_row += part.num_rows
            if delimiter_lines:
                _warn_delimited_text(file, delimiter_lines)
        except CorpusInputError as e:
            if file.reader == "json" and e.path == file.uri:
                # JSON Lines: name the line, found by scanning the file with the same rules row by row.
                located = locate_json_error(file, self._row_problem)
                if located is not None:
                    raise located from None
            raise

    def check_table(self, file: InputFile, table: pa.Table, first_row: int) -> pa.Table:
        """One table of ``file`` (its first row is ``first_row`` of the
        file) as checked ``text`` and ``split`` (and kept) columns.

        Columnar checks; JSON places are turned into line numbers by the caller's scan. Public: rows that come
        from no file (``hf_tokbin.import_dataset``'s in-memory datasets) are checked by the same rules.
        """
        names = table.column_names
        place = _place(file, first_row)
        texts = []
        for column in self.config.text_columns:
            if column not in names:
                raise CorpusInputError(
                    file.uri, f"missing text column {column!r}", expected=f"a column {column!r}", got=names[:10]
                )
            texts.append(_as_strings(table.column(column), file, place, "text", column))
        text = texts[0] if len(texts) == 1 else pc.binary_join_element_wise(*texts, self.config.text_join)
        out = {"text": text, "split": self._splits(file, table, text, place)}
        for column in self.config.keep_columns:
            if column not in names:
                raise CorpusInputError(
                    file.uri, f"missing kept column {column!r}", expected=f"a column {column!r}", got=names[:10]
                )
            out[column] = table.column(column).combine_chunks()
        if self.config.source_column is not None:
            column = self.config.source_column
            if column not in names:
                raise CorpusInputError(
                    file.uri, f"missing source column {column!r}", expected=f"a column {column!r}", got=names[:10]
                )
            out["source"] = _as_source_names(table.column(column), file, place, column)
        return pa.table(out)

    def _splits(self, file: InputFile, table: pa.Table, texts: pa.Array, place: Callable[[int], str]) -> pa.Array:
        config = self.config
        column = config.column_for_split
        has_column = column is not None and column in table.column_names
        if config.split == "column" and not has_column:
            raise CorpusInputError(
                file.uri,
                f"missing split column {column!r}",
                expected=f"a column {column!r}",
                got=table.column_names[:10],
            )
        if config.split == "auto":
            if self.used_split_column is None:
                self.used_split_column = has_column
            elif self.used_split_column != has_column:
                raise CorpusInputError(
                    file.uri,
                    f"{place(0)}: the first input file {'has' if self.used_split_column else 'has no'} "
                    f"a {column!r} column and this one {'has' if has_column else 'has none'}",
                    hint="give --split-column NAME, or --all-train to ignore it",
                )
        if has_column:
            values = table.column(column)
            if not pa.types.is_null(values.type):
                values = _as_strings(values, file, place, "split", column, nulls_ok=True)
            return self._mapped(values.cast(pa.string()), file, place, f"unknown split in column {column!r}")
        if config.split == "sha256":
            return pa.array([sha256_split(t, config.val_per_mille) for t in texts.to_pylist()], pa.string())
        if file.split is not None and config.split == "auto":
            return self._mapped(
                pa.array([file.split] * len(texts), pa.string()),
                file,
                place,
                "unknown split name of the saved DatasetDict",
            )
        return pa.array(["train"] * len(texts), pa.string())

    def _mapped(self, values: pa.Array, file: InputFile, place, rule: str) -> pa.Array:
        mapping = self.config.split_values
        known = pc.fill_null(pc.is_in(values, value_set=pa.array(list(mapping))), False)
        if not pc.all(known).as_py():
            index = pc.index(known, False).as_py()
            raise CorpusInputError(
                file.uri,
                f"{place(index)}: {rule}",
                expected=_split_names(mapping),
                got=repr(values[index].as_py()),
                hint="map other names with --split-map NAME=validation",
            )
        out = values
        for name, target in mapping.items():
            if name != target:
                out = pc.if_else(pc.equal(out, name), target, out)
        return out

    def _row_problem(self, row: dict) -> tuple[str, str, str] | None:
        """The rule a JSON object breaks, checked as :meth:`check_table` checks a table (for the line-by-line scan)."""
        for column in self.config.text_columns:
            if column not in row:
                return f"missing text column {column!r}", f"a {column!r} key", repr(sorted(row)[:10])
            text = row[column]
            if not isinstance(text, str):
                return (
                    f"text column {column!r} must hold a string",
                    "string",
                    "null" if text is None else type(text).__name__,
                )
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as e:  # a lone surrogate from a \ud800 escape
                return "text is not valid Unicode", "no lone surrogates", repr(text[e.start : e.end])
        source = self.config.source_column
        if source is not None and not is_source_name(row.get(source)):
            return (
                f"source column {source!r} must hold a source name",
                SOURCE_NAME_RULE,
                "null" if row.get(source) is None else shown(repr(row.get(source))),
            )
        column = self.config.column_for_split
        if column is not None and (column in row or self.config.split == "column"):
            value = row.get(column)
            if not isinstance(value, str) or value not in self.config.split_values:  # null, numbers, lists, objects
                return f"unknown split in column {column!r}", _split_names(self.config.split_values), repr(value)
        return None


def _delimiter_lines(lines: pa.Array) -> int:
    """How many of a text file's lines are the TinyStories delimiter alone (white space around it allowed)."""
    return pc.sum(pc.equal(pc.utf8_trim_whitespace(lines), DELIMITER)).as_py() or 0


def _warn_delimited_text(file: InputFile, delimiter_lines: int) -> None:
    """A text file is read as one document per line; TinyStories text (one story per delimiter line) is not."""
    notify(
        f"warning: {file.uri}: {delimiter_lines:,} line{'s' if delimiter_lines != 1 else ''} of this .txt file "
        f"{'are' if delimiter_lines != 1 else 'is'} {DELIMITER} alone: each line is read as one document; "
        f"for text of one story per {DELIMITER} line, use hf-tokbin corpus tinystories {file.uri}"
    )


def _split_names(mapping: dict[str, str]) -> str:
    names = list(mapping)
    return ", ".join(names[:-1]) + " or " + names[-1]


def _place(file: InputFile, first_row: int) -> Callable[[int], str]:
    """``row N`` of the file for the ``i``-th row of a table starting at ``first_row`` (JSON: turned into lines later).
    """
    return lambda i: f"row {first_row + i}"


def _as_strings(values, file: InputFile, place, what: str, column: str, nulls_ok: bool = False) -> pa.Array:
    """``values`` as a plain, valid UTF-8 string array, or an error naming the first row that is not one."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    rule = f"{what} column {column!r} must hold strings"
    value_type = values.type.value_type if pa.types.is_dictionary(values.type) else values.type
    if not (
        pa.types.is_string(value_type) or pa.types.is_large_string(value_type) or pa.types.is_string_view(value_type)
    ):
        raise CorpusInputError(file.uri, f"{place(0)}: {rule}", expected="string", got=str(values.type))
    if values.null_count and not nulls_ok:
        index = pc.index(pc.is_null(values), True).as_py()
        raise CorpusInputError(file.uri, f"{place(index)}: {rule}", expected="string", got="null")
    strings = values.cast(pa.string())
    try:
        strings.validate(full=True)  # Parquet readers take string bytes as they are: check the UTF-8 here
    except pa.ArrowInvalid:
        index, sample = _first_invalid_utf8(strings)
        raise CorpusInputError(
            file.uri,
            f"{place(index)}: {what} column {column!r} is not valid UTF-8",
            expected="UTF-8 text",
            got=repr(sample),
        ) from None
    return strings


def _as_source_names(values, file: InputFile, place, column: str) -> pa.Array:
    """The source column as strings, each a source name (they become
    keys of receipts and stats.json), or an error naming the row.
    """
    strings = _as_strings(values, file, place, "source", column)
    row = first_bad_source(strings)
    if row is not None:
        raise CorpusInputError(
            file.uri,
            f"{place(row)}: source column {column!r} must hold a source name",
            expected=SOURCE_NAME_RULE,
            got=shown(strings[row].as_py()),
        )
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



