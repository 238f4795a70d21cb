"""The document lengths of a release's splits, from the Megatron ``.idx`` files: counts per length bucket.

Built from counts the build already wrote, never by re-encoding: the int32
sequence lengths of the Megatron ``.idx`` files the receipts list (one
sequence per document, EOD and BOS included). The llm.c ``_MANIFEST.json``
counts documents and tokens per file only, so an llm.c-only release has no
per-document lengths.

Buckets are powers of two (``1–1``, ``2–3``, ``4–7``, ...), from the shortest
document's bucket to the longest's, so a table or chart of them is short for
any corpus. The card's table and picture (:mod:`hf_tokbin.cards.lengths`,
:mod:`hf_tokbin.cards.pictures`) and ``hf-tokbin info``'s text histogram show
the same buckets.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .megatron import read_sequence_lengths
from .release import SPLITS, Receipt


@dataclass(frozen=True)
class LengthSummary:
    """One split's document lengths, summed up part by part: what the card prints."""

    documents: int
    shortest: int
    median: int  # as int(np.median(lengths)): the two middle lengths' mean, rounded down
    longest: int
    buckets: list[tuple[int, int, int]]  # bucket_counts(lengths)


def length_summaries(root: Path, receipts: list[Receipt]) -> dict[str, LengthSummary]:
    """Each split's :class:`LengthSummary`, reading one part's ``.idx`` at a time (a few passes over them).

    The finish runs on one node: holding every document's length at once grew
    with the corpus (5.4 M documents at 2.2 GB: about 150 MB of arrays).
    """
    summaries = {}
    for split, parts in _split_parts(root, receipts).items():
        per_exponent = np.zeros(_EXPONENTS, dtype=np.int64)
        documents, shortest, longest = 0, None, 0
        for lengths in parts():
            per_exponent += np.bincount(_exponents(lengths), minlength=_EXPONENTS)
            documents += lengths.size
            shortest = int(lengths.min()) if shortest is None else min(shortest, int(lengths.min()))
            longest = max(longest, int(lengths.max()))
        if not documents:
            continue
        middle = _kth(parts, per_exponent, ((documents - 1) // 2, documents // 2))
        summaries[split] = LengthSummary(documents, shortest, sum(middle) // 2, longest, _buckets(per_exponent))
    return summaries


_EXPONENTS = 64  # power-of-two buckets: any int64 length
_EXACT_BINS = (
    1 << 20
)  # a bucket this narrow is counted value by value to find the median; a wider one holds few lengths


def _split_parts(root: Path, receipts: list[Receipt]) -> dict:
    """Per split that has an ``.idx``: a function giving its parts' lengths one array at a time, in part order."""
    by_split = {}
    for split in SPLITS:
        prefix = f"shards/{split}/"
        indices = [
            root / f.path for r in receipts for f in r.files if f.path.startswith(prefix) and f.path.endswith(".idx")
        ]
        if indices:  # the .idx alone: a URL build's .bin is not here
            by_split[split] = lambda indices=indices: (read_sequence_lengths(p) for p in indices)
    return by_split


def _exponents(lengths: np.ndarray) -> np.ndarray:
    return np.floor(np.log2(np.maximum(lengths, 1))).astype(np.int64)


def _buckets(per_exponent: np.ndarray) -> list[tuple[int, int, int]]:
    present = np.flatnonzero(per_exponent)
    first, last = int(present[0]), int(present[-1])
    return [(2**e, 2 ** (e + 1) - 1, int(per_exponent[e])) for e in range(first, last + 1)]


def _kth(parts, per_exponent: np.ndarray, ranks: tuple[int, ...]) -> list[int]:
    """The ``ranks``-th smallest lengths (0-based): each one's power-of-two bucket from the counts, then its value
    within it; one pass over the parts per bucket (the two middle lengths nearly always share one)."""
    below = np.cumsum(per_exponent)
    in_bucket: dict = {}  # exponent -> (the k-th length inside the bucket, from k)
    values = []
    for k in ranks:
        exponent = int(np.searchsorted(below, k, side="right"))
        if exponent not in in_bucket:
            in_bucket[exponent] = _bucket_lengths(parts, exponent)
        values.append(in_bucket[exponent](k - (int(below[exponent - 1]) if exponent else 0)))
    return values


def _bucket_lengths(parts, exponent: int):
    """A function from a rank inside the bucket to its length.

    The lengths are counted value by value, or, for a wide bucket, its few lengths sorted."""
    low, high = (0, 1) if exponent == 0 else (2**exponent, 2 ** (exponent + 1) - 1)  # bucket 0 holds lengths 0 and 1
    if high - low < _EXACT_BINS:
        counts = np.zeros(high - low + 1, dtype=np.int64)
        for lengths in parts():
            counts += np.bincount(lengths[(lengths >= low) & (lengths <= high)] - low, minlength=counts.size)
        cumulative = np.cumsum(counts)
        return lambda rank: low + int(np.searchsorted(cumulative, rank, side="right"))
    inside = np.sort(np.concatenate([lengths[(lengths >= low) & (lengths <= high)] for lengths in parts()]))
    return lambda rank: int(inside[rank])  # lengths of 2^20 tokens and more: at most the tokens / 2^20 of them


def bucket_counts(lengths: np.ndarray) -> list[tuple[int, int, int]]:
    """``(low, high, documents)`` per power-of-two bucket ``[low, high]``.

    The buckets run from the shortest length's to the longest's."""
    if lengths.size == 0:
        return []
    return _buckets(np.bincount(_exponents(lengths), minlength=_EXPONENTS))
