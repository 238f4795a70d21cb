"""``build --dry-run``: what a build would do, estimated from a sample, with nothing written.

The plan lists the input shards per split (documents exact, from the corpus
manifest), the encoder's decision (its fast-path check runs on the same
sample the build uses), estimated tokens (mean tokens per document of the
sample, times the documents) and the bytes each format would take, and where
every file would go. Only reads happen: the corpus manifest, the first
documents of the shards (a Hub shard's footer and first row group, by range
requests) and the tokenizer. No folder is created, at ``--out`` or anywhere.
"""

from __future__ import annotations

import numpy as np

from .._io import counted
from ..formats import llmc, megatron
from ..formats.corpus_manifest import SPLITS
from ..formats.release import megabytes, part_name
from .encode import EncodeBatch, prepare_encoder, sample_documents
from .plan import BuildPlan

_LLMC_NAMES = {"train": "train", "validation": "val"}


def describe_plan(plan: BuildPlan) -> str:
    """The plan as text, for a person: shards, documents, estimated tokens and bytes, encoder, paths."""
    return describe_plan_record(plan)[0]


def describe_plan_record(plan: BuildPlan) -> tuple[str, dict]:
    """:func:`describe_plan`'s text, and the same facts as a record (``build --dry-run --json``)."""
    sample = sample_documents(plan)
    plan = prepare_encoder(plan)
    if sample:
        # As the build encodes: long documents in bounded pieces, a panic as one line.
        _, lengths = EncodeBatch(plan.encoder, plan.tokenizer.vocab_size, "the sampled documents (the first of each shard)").encode(sample)
        tokens_per_document = float(np.mean(lengths))
    else:
        tokens_per_document = 0.0
    corpus = plan.corpus
    origin = "local folder" if plan.corpus_source == "local" else f"Hub {plan.corpus_source}@{plan.corpus_revision}"
    lines = [f"corpus {corpus.name} ({origin}): {len(corpus.shards)} input shards, split rule {corpus.split_rule}"]
    if corpus.empty_documents_dropped:
        lines.append(f"  {corpus.empty_documents_dropped:,} empty documents were dropped when the corpus was written")
    lines += _sources_line(plan)
    splits = {}
    for split in SPLITS:
        split_lines, splits[split] = _split_estimate(plan, split, tokens_per_document)
        lines += split_lines
    tokenizer = plan.tokenizer
    lines.append(
        f"tokenizer {tokenizer.tokenizer_id} (--tokenizer-id sets it): vocab {tokenizer.vocab_size:,}, "
        f"separator/EOD {plan.eod_id}; encoder {plan.encoder.engine}"
    )
    lines.append(f"estimate from {len(sample):,} sampled documents ({tokens_per_document:,.1f} tokens each on average)")
    lines.append(f"out: {plan.out} (run_config.json, stats.json, README.md, COMPLETE.json last); nothing was written")
    record = {
        "corpus": {"name": corpus.name, "source": plan.corpus_source, "revision": plan.corpus_revision,
                   "shards": len(corpus.shards), "split_rule": corpus.split_rule},
        "splits": splits,
        "formats": list(plan.options.formats),
        "llmc_dir": plan.llmc_dir if "llmc" in plan.options.formats else None,
        "tokenizer_id": tokenizer.tokenizer_id,
        "vocab_size": tokenizer.vocab_size,
        "eod_id": plan.eod_id,
        "encoder": plan.encoder.engine,
        "sampled_documents": len(sample),
        "tokens_per_document": round(tokens_per_document, 3),
    }
    return "\n".join(lines), record


def _split_estimate(plan: BuildPlan, split: str, tokens_per_document: float) -> tuple[list[str], dict]:
    """One split's lines of the plan (shards, documents, estimated tokens and bytes per format) and its record."""
    corpus = plan.corpus
    width = 2 if megatron.dtype_code_for_vocab(plan.tokenizer.vocab_size) == megatron.CODE_UINT16 else 4
    llmc_width = plan.llmc_layout.dtype.itemsize
    sep = 0 if plan.llmc_sep_id is None else 1  # llm.c's separator (Megatron's EOD is always there)
    bos = 0 if plan.bos_id is None else 1
    shards = [i for i, s in enumerate(corpus.shards) if s.split == split]
    documents = corpus.rows(split)
    tokens = int(round(tokens_per_document * documents))
    record = {"shards": len(shards), "documents": documents, "estimated_tokens": tokens}
    if not shards:
        return [f"{split}: no documents"], record
    record["parts"] = [part_name(i) for i in shards]
    parts = f"{part_name(shards[0])}..{part_name(shards[-1])}"
    held = f"{counted(len(shards), 'shard')} ({parts}), {counted(documents, 'document')}"
    lines = [f"{split}: {held}, ~{tokens:,} tokens"]
    if "megatron" in plan.options.formats:
        bin_bytes = (tokens + documents * (1 + bos)) * width
        idx_bytes = len(shards) * megatron.HEADER_BYTES + documents * 12 + (documents + len(shards)) * 8
        record["megatron_bytes"] = bin_bytes + idx_bytes
        lines.append(f"  megatron: ~{megabytes(bin_bytes + idx_bytes)} in shards/{split}/part-NNNNNN.bin/.idx, receipts/part-NNNNNN.json")
    if "llmc" in plan.options.formats:
        stream = tokens + documents * (sep + bos)
        files = max(1, -(-stream // plan.options.max_tokens_per_file))
        record.update(llmc_bytes=stream * llmc_width + files * llmc.HEADER_BYTES, llmc_files=files)
        lines.append(f"  llmc: ~{megabytes(record['llmc_bytes'])} in ~{files} files {plan.llmc_dir}/{_LLMC_NAMES[split]}-NNNNN.bin")
    return lines, record


def _sources_line(plan: BuildPlan) -> list[str]:
    """What the build counts by source (receipts' and stats.json's ``sources``): the column, and the sources already known."""
    if plan.source_column is None:
        return []
    known = {name for by_source in plan.corpus.documents_by_source.values() for name in by_source}
    count = f" ({len(known):,} sources in the corpus manifest)" if known else ""
    return [f"by source: the column {plan.source_column!r}{count}; documents and tokens counted per source and split in the receipts and stats.json"]
