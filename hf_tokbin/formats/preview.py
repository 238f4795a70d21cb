"""A release's preview: the first documents of each split and format as Parquet, for the Hub's viewer.

::

    DIR/preview/train.parquet, DIR/preview/validation.parquet   (a split with no document has none)

One row per document and format, the formats in their canonical order, then
documents in split order (0, 1, ...): the order of the split's llm.c stream
(:mod:`hf_tokbin.formats.llmc_order`: the parts in part order, so for Megatron
the first sequences of the first pairs; with ``--shuffle-seed`` the parts'
blocks interleaved, so a Megatron row is that document's sequence in its part's pair)::

    format     string   "llmc" or "megatron"
    document   int64    the document's index in the split, in that order
    part       string   the part holding it ("part-000000")
    source     string   its source (the corpus's source column, else the dataset's name)
    text       string   its text, as the corpus holds it
    tokens     int64    len(input_ids)
    input_ids  list<uint32>  the ids as that format's files hold the document, boundary tokens included
                             (Megatron: [bos] + ids + [eod]; llm.c: [sep] + [bos] + ids, or [bos] + ids + [sep])

At most :data:`PREVIEW_DOCUMENTS` documents per split and format (fewer
when their text passes :data:`PREVIEW_TEXT_BYTES`; always at least one). The
card declares the files as the ``preview`` config (``load_dataset(repo,
"preview")``); ``COMPLETE.json`` lists them; no count of ``stats.json``
includes them; ``verify`` checks every row against the token files.
"""

from __future__ import annotations

import os
from pathlib import Path

from .._io import commit_file, fsync_path, tmp_path_for
from ..errors import VerificationError
from . import llmc
from .arrow_columns import array_of
from .release import PREVIEW_DIR

PREVIEW_CONFIG = "preview"  # the card's configs: config_name
PREVIEW_DOCUMENTS = 100
PREVIEW_TEXT_BYTES = 4 << 20  # the text of one split's preview rows, per format
COLUMNS = ("format", "document", "part", "source", "text", "tokens", "input_ids")


def preview_path(split: str) -> str:
    return f"{PREVIEW_DIR}/{split}.parquet"


def row_ids(format: str, ids, bos_id: int | None, eod_id: int | None, llmc_sep_id: int | None, llmc_separator: str):
    """A row's ``input_ids``: a document's bare ids as ``format``'s files hold it (the table in the module docstring).
    """
    import numpy as np

    bos = [bos_id] if bos_id is not None else []
    if format == "megatron":
        parts = (bos, ids, [eod_id] if eod_id is not None else [])
    else:
        before, after = llmc.document_boundaries(llmc_sep_id, bos_id, llmc_separator)
        parts = (before, ids, after)
    return np.concatenate([np.asarray(p, dtype=np.uint32) for p in parts])


def schema():
    import pyarrow as pa

    return pa.schema(
        [
            ("format", pa.string()),
            ("document", pa.int64()),
            ("part", pa.string()),
            ("source", pa.string()),
            ("text", pa.string()),
            ("tokens", pa.int64()),
            ("input_ids", pa.list_(pa.uint32())),
        ]
    )


def write_preview(path: str | os.PathLike, rows: dict[str, list]) -> None:
    """``rows`` (one list per column of :data:`COLUMNS`) as a Parquet file, the same bytes for the same rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = schema()
    table = pa.Table.from_arrays([array_of(rows[field.name], field.type) for field in columns], schema=columns)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path_for(path)
    # One row group and no statistics: bytes that depend on the rows alone (and the pyarrow version).
    pq.write_table(table, tmp, row_group_size=max(1, table.num_rows), compression="zstd", write_statistics=False)
    fsync_path(tmp)
    commit_file(tmp, path)


def read_preview(path: str | os.PathLike) -> dict[str, list]:
    """The rows of a preview file as columns; a file that is not
    Parquet of :func:`schema` is a :class:`VerificationError`.
    """
    import pyarrow.parquet as pq

    try:
        # Not pq.read_table: it imports pyarrow.dataset and pandas (over a second of a verify).
        with pq.ParquetFile(Path(path)) as file:
            table = file.read()
    except (OSError, ValueError) as e:  # pyarrow's errors derive from these
        raise VerificationError(path, "preview is not readable Parquet", got=str(e).splitlines()[0][:200]) from None
    if not table.schema.equals(schema()):
        raise VerificationError(
            path, "preview columns must be " + ", ".join(COLUMNS), got=str(table.schema).replace("\n", "; ")[:300]
        )
    return table.to_pydict()
