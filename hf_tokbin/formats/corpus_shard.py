"""A corpus shard's text column: the one rule every reader of a shard's texts checks.

A corpus shard (``data/<split>-NNNNN.parquet`` of a corpus folder, or a
Parquet file of a plain Hub dataset repo) holds its documents in one column
named ``text`` whose type is ``string`` or ``large_string``, with no null and
every value valid UTF-8. Parquet readers take string bytes as they are, so
the UTF-8 is checked here, batch by batch, by the build
(:func:`hf_tokbin.pipeline.encode.text_batches`), ``tokenizer train`` and
``verify CORPUS``.

A shard may also hold a source column (``source`` in a corpus folder made
with ``corpus import --source-column``; the column ``build --source-column``
names in a plain Hub repo): strings, no null, each a source name
(:func:`hf_tokbin.formats.rules.is_source_name`), since every name becomes a
key of receipts and ``stats.json`` and a cell of the card. The build reads it
with the texts (:func:`iter_shard_batches`).
"""

from __future__ import annotations

from ..errors import FormatError, shown
from .rules import SOURCE_NAME_RULE, is_source_name

TEXT_COLUMN = "text"
SOURCE_COLUMN = "source"  # the source column of a corpus folder (corpus import --source-column COL copies COL here)


def _is_text_type(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def check_text_field(schema, where, hint: str | None = None) -> None:
    """The shard's Arrow ``schema`` has exactly one column ``text``,
    of strings; else a :class:`FormatError` naming ``where``.
    """
    names = list(schema.names)
    if names.count(TEXT_COLUMN) != 1:
        raise FormatError(
            where, f"a corpus shard needs one string column named {TEXT_COLUMN}", got=names[:10], hint=hint
        )
    kind = schema.field(TEXT_COLUMN).type
    if not _is_text_type(kind):
        raise FormatError(where, f"column {TEXT_COLUMN!r} must hold strings", expected="string", got=str(kind))


def text_lengths(texts):
    """Each string's UTF-8 byte count (``int64``) of a pyarrow string array or chunked array, from its offsets.

    Not ``pyarrow.compute.binary_length``: a compute call's first use imports
    pandas (0.15 to 0.25 s, a tenth of a build's start-up).
    """
    import numpy as np
    import pyarrow as pa

    chunks = texts.chunks if isinstance(texts, pa.ChunkedArray) else [texts]
    parts = [np.diff(_offsets(chunk)) for chunk in chunks]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _offsets(chunk):
    """A string or large_string array's ``len + 1`` offsets as ``int64`` (into its data buffer, not from 0)."""
    import numpy as np
    import pyarrow as pa

    if not len(chunk):  # Arrow allows a length-0 array with empty offsets: no offsets[0] to read
        return np.zeros(1, dtype=np.int64)
    width = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
    return np.frombuffer(chunk.buffers()[1], dtype=width)[chunk.offset : chunk.offset + len(chunk) + 1].astype(
        np.int64
    )


def utf8_buffer(texts):
    """A pyarrow string array's texts as ``(offsets, data)``: ``int64`` offsets
    from 0 into one ``uint8`` view of their UTF-8 bytes (no copy of the text).

    None for what has no such single buffer: a chunked array of several
    chunks, a type other than string or large_string, or nulls.
    """
    import numpy as np
    import pyarrow as pa

    if isinstance(texts, pa.ChunkedArray):
        if texts.num_chunks != 1:
            return None
        texts = texts.chunk(0)
    if not _is_text_type(texts.type) or texts.null_count:
        return None
    offsets = _offsets(texts)
    first, last = int(offsets[0]), int(offsets[-1])
    data = (
        np.frombuffer(texts.buffers()[2], dtype=np.uint8)[first:last] if last > first else np.zeros(0, dtype=np.uint8)
    )
    return offsets - first, data


def check_texts(texts, where, first_row: int = 0) -> None:
    """One batch of the text column (a pyarrow string array starting at row ``first_row``): no null, valid UTF-8."""
    import numpy as np
    import pyarrow as pa

    if not _is_text_type(texts.type):
        raise FormatError(where, f"column {TEXT_COLUMN!r} must hold strings", expected="string", got=str(texts.type))
    if texts.null_count:
        row = first_row + int(np.argmax(texts.is_null().to_numpy(zero_copy_only=False)))
        raise FormatError(
            where,
            f"row {row}: column {TEXT_COLUMN!r} has no text (null)",
            hint="a corpus made by hf-tokbin corpus never holds one",
        )
    try:
        texts.validate(full=True)  # full: checks every value's UTF-8, not only the offsets
    except pa.ArrowInvalid:
        index, sample = _first_invalid_utf8(texts)
        raise FormatError(
            where,
            f"row {first_row + index}: column {TEXT_COLUMN!r} is not valid UTF-8",
            expected="UTF-8 text",
            got=repr(sample),
        ) from None


def first_bad_source(values) -> int | None:
    """The row (0-based) of the first value of a string array that is null or not a source name, else None.

    Checked once per distinct value (a column repeats few names), so the cost is the column's, not the names'.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if values.null_count:
        return pc.index(pc.is_null(values), True).as_py()
    bad = [name for name in pc.unique(values).to_pylist() if not is_source_name(name)]
    if not bad:
        return None
    return pc.index(pc.is_in(values, value_set=pa.array(bad, values.type)), True).as_py()


def check_source_field(schema, source_column: str, where) -> None:
    """A shard's schema must have the column of source names a build counts by (not the text column)."""
    if source_column not in schema.names or source_column == TEXT_COLUMN:
        raise FormatError(
            where,
            f"missing source column {source_column!r}",
            got=schema.names[:10],
            hint="import the corpus with --source-column, or build without it",
        )


def check_sources(values, where, column: str, first_row: int = 0) -> None:
    """One batch of a shard's source column (starting at row ``first_row``): strings, no null, each a source name."""
    if not _is_text_type(values.type):
        raise FormatError(
            where, f"column {column!r} must hold strings (source names)", expected="string", got=str(values.type)
        )
    row = first_bad_source(values)
    if row is not None:
        value = values[row].as_py()
        raise FormatError(
            where,
            f"row {first_row + row}: column {column!r} must hold a source name",
            expected=SOURCE_NAME_RULE,
            got="null" if value is None else shown(value),
        )


def _first_invalid_utf8(texts) -> tuple[int, bytes]:
    """Index and first bytes of the first value that is not UTF-8 (called only once validation failed)."""
    import pyarrow as pa

    binary = pa.large_binary() if pa.types.is_large_string(texts.type) else pa.binary()
    for index, value in enumerate(texts.view(binary).to_pylist()):
        try:
            value.decode("utf-8")
        except UnicodeDecodeError as e:
            return index, value[max(e.start - 8, 0) : e.end + 8]
    return 0, b""  # validate() refused the offsets themselves: the first row is named


def iter_shard_texts(source, where, batch_rows: int, **parquet_options):
    """(first row, checked text array) of the shard's ``text`` column, ``batch_rows`` rows at a time, in order.

    ``source``: a path or an open binary file; ``where`` names it in errors;
    ``parquet_options`` go to ``pyarrow.parquet.ParquetFile`` (buffering).
    """
    for row, texts, _ in iter_shard_batches(source, where, batch_rows, **parquet_options):
        yield row, texts


def iter_shard_batches(source, where, batch_rows: int, source_column: str | None = None, **parquet_options):
    """(first row, checked texts, checked sources or None) of the shard, ``batch_rows`` rows at a time, in order.

    ``source_column``: the column of source names to read beside ``text`` (None: none).
    """
    import pyarrow.parquet as pq

    try:
        file = pq.ParquetFile(source, **parquet_options)
    except (OSError, ValueError) as e:  # pyarrow's errors derive from these
        raise FormatError(
            where,
            "corpus shard is not readable Parquet with a text column",
            got=str(e).splitlines()[0][:200] if str(e) else type(e).__name__,
        ) from e
    with file:
        check_text_field(file.schema_arrow, where)
        columns = [TEXT_COLUMN]
        if source_column is not None:
            check_source_field(file.schema_arrow, source_column, where)
            columns.append(source_column)
        row = 0
        try:
            for batch in file.iter_batches(batch_size=batch_rows, columns=columns, use_threads=False):
                texts = batch.column(0)
                check_texts(texts, where, row)
                sources = batch.column(1) if source_column is not None else None
                if sources is not None:
                    check_sources(sources, where, source_column, row)
                yield row, texts, sources
                row += len(texts)
        except (OSError, ValueError) as e:  # a damaged page or column chunk
            raise FormatError(
                where,
                "corpus shard is not readable Parquet with a text column",
                got=str(e).splitlines()[0][:200] if str(e) else type(e).__name__,
            ) from e
