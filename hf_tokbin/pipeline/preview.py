"""The finish writes the release's preview (:mod:`hf_tokbin.formats.preview`): the first documents of each split and format.

The text and source of each document come from its corpus shard (through
the part's shuffle when ``--shuffle-seed`` was given); its ids from the
part's own files: the llm.c staging pair (bare ids) or the Megatron pair,
laid out as each format's files hold the document. ``verify`` checks every
row against the token files themselves.
"""

from __future__ import annotations

import numpy as np

from ..formats import llmc, megatron
from ..formats.llmc_segments import ENDS_DTYPE, ENDS_SUFFIX, TOKENS_SUFFIX
from ..formats.preview import PREVIEW_DOCUMENTS, PREVIEW_TEXT_BYTES, preview_path, write_preview
from ..formats.release import SPLITS, Receipt, pair_path, part_name
from .part import staging_rel
from .plan import BuildPlan
from .shuffle import permutation


def write_previews(plan: BuildPlan, receipts: list[Receipt]) -> list[str]:
    """Write ``preview/<split>.parquet`` for every split with documents into the work folder; their paths."""
    written = []
    for split in SPLITS:
        parts = [i for i, s in enumerate(plan.corpus.shards) if s.split == split and s.rows]
        documents = _first_documents(plan, receipts, parts)
        if not documents:
            continue
        rows = {name: [] for name in ("format", "document", "part", "source", "text", "tokens", "input_ids")}
        for format in plan.options.formats:
            for number, (part, source, text, ids) in enumerate(documents):
                laid_out = layout(plan, format, ids)
                for name, value in zip(rows, (format, number, part, source, text, int(laid_out.size), laid_out)):
                    rows[name].append(value)
        write_preview(plan.output.work / preview_path(split), rows)
        written.append(preview_path(split))
    return written


def layout(plan: BuildPlan, format: str, ids: np.ndarray) -> np.ndarray:
    """A document's bare ids as ``format``'s files hold it (run_config.json's layouts)."""
    bos = [plan.bos_id] if plan.bos_id is not None else []
    sep = [plan.tokenizer.doc_sep_id] if plan.tokenizer.doc_sep_id is not None else []
    if format == "megatron":
        parts = (bos, ids, sep)
    elif plan.options.llmc_separator == "after":
        parts = (bos, ids, sep)
    else:
        parts = (sep, bos, ids)
    return np.concatenate([np.asarray(p, dtype=np.uint32) for p in parts])


def _first_documents(plan: BuildPlan, receipts: list[Receipt], parts: list[int]) -> list[tuple]:
    """(part, source, text, bare ids) of a split's first documents, at most PREVIEW_DOCUMENTS or PREVIEW_TEXT_BYTES of text."""
    documents, text_bytes = [], 0
    for index in parts:
        wanted = PREVIEW_DOCUMENTS - len(documents)
        if wanted <= 0 or text_bytes >= PREVIEW_TEXT_BYTES:
            break
        rows = plan.corpus.shards[index].rows
        order = permutation(plan.options.shuffle_seed, index, rows)[:wanted] if plan.options.shuffle_seed is not None else np.arange(min(wanted, rows))
        texts, sources = _shard_rows(plan, index, order)
        for k, (text, source, ids) in enumerate(zip(texts, sources, _bare_ids(plan, receipts[index], len(order)))):
            if documents and text_bytes + len(text.encode("utf-8")) > PREVIEW_TEXT_BYTES:
                return documents
            documents.append((part_name(index), source, text, ids))
            text_bytes += len(text.encode("utf-8"))
    return documents


def _shard_rows(plan: BuildPlan, index: int, order: np.ndarray) -> tuple[list[str], list[str]]:
    """The text and source of rows ``order`` of input shard ``index`` (source: its column, else the dataset's name)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    shard = plan.corpus.shards[index]
    with plan.shard_source.open_for_sample(shard) as handle:
        file = pq.ParquetFile(handle)
        columns = ["text", "source"] if "source" in file.schema_arrow.names else ["text"]
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
    sources = [table.column("source")[int(i)].as_py() for i in order] if "source" in columns else [plan.corpus.name] * len(texts)
    return texts, sources


def _bare_ids(plan: BuildPlan, receipt: Receipt, count: int) -> list[np.ndarray]:
    """The first ``count`` documents' ids as the part wrote them, without boundary tokens."""
    output = plan.output
    if "megatron" not in plan.options.formats:
        return _bare_ids_of_segment(plan, receipt, count)
    split = next(iter(receipt.splits))
    entry = next(f for f in receipt.files if f.path == pair_path(split, receipt.part, "bin"))
    output.fetch(entry)  # built on another machine: the finish fetched only the .idx
    # Read, not mapped: only the first documents' bytes reach this process (the driver of a distributed build).
    bin_path = output.work / entry.path
    idx_path = megatron.idx_path_for(bin_path)
    lengths = megatron.read_sequence_lengths(idx_path, count)
    ids = np.fromfile(bin_path, dtype=megatron.read_index_header(idx_path).dtype, count=int(lengths.sum()))
    first = int(plan.bos_id is not None)
    return [document[first:-1] for document in np.split(ids, np.cumsum(lengths)[:-1])]


def _bare_ids_of_segment(plan: BuildPlan, receipt: Receipt, count: int) -> list[np.ndarray]:
    """An llm.c-only build: the first documents of the part's llm.c segment (formats/llmc_segments.py), boundaries cut off."""
    layout = llmc.layout_for(plan.tokenizer.vocab_size, plan.options.llmc_layout)
    ends = np.fromfile(plan.output.work / staging_rel(receipt.part, ENDS_SUFFIX), dtype=ENDS_DTYPE, count=count)
    tokens = np.fromfile(plan.output.work / staging_rel(receipt.part, TOKENS_SUFFIX), dtype=layout.dtype, count=int(ends[-1]) if ends.size else 0)
    head = int(plan.bos_id is not None) + int(plan.tokenizer.doc_sep_id is not None and plan.options.llmc_separator == "before")
    tail = int(plan.tokenizer.doc_sep_id is not None and plan.options.llmc_separator == "after")
    starts = np.concatenate(([0], ends[:-1]))
    return [np.asarray(tokens[a + head : b - tail]) for a, b in zip(starts.tolist(), ends.tolist())]
