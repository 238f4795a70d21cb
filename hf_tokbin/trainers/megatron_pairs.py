"""Megatron pairs as Megatron-LM and MaxText read them: the pairs per split, their blends, the EOD and the tokenizer.

A release's blends come from its receipts (each pair's tokens as counted when
it was written), so a recipe names every pair the release holds; a folder of
pairs without receipts is read pair by pair.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .._io import read_json
from ..errors import FormatError
from ..formats import megatron
from ..formats.release import (
    COMPLETE_NAME,
    PARTIAL_NAME,
    RECEIPTS_DIR,
    RUN_CONFIG_NAME,
    SHARDS_DIR,
    SPLITS,
    TOKENIZER_DIR,
    TOKENIZER_FILE,
    Receipt,
    pair_path,
    read_partial,
)
from ..formats.run_config import RunConfig
from ..readers.views import find_megatron_pairs
from .base import ERROR, INFO, Finding, error_text, open_or_finding

MEGATRON_SEED = 1234  # Megatron-LM --seed default; MaxText's mmap_npy seed default is the same


def megatron_inputs(path: Path) -> tuple[list[tuple[str | None, list[Path]]], int | None, int | None]:
    """Pairs per split, and the EOD id and vocab size of ``run_config.json`` when ``path`` is a release."""
    if (path / SHARDS_DIR).is_dir():
        splits = [(s, find_megatron_pairs(path, s)) for s in SPLITS if (path / SHARDS_DIR / s).is_dir()]
        eod_id, vocab_size = run_config_ids(path / RUN_CONFIG_NAME)
        return splits, eod_id, vocab_size
    return [(None, find_megatron_pairs(path))], None, None


def run_config_ids(run_config: Path) -> tuple[int | None, int | None]:
    """The EOD id and vocab size of a release's ``run_config.json`` (read by :class:`RunConfig`, the one reader)."""
    if not run_config.is_file():
        return None, None
    config = RunConfig.read(run_config)
    return config.eod_id, config.vocab_size


@dataclass(frozen=True)
class ReleaseTokenizer:
    """``run_config.json``'s tokenizer fields a recipe names (any may be unknown), and the release's own
    ``tokenizer/``."""

    tokenizer_id: str | None
    source: str | None  # "byte", "local" or a Hub repo id
    revision: str | None
    subfolder: str | None
    vocab_size: int | None
    eod_id: int | None
    shipped: Path | None = None  # RELEASE/tokenizer, when the release ships its tokenizer.json


def read_tokenizer(root: Path) -> ReleaseTokenizer:
    path = root / RUN_CONFIG_NAME
    shipped = root / TOKENIZER_DIR if (root / TOKENIZER_DIR / TOKENIZER_FILE).is_file() else None
    if not path.is_file():
        return ReleaseTokenizer(None, None, None, None, None, None, shipped)
    eod_id, vocab_size = run_config_ids(path)
    tokenizer = read_json(path, FormatError).get("tokenizer")
    tokenizer = tokenizer if isinstance(tokenizer, dict) else {}

    def text(name):
        value = tokenizer.get(name)
        return value if isinstance(value, str) and value else None

    return ReleaseTokenizer(
        text("tokenizer_id"), text("source"), text("revision"), text("subfolder"), vocab_size, eod_id, shipped
    )


def open_pair(
    idx: Path, vocab_size: int | None, eod_id: int | None, findings: list[Finding], where: str
) -> megatron.MegatronPair | None:
    pair = open_or_finding(idx, lambda f: megatron.MegatronPair(f, vocab_size), findings)
    if pair is None:
        return None
    try:
        pair.check_one_document_per_sequence(eod_id)
    except FormatError as e:
        findings.append(Finding(ERROR, str(idx), "one-document-per-sequence", f"{where}: {error_text(e)}"))
    return pair


def eod_findings(path: Path, eod_id: int | None, setting: str, level_if_unknown: str) -> list[Finding]:
    if eod_id is None:
        return [
            Finding(
                level_if_unknown,
                str(path),
                "eod",
                "EOD id unknown (no run_config.json doc_sep): pass --eod-id to check that sequences end with it",
            )
        ]
    return [Finding(INFO, str(path), "eod", f"set {setting}{eod_id}")]


def _receipt_blends(root: Path) -> dict[str, list[tuple[int, str]]]:
    """A release's blends from its receipts (each pair's tokens as counted when it was written).

    Every pair a receipt lists must be here (its ``.idx``): a recipe over the
    pairs that happen to be here would train on a subset, or print "no
    validation split", and say neither. Only a partial copy (``pull
    --include``: a valid ``PARTIAL.json`` and no ``COMPLETE.json``) gets the
    pairs it holds.
    """
    partial = not (root / COMPLETE_NAME).exists() and (root / PARTIAL_NAME).is_file()
    if partial:
        read_partial(root)  # a PARTIAL.json that is not one vouches for nothing
    blends = {}
    for path in sorted((root / RECEIPTS_DIR).glob("part-*.json")):
        receipt = Receipt.read(path)
        for split, counts in receipt.splits.items():
            idx = root / pair_path(split, receipt.part, "idx")
            if not counts.total_tokens:
                continue
            if not idx.is_file():
                if partial:
                    continue
                raise FormatError(
                    idx,
                    f"a Megatron pair its receipt lists is missing: the recipe would leave it out of the {split} "
                    "split",
                    hint="pull or copy the whole release (hf-tokbin verify names what is missing)",
                )
            blends.setdefault(split, []).append((counts.total_tokens, str(idx.with_suffix(""))))
    return blends


def read_blends(root: Path) -> dict[str, list[tuple[int, str]]]:
    """Per split: (tokens, prefix) of every non-empty pair, in part order; prefixes without .bin/.idx."""
    if (root / RECEIPTS_DIR).is_dir():
        blends = _receipt_blends(root)
        if not blends.get("train"):
            raise FormatError(root, "no Megatron train pairs with tokens", hint="build with --format megatron")
        return blends
    if (root / SHARDS_DIR).is_dir():
        splits = [(s, find_megatron_pairs(root, s)) for s in SPLITS if (root / SHARDS_DIR / s).is_dir()]
    else:
        splits = [("train", find_megatron_pairs(root))]
    blends = {}
    for split, pairs in splits:
        entries = [(megatron.MegatronPair(idx).n_tokens, str(idx.with_suffix(""))) for idx in pairs]
        blends[split] = [(n, prefix) for n, prefix in entries if n > 0]
    if not blends.get("train"):
        raise FormatError(root, "no Megatron train pairs with tokens", hint="build with --format megatron")
    return blends


def data_path(blend: list[tuple[int, str]]) -> list[str]:
    """Megatron's weighted form: ``W1 PREFIX1 W2 PREFIX2 ...``, weights = tokens (Megatron normalizes them)."""
    return [x for n, prefix in blend for x in (str(n), prefix)]


def samples_per_epoch(blend: list[tuple[int, str]], seq_len: int) -> int:
    """GPTDataset's samples per epoch summed over the pairs: ``(tokens - 1) // seq_length`` each
    (add_extra_token_to_sequence)."""
    return sum(max(0, n - 1) // seq_len for n, _ in blend)
