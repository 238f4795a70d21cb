"""The card's document-length table (hf_tokbin.cards.lengths), from the Megatron .idx lengths."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hub_server import make_release

from hf_tokbin.cards.lengths import NOT_RECORDED, bucket_counts, length_section, length_summaries
from hf_tokbin.cards.release import render_release_card
from hf_tokbin.formats.megatron import MegatronPair
from hf_tokbin.formats.release import Receipt


def test_buckets_are_powers_of_two_from_the_shortest_to_the_longest():
    assert bucket_counts(np.array([5, 9, 9, 100])) == [(4, 7, 1), (8, 15, 2), (16, 31, 0), (32, 63, 0), (64, 127, 1)]
    assert bucket_counts(np.array([1])) == [(1, 1, 1)]


def test_the_lengths_are_the_index_lengths_of_every_part(tmp_path):
    release = make_release(tmp_path / "release")
    receipts = [Receipt.read(p) for p in sorted((release / "receipts").glob("part-*.json"))]
    summaries = length_summaries(release, receipts)
    assert sorted(summaries) == ["train", "validation"]
    for split, got in summaries.items():
        pairs = sorted((release / "shards" / split).glob("*.idx"))
        want = np.concatenate([np.asarray(MegatronPair(p).lengths) for p in pairs])
        assert (got.documents, got.shortest, got.median, got.longest) == (
            want.size,
            int(want.min()),
            int(np.median(want)),
            int(want.max()),
        )
        assert got.buckets == bucket_counts(want)
        assert sum(n for _, _, n in got.buckets) == sum(
            r.splits[split].documents for r in receipts if split in r.splits
        )


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


def _parts_of_lengths(tmp_path, parts: list[np.ndarray]) -> tuple[Path, list[Receipt]]:
    """A folder of Megatron pairs (train split), one per array of document lengths, and receipts naming their .idx."""
    from hf_tokbin.formats.megatron import MegatronWriter
    from hf_tokbin.formats.records import FileEntry
    from hf_tokbin.formats.release import SplitCounts

    receipts = []
    for i, lengths in enumerate(parts):
        rel = f"shards/train/part-{i:06d}"
        with MegatronWriter(tmp_path / f"{rel}.bin", 1000, eod_id=None) as writer:
            writer.add_documents(np.zeros(int(lengths.sum()), dtype=np.uint16), lengths)
        entry = FileEntry(f"{rel}.idx", 1, "0" * 64)
        counts = SplitCounts(int(lengths.size), int(lengths.sum()), 0, 0, 0)
        receipts.append(
            Receipt(
                part=f"part-{i:06d}",
                input_shard=FileEntry(f"data/{i}.parquet", 1, "0" * 64),
                splits={"train": counts},
                files=(entry,),
            )
        )
    return tmp_path, receipts


def test_the_summary_is_numpys_over_every_part(tmp_path):
    # Shortest, median (np.median: the two middle values' mean), longest and buckets, over parts read one at a time.
    rng = np.random.default_rng(7)
    parts = [rng.integers(1, 5000, size=n) for n in (1, 1000, 999, 1)] + [np.array([70_000_000, 3, 3])]
    root, receipts = _parts_of_lengths(tmp_path, parts)
    every = np.concatenate(parts)
    summary = length_summaries(root, receipts)["train"]
    assert (summary.documents, summary.shortest, summary.longest) == (every.size, int(every.min()), int(every.max()))
    assert summary.median == int(np.median(every))
    assert summary.buckets == bucket_counts(every)
    for odd in (parts[:1], parts[1:3], [np.array([2, 9]), np.array([4])]):
        one = np.concatenate(odd)
        got = length_summaries(*_parts_of_lengths(tmp_path / f"o{len(one)}", odd))["train"]
        assert got.median == int(np.median(one)) and got.buckets == bucket_counts(one)


def test_the_card_holds_one_parts_lengths_at_a_time(tmp_path):
    # The finish runs on one node: its memory must not grow with the number of documents (5.4 M at 2.2 GB held
    # about 150 MB of arrays at once). Twenty parts; the peak stays near one part's lengths, never all of them.
    import tracemalloc

    parts = [np.full(100_000, 7 + i, dtype=np.int64) for i in range(20)]
    root, receipts = _parts_of_lengths(tmp_path, parts)
    one_part = parts[0].nbytes
    tracemalloc.start()
    try:
        length_section(root, receipts)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (
        peak < 8 * one_part <= sum(p.nbytes for p in parts) / 2
    )  # one part's passes (log2, floor: a few copies); all of them: 6x more
