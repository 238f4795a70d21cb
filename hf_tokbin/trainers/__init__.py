"""The trainers that read a release: their flags, limits, checks (``verify --for``) and recipes (``recipe``).

One module per trainer, each naming at its top the upstream repository and
commit its rules were read from: :mod:`.llmc` (llm.c, ``llmc`` and
``llmc-llama3``), :mod:`.modded_nanogpt`, :mod:`.nanogpt`,
:mod:`.megatron_lm` (``megatron``) and :mod:`.maxtext`. What they share:
:mod:`.base` (findings, settings, the shared rules), :mod:`.llmc_files` (the
llm.c token files as the llm.c family reads them) and :mod:`.megatron_pairs`
(the pairs as Megatron-LM and MaxText read them). :mod:`.registry` holds them
all by their ``--for`` name.
"""

from .base import EOD_LOSS_POLICIES, ERROR, INFO, WARNING, Finding, LoaderSettings, Trainer, has_errors
from .registry import CHECKED_AGAINST, TARGETS, TRAINERS, Recipe, check, recipe

__all__ = [
    "CHECKED_AGAINST",
    "EOD_LOSS_POLICIES",
    "ERROR",
    "INFO",
    "TARGETS",
    "TRAINERS",
    "WARNING",
    "Finding",
    "LoaderSettings",
    "Recipe",
    "Trainer",
    "check",
    "has_errors",
    "recipe",
]
