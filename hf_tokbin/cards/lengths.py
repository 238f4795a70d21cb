"""The card's document-length table: how many documents of each split fall in each length bucket, in tokens.

Built from counts the build already wrote, never by re-encoding: the int32
sequence lengths of the Megatron ``.idx`` files the receipts list (one
sequence per document, EOD and BOS included). The llm.c ``_MANIFEST.json``
counts documents and tokens per file only, so an llm.c-only release has no
per-document lengths and the card says so.

Buckets are powers of two (``1–1``, ``2–3``, ``4–7``, ...), from the shortest
document's bucket to the longest's, so the table is short for any corpus.
No image: a PNG would need a plotting dependency and bytes that stay the same
across its versions (fonts, metadata), which the release's digests require.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..formats.megatron import read_sequence_lengths
from ..formats.release import SPLITS, Receipt

NOT_RECORDED = "Not shown: the llm.c manifests count documents and tokens per file, not the length of each document."


def split_lengths(root: Path, receipts: list[Receipt]) -> dict[str, np.ndarray]:
    """Each split's document lengths in tokens, from the ``.idx`` files the receipts list, in part order."""
    by_split = {}
    for split in SPLITS:
        prefix = f"shards/{split}/"
        indices = [f.path for r in receipts for f in r.files if f.path.startswith(prefix) and f.path.endswith(".idx")]
        lengths = [read_sequence_lengths(root / p) for p in indices]  # the .idx alone: a URL build's .bin is not here
        if sum(map(len, lengths)):
            by_split[split] = np.concatenate(lengths)
    return by_split


def bucket_counts(lengths: np.ndarray) -> list[tuple[int, int, int]]:
    """``(low, high, documents)`` per power-of-two bucket ``[low, high]``, from the shortest length's to the longest's."""
    if lengths.size == 0:
        return []
    exponents = np.floor(np.log2(np.maximum(lengths, 1))).astype(np.int64)
    counts = np.bincount(exponents - exponents.min())
    first = int(exponents.min())
    return [(2 ** (first + i), 2 ** (first + i + 1) - 1, int(n)) for i, n in enumerate(counts)]


def length_section(root: Path, receipts: list[Receipt]) -> str:
    """The card's Markdown: one table per split of documents per length bucket, or why there is none."""
    by_split = split_lengths(root, receipts)
    if not by_split:
        return NOT_RECORDED
    parts = ["Document lengths in tokens, as the Megatron `.idx` files record them (one sequence per document, EOD and BOS included)."]
    for split, lengths in by_split.items():
        rows = [f"| {low:,}–{high:,} | {n:,} | {100 * n / lengths.size:.1f}% |" for low, high, n in bucket_counts(lengths)]
        summary = f"`{split}`: {lengths.size:,} documents, shortest {int(lengths.min()):,}, median {int(np.median(lengths)):,}, longest {int(lengths.max()):,} tokens."
        parts.append(summary + "\n\n| tokens | documents | share |\n|---|---|---|\n" + "\n".join(rows))
    return "\n\n".join(parts)
