"""A release's preview: the first documents of each split as Parquet, one row per document, for the Hub's viewer.

::

    DIR/preview/train.parquet, DIR/preview/validation.parquet   (a split with no document has none)

One row per document, in split order (0, 1, ...): the order of the split's
llm.c stream (:mod:`hf_tokbin.formats.llmc_order`: the parts in part order, so
for Megatron the first sequences of the first pairs; with ``--shuffle-seed``
the parts' blocks interleaved, so a Megatron row is that document's sequence
in its part's pair). The ids of each format the release holds are columns of
the same row, in the formats' canonical order::

    document             int64          the document's index in the split, in that order
    part                 string         the part holding it ("part-000000")
    source               string         its source (the corpus's source column, else the dataset's name)
    text                 string         its text, as the corpus holds it
    llmc_tokens          int64          len(llmc_input_ids)                  (llm.c releases)
    llmc_input_ids       list<uint32>   the ids as the llm.c files hold the document: [sep] + [bos] + ids,
                                        or [bos] + ids + [sep]
    megatron_tokens      int64          len(megatron_input_ids)              (Megatron releases)
    megatron_input_ids   list<uint32>   the ids as the Megatron pair holds it: [bos] + ids + [eod]

At most :data:`PREVIEW_DOCUMENTS` documents per split (fewer when their text
passes :data:`PREVIEW_TEXT_BYTES`; always at least one). The card declares the
files as the default config, ``preview`` (``load_dataset(repo)``); ``COMPLETE.json``
lists them; no count of ``stats.json`` includes them; ``verify`` checks every
row against the token files.
"""

from __future__ import annotations

import os
from pathlib import Path

from .._io import commit_file, fsync_path, tmp_path_for
from ..errors import VerificationError
from . import llmc
from .arrow_columns import array_of
from .release import FORMATS, PREVIEW_DIR

PREVIEW_CONFIG = "preview"  # the card's configs: config_name (the default one)
PREVIEW_DOCUMENTS = 100
PREVIEW_TEXT_BYTES = 4 << 20  # the text of one split's preview rows
DOCUMENT_COLUMNS = ("document", "part", "source", "text")


def preview_path(split: str) -> str:
    return f"{PREVIEW_DIR}/{split}.parquet"


def tokens_column(format: str) -> str:
    """The column of ``format``'s id count: ``llmc_tokens``, ``megatron_tokens``."""
    return f"{format}_tokens"


def ids_column(format: str) -> str:
    """The column of ``format``'s ids: ``llmc_input_ids``, ``megatron_input_ids``."""
    return f"{format}_input_ids"


def columns(formats) -> tuple[str, ...]:
    """The preview's columns for a release of ``formats``, in their order."""
    ordered = [f for f in FORMATS if f in formats]
    return (*DOCUMENT_COLUMNS, *(name for f in ordered for name in (tokens_column(f), ids_column(f))))


def row_ids(format: str, ids, bos_id: int | None, eod_id: int | None, llmc_sep_id: int | None, llmc_separator: str):
    """A row's ids of ``format``: a document's bare ids as ``format``'s files hold it (the module docstring)."""
    import numpy as np

    bos = [bos_id] if bos_id is not None else []
    if format == "megatron":
        parts = (bos, ids, [eod_id] if eod_id is not None else [])
    else:
        before, after = llmc.document_boundaries(llmc_sep_id, bos_id, llmc_separator)
        parts = (before, ids, after)
    return np.concatenate([np.asarray(p, dtype=np.uint32) for p in parts])


def schema(formats):
    """The Arrow schema of :func:`columns` (``formats``: the release's formats)."""
    import pyarrow as pa

    types = {"document": pa.int64(), "part": pa.string(), "source": pa.string(), "text": pa.string()}
    for f in FORMATS:
        types |= {tokens_column(f): pa.int64(), ids_column(f): pa.list_(pa.uint32())}
    return pa.schema([(name, types[name]) for name in columns(formats)])


def formats_of(names) -> tuple[str, ...] | None:
    """The formats whose columns ``names`` (a file's columns) are, or None when they are no preview's."""
    for size in range(len(FORMATS), 0, -1):
        for start in range(len(FORMATS) - size + 1):
            formats = FORMATS[start : start + size]
            if tuple(names) == columns(formats):
                return formats
    return None


def write_preview(path: str | os.PathLike, rows: dict[str, list]) -> None:
    """``rows`` (one list per column of :func:`columns`) as a Parquet file, the same bytes for the same rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    formats = formats_of(rows)
    if formats is None:
        raise ValueError(f"preview rows must have the columns of a release's formats, got {list(rows)}")
    fields = schema(formats)
    table = pa.Table.from_arrays([array_of(rows[field.name], field.type) for field in fields], schema=fields)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path_for(path)
    # One row group and no statistics: bytes that depend on the rows alone (and the pyarrow version).
    pq.write_table(table, tmp, row_group_size=max(1, table.num_rows), compression="zstd", write_statistics=False)
    fsync_path(tmp)
    commit_file(tmp, path)


def read_preview(path: str | os.PathLike) -> dict[str, list]:
    """The rows of a preview file as columns; a file that is not Parquet of a :func:`schema` is a
    :class:`VerificationError`."""
    import pyarrow.parquet as pq

    try:
        # Not pq.read_table: it imports pyarrow.dataset and pandas (over a second of a verify).
        with pq.ParquetFile(Path(path)) as file:
            table = file.read()
    except (OSError, ValueError) as e:  # pyarrow's errors derive from these
        raise VerificationError(path, "preview is not readable Parquet", got=str(e).splitlines()[0][:200]) from None
    formats = formats_of(table.schema.names)
    if formats is None or not table.schema.equals(schema(formats)):
        rule = "preview columns must be document, part, source, text, then FORMAT_tokens and FORMAT_input_ids"
        rule += f" for each format of the release, in the order {', '.join(FORMATS)}"
        raise VerificationError(path, rule, got=str(table.schema).replace("\n", "; ")[:300])
    return table.to_pydict()
