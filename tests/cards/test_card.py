"""The release dataset card (hf_tokbin.cards.release)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hub_server import make_release

from hf_tokbin.cards.release import render_release_card, size_category
from hf_tokbin.cli import main
from hf_tokbin.errors import VerificationError
from hf_tokbin.formats.corpus_manifest import SPLIT_RULE_TEXT
from hf_tokbin.formats.release import Receipt

STORIES = "One story.\n<|endoftext|>\nTwo stories here.\n<|endoftext|>\nThree.\n"


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
    release = make_release(tmp_path / "release", corpus_source="tester/tinystories-corpus")
    stats = json.loads((release / "stats.json").read_text())
    documents = sum(s["documents"] for s in stats["splits"].values())
    card = render_release_card(release)
    meta = front_matter(card)
    assert meta["license"] == "cdla-sharing-1.0"
    assert meta["language"] == ["en"]
    assert meta["task_categories"] == ["text-generation"]
    assert meta["source_datasets"] == ["tester/tinystories-corpus"]
    assert meta["tokenizer"] == "byte-test"
    assert meta["size_categories"] == [size_category(documents)]
    assert meta["viewer"] is False
    assert meta["tags"] == ["tokenized", "megatron", "hf-tokbin"]
    assert meta["pretty_name"] == "tinystories-mini tokenized with byte-test for Megatron"
    assert "\n# tinystories-mini tokenized with byte-test for Megatron\n" in card


def test_a_local_corpus_is_no_source_dataset(tmp_path):
    meta = front_matter(render_release_card(make_release(tmp_path / "release")))
    assert "source_datasets" not in meta and meta["license"] == "cdla-sharing-1.0"


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
    counts = [train[key] for key in ("documents", "text_tokens", "eod_tokens", "total_tokens")]
    row = "| train | " + " | ".join(f"{n:,}" for n in counts) + " |"
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
    # run_config.json is read by RunConfig, the one reader: an unknown tokenizer field is shown as it is...
    config = json.loads((release / "run_config.json").read_text())
    config["tokenizer"]["merges_digest"] = "abc"
    (release / "run_config.json").write_text(json.dumps(config))
    card = render_release_card(release)
    assert "- merges_digest: `abc`" in card and SPLIT_RULE_TEXT[config["split_rule"]["name"]] in card
    # ...a malformed one is one clear error, never a card that guesses...
    (release / "run_config.json").write_text(
        json.dumps({"tokenizer": {"tokenizer_id": "tok"}, "split_rule": {"name": "files"}}) + "\n"
    )
    with pytest.raises(VerificationError, match="run_config.json: format is missing"):
        render_release_card(release)
    # ...and without one, the formats are those whose files are here.
    (release / "run_config.json").unlink()
    card = render_release_card(release)
    meta = front_matter(card)
    assert meta["license"] == "unknown" and "language" not in meta and "source_datasets" not in meta
    assert meta["tags"] == ["tokenized", "megatron", "hf-tokbin"]  # the pairs in the folder say Megatron
    assert "Not recorded in `run_config.json`." in card


def test_format_section_reads_the_dtype_from_the_index(tmp_path):
    small = render_release_card(make_release(tmp_path / "small", vocab_size=300))
    large = render_release_card(make_release(tmp_path / "large", vocab_size=70_000))
    assert "uint16 (dtype code 8)" in small
    assert "int32 (dtype code 4)" in large


def build_release(tmp_path: Path, *build_args: str) -> Path:
    """A real corpus and build through the command line; returns the release folder."""
    (tmp_path / "train.txt").write_text(STORIES, encoding="utf-8")
    (tmp_path / "valid.txt").write_text("Valid.\n", encoding="utf-8")
    assert (
        main(
            [
                "corpus",
                "tinystories",
                str(tmp_path / "train.txt"),
                str(tmp_path / "valid.txt"),
                "--out",
                str(tmp_path / "corpus"),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "build",
                "--corpus",
                str(tmp_path / "corpus"),
                "--tokenizer",
                "byte",
                "--out",
                str(tmp_path / "release"),
                "--quiet",
                *build_args,
            ]
        )
        == 0
    )
    return tmp_path / "release"


def test_llmc_only_build_card_describes_llmc_and_nothing_of_megatron(tmp_path):
    release = build_release(tmp_path, "--format", "llmc")
    card = (release / "README.md").read_text(encoding="utf-8")
    assert card == render_release_card(release)  # what the build wrote
    meta = front_matter(card)
    assert meta["pretty_name"] == "tinystories tokenized with byte for llm.c"
    assert meta["tags"] == ["tokenized", "llm.c", "hf-tokbin"]
    assert (meta["license"], meta["language"]) == ("cdla-sharing-1.0", ["en"])  # from the corpus manifest
    assert "source_datasets" not in meta  # a local corpus
    for megatron_word in ("Megatron", "IndexedDataset", "MaxText", "shards/", ".idx", "EOD token"):
        assert megatron_word not in card, megatron_word
    assert "`tokens/byte/tinystories/{train,val}-NNNNN.bin`" in card
    assert "Here: version 1 (uint16 ids)." in card
    assert "no separator" in card and "preceded by" not in card  # the byte tokenizer has none
    assert "one id per byte" in card and "add_special_tokens" not in card


def test_both_formats_card_describes_both_with_their_ids(tmp_path):
    release = build_release(tmp_path, "--format", "llmc,megatron", "--doc-sep-id", "0")
    card = (release / "README.md").read_text(encoding="utf-8")
    meta = front_matter(card)
    assert meta["pretty_name"] == "tinystories tokenized with byte for Megatron and llm.c"
    assert meta["tags"] == ["tokenized", "megatron", "llm.c", "hf-tokbin"]
    assert "ends with one EOD token (id 0)" in card
    assert "preceded by the document separator (id 0)" in card
    assert 'IndexedDataset("shards/train/part-000000")' in card and "./train_gpt2cu" in card


def test_llama3_variant_card_points_at_train_llama3(tmp_path):
    release = build_release(tmp_path, "--format", "llmc", "--llmc-variant", "llama3", "--doc-sep-id", "0")
    card = (release / "README.md").read_text(encoding="utf-8")
    assert "upstream llm.c's Llama 3 layout" in card and "train_llama3.py" in card
    assert "./train_gpt2cu" not in card and "Here: version" not in card


def test_card_states_the_boundary_tokens_the_layout_and_the_special_token_policy(tmp_path):
    (tmp_path / "plain").mkdir()
    release = build_release(tmp_path, "--doc-sep", "10", "--bos", "2", "--llmc-sep", "after")
    card = (release / "README.md").read_text(encoding="utf-8")
    assert (
        "- document separator (EOD): `10`, from --doc-sep" in card
        and "- BOS, before every document: `2`, from --bos" in card
    )
    assert (
        "`[bos] + ids + [eod]`" in card
        and "`[bos] + ids + [sep]`" in card
        and "followed by the document separator (id 10)" in card
    )
    assert "| bos tokens |" in card and "A BOS is inserted before every document" in card
    plain = build_release(tmp_path / "plain", "--doc-sep", "10")
    card = (plain / "README.md").read_text(encoding="utf-8")
    assert "- BOS, before every document: none" in card and "`[sep] + ids`" in card and "bos tokens" not in card
    assert "No BOS or padding is inserted" in card


def test_stats_json_is_read_through_its_reader(tmp_path):
    from hf_tokbin.errors import FormatError
    from hf_tokbin.formats.release import Stats, stats_record

    release = make_release(tmp_path / "release", card=False)
    receipts = [Receipt.read(p) for p in sorted((release / "receipts").glob("*.json"))]
    stats = Stats.read(release / "stats.json")
    record = stats_record("tinystories", "byte-test", receipts)
    assert {s: c.stats_dict() for s, c in stats.splits.items()} == record["splits"]
    # A hand-edited total is one clear error, never a card with counts that disagree.
    edited = json.loads((release / "stats.json").read_text())
    edited["splits"]["train"]["total_tokens"] += 1
    (release / "stats.json").write_text(json.dumps(edited))
    with pytest.raises(FormatError, match="splits.train.total_tokens must be the sum"):
        render_release_card(release)
