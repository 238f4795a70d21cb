"""The release dataset card (hf_tokbin.card)."""

from __future__ import annotations

import json

import pytest
import yaml
from hub_server import make_release

from hf_tokbin import llmc
from hf_tokbin.card import render_release_card, size_category
from hf_tokbin.corpus_manifest import SPLIT_RULE_TEXT
from hf_tokbin.release import Receipt


def front_matter(card: str) -> dict:
    head, _, _ = card.removeprefix("---\n").partition("\n---\n")
    return yaml.safe_load(head)


def test_card_is_deterministic_and_holds_no_local_path(tmp_path):
    release = make_release(tmp_path / "release")
    card = render_release_card(release)
    assert render_release_card(release) == card
    assert str(tmp_path) not in card
    other = make_release(tmp_path / "elsewhere" / "copy")
    assert render_release_card(other) == card  # same content, another folder: same card


def test_metadata_comes_from_run_config_and_counts(tmp_path):
    release = make_release(tmp_path / "release")
    stats = json.loads((release / "stats.json").read_text())
    documents = sum(s["documents"] for s in stats["splits"].values())
    meta = front_matter(render_release_card(release))
    assert meta["license"] == "cdla-sharing-1.0"
    assert meta["language"] == ["en"]
    assert meta["task_categories"] == ["text-generation"]
    assert meta["source_datasets"] == ["roneneldan/TinyStories"]
    assert meta["tokenizer"] == "byte-test"
    assert meta["size_categories"] == [size_category(documents)]
    assert meta["viewer"] is False


def test_arguments_override_run_config(tmp_path):
    release = make_release(tmp_path / "release")
    meta = front_matter(render_release_card(release, license="mit", language=["en", "fr"], source_dataset="me/src"))
    assert (meta["license"], meta["language"], meta["source_datasets"]) == ("mit", ["en", "fr"], ["me/src"])


@pytest.mark.parametrize(
    "documents, bucket",
    [(0, "n<1K"), (999, "n<1K"), (1000, "1K<n<10K"), (2_100_000, "1M<n<10M"), (10**9, "1B<n<10B"), (10**12, "n>1T")],
)
def test_size_category_buckets(documents, bucket):
    assert size_category(documents) == bucket


def test_counts_table_shows_stats_json_numbers(tmp_path):
    release = make_release(tmp_path / "release")
    stats = json.loads((release / "stats.json").read_text())
    card = render_release_card(release)
    train = stats["splits"]["train"]
    row = f"| train | {train['documents']:,} | {train['text_tokens']:,} | {train['eod_tokens']:,} | {train['total_tokens']:,} |"
    assert row in card
    assert "From `stats.json`." in card and "By source:" in card


def test_counts_fall_back_to_the_receipts_when_stats_json_is_missing(tmp_path):
    release = make_release(tmp_path / "release", card=False)
    (release / "stats.json").unlink()
    receipts = [Receipt.read(p) for p in sorted((release / "receipts").glob("*.json"))]
    validation_docs = sum(r.splits["validation"].documents for r in receipts if "validation" in r.splits)
    card = render_release_card(release)
    assert "Summed over the receipts" in card
    assert f"| validation | {validation_docs:,} |" in card


def test_missing_and_unknown_run_config_fields_are_handled(tmp_path):
    release = make_release(tmp_path / "release", card=False)
    (release / "run_config.json").write_text(json.dumps({"tokenizer": {"id": "tok", "merges_digest": "abc"}, "split_rule": "files"}) + "\n")
    card = render_release_card(release)
    meta = front_matter(card)
    assert meta["license"] == "unknown" and "language" not in meta and "source_datasets" not in meta
    assert "- merges_digest: `abc`" in card  # an unknown tokenizer field is shown as it is
    assert SPLIT_RULE_TEXT["files"] in card
    (release / "run_config.json").unlink()
    assert "Not recorded in `run_config.json`." in render_release_card(release)


def test_format_section_reads_the_dtype_from_the_index(tmp_path):
    small = render_release_card(make_release(tmp_path / "small", vocab_size=300))
    large = render_release_card(make_release(tmp_path / "large", vocab_size=70_000))
    assert "uint16 (dtype code 8)" in small
    assert "int32 (dtype code 4)" in large


def test_llmc_files_are_described_when_present(tmp_path):
    release = make_release(tmp_path / "release", card=False)
    assert "llm.c token files" not in render_release_card(release)
    folder = release / "tokens/byte-test/tinystories"
    folder.mkdir(parents=True)
    llmc.write_tokens(folder / "train-00000.bin", [1, 2, 3], 300)
    (folder / "_MANIFEST.json").write_text(json.dumps({"files": [{"name": "train-00000.bin", "split": "train"}]}) + "\n")
    card = render_release_card(release)
    assert "`tokens/byte-test/tinystories/{train,val}-NNNNN.bin`" in card
    assert "Here: version 1 (uint16 ids)." in card
    assert "- llm.c" in card
