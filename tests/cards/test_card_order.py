"""The release card says how a shuffled release orders its documents: a reader of llm.c files in order must know."""

from __future__ import annotations

import json

from release_fixtures import stories

from hf_tokbin.cli import main


def build(tmp_path, name: str, *options: str):
    jsonl = tmp_path / "rows.jsonl"
    if not jsonl.exists():
        jsonl.write_text("".join(json.dumps({"text": text}) + "\n" for text in stories(60, seed=3)), encoding="utf-8")
    out = tmp_path / name
    assert (
        main(
            [
                "build",
                "--corpus",
                str(jsonl),
                "--tokenizer",
                "byte",
                "--doc-sep",
                "0",
                "--out",
                str(out),
                "--quiet",
                *options,
            ]
        )
        == 0
    )
    return (out / "README.md").read_text()


def test_a_shuffled_release_card_names_the_seed_and_the_interleaved_llmc_files(tmp_path):
    card = build(tmp_path, "shuffled", "--shuffle-seed", "7")
    assert "shuffled with seed 7" in card
    assert "the llm.c files interleave blocks of every part" in card


def test_a_release_in_corpus_order_says_nothing_of_a_shuffle(tmp_path):
    assert "shuffled" not in build(tmp_path, "plain")


def test_a_release_from_before_the_interleave_says_its_llmc_files_are_in_part_order(tmp_path):
    from hf_tokbin.cards.release import render_release_card
    from hf_tokbin.formats.llmc_order import PARTS_SCOPE

    build(tmp_path, "shuffled", "--shuffle-seed", "7")
    path = tmp_path / "shuffled" / "run_config.json"
    config = json.loads(path.read_text())
    config["shuffle"]["scope"] = PARTS_SCOPE
    path.write_text(json.dumps(config))
    card = render_release_card(tmp_path / "shuffled")
    assert (
        "shuffled with seed 7" in card
        and "the llm.c files hold the parts in part order" in card
        and "interleave" not in card
    )
