"""``build --shuffle-seed S``: documents in a seeded order, within each part and across parts in the llm.c files.

Trainers that read files in order (llm.c's ``train_gpt2.py`` and
``train_llama3.py``, modded-nanogpt) would train a corpus stored by category
(one shard per category) category by category. With a seed, two steps mix it:

1. **Within each part** (one input shard; here). Every part writes its
   documents in the order of a full permutation of its document indices,
   ``numpy.random.default_rng([seed, part_index]).permutation(documents)``, to
   both formats alike: its Megatron pair and its llm.c segment hold that order.
2. **Across parts, in the llm.c files** (:mod:`hf_tokbin.formats.llmc_order`,
   the spec of the rule). Each part's segment is cut into up to
   ``BLOCKS_PER_PART`` (256) blocks of consecutive documents (block j of D
   documents is ``[j*D//B, (j+1)*D//B)``, B = min(256, D)); the part records
   where each block ends in its segment (``.work/llmc/part-NNNNNN.json``,
   ``block_ends``), and the finish packs the split's llm.c files from all
   blocks of all parts in the order of
   ``default_rng([seed, split_code, STREAM_TAG]).permutation(n_blocks)``,
   cutting them into files as it cuts an unshuffled stream (whole documents,
   a new file before ``max_tokens_per_file``). The driver computes that order
   from the receipts' counts and the records' block ends (O(parts * 256)
   numbers, never a token); pack tasks copy byte ranges of the segments.

Megatron pairs stay one per part (part N is input shard N, its receipt says
so): Megatron-LM and MaxText mix pairs by their blend and shuffle documents
and samples themselves. Every document keeps its part: the receipts count it
there, the preview names it. ``run_config.json`` records ``"shuffle": {"seed":
S, "scope": "documents within each part, and the parts' blocks interleaved in
the llm.c files"}``; releases made before the interleave say ``"documents
within each part"`` and keep their llm.c files in part order, which ``verify``
checks for them. ``verify`` recomputes the block order from the seed and the
receipts, so llm.c files in any other order fail it.

Memory is bounded by the part's document count, not its tokens: the encoded
documents stream to a scratch pair under ``.work/shuffle/`` (ids on disk), and
are read back through a memory map in the permuted order, a bounded number of
tokens at a time; held in memory are the part's document lengths, offsets and
permutation (24 bytes a document). Both orders depend only on the seed, the
part index or split, and document counts, so the bytes are the same whatever
``num_proc``, batch size or engine. Conservation is checked: the permutation
holds every index exactly once, and the scratch pair holds exactly the
documents and tokens encoded; the llm.c files hold every document once
(their counts are checked against the receipts).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from ..errors import BuildError
from ..formats import megatron
from ..formats.release import WORK_DIR, part_name

SHUFFLE_DIR = "shuffle"
_TOKENS_PER_CHUNK = 1 << 22  # ids gathered per yielded batch (a document longer than this comes alone)


def permutation(seed: int, index: int, documents: int) -> np.ndarray:
    """The order in which part ``index`` writes its ``documents`` documents: ``order[k]`` is the corpus position of the
    k-th written."""
    order = np.random.default_rng([seed, index]).permutation(documents)
    if documents and not np.array_equal(np.bincount(order, minlength=documents), np.ones(documents, dtype=np.int64)):
        raise BuildError(
            None, "the shuffle must hold every document exactly once", got=f"{documents} documents"
        )  # never: a guard
    return order


def shuffled_documents(
    plan, index: int, batches: Iterable[tuple[np.ndarray, np.ndarray, int]]
) -> Iterator[tuple[np.ndarray, np.ndarray, int]]:
    """``batches`` (flat ids, lengths, text bytes) in corpus order, re-yielded in the part's seeded order.

    Without a seed (``plan.options.shuffle_seed`` None) the batches pass through untouched.
    """
    seed = plan.options.shuffle_seed
    if seed is None:
        yield from batches
        return
    scratch = plan.output.work / WORK_DIR / SHUFFLE_DIR / f"{part_name(index)}.bin"
    writer = megatron.MegatronWriter(scratch, plan.tokenizer.vocab_size, None)
    documents = tokens = text_bytes = 0
    try:
        for flat, lengths, n_bytes in batches:
            writer.add_documents(flat, lengths)
            documents += int(lengths.size)
            tokens += int(flat.size)
            text_bytes += n_bytes
        staged = writer.close()
    except BaseException:
        writer.abort()
        raise
    try:
        if (staged.n_documents, staged.n_tokens) != (documents, tokens):
            raise BuildError(
                scratch,
                "the shuffle's scratch pair must hold the documents and tokens encoded",
                expected=(documents, tokens),
                got=(staged.n_documents, staged.n_tokens),
            )
        if documents:
            yield from _gather(megatron.MegatronPair(scratch), permutation(seed, index, documents), text_bytes)
    finally:
        for path in (staged.bin_path, staged.idx_path):
            path.unlink(missing_ok=True)


def _gather(
    pair: megatron.MegatronPair, order: np.ndarray, text_bytes: int
) -> Iterator[tuple[np.ndarray, np.ndarray, int]]:
    """The documents of ``pair`` in ``order``, a bounded number of tokens per batch; the text bytes come with the
    last."""
    lengths = np.asarray(pair.lengths, dtype=np.int64)[order]
    starts = (np.asarray(pair.pointers, dtype=np.int64) // pair.dtype.itemsize)[order]
    ends = np.cumsum(lengths)
    first = 0
    while first < order.size:
        # up to _TOKENS_PER_CHUNK tokens from here, at least one document
        done = 0 if first == 0 else int(ends[first - 1])
        last = max(first + 1, int(np.searchsorted(ends, done + _TOKENS_PER_CHUNK, side="right")))
        chunk_lengths, chunk_starts = lengths[first:last], starts[first:last]
        within = np.arange(int(chunk_lengths.sum()), dtype=np.int64) - np.repeat(
            np.cumsum(chunk_lengths) - chunk_lengths, chunk_lengths
        )
        flat = np.asarray(pair.tokens[np.repeat(chunk_starts, chunk_lengths) + within])
        first = last
        yield flat, chunk_lengths, text_bytes if first == order.size else 0
