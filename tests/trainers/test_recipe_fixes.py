"""A recipe whose printed lines fix what ``verify --for`` found exits 0 and notes the change; 1 only when no line
does."""

from __future__ import annotations

import numpy as np
from consumer_fixtures import write_release

from hf_tokbin.cli import main

VOCAB, EOT = 50257, 50256


def test_modded_nanogpt_recipe_with_its_table_fix_is_complete(tmp_path, capsys):
    # ~140-token documents: more documents per micro-batch than train_gpt.py's TRAIN_MAX_NUM_DOCS has slots for.
    rng = np.random.default_rng(3)
    short = [rng.integers(0, EOT, 140).tolist() for _ in range(300)]
    root = write_release(tmp_path / "rel", [short, short], [short], VOCAB, EOT, max_tokens=30_000)
    assert main(["recipe", str(root), "--for", "modded-nanogpt", "-T", "896"]) == 0
    out = capsys.readouterr().out
    assert "\nTRAIN_MAX_NUM_DOCS = {16384: " in out
    assert "# error:" not in out and "documents-per-micro-batch" in out
    (note,) = [line for line in out.splitlines() if line.startswith("# note:") and "documents-per-micro-batch" in line]
    assert "TRAIN_MAX_NUM_DOCS" in note


def test_a_recipe_no_line_fixes_still_exits_1(tmp_path, capsys):
    root = write_release(tmp_path / "rel", [[[1, 2, 3]] * 4], [], 300, 299)  # separator 299: no BOS 50256 anywhere
    assert main(["recipe", str(root), "--for", "modded-nanogpt"]) == 1
    assert "# error:" in capsys.readouterr().out
