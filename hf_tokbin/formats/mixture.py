"""A mixture: one release from several corpora in the proportions the user names (``build --mix``).

::

    hf-tokbin build --corpus web/ --corpus code/ --corpus math/ --mix web=0.6,code=0.3,math=0.1 \\
        [--tokens 2B] [--max-epochs 2] ...

Each corpus is a *source*, named by its corpus name; its documents carry that
source name everywhere a build counts sources (receipts, ``stats.json``). The
release holds every document of every source once, in its Megatron pairs (part
N is input shard N of the combined corpus: the sources' shards in ``--mix``
order); the mixture is a statement about the **train** split's tokens:

- **shares**: each weight over their sum (weights that do not add up to 1 are
  normalised, and the build says so);
- **total** ``T``: ``--tokens``, else the largest total the shares allow
  without repeating any source, ``min_s floor(tokens_s / share_s)``;
- **target** of source s: ``floor(share_s * T)`` llm.c stream tokens, where
  ``tokens_s`` counts a source's train documents as the llm.c files hold them
  (text plus separator and BOS); a target above ``max_epochs * tokens_s`` is
  refused, naming the source, its tokens and what it would need.

Megatron-LM and MaxText sample the pairs by a blend (``hf-tokbin recipe``):
pair p of source s weighs ``share_s * tokens_p / tokens_s``, and the train
samples are ``T`` tokens' worth, so the trainer's own sampler draws each
source's share. llm.c, modded-nanogpt and nanoGPT read one stream: the llm.c
train files hold the mixture itself (:func:`mixture_ranges`, below), while the
validation files hold every validation document of every source, as without a
mixture (no source vanishes from validation).

Everything depends on the seed (``--shuffle-seed``, which a mixture always
has: 0 unless given), the shares, ``T``, the cap and the parts' document
lengths, so the bytes are the same whatever engine, ``--num-proc`` or batch
size, and ``verify`` recomputes them.

``run_config.json`` records the spec as ``"mix"``: ``{"sources": [{"name",
"weight", "corpus": {"name", "source", "revision", "manifest_sha256"}}, ...],
"tokens": T or null, "max_epochs": E}``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

from ..errors import BuildError, VerificationError
from .records import check_keys, checked_field, is_sha256
from .rules import SOURCE_NAME_RULE, is_commit_id, is_repo_id, is_source_name

MAX_TOKENS = 2**62  # --tokens: any count a release could hold
_TOKENS = re.compile(r"([0-9]+(?:\.[0-9]+)?)([kKmMbBtT]?)")
_SCALE = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}


@dataclass(frozen=True)
class MixtureSpec:
    """What ``--mix``, ``--tokens`` and ``--max-epochs`` ask: every field checked when the record is made.

    ``weights``: ``(source name, weight)`` in the order given, each weight a positive finite number; ``tokens``:
    the train total (None: the largest without repetition); ``max_epochs``: how many times a source's documents may
    appear in the llm.c train files, at least 1.
    """

    weights: tuple[tuple[str, float], ...]
    tokens: int | None = None
    max_epochs: int = 1

    def __post_init__(self) -> None:
        names = [name for name, _ in self.weights]
        _check(len(names) >= 2, "--mix needs at least two sources", ",".join(map(str, names)) or "none")
        for name, weight in self.weights:
            _check(is_source_name(name), f"--mix: a source is named by its corpus name: {SOURCE_NAME_RULE}", name)
            _check(
                isinstance(weight, (int, float)) and not isinstance(weight, bool) and math.isfinite(weight)
                and weight > 0,
                f"--mix: the weight of {name} must be a positive number",
                weight,
            )
        twice = sorted({name for name in names if names.count(name) > 1})
        _check(not twice, "--mix names a source twice", ", ".join(twice))
        _check(
            self.tokens is None or (type(self.tokens) is int and 0 < self.tokens <= MAX_TOKENS),
            "--tokens must be a positive number of tokens",
            self.tokens,
        )
        _check(
            type(self.max_epochs) is int and self.max_epochs >= 1,
            "--max-epochs must be a whole number, at least 1",
            self.max_epochs,
        )

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.weights)

    @property
    def shares(self) -> tuple[Fraction, ...]:
        """Each weight over their sum, exactly (a weight as the decimal it prints as: 0.1 is 1/10)."""
        exact = [Fraction(repr(float(weight))) for _, weight in self.weights]
        total = sum(exact)
        return tuple(w / total for w in exact)

    def normalised_note(self) -> str | None:
        """One line when the weights do not add up to 1: the shares they were taken as."""
        total = sum(Fraction(repr(float(weight))) for _, weight in self.weights)
        if total == 1:
            return None
        shares = ", ".join(f"{name}={float(share):.4g}" for name, share in zip(self.names, self.shares))
        return f"note: the --mix weights add up to {float(total):g}, not 1: taken as shares {shares}"

    def to_record(self, corpora: list[dict]) -> dict:
        """``run_config.json``'s ``mix``: ``corpora[i]`` is source i's corpus record (name, source, revision, manifest
        digest)."""
        return {
            "sources": [
                {"name": name, "weight": weight, "corpus": corpus}
                for (name, weight), corpus in zip(self.weights, corpora)
            ],
            "tokens": self.tokens,
            "max_epochs": self.max_epochs,
        }

    @classmethod
    def parse(cls, text: str, tokens: str | int | None = None, max_epochs: int = 1) -> MixtureSpec:
        """``--mix web=0.6,code=0.3,math=0.1`` (and ``--tokens``, ``--max-epochs``) as a checked record."""
        weights = []
        for item in str(text).split(","):
            name, equals, value = item.partition("=")
            _check(bool(equals), "--mix takes NAME=WEIGHT,NAME=WEIGHT,...", item.strip() or text)
            try:
                weight = float(value)
            except ValueError:
                weight = value.strip()  # refused below, as it was given
            weights.append((name.strip(), weight))
        return cls(tuple(weights), parse_tokens(tokens), max_epochs)


def read_mix_record(path, obj: dict) -> tuple[MixtureSpec, tuple[dict, ...]]:
    """``run_config.json``'s ``mix`` at ``path``: the spec and each source's corpus record, every field checked."""
    record = checked_field(path, obj, "mix", lambda v: isinstance(v, dict), "an object")
    check_keys(record, ["sources", "tokens", "max_epochs"], path, "mix")
    sources = checked_field(path, obj, "mix.sources", lambda v: isinstance(v, list) and v, "a list of sources")
    corpora = []
    for i, source in enumerate(sources):
        where = f"mix.sources[{i}]"
        check_keys(source, ["name", "weight", "corpus"], path, where)
        corpus = source["corpus"]
        check_keys(corpus, ["name", "source", "revision", "manifest_sha256"], path, f"{where}.corpus")
        rules = (
            ("name", lambda v, n=source["name"]: v == n, "the source's name"),
            ("source", lambda v: v == "local" or is_repo_id(v), "local, or a Hub repo id NS/NAME"),
            (
                "revision",
                lambda v, local=corpus["source"] == "local": v is None if local else is_commit_id(v),
                "null for a local corpus, else a commit id",
            ),
            ("manifest_sha256", is_sha256, "64 lowercase hex digits"),
        )
        for name, ok, rule in rules:
            checked_field(path, source, f"corpus.{name}", ok, rule, prefix=f"{where}.")
        corpora.append(dict(corpus))
    try:
        spec = MixtureSpec(
            tuple((s["name"], s["weight"]) for s in sources), record["tokens"], record["max_epochs"]
        )
    except BuildError as e:
        raise VerificationError(path, f"mix: {e.rule}", got=e.got) from None
    return spec, tuple(corpora)


def parse_tokens(value: str | int | None) -> int | None:
    """``--tokens``: a count, with an optional k, M, B or T (``2B`` is 2,000,000,000; ``1.5M`` 1,500,000)."""
    if value is None or isinstance(value, int):
        return value
    match = _TOKENS.fullmatch(str(value).strip().replace("_", "").replace(",", ""))
    _check(match is not None, "--tokens must be a count such as 2000000, 500M or 2B", value)
    number = Fraction(match.group(1)) * _SCALE[match.group(2).lower()]
    _check(number.denominator == 1, "--tokens must be a whole number of tokens", value)
    return int(number)


def _check(ok: bool, rule: str, got) -> None:
    if not ok:
        raise BuildError(None, rule, got=got)
