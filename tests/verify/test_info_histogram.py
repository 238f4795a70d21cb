"""``hf-tokbin info RELEASE`` draws each split's document lengths as a text histogram: the card's buckets."""

from __future__ import annotations

import re

import pytest
from release_fixtures import build_release

from hf_tokbin.cli import main
from hf_tokbin.formats.lengths import length_summaries
from hf_tokbin.formats.release import Receipt
from hf_tokbin.verify.info import HISTOGRAM_WIDTH


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return build_release(tmp_path_factory.mktemp("histogram"))


def info(capsys, path) -> str:
    assert main(["info", str(path)]) == 0
    return capsys.readouterr().out


def test_info_draws_a_bar_per_length_bucket(release, capsys):
    out = info(capsys, release)
    receipts = [Receipt.read(p) for p in sorted((release / "receipts").glob("*.json"))]
    summaries = length_summaries(release, receipts)
    assert "document lengths in tokens" in out
    for split, summary in summaries.items():
        head = f"  {split}: {summary.documents:,} documents, shortest {summary.shortest:,}, median {summary.median:,}"
        assert head in out
        block = out[out.index(head) :].splitlines()[1 : 1 + len(summary.buckets)]
        largest = max(n for _, _, n in summary.buckets)
        for line, (low, high, n) in zip(block, summary.buckets):
            match = re.fullmatch(r"\s+([0-9,]+)-([0-9,]+) (#*)\s+([0-9,]+)\s+[0-9.]+%", line)
            assert match, line
            assert (match[1], match[2], match[4]) == (f"{low:,}", f"{high:,}", f"{n:,}")
            assert (len(match[3]) == HISTOGRAM_WIDTH) == (n == largest) and (len(match[3]) > 0) == (n > 0)


def test_info_of_an_llmc_only_release_draws_no_histogram(llmc_bos, capsys):
    assert "document lengths" not in info(capsys, llmc_bos)
