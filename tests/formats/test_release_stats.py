"""``formats.release.Stats``: the one reader of ``stats.json``; every refusal names the file."""

from __future__ import annotations

import json

import pytest

from hf_tokbin.errors import FormatError
from hf_tokbin.formats.records import FileEntry
from hf_tokbin.formats.release import Receipt, SplitCounts, Stats, stats_record

SHARD = FileEntry("data/train-00000.parquet", 10, "0" * 64)


def written(tmp_path, edit=None):
    record = stats_record("toy", "byte", [Receipt("part-000000", SHARD, {"train": SplitCounts(5, 50, 5, 60)}, ())])
    record = json.loads(json.dumps(record))  # sources and splits may share objects: edit one, not both
    if edit:
        edit(record)
    path = tmp_path / "stats.json"
    path.write_text(json.dumps(record))
    return path


def test_stats_reads_back_what_stats_record_writes_identity_included(tmp_path):
    stats = Stats.read(written(tmp_path))
    assert (stats.dataset, stats.tokenizer_id) == ("toy", "byte")
    assert stats.splits == {"train": SplitCounts(5, 50, 5, 60)} and stats.sources == {"toy": stats.splits}


@pytest.mark.parametrize(
    "edit, rule",
    [
        (
            lambda r: r["splits"]["train"].update(documents=-1),
            "splits.train: documents must be a non-negative integer",
        ),
        (
            lambda r: r["sources"]["toy"]["train"].update(text_tokens="50"),
            "sources.toy.train: text_tokens must be a non-negative integer",
        ),
        (lambda r: r.update(dataset="../toy"), "dataset must be one folder name"),
        (lambda r: r.update(tokenizer_id=7), "tokenizer_id must be one folder name"),
    ],
)
def test_a_bad_field_is_refused_naming_the_file(tmp_path, edit, rule):
    path = written(tmp_path, edit)
    with pytest.raises(FormatError) as caught:
        Stats.read(path)
    assert caught.value.path == str(path) and rule in str(caught.value)


def test_a_stats_json_without_identity_reads_with_none(tmp_path):
    # Hand-made records carry only counts; the card renders them (its identity comes from run_config.json).
    stats = Stats.read(written(tmp_path, lambda r: [r.pop("dataset"), r.pop("tokenizer_id")]))
    assert (stats.dataset, stats.tokenizer_id) == (None, None)
