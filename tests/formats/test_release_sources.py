"""Receipts' ``sources`` and stats.json's ``sources``: counts
per source name that add up to the split's, or are refused.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from hf_tokbin.errors import FormatError
from hf_tokbin.formats.corpus_shard import check_sources
from hf_tokbin.formats.records import FileEntry
from hf_tokbin.formats.release import Receipt, SplitCounts, stats_record

SHA = "0" * 64
SHARD = FileEntry("data/train-00000.parquet", 10, SHA)


def receipt(part="part-000000", sources=None, split="train", total=SplitCounts(5, 50, 5, 60)) -> Receipt:
    return Receipt(part, SHARD, {split: total}, (), sources)


def by_source(split="train", **counts) -> dict:
    return {name: {split: SplitCounts(*c)} for name, c in counts.items()}


def test_a_receipt_with_sources_round_trips_and_one_without_has_no_sources_key(tmp_path):
    made = receipt(sources=by_source(web=(3, 20, 3, 25), books=(2, 30, 2, 35)))
    made.write(tmp_path)
    path = tmp_path / "receipts" / "part-000000.json"
    record = json.loads(path.read_text())
    assert list(record) == ["part", "input_shard", "splits", "sources", "files"]
    assert list(record["sources"]) == ["books", "web"]  # sorted: the bytes do not depend on the order met
    assert Receipt.read(path) == made
    assert "sources" not in json.loads(receipt().to_json())


@pytest.mark.parametrize(
    "sources, rule",
    [
        (by_source(web=(3, 20, 3, 25), books=(1, 30, 1, 35)), "train documents must add up"),
        (by_source(web=(3, 20, 3, 25), books=(2, 30, 2, 34)), "train text_bytes must add up"),
        (by_source(web=(5, 50, 5, 60), **{"a|b": (0, 0, 0, 0)}), "a source name must be"),
        (by_source(split="validation", web=(5, 50, 5, 60)), "must count documents of the splits present"),
        # Adds up, but names a source the part holds no document
        # of: the build never writes one, the card would show it.
        (by_source(web=(5, 50, 5, 60), ghost=(0, 0, 0, 0)), "sources.ghost must count at least one document"),
    ],
)
def test_a_receipt_whose_sources_do_not_add_up_is_refused_when_made_and_when_read(tmp_path, sources, rule):
    with pytest.raises(FormatError, match=rule):
        receipt(sources=sources)
    good = receipt(sources=by_source(web=(5, 50, 5, 60)))
    good.write(tmp_path)
    path = tmp_path / "receipts" / "part-000000.json"
    record = json.loads(path.read_text())
    record["sources"] = {name: {s: c.to_dict() for s, c in v.items()} for name, v in sources.items()}
    path.write_text(json.dumps(record))
    with pytest.raises(FormatError, match=rule) as info:
        Receipt.read(path)
    assert str(info.value).startswith(f"{path}: ")


def test_stats_sums_the_sources_over_receipts_and_refuses_receipts_that_count_them_only_in_part():
    first = receipt(sources=by_source(web=(3, 20, 3, 25), books=(2, 30, 2, 35)))
    second = receipt("part-000001", by_source("validation", web=(1, 4, 1, 5)), "validation", SplitCounts(1, 4, 1, 5))
    third = receipt("part-000002", by_source(web=(1, 1, 1, 1)), total=SplitCounts(1, 1, 1, 1))
    stats = stats_record("corpus", "byte", [first, second, third])
    assert stats["sources"] == {
        "books": {"train": {"documents": 2, "text_tokens": 30, "eod_tokens": 2, "text_bytes": 35, "total_tokens": 32}},
        "web": {
            "train": {"documents": 4, "text_tokens": 21, "eod_tokens": 4, "text_bytes": 26, "total_tokens": 25},
            "validation": {"documents": 1, "text_tokens": 4, "eod_tokens": 1, "text_bytes": 5, "total_tokens": 5},
        },
    }
    assert stats_record("corpus", "byte", [receipt()])["sources"] == {
        "corpus": stats_record("corpus", "byte", [receipt()])["splits"]
    }
    with pytest.raises(FormatError, match="every receipt counts its documents by source, or none does") as info:
        stats_record("corpus", "byte", [first, receipt("part-000001")], where="release/receipts")
    assert "part-000001" in str(info.value) and str(info.value).startswith("release/receipts: ")


@pytest.mark.parametrize(
    "values, row", [(["web", None], 1), (["web", "web", "a\tb"], 2), (["ok", "x|y"], 1), (["  padded"], 0)]
)
def test_a_shard_source_column_holds_source_names_else_one_line_naming_the_row(values, row):
    with pytest.raises(FormatError) as info:
        check_sources(pa.array(values, pa.string()), "data/train-00000.parquet", "source", first_row=100)
    message = str(info.value)
    assert message.startswith(f"data/train-00000.parquet: row {100 + row}: column 'source' must hold a source name")
    assert "\n" not in message and "\t" not in message
    check_sources(pa.array(["web", "wiki/fa", "Persian Wikipedia"]), "x", "source")
