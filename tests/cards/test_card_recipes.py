"""The release card's recipes: a block for every trainer that reads the release, each what ``recipe --for`` prints."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from consumer_fixtures import write_release
from release_fixtures import stories, write_corpus

from hf_tokbin.cards.release import _recipes
from hf_tokbin.cli import main

FINDING = re.compile(r"^# (error|warning|info): ")


@pytest.fixture(scope="module")
def both(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("card-recipes")
    corpus = write_corpus(root / "corpus", [("train", stories(30, seed=1)), ("validation", stories(10, seed=2))])
    flags = ["--tokenizer", "byte", "--doc-sep", "3", "--format", "llmc,megatron", "--quiet"]
    assert main(["build", "--corpus", str(corpus), "--out", str(root / "release"), *flags]) == 0
    return root / "release"


def card_blocks(card: str) -> dict[str, str]:
    """Each fenced recipe of the card, by the trainer its first line names."""
    blocks = re.findall(r"^(`{3,})bash\n(# hf-tokbin recipe --for ([\w-]+): .*?)^\1$", card, re.M | re.S)
    return {target: text for _, text, target in blocks}


def printed(release: Path, target: str, capsys) -> str:
    """What ``hf-tokbin recipe RELEASE --for TARGET`` prints, its findings left out (the card checks no file)."""
    main(["recipe", str(release), "--for", target])
    out = capsys.readouterr().out.replace(str(release.resolve()), "RELEASE")
    return "".join(line for line in out.splitlines(keepends=True) if not FINDING.match(line))


def test_every_trainer_that_reads_both_formats_has_the_block_recipe_prints(both, capsys):
    card = (both / "README.md").read_text(encoding="utf-8")
    blocks = card_blocks(card)
    # The byte tokenizer's separator 3 is no BOS 50256: modded-nanogpt's loader cannot train on it, and says so.
    assert sorted(blocks) == ["llmc", "maxtext", "megatron", "nanogpt"]
    for target, block in blocks.items():
        assert block == printed(both, target, capsys), target
    main(["recipe", str(both), "--for", "modded-nanogpt"])
    bos_rule = next(line for line in capsys.readouterr().out.splitlines() if ": bos-id: " in line)
    assert f"modded-nanogpt: {bos_rule.split(': bos-id: ', 1)[1]}." in card


def test_the_card_s_recipes_render_as_code_and_count_in_words(both):
    from markdown_it import MarkdownIt

    card = (both / "README.md").read_text(encoding="utf-8")
    rendered = MarkdownIt("commonmark").enable("table").render(card.partition("\n---\n")[2])
    section = rendered.split("Train on it", 1)[1]
    assert "<em>" not in section and "<strong>" not in section  # B*T*world_size stays as written
    assert "B*T*world_size" in section
    assert "| 1 pair |" in card and "1 pairs" not in card


def test_a_release_modded_nanogpt_reads_points_at_its_recipe(tmp_path):
    """Its step count comes from where documents start in the token files, which the card never reads."""
    docs = [[[5, 6, 7]] * 40, [[8, 9]] * 40]
    root = write_release(tmp_path / "rel", docs, [[[1, 2]] * 10], 50257, 50256)
    text = "\n".join(_recipes(root, ["llmc"], "gpt2"))
    assert "modded-nanogpt (KellerJordan/modded-nanogpt f411b3d" in text
    assert "run `hf-tokbin recipe RELEASE --for modded-nanogpt`" in text
    assert sorted(card_blocks(text)) == ["llmc", "nanogpt"]


@pytest.mark.parametrize("layout, expected", [("gpt2", ["llmc", "nanogpt"]), ("llama3", ["llmc-llama3", "nanogpt"])])
def test_the_llmc_layout_picks_the_llm_c_trainer(tmp_path, layout, expected):
    root = write_release(tmp_path / "rel", [[[5, 6, 7]] * 40, [[8, 9]] * 40], [], 300, 299)
    text = "\n".join(_recipes(root, ["llmc"], layout))
    assert sorted(card_blocks(text)) == expected
    assert ("modded-nanogpt" in text) == (layout == "gpt2")  # it reads llm.c's GPT-2 layout only
