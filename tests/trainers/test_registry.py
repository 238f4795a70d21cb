"""The trainers package: one module per trainer, each naming the upstream commit its rules were read from."""

from __future__ import annotations

import re

import pytest

from hf_tokbin import trainers
from hf_tokbin.cli.verify import FOR_CHOICES
from hf_tokbin.trainers import llmc, maxtext, megatron_lm, modded_nanogpt, nanogpt

MODULES = {
    "llmc": llmc,
    "llmc-llama3": llmc,
    "modded-nanogpt": modded_nanogpt,
    "nanogpt": nanogpt,
    "megatron": megatron_lm,
    "maxtext": maxtext,
}


def test_verify_for_offers_every_trainer_and_recipe_too():
    assert sorted(FOR_CHOICES) == sorted(trainers.TARGETS) == sorted(MODULES)


@pytest.mark.parametrize("target", sorted(MODULES))
def test_each_module_states_at_its_top_the_version_its_trainer_record_names(target):
    """The module docstring's first paragraphs name the commit (or the PyPI version) CHECKED_AGAINST names."""
    checked = trainers.CHECKED_AGAINST[target]
    version = re.search(r"\b[0-9a-f]{40}\b", checked) or re.search(r"\b\d+\.\d+\.\d+\b", checked)
    head = "\n\n".join(MODULES[target].__doc__.split("\n\n")[:2])
    assert version and version.group(0) in head, (target, checked)
    assert trainers.TRAINERS[target].check.__module__ == MODULES[target].__name__


def test_a_trainer_without_an_eod_switch_refuses_eod_loss_mask(tmp_path):
    from consumer_fixtures import write_release

    root = write_release(tmp_path / "rel", [[[1, 2, 3]] * 40], [], 300, 299)
    for target, trainer in trainers.TRAINERS.items():
        if trainer.reads != "llmc":
            continue
        settings = trainers.LoaderSettings(batch_size=1, seq_len=8, eod_loss="mask")
        found = trainers.recipe(root, target, settings, with_findings=False).findings
        assert [f.rule for f in found] == (["eod-loss"] if not trainer.masks_eod else []), target
