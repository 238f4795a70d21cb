"""The card's document-length table (hf_tokbin.cards.lengths), from the Megatron .idx lengths."""

from __future__ import annotations

import numpy as np
from hub_server import make_release

from hf_tokbin.cards.lengths import NOT_RECORDED, bucket_counts, split_lengths
from hf_tokbin.cards.release import render_release_card
from hf_tokbin.formats.megatron import MegatronPair
from hf_tokbin.formats.release import Receipt


def test_buckets_are_powers_of_two_from_the_shortest_to_the_longest():
    assert bucket_counts(np.array([5, 9, 9, 100])) == [(4, 7, 1), (8, 15, 2), (16, 31, 0), (32, 63, 0), (64, 127, 1)]
    assert bucket_counts(np.array([1])) == [(1, 1, 1)]


def test_the_lengths_are_the_index_lengths_of_every_part(tmp_path):
    release = make_release(tmp_path / "release")
    receipts = [Receipt.read(p) for p in sorted((release / "receipts").glob("part-*.json"))]
    lengths = split_lengths(release, receipts)
    for split, got in lengths.items():
        pairs = sorted((release / "shards" / split).glob("*.idx"))
        want = np.concatenate([np.asarray(MegatronPair(p).lengths) for p in pairs])
        assert got.tolist() == want.tolist()
        assert sum(n for _, _, n in bucket_counts(got)) == sum(r.splits[split].documents for r in receipts if split in r.splits)


def test_the_card_shows_a_table_per_split(tmp_path):
    release = make_release(tmp_path / "release")
    card = render_release_card(release)
    section = card.split("## Document lengths\n\n", 1)[1].split("\n## ", 1)[0]
    assert "`train`:" in section and "`validation`:" in section
    assert section.count("| tokens | documents | share |") == 2


def test_an_llmc_only_card_says_why_there_is_no_table(tmp_path):
    from test_card import build_release

    card = render_release_card(build_release(tmp_path, "--format", "llmc"))
    assert NOT_RECORDED in card
