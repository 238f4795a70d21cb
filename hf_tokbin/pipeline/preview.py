"""The finish writes the release's preview (:mod:`hf_tokbin.formats.preview`) and the card's pictures.

The preview holds the first documents of each split, one row each, with the
ids of every format the release holds as columns of that row. The documents
are the split's first in the llm.c order (:mod:`hf_tokbin.formats.llmc_order`:
parts in part order, or with ``--shuffle-seed`` their blocks interleaved). The
text and source of each document come from its corpus shard (through the
part's shuffle when ``--shuffle-seed`` was given); its ids from ranged reads
of the part's own files: the llm.c staging pair or the Megatron pair, laid out
as each format's files hold the document. ``verify`` checks every row against
the token files themselves.

The pictures (:mod:`hf_tokbin.cards.pictures`: the document lengths and the
sources as SVG bar charts) are written from the records the finish already has
here: the ``.idx`` lengths and ``stats.json``.
"""

from __future__ import annotations

import numpy as np

from ..cards.pictures import write_pictures
from ..formats import megatron
from ..formats.llmc_order import llmc_order
from ..formats.llmc_segments import ENDS_DTYPE, ENDS_SUFFIX, TOKENS_SUFFIX
from ..formats.preview import (
    PREVIEW_DOCUMENTS,
    PREVIEW_TEXT_BYTES,
    columns,
    ids_column,
    preview_path,
    row_ids,
    tokens_column,
    write_preview,
)
from ..formats.release import SPLITS, Receipt, pair_path, part_name
from .plan import BuildPlan, staging_rel
from .shuffle import permutation


def write_previews(plan: BuildPlan, receipts: list[Receipt], mixed_runs: list | None = None) -> list[str]:
    """Write ``preview/<split>.parquet`` for every split with documents, and the card's pictures, into the work
    folder; their paths. ``mixed_runs``: a mixture's first runs of its llm.c train stream, ``(part index, first
    document, documents)``."""
    written = []
    for split in SPLITS:
        parts = [i for i, s in enumerate(plan.corpus.shards) if s.split == split and s.rows]
        runs = mixed_runs if split == "train" and mixed_runs is not None else None
        documents = _first_documents(plan, receipts, parts, runs)
        if not documents:
            continue
        rows = {name: [] for name in columns(plan.options.formats)}
        for number, (part, source, text, ids) in enumerate(documents):
            for name, value in zip(("document", "part", "source", "text"), (number, part, source, text)):
                rows[name].append(value)
            for format in plan.options.formats:
                laid_out = layout(plan, format, ids)
                rows[tokens_column(format)].append(int(laid_out.size))
                rows[ids_column(format)].append(laid_out)
        write_preview(plan.output.work / preview_path(split), rows)
        written.append(preview_path(split))
    return written + write_pictures(plan.output.work, receipts, by_source=plan.counts_sources)


def layout(plan: BuildPlan, format: str, ids: np.ndarray) -> np.ndarray:
    """A document's bare ids as ``format``'s files hold it (run_config.json's layouts)."""
    return row_ids(format, ids, plan.bos_id, plan.eod_id, plan.llmc_sep_id, plan.options.llmc_separator)


def _first_documents(plan: BuildPlan, receipts: list[Receipt], parts: list[int], runs=None) -> list[tuple]:
    """(part, source, text, bare ids) of a split's first documents in the llm.c order.

    At most PREVIEW_DOCUMENTS documents, and PREVIEW_TEXT_BYTES of text.

    The llm.c order (formats/llmc_order.py: the parts in part order, or their blocks interleaved with a seed; a
    mixture's train stream: ``runs``, ``(part index, first document, documents)``) for every format, so the rows
    are the same documents in each; a document's row in its shard is the part's permutation of its place in the
    part.
    """
    documents, text_bytes = [], 0
    seed = plan.options.shuffle_seed
    if runs is None:
        split = plan.corpus.shards[parts[0]].split if parts else SPLITS[0]
        blocks = llmc_order(seed, split, [plan.corpus.shards[i].rows for i in parts])
        runs = [(parts[p], first, count) for p, first, count in blocks.first_documents(PREVIEW_DOCUMENTS)]
    for index, first, count in runs:
        if text_bytes >= PREVIEW_TEXT_BYTES or len(documents) >= PREVIEW_DOCUMENTS:
            break
        count = min(count, PREVIEW_DOCUMENTS - len(documents))
        written = np.arange(first, first + count)
        order = permutation(seed, index, plan.corpus.shards[index].rows)[written] if seed is not None else written
        texts, sources = _shard_rows(plan, index, order)
        for text, source, ids in zip(texts, sources, _bare_ids(plan, receipts[index], first, count)):
            if documents and text_bytes + len(text.encode("utf-8")) > PREVIEW_TEXT_BYTES:
                return documents
            documents.append((part_name(index), source, text, ids))
            text_bytes += len(text.encode("utf-8"))
    return documents


