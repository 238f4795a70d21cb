"""Where the bytes of a range of a part's llm.c stream come from: its Megatron ``.bin``, or its own segment.

A part's llm.c stream (its documents as the llm.c files hold them,
:mod:`hf_tokbin.formats.llmc_segments`) and its Megatron ``.bin`` are the same
documents in the same order, and where llm.c's separator is the EOD (one id). Per
document, with ``[bos]`` only when given (docs/layouts.md):

    Megatron               [bos] + ids + [eod]
    llm.c, separator after [bos] + ids + [sep]     the very same ids
    llm.c, before          [sep] + [bos] + ids     the same ids shifted by one:
                                                   stream = [sep] + bin[:-1]

So where both formats are built and their ids have the same width (uint16
and uint16; uint32 and int32, the same bytes for ids < 2**31), the llm.c
stream is the ``.bin`` itself (after), or the ``.bin`` one id later plus one
separator at the very start of the part (before). The part then writes no
``.tokens`` (its ids are written once, into the ``.bin``) and only the
``.ends`` that the cut planner reads; a pack task copies from the ``.bin``.
Elsewhere (llm.c alone, or an llm.c width other than the Megatron one, e.g.
``--llmc-layout llama3`` with a vocabulary <= 65,536) the part writes its
segment's ``.tokens`` and the pack copies from it.

:func:`copy_llmc_range` is the one place that maps a range of a part's stream
(part, first id, ids) to its source file, byte offset and boundary token.
"""

from __future__ import annotations

import numpy as np

from .._io import write_all
from ..formats import megatron
from ..formats.llmc_segments import ENDS_SUFFIX, TOKENS_SUFFIX, TokenRange
from ..formats.release import WORK_DIR, pair_path
from .plan import BuildPlan


def segment_stem(part: str) -> str:
    """``.work/llmc/<part>``, relative to the release root: where the part's llm.c segment and its record go."""
    return f"{WORK_DIR}/llmc/{part}"


def staging_rel(part: str, suffix: str) -> str:
    """``.work/llmc/<part>.<suffix>``: the llm.c segment (tokens, ends) and its digests (json)."""
    return f"{segment_stem(part)}.{suffix}"


def from_megatron(plan: BuildPlan) -> bool:
    """Whether the parts' llm.c streams are read from their Megatron ``.bin`` (no ``.tokens`` written)."""
    formats = plan.options.formats
    if "llmc" not in formats or "megatron" not in formats or plan.eod_id != plan.llmc_sep_id:
        return False
    width = plan.llmc_layout.dtype.itemsize
    return width == megatron.DTYPE_CODES[megatron.dtype_code_for_vocab(plan.tokenizer.vocab_size)].itemsize


def segment_suffixes(plan: BuildPlan) -> tuple[str, ...]:
    """The files of a part's llm.c segment, as its record lists them: ``.tokens`` (unless read from the ``.bin``) and ``.ends``."""
    return (ENDS_SUFFIX,) if from_megatron(plan) else (TOKENS_SUFFIX, ENDS_SUFFIX)


def stream_file(plan: BuildPlan, part: str) -> tuple[str, int]:
    """``(file, shift)``: the file (relative to the release) holding part ``part``'s llm.c ids, and how many ids of
    the stream come before its first byte (1: the separator "before", which the ``.bin`` does not hold)."""
    if not from_megatron(plan):
        return staging_rel(part, TOKENS_SUFFIX), 0
    split = plan.corpus.shards[int(part.rsplit("-", 1)[1])].split
    return pair_path(split, part, "bin"), int(plan.options.llmc_separator == "before")


def copy_llmc_range(plan: BuildPlan, token_range: TokenRange, fd: int) -> None:
    """Append ids ``[start, start + length)`` of a part's llm.c stream (``token_range.segment`` names the part) to
    ``fd``: bytes of its :func:`stream_file`, and the separator itself for the stream's first id where the file lacks it."""
    width = plan.llmc_layout.dtype.itemsize
    rel, shift = stream_file(plan, token_range.segment)
    start, length = token_range.start, token_range.length
    if start < shift and length:
        write_all(fd, np.array([plan.llmc_sep_id], dtype=f"<u{width}").tobytes())
        start, length = start + 1, length - 1
    if length:
        plan.output.copy_range_into(rel, (start - shift) * width, length * width, fd)
