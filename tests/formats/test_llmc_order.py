"""The llm.c order of a split: parts in part order, or with a
seed their blocks interleaved (a function of counts alone).
"""

from __future__ import annotations

import numpy as np
import pytest

from hf_tokbin.formats.llmc_order import BLOCKS_PER_PART, block_starts, llmc_order


def documents_in_order(blocks):
    return [
        (p, d)
        for p, first, count in zip(blocks.part.tolist(), blocks.first.tolist(), blocks.count.tolist())
        for d in range(first, first + count)
    ]


@pytest.mark.parametrize("documents", [0, 1, 7, BLOCKS_PER_PART, BLOCKS_PER_PART + 1, 10_000])
def test_blocks_cut_a_part_by_its_document_count_alone(documents):
    starts = block_starts(documents)
    assert starts[0] == 0 and starts[-1] == documents
    assert starts.size - 1 == min(BLOCKS_PER_PART, documents)
    assert documents == 0 or np.diff(starts).min() >= 1  # no empty block
    assert starts.tolist() == [j * documents // (starts.size - 1) for j in range(starts.size)] if documents else [0]


def test_without_a_seed_the_stream_is_each_part_whole_in_part_order():
    blocks = llmc_order(None, "train", [3, 0, 5])
    assert list(zip(blocks.part.tolist(), blocks.first.tolist(), blocks.count.tolist())) == [(0, 0, 3), (2, 0, 5)]


def test_with_a_seed_every_document_once_blocks_of_every_part_mixed():
    counts = [300, 40, 1000, 0, 2]
    blocks = llmc_order(7, "train", counts)
    order = documents_in_order(blocks)
    assert sorted(order) == [(p, d) for p, n in enumerate(counts) for d in range(n)]
    assert len(blocks) == sum(min(BLOCKS_PER_PART, n) for n in counts)
    parts = blocks.part.tolist()
    # the parts alternate, not one after another
    assert sum(a != b for a, b in zip(parts, parts[1:])) > len(parts) // 2
    assert set(parts[:20]) >= {0, 1, 2}
    within = [d for p, d in order if p == 2]
    assert within != sorted(within)  # the blocks of one part are not in their order either


def test_the_order_depends_on_seed_and_split_only():
    counts = [50, 60, 70]
    same = llmc_order(7, "train", counts)
    assert documents_in_order(same) == documents_in_order(llmc_order(7, "train", list(counts)))
    assert documents_in_order(same) != documents_in_order(llmc_order(8, "train", counts))
    assert documents_in_order(same) != documents_in_order(llmc_order(7, "validation", counts))


def test_first_documents_are_the_streams_first_runs():
    blocks = llmc_order(3, "train", [10, 600, 20])
    runs = blocks.first_documents(25)
    assert sum(n for _, _, n in runs) == 25
    assert [(p, d) for p, first, n in runs for d in range(first, first + n)] == documents_in_order(blocks)[:25]
    assert sum(n for _, _, n in llmc_order(None, "train", [2, 3]).first_documents(100)) == 5
