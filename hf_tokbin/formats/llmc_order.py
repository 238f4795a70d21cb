"""The order of a split's documents in its llm.c files: the parts
in part order, or, with a shuffle seed, their blocks interleaved.

Readers of llm.c files (``train_gpt2.py``, ``train_llama3.py``,
modded-nanogpt) read the files in order, so the order of the parts matters
as much as the order inside each. With no seed, a split's llm.c stream is its
parts' documents in part order (part N is input shard N). With
``build --shuffle-seed S`` (run_config.json ``shuffle.scope`` =
:data:`INTERLEAVED_SCOPE`):

1. each non-empty part of the split, in part order, with D documents, is cut
   into ``B = min(BLOCKS_PER_PART, D)`` blocks of consecutive documents (as
   the part wrote them, already in its own seeded order): block j holds
   documents ``[j*D//B, (j+1)*D//B)``, so the cuts depend on D alone;
2. the blocks of all parts, numbered in that order, are taken in the order of
   ``numpy.random.default_rng([S, split_code, STREAM_TAG]).permutation(n_blocks)``,
   ``split_code`` = 0 for train, 1 for validation.

Every document is in exactly one block, so the stream holds each document
once; which part a document came from is still its receipt's. The order is a
function of the seed, the split and the parts' document counts alone: the
driver computes it from O(parts) counts (O(parts * BLOCKS_PER_PART) numbers,
never a token), ``verify`` recomputes it from run_config.json and the
receipts, and it is the same whatever engine, ``num_proc`` or batch size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .release import SPLITS

BLOCKS_PER_PART = 256  # enough to mix a few categories finely; the driver holds 4 int64 per block
# A third word in the seed sequence, so the block order never draws the numbers of a part's own
# permutation (default_rng([S, part_index])): numpy's SeedSequence reads [S, i] and [S, i, 0] alike.
STREAM_TAG = 0x6C6C6D63  # "llmc"
PARTS_SCOPE = "documents within each part"  # releases before the interleave: llm.c files in part order
INTERLEAVED_SCOPE = "documents within each part, and the parts' blocks interleaved in the llm.c files"
SHUFFLE_SCOPES = (PARTS_SCOPE, INTERLEAVED_SCOPE)


@dataclass(frozen=True)
class Blocks:
    """A split's llm.c stream as blocks, in stream order: block k is
    documents ``first[k] .. first[k] + count[k] - 1`` of part ``part[k]``.

    ``part`` is a position in the list of document counts the
    order was made from; ``block`` the block's number in its part.
    """

    part: np.ndarray
    block: np.ndarray
    first: np.ndarray
    count: np.ndarray

    def __len__(self) -> int:
        return int(self.part.size)

    def first_documents(self, n: int) -> list[tuple[int, int, int]]:
        """``(part, first document, documents)`` runs holding the
        stream's first ``n`` documents (fewer if it has fewer).
        """
        runs, left = [], n
        for k in range(len(self)):
            if left <= 0:
                break
            take = min(left, int(self.count[k]))
            runs.append((int(self.part[k]), int(self.first[k]), take))
            left -= take
        return runs


def block_starts(documents: int, interleaved: bool = True) -> np.ndarray:
    """The first document of each block of a part of ``documents`` documents, then ``documents``: B + 1 numbers."""
    blocks = min(BLOCKS_PER_PART, documents) if interleaved else min(1, documents)
    if not blocks:
        return np.zeros(1, dtype=np.int64)
    return np.arange(blocks + 1, dtype=np.int64) * documents // blocks


def llmc_order(seed: int | None, split: str, documents: Sequence[int]) -> Blocks:
    """The blocks of a split's llm.c stream; ``documents`` = each
    part's document count, in part order (empty parts count 0).

    ``seed`` None: one block per non-empty part, in part order (the stream of a build without ``--shuffle-seed``).
    """
    interleaved = seed is not None
    starts = [block_starts(int(d), interleaved) for d in documents]
    sizes = np.array([s.size - 1 for s in starts], dtype=np.int64)
    part = np.repeat(np.arange(len(starts), dtype=np.int64), sizes)
    block = np.arange(part.size, dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    first = np.concatenate([s[:-1] for s in starts]) if starts else np.zeros(0, dtype=np.int64)
    count = np.concatenate([np.diff(s) for s in starts]) if starts else np.zeros(0, dtype=np.int64)
    if interleaved:
        order = np.random.default_rng([seed, SPLITS.index(split), STREAM_TAG]).permutation(part.size)
        part, block, first, count = part[order], block[order], first[order], count[order]
    return Blocks(part, block, first, count)
