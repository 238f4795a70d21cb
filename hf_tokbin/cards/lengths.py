"""The card's document-length table: how many documents of each split fall in each length bucket, in tokens.

The buckets are :mod:`hf_tokbin.formats.lengths`' (powers of two, from the
Megatron ``.idx`` lengths); beside each split's table stands its picture
(:mod:`hf_tokbin.cards.pictures`), an SVG the build wrote from the same buckets.
An llm.c-only release has no per-document lengths, and the card says so.
"""

from __future__ import annotations

from pathlib import Path

from ..formats.lengths import LengthSummary, bucket_counts, length_summaries
from ..formats.release import Receipt
from .pictures import lengths_picture, picture_link

__all__ = ["NOT_RECORDED", "LengthSummary", "bucket_counts", "length_section", "length_summaries"]

NOT_RECORDED = "Not shown: the llm.c manifests count documents and tokens per file, not the length of each document."
INTRO = (
    "Document lengths in tokens, as the Megatron `.idx` files record them "
    "(one sequence per document, EOD and BOS included)."
)


def length_section(root: Path, receipts: list[Receipt]) -> str:
    """The card's Markdown: per split, its summary, its picture (when the release holds it) and its table of
    documents per length bucket; or why there is none."""
    summaries = length_summaries(root, receipts)
    if not summaries:
        return NOT_RECORDED
    parts = [INTRO]
    for split, s in summaries.items():
        rows = [f"| {low:,}–{high:,} | {n:,} | {100 * n / s.documents:.1f}% |" for low, high, n in s.buckets]
        summary = (
            f"`{split}`: {s.documents:,} documents, shortest {s.shortest:,}, median {s.median:,}, "
            f"longest {s.longest:,} tokens."
        )
        link = picture_link(root, lengths_picture(split), f"Document lengths of {split}, in tokens")
        table = "| tokens | documents | share |\n|---|---|---|\n" + "\n".join(rows)
        parts.append("\n\n".join(x for x in (summary, link, table) if x))
    return "\n\n".join(parts)
