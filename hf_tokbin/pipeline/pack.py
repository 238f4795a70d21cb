"""The llm.c files of a build, packed in parallel from the parts' segments; the driver handles counts only.

Each finished part left its llm.c segment (its documents as they stand in the
token files: :mod:`hf_tokbin.formats.llmc_segments`) and a record of the
segment's two files (``.work/llmc/part-NNNNNN.json``). The finish:

1. reads those records (O(parts) small reads; with a seed each holds
   ``BLOCKS_PER_PART`` numbers) and checks them against the receipts
   (documents, and tokens plus the separator and BOS of each);
2. orders each split's documents (:mod:`~hf_tokbin.formats.llmc_order`: whole
   segments in part order, or with ``--shuffle-seed`` the segments' blocks
   interleaved, each block's token range from the part's record) and cuts that
   stream into files (:func:`~hf_tokbin.formats.llmc_segments.plan_files`:
   a few ranged reads of a segment's ``.ends`` where a file ends inside a range, never a token);
3. runs one task per file (:func:`pack_file`, on the build's engine: a local
   pool of threads or Ray tasks), which writes the header and copies the
   byte ranges of the segments it is made of (``os.copy_file_range`` for a
   folder, ranged reads of the output URL otherwise), hashes the file and
   publishes it.

The files are the bytes one sequential writer would write. A pack task is
idempotent (it writes to a temporary name and renames), so Ray may re-run it
after a worker died, and a killed finish packs again on re-run.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass

from .._io import sha256_file
from ..errors import BuildError
from ..formats import llmc
from ..formats.llmc_order import llmc_order
from ..formats.llmc_segments import (
    ENDS_DTYPE,
    ENDS_SUFFIX,
    DocumentRange,
    FilePlan,
    check_block_ends,
    ends_of,
    plan_files,
    ranges_in_order,
    write_packed_file,
)
from ..formats.records import FileEntry
from ..formats.release import LLMC_SPLIT, SPLITS, Receipt, SplitCounts, part_name
from .llmc_source import copy_llmc_range, stream_file
from .part import segment_record, staging_rel
from .plan import BuildPlan


@dataclass(frozen=True)
class PackedFile:
    """What a pack task returns: the file's manifest entry and its release entry."""

    entry: llmc.LlmcFileEntry
    file: FileEntry


def ranges_of(plan: BuildPlan, receipts: list[Receipt], split: str, counts: SplitCounts) -> Iterator[DocumentRange]:
    """The document ranges of ``split``'s llm.c stream in its order (:mod:`~hf_tokbin.formats.llmc_order`), from the parts' records.

    Each segment is checked against its receipt's counts, and its block ends (with a seed) against its token count.
    """
    output = plan.output
    width = plan.llmc_layout.dtype.itemsize
    added = plan.llmc_added_tokens
    seed = plan.options.shuffle_seed
    names, documents, block_ends = [], [], []
    for i, shard in enumerate(plan.corpus.shards):
        if shard.split != split or not shard.rows:
            continue
        record = segment_record(plan, part_name(i))
        ends = record.files[-1]
        tokens = next(f for f in (*record.files, *receipts[i].files) if f.path == stream_file(plan, part_name(i))[0])
        n_documents = receipts[i].splits[split].documents
        expected = receipts[i].splits[split].text_tokens + added * n_documents
        if ends.size != n_documents * ENDS_DTYPE.itemsize or tokens.size != expected * width:
            raise BuildError(output.location(tokens.path), "an llm.c segment must hold its receipt's documents and tokens (token conservation)", expected=f"{n_documents} documents, {expected} tokens", got=f"{ends.size} + {tokens.size} bytes")
        names.append(part_name(i))
        documents.append(n_documents)
        block_ends.append(check_block_ends(output.location(staging_rel(part_name(i), "json")), record.block_ends, n_documents, expected) if seed is not None else [expected])
    if sum(documents) != counts.documents:
        raise BuildError(plan.out, f"{split}: llm.c segments must hold every document", expected=counts.documents, got=sum(documents))
    return ranges_in_order(llmc_order(seed, split, documents), names, block_ends)


def plan_llmc_files(plan: BuildPlan, receipts: list[Receipt], counts: dict[str, SplitCounts]) -> list[FilePlan]:
    """Every llm.c file of the release, train first, each as the ranges of the segments it is made of."""
    output = plan.output

    def read_ends(segment: str, first: int, count: int):
        rel = staging_rel(segment, ENDS_SUFFIX)
        return ends_of(output.read_range(rel, first * ENDS_DTYPE.itemsize, count * ENDS_DTYPE.itemsize), output.location(rel))

    files = []
    for split in SPLITS:
        if split in counts and counts[split].documents:
            files.extend(plan_files(LLMC_SPLIT[split], ranges_of(plan, receipts, split, counts[split]), plan.options.max_tokens_per_file, read_ends))
    return files


def pack_file(plan: BuildPlan, file: FilePlan, progress: bool = False) -> PackedFile:
    """One pack task: write llm.c file ``file`` from its segments' byte ranges, hash it, publish it."""
    output = plan.output
    layout = plan.llmc_layout
    rel = f"{plan.llmc_dir}/{file.name}"
    # Each range from its part's segment or Megatron .bin (pipeline/llmc_source.py).
    size = write_packed_file(output.work / rel, file, layout, plan.tokenizer.vocab_size, functools.partial(copy_llmc_range, plan))
    digest = sha256_file(output.work / rel)
    output.publish([rel])
    split = file.name.split("-", 1)[0]
    return PackedFile(llmc.LlmcFileEntry(file.name, split, file.n_tokens, file.n_docs, digest), FileEntry(rel, size, digest))
