"""Megatron pairs as Megatron-LM and MaxText read them: the pairs per split, their blends, the EOD and the tokenizer.

A release's blends come from its receipts (each pair's tokens as counted when
it was written), so a recipe names every pair the release holds; a folder of
pairs without receipts is read pair by pair.

A blend weighs each pair by its tokens, so every pair is drawn in proportion
to its size. A mixture release (``run_config.json``'s ``mix``:
:mod:`hf_tokbin.formats.mixture`) weighs its train pairs by the mixture
instead: pair p of source s weighs ``share_s * tokens_p / tokens_s``, so the
trainer draws each source its share, and each pair of a source in proportion
to its size. Its train length is the mixture's total ``T`` tokens
(:func:`mixture_total`). Its validation blend weighs every pair by its tokens:
every validation document of every source, in their own proportions.
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import NamedTuple

from .._io import read_json
from ..errors import FormatError
from ..formats import megatron
from ..formats.mixture import MixtureSpec
from ..formats.records import is_count
from ..formats.release import (
    COMPLETE_NAME,
    PARTIAL_NAME,
    RECEIPTS_DIR,
    RUN_CONFIG_NAME,
    SHARDS_DIR,
    SPLITS,
    STATS_NAME,
    TOKENIZER_DIR,
    TOKENIZER_FILE,
    Receipt,
    pair_path,
    read_partial,
)
from ..formats.run_config import RunConfig
from ..readers.views import find_megatron_pairs
from .base import ERROR, INFO, Finding, LoaderSettings, error_text, open_or_finding

MEGATRON_SEED = 1234  # Megatron-LM --seed default; MaxText's mmap_npy seed default is the same
WEIGHT_DIGITS = 12  # significant digits of a mixture's printed weights (Megatron and MaxText normalize them)
VALIDATION_BLEND = (
    "the validation blend weighs each pair by its tokens: every validation document of every source, in their own "
    "proportions"
)


class BlendPair(NamedTuple):
    """One pair of a blend: its tokens, its path prefix (no .bin/.idx) and the source its receipt counts (a mixture
    release's part counts exactly one; None otherwise)."""

    tokens: int
    prefix: str
    source: str | None = None


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


def _receipt_blends(root: Path) -> dict[str, list[BlendPair]]:
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
            source = next(iter(receipt.sources)) if receipt.sources and len(receipt.sources) == 1 else None
            blends.setdefault(split, []).append(BlendPair(counts.total_tokens, str(idx.with_suffix("")), source))
    return blends


def read_blends(root: Path) -> dict[str, list[BlendPair]]:
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
        entries = [BlendPair(megatron.MegatronPair(idx).n_tokens, str(idx.with_suffix(""))) for idx in pairs]
        blends[split] = [pair for pair in entries if pair.tokens > 0]
    if not blends.get("train"):
        raise FormatError(root, "no Megatron train pairs with tokens", hint="build with --format megatron")
    return blends


@dataclass(frozen=True)
class Mixture:
    """A mixture release's train blend: the spec, each source's train tokens over its pairs and the total ``T``."""

    spec: MixtureSpec
    source_tokens: tuple[int, ...]  # in --mix order
    total: int  # T: the train tokens the mixture was built for (mixture_total)

    def share(self, source: str) -> Fraction:
        return self.spec.shares[self.spec.names.index(source)]

    def weight(self, pair: BlendPair) -> Fraction:
        """``share_s * tokens_p / tokens_s``: pair p of source s, exactly."""
        return self.share(pair.source) * pair.tokens / self.source_tokens[self.spec.names.index(pair.source)]

    def epochs(self) -> tuple[float, ...]:
        """How many times ``T`` tokens draw each source's train tokens (above 1: it repeats)."""
        return tuple(float(share * self.total / n) for share, n in zip(self.spec.shares, self.source_tokens))

    def shares_note(self) -> str:
        """One note: each source's share of the train samples, and the times its tokens are drawn."""
        shares = ", ".join(
            f"{name}={float(share):.4g} ({epochs:.2f} epochs)"
            for name, share, epochs in zip(self.spec.names, self.spec.shares, self.epochs())
        )
        return (
            f"the train blend gives each source its share of the mixture's {self.total:,} tokens: {shares}; pair p of "
            "source s weighs share_s x tokens_p / tokens_s, so the pairs of a source are drawn in proportion to their "
            "tokens; a source drawn past its tokens repeats (another epoch of its pairs), up to the build's "
            f"--max-epochs {self.spec.max_epochs}"
        )


def read_mixture(root: Path, train: list[BlendPair]) -> Mixture | None:
    """The mixture of a release whose ``run_config.json`` names one (``mix``); None for any other release or folder.

    Every train pair must come from one of its sources (its receipt counts exactly one), and every source must have
    train tokens.
    """
    path = root / RUN_CONFIG_NAME
    if not path.is_file():
        return None
    spec = RunConfig.read(path).options.mix
    if spec is None:
        return None
    for pair in train:
        if pair.source not in spec.names:
            raise FormatError(
                root / RECEIPTS_DIR,
                "a mixture's part counts one source of its mix",
                expected=", ".join(spec.names),
                got=f"{Path(pair.prefix).name}: {pair.source}",
            )
    source_tokens = tuple(sum(p.tokens for p in train if p.source == name) for name in spec.names)
    empty = [name for name, n in zip(spec.names, source_tokens) if n == 0]
    if empty:
        raise FormatError(root / RECEIPTS_DIR, "every source of a mixture has train tokens", got=", ".join(empty))
    return Mixture(spec, source_tokens, mixture_total(root))


def mixture_total(root: Path) -> int:
    """``T``, the train tokens the mixture of the release at ``root`` was built for: ``stats.json``'s
    ``mixture.tokens``, as the build resolved it (``--tokens``, or the largest total the shares allow without
    repeating a source: :mod:`hf_tokbin.formats.mixture`)."""
    path = root / STATS_NAME
    stats = read_json(path, FormatError)
    if not isinstance(stats.get("mixture"), dict) or not is_count(stats["mixture"].get("tokens")):
        raise FormatError(
            path,
            "a mixture release's stats.json names its train total: mixture.tokens, a count of tokens",
            got=repr(stats.get("mixture"))[:80],
        )
    return stats["mixture"]["tokens"]


def blend_weights(blend: list[BlendPair], mixture: Mixture | None = None) -> list[str]:
    """Each pair's weight as printed: its tokens, or in a mixture's train blend ``share_s * tokens_p / tokens_s`` as
    a decimal of :data:`WEIGHT_DIGITS` significant digits (the trainer normalizes them)."""
    if mixture is None:
        return [str(pair.tokens) for pair in blend]
    return [_decimal(mixture.weight(pair)) for pair in blend]


def _decimal(value: Fraction) -> str:
    with decimal.localcontext() as context:
        context.prec = WEIGHT_DIGITS
        return format(decimal.Decimal(value.numerator) / decimal.Decimal(value.denominator), "f")


def data_path(blend: list[BlendPair], mixture: Mixture | None = None) -> list[str]:
    """Megatron's weighted form: ``W1 PREFIX1 W2 PREFIX2 ...`` (:func:`blend_weights`; Megatron normalizes them)."""
    return [x for weight, pair in zip(blend_weights(blend, mixture), blend) for x in (weight, pair.prefix)]


def samples_per_epoch(blend: list[BlendPair], seq_len: int) -> int:
    """GPTDataset's samples per epoch summed over the pairs: ``(tokens - 1) // seq_length`` each
    (add_extra_token_to_sequence)."""
    return sum(max(0, pair.tokens - 1) // seq_len for pair in blend)


def train_samples(root: Path, blend: list[BlendPair], s: LoaderSettings, mixture: Mixture | None) -> int:
    """The samples of seq_length tokens a recipe trains on: ``--epochs`` passes over the train split, or a mixture's
    ``T`` tokens (``T // seq_length``), for which ``--epochs`` is refused."""
    if mixture is None:
        return s.epochs * samples_per_epoch(blend, s.seq_len)
    if s.epochs != 1:
        raise FormatError(
            root,
            "--epochs applies to a release without a mixture: a mixture trains on the T tokens it was built for",
            got=f"--epochs {s.epochs}",
            hint="build the mixture again with a larger --tokens (--max-epochs caps each source's repeats)",
        )
    return mixture.total // s.seq_len