def _shard_rows(plan: BuildPlan, index: int, order: np.ndarray) -> tuple[list[str], list[str]]:
    """The text and source of rows ``order`` of input shard ``index``.

    The source is what the receipts count: the column the build counts by (``plan.source_column``: a plain Hub
    repo's own, named by ``--source-column``), or a mixture part's source; else a shard's ``source`` column, else the
    dataset's name.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    shard = plan.corpus.shards[index]
    with plan.shard_source.open_for_sample(shard) as handle:
        file = pq.ParquetFile(handle)
        column = plan.source_column or ("source" if plan.part_source(index) is None else None)
        columns = ["text", column] if column is not None and column in file.schema_arrow.names else ["text"]
        needed, batches, read = int(order.max()) + 1 if order.size else 0, [], 0
        for batch in file.iter_batches(batch_size=1024, columns=columns, use_threads=False):
            if read >= needed:
                break
            batches.append(batch)
            read += batch.num_rows
    if not batches:
        return [], []
    # Row by row, not Table.take: a compute call's first use imports pandas (a third of the finish).
    table = pa.Table.from_batches(batches)
    texts = [table.column("text")[int(i)].as_py() for i in order]
    sources = (
        [table.column(columns[1])[int(i)].as_py() for i in order]
        if len(columns) > 1
        else [plan.part_source(index) or plan.corpus.name] * len(texts)
    )
    return texts, sources


def _bare_ids(plan: BuildPlan, receipt: Receipt, first: int, count: int) -> list[np.ndarray]:
    """Documents ``first .. first + count - 1`` of the part as it wrote them, without boundary tokens."""
    if "megatron" not in plan.options.formats:
        return _bare_ids_of_segment(plan, receipt, first, count)
    split = next(iter(receipt.splits))
    entry = next(f for f in receipt.files if f.path == pair_path(split, receipt.part, "bin"))
    # A ranged read of the published .bin: only these documents' bytes reach this process (the driver of a
    # distributed build); the .idx is here already (the finish fetched it).
    idx_path = plan.output.work / megatron.idx_path_for(entry.path)
    lengths = megatron.read_sequence_lengths(idx_path, first + count)
    dtype = megatron.read_index_header(idx_path).dtype
    ids = _read_ids(plan, entry.path, int(lengths[:first].sum()), int(lengths[first:].sum()), dtype)
    head = int(plan.bos_id is not None)
    return [document[head:-1] for document in np.split(ids, np.cumsum(lengths[first:])[:-1])]


def _bare_ids_of_segment(plan: BuildPlan, receipt: Receipt, first: int, count: int) -> list[np.ndarray]:
    """An llm.c-only build: documents of the part's llm.c segment (formats/llmc_segments.py), boundaries cut off."""
    layout = plan.llmc_layout
    before = max(first - 1, 0)  # the end of the document before ``first`` is where ``first`` starts
    ends = _read_ids(plan, staging_rel(receipt.part, ENDS_SUFFIX), before, first + count - before, ENDS_DTYPE)
    start = int(ends[0]) if first else 0
    ends = ends[1:] if first else ends
    tokens = _read_ids(
        plan, staging_rel(receipt.part, TOKENS_SUFFIX), start, int(ends[-1]) - start if ends.size else 0, layout.dtype
    )
    head = int(plan.bos_id is not None) + int(plan.llmc_sep_id is not None and plan.options.llmc_separator == "before")
    tail = int(plan.llmc_sep_id is not None and plan.options.llmc_separator == "after")
    starts = np.concatenate(([start], ends[:-1])) - start
    return [np.asarray(tokens[a + head : b - start - tail]) for a, b in zip(starts.tolist(), ends.tolist())]


def _read_ids(plan: BuildPlan, rel: str, first: int, count: int, dtype) -> np.ndarray:
    """Items ``first .. first + count - 1`` of the published file ``rel`` (a ranged read)."""
    dtype = np.dtype(dtype)
    if count <= 0:
        return np.zeros(0, dtype=dtype)
    return np.frombuffer(plan.output.read_range(rel, first * dtype.itemsize, count * dtype.itemsize), dtype=dtype)
