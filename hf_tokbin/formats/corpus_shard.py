"""A corpus shard's text column: the one rule every reader of a shard's texts checks.

A corpus shard (``data/<split>-NNNNN.parquet`` of a corpus folder, or a
Parquet file of a plain Hub dataset repo) holds its documents in one column
named ``text`` whose type is ``string`` or ``large_string``, with no null and
every value valid UTF-8. Parquet readers take string bytes as they are, so
the UTF-8 is checked here, batch by batch, by the build
(:func:`hf_tokbin.pipeline.encode.text_batches`), ``tokenizer train`` and
``verify CORPUS``.
"""

from __future__ import annotations

from ..errors import FormatError

TEXT_COLUMN = "text"


def _is_text_type(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def check_text_field(schema, where, hint: str | None = None) -> None:
    """The shard's Arrow ``schema`` has exactly one column ``text``, of strings; else a :class:`FormatError` naming ``where``."""
    names = list(schema.names)
    if names.count(TEXT_COLUMN) != 1:
        raise FormatError(where, f"a corpus shard needs one string column named {TEXT_COLUMN}", got=names[:10], hint=hint)
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
    parts = []
    for chunk in chunks:
        width = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
        offsets = np.frombuffer(chunk.buffers()[1], dtype=width)[chunk.offset : chunk.offset + len(chunk) + 1]
        parts.append(np.diff(offsets).astype(np.int64))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def check_texts(texts, where, first_row: int = 0) -> None:
    """One batch of the text column (a pyarrow string array starting at row ``first_row``): no null, valid UTF-8."""
    import numpy as np
    import pyarrow as pa

    if not _is_text_type(texts.type):
        raise FormatError(where, f"column {TEXT_COLUMN!r} must hold strings", expected="string", got=str(texts.type))
    if texts.null_count:
        row = first_row + int(np.argmax(texts.is_null().to_numpy(zero_copy_only=False)))
        raise FormatError(where, f"row {row}: column {TEXT_COLUMN!r} has no text (null)", hint="a corpus made by hf-tokbin corpus never holds one")
    try:
        texts.validate(full=True)  # full: checks every value's UTF-8, not only the offsets
    except pa.ArrowInvalid:
        index, sample = _first_invalid_utf8(texts)
        raise FormatError(where, f"row {first_row + index}: column {TEXT_COLUMN!r} is not valid UTF-8", expected="UTF-8 text", got=repr(sample)) from None


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
    import pyarrow.parquet as pq

    try:
        file = pq.ParquetFile(source, **parquet_options)
    except (OSError, ValueError) as e:  # pyarrow's errors derive from these
        raise FormatError(where, "corpus shard is not readable Parquet with a text column", got=str(e).splitlines()[0][:200] if str(e) else type(e).__name__) from e
    with file:
        check_text_field(file.schema_arrow, where)
        row = 0
        try:
            for batch in file.iter_batches(batch_size=batch_rows, columns=[TEXT_COLUMN], use_threads=False):
                texts = batch.column(0)
                check_texts(texts, where, row)
                yield row, texts
                row += len(texts)
        except (OSError, ValueError) as e:  # a damaged page or column chunk
            raise FormatError(where, "corpus shard is not readable Parquet with a text column", got=str(e).splitlines()[0][:200] if str(e) else type(e).__name__) from e
