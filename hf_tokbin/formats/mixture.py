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
  without repeating any source: the largest T with every target at most
  ``tokens_s``, ``min_s (ceil((tokens_s + 1) / share_s) - 1)``, so the limiting
  source takes exactly all its tokens;
- **target** of source s: ``floor(share_s * T)`` llm.c stream tokens, where
  ``tokens_s`` counts a source's train documents as the llm.c files hold them
  (text plus separator and BOS); a target above ``max_epochs * tokens_s`` is
  refused, naming the source, its tokens and what it would need, with the
  largest ``--tokens`` that cap allows, ``min_s (ceil((max_epochs * tokens_s +
  1) / share_s) - 1)``, and the smallest ``--max-epochs`` that T needs,
  ``max_s ceil(target_s / tokens_s)``. A source with no train tokens is refused,
  and so is a target of 0 (a share of less than one token of ``T``), with the
  smallest ``--tokens`` that gives every source one, ``max_s ceil(1 / share_s)``.

All of it is exact (:class:`fractions.Fraction`): shares 0.1, 0.3 and 0.6 are
1/10, 3/10 and 6/10, never their nearest binary floats
(:func:`mixture_targets`).

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

``--mix-by source`` takes one corpus that counts its sources (``corpus import
--source-column``) instead: each source is first written as a corpus of its own
(:func:`hf_tokbin.corpus.mixture.split_by_source`), named by the source, and
the mixture is of those.

``run_config.json`` records the spec as ``"mix"``: ``{"by": "corpus" |
"source", "from": CORPUS (only by source: the corpus cut), "sources": [{"name",
"weight", "corpus": CORPUS}, ...], "tokens": T or null, "max_epochs": E}``,
CORPUS = ``{"name", "source", "revision", "manifest_sha256"}``.

The llm.c train stream of a mixture
-----------------------------------

:func:`mixture_ranges` gives it as document ranges of the parts' segments
(:class:`~hf_tokbin.formats.llmc_segments.DocumentRange`), which
:func:`~hf_tokbin.formats.llmc_segments.plan_files` cuts into files. Source s
is the list of its train parts in part order (:class:`MixturePart`: the
segment, its documents, where each of its blocks ends), and ``S`` the seed.

1. **Blocks.** Each part is cut into the blocks of
   :func:`~hf_tokbin.formats.llmc_order.block_starts` (the interleaved cut),
   and a source's blocks are numbered over its parts in part order: part 0's
   blocks, then part 1's, and so on; ``n_s`` blocks in all.
2. **The source's stream of documents.** Epoch e (0, 1, 2, ...) visits all
   ``n_s`` blocks in the order
   ``numpy.random.default_rng([S, MIX_TAG, s, e]).permutation(n_s)``, each
   block's documents in their order. The source takes the shortest prefix of
   that stream whose tokens are at least ``target_s`` (whole documents). So a
   downsampled source gives a seeded subset of its blocks (and a prefix of
   one more), an upsampled one repeats whole documents, and no document
   appears more than ``ceil(target_s / tokens_s)`` times, at most
   ``max_epochs`` by the targets' rule.
3. **Interleaving.** In round r = 1 .. ``ROUNDS``, each source in ``--mix``
   order emits the next documents of its prefix until the tokens it has
   emitted are at least ``ceil(target_s * r / ROUNDS)``: the document that
   crosses that mark is emitted whole. The last round ends every prefix. The
   documents of one block a source emits in one turn are one range, in the
   segment's stream coordinates (its first document and first id); a range
   never spans two blocks, so a turn gives one range per block it touches
   and none when the source is already at its mark.

The ranges depend on ``S``, the targets, the parts' document counts and block
ends, and the segments' document ends alone. Finding a cut reads ``.ends``:
the rest of a block of at most ``READ_WHOLE_BLOCK`` documents at once, when a
mark first falls inside it; in a larger block a bisection
(:func:`~hf_tokbin.formats.llmc_segments.count_fitting`) per cut. A block
emitted whole reads nothing, and no more than one block's ends per source is
held at a time.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import BuildError, FormatError, VerificationError
from .llmc_order import block_starts
from .llmc_segments import DocumentRange, ReadEnds, count_fitting
from .records import check_keys, checked_field, is_sha256
from .rules import SOURCE_NAME_RULE, is_commit_id, is_folder_name, is_repo_id, is_source_name

MAX_TOKENS = 2**62  # --tokens: any count a release could hold
MIX_BY = ("corpus", "source")  # --mix-by: each --corpus a source, or one corpus's source column
# A word in the seed sequence of a source's block order, so it never draws the numbers of the llm.c order
# (default_rng([S, split_code, STREAM_TAG])) or of a part's own permutation (default_rng([S, part_index])).
MIX_TAG = 0x6D697874  # "mixt"
ROUNDS = 1000  # turns of each source: a 5% window of the stream holds 50 of them
READ_WHOLE_BLOCK = 4096  # a block of at most this many documents is read once, as count_fitting's last read would be
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
    by: str = "corpus"  # what names a source: each --corpus by its corpus name, or one corpus's source column

    def __post_init__(self) -> None:
        names = [name for name, _ in self.weights]
        _check(len(names) >= 2, "--mix needs at least two sources", ",".join(map(str, names)) or "none")
        for name, weight in self.weights:
            _check(is_source_name(name), f"--mix names each source: {SOURCE_NAME_RULE}", name)
            _check(
                isinstance(weight, (int, float)) and not isinstance(weight, bool) and math.isfinite(weight)
                and weight > 0,
                f"--mix: the weight of {name} must be a positive number",
                weight,
            )
        _check(self.by in MIX_BY, f"--mix-by must be {' or '.join(MIX_BY)}", self.by)
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

    def to_record(self, corpora: list[dict], origin: dict | None = None) -> dict:
        """``run_config.json``'s ``mix``: ``corpora[i]`` is source i's corpus record (name, source, revision, manifest
        digest); ``origin`` (``by`` source) the record of the corpus whose source column they were cut from."""
        return {
            "by": self.by,
            **({"from": origin} if self.by == "source" else {}),
            "sources": [
                {"name": name, "weight": weight, "corpus": corpus}
                for (name, weight), corpus in zip(self.weights, corpora)
            ],
            "tokens": self.tokens,
            "max_epochs": self.max_epochs,
        }

    @classmethod
    def parse(cls, text: str, tokens: str | int | None = None, max_epochs: int = 1, by: str = "corpus") -> MixtureSpec:
        """``--mix web=0.6,code=0.3,math=0.1`` (and ``--tokens``, ``--max-epochs``, ``--mix-by``) as a checked
        record."""
        weights = []
        for item in str(text).split(","):
            name, equals, value = item.rpartition("=")
            _check(bool(equals), "--mix takes NAME=WEIGHT,NAME=WEIGHT,...", item.strip() or text)
            try:
                weight = float(value)
            except ValueError:
                weight = value.strip()  # refused below, as it was given
            weights.append((name.strip(), weight))
        return cls(tuple(weights), parse_tokens(tokens), max_epochs, by)


def read_mix_record(path, obj: dict) -> tuple[MixtureSpec, tuple[dict, ...]]:
    """``run_config.json``'s ``mix`` at ``path``: the spec and each source's corpus record, every field checked."""
    record = checked_field(path, obj, "mix", lambda v: isinstance(v, dict), "an object")
    by = checked_field(path, obj, "mix.by", lambda v: v in MIX_BY, " or ".join(MIX_BY))
    keys = ["by", *(["from"] if by == "source" else []), "sources", "tokens", "max_epochs"]
    check_keys(record, keys, path, "mix")
    if by == "source":
        _check_corpus_record(path, record, "from", None)
    sources = checked_field(path, obj, "mix.sources", lambda v: isinstance(v, list) and v, "a list of sources")
    corpora = []
    for i, source in enumerate(sources):
        where = f"mix.sources[{i}]"
        check_keys(source, ["name", "weight", "corpus"], path, where)
        corpora.append(_check_corpus_record(path, source, "corpus", source["name"], prefix=f"{where}."))
    try:
        spec = MixtureSpec(
            tuple((s["name"], s["weight"]) for s in sources), record["tokens"], record["max_epochs"], by
        )
    except BuildError as e:
        raise VerificationError(path, f"mix: {e.rule}", got=e.got) from None
    return spec, tuple(corpora)


def _check_corpus_record(path, record: dict, key: str, name: str | None, prefix: str = "mix.") -> dict:
    """A corpus as ``mix`` records it (``{"name", "source", "revision", "manifest_sha256"}``), every field checked;
    ``name``: the name it must have (None: any folder name)."""
    corpus = record[key]
    check_keys(corpus, ["name", "source", "revision", "manifest_sha256"], path, f"{prefix}{key}")
    local = corpus["source"] == "local"
    rules = (
        ("name", (lambda v: v == name) if name is not None else is_folder_name, "the source's name"),
        ("source", lambda v: v == "local" or is_repo_id(v), "local, or a Hub repo id NS/NAME"),
        ("revision", lambda v: v is None if local else is_commit_id(v), "null for a local corpus, else a commit id"),
        ("manifest_sha256", is_sha256, "64 lowercase hex digits"),
    )
    for field, ok, rule in rules:
        checked_field(path, record, f"{key}.{field}", ok, rule, prefix=prefix)
    return dict(corpus)


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


@dataclass(frozen=True)
class MixturePart:
    """One train part of a source as the schedule sees it: its segment, its documents and where each block ends.

    The blocks are :func:`~hf_tokbin.formats.llmc_order.block_starts` of ``documents``; ``block_ends[j]`` is the
    llm.c stream position (in the segment) after block j, so the last is the part's train tokens.
    """

    segment: str
    documents: int
    block_ends: tuple[int, ...]

    def __post_init__(self) -> None:
        blocks = block_starts(self.documents).size - 1 if type(self.documents) is int and self.documents > 0 else 0
        ends = self.block_ends
        if (
            not blocks
            or len(ends) != blocks
            or any(type(end) is not int for end in ends)
            or ends[0] < 0
            or any(a > b for a, b in zip(ends, ends[1:]))
        ):
            raise FormatError(
                self.segment,
                "a mixture's part needs train documents and where each of its blocks ends",
                expected=f"{blocks or 'at least 1'} non-decreasing ends from 0 for {self.documents} documents",
                got=f"{len(ends)} ends",
            )

    @property
    def tokens(self) -> int:
        return self.block_ends[-1]


def mixture_targets(
    names: Sequence[str],
    shares: Sequence[Fraction],
    tokens_per_source: Sequence[int],
    total: int | None,
    max_epochs: int,
) -> tuple[int, tuple[int, ...]]:
    """``(T, each source's target tokens)``, exactly (the module's rules).

    ``shares``: :attr:`MixtureSpec.shares`; ``tokens_per_source``: each source's train llm.c stream tokens;
    ``total``: ``--tokens`` or None. A source with no train tokens, a target of 0, or a target above ``max_epochs``
    times its tokens, is refused in one line.
    """
    for name, tokens in zip(names, tokens_per_source, strict=True):
        if tokens <= 0:
            raise BuildError(
                None,
                f"--mix: source {name} has no train tokens, so no share of the mixture can come from it",
                hint=f"leave {name} out of --mix, or give its corpus a train split",
            )
    total = _largest_total(shares, tokens_per_source, 1) if total is None else total
    targets = tuple(math.floor(share * total) for share in shares)
    for name, share, target in zip(names, shares, targets, strict=True):
        if target == 0:  # the source would vanish from the mixture (and all of them from --tokens 1)
            raise BuildError(
                None,
                f"--mix: source {name}'s share {float(share):.4g} of {total:,} train tokens is less than one token",
                hint=f"give --tokens {max(math.ceil(1 / s) for s in shares):,} or more, or {name} a larger weight",
            )
    for name, share, tokens, target in zip(names, shares, tokens_per_source, targets, strict=True):
        if target > max_epochs * tokens:
            epochs = max(-(-t // n) for t, n in zip(targets, tokens_per_source))
            raise BuildError(
                None,
                f"--mix: source {name} has {tokens:,} train tokens; its share {float(share):.4g} of {total:,} "
                f"needs {target:,}, more than --max-epochs {max_epochs} allows",
                hint=f"give --tokens {_largest_total(shares, tokens_per_source, max_epochs):,} or less, "
                f"or --max-epochs {epochs}",
            )
    return total, targets


def _largest_total(shares: Sequence[Fraction], tokens_per_source: Sequence[int], epochs: int) -> int:
    """The largest T with ``floor(share_s * T) <= epochs * tokens_s`` for every source."""
    return min(math.ceil((epochs * tokens + 1) / share) - 1 for share, tokens in zip(shares, tokens_per_source))


def mixture_ranges(
    seed: int,
    sources: Sequence[Sequence[MixturePart]],
    targets: Sequence[int],
    read_ends: ReadEnds,
    rounds: int = ROUNDS,
) -> Iterator[tuple[int, DocumentRange]]:
    """``(source index, range)`` in stream order: the llm.c train stream of the mixture (the module's rules).

    ``sources[s]``: source s's train parts in part order; ``targets[s]``: its target tokens
    (:func:`mixture_targets`); ``read_ends(segment, first, count)``: the stream end of each of those documents.
    """
    streams = [
        _SourceStream(seed, s, parts, target, read_ends)
        for s, (parts, target) in enumerate(zip(sources, targets, strict=True))
    ]
    for r in range(1, rounds + 1):
        for s, stream in enumerate(streams):
            for document_range in stream.emit_to(-(-stream.target * r // rounds)):
                yield s, document_range


class _SourceStream:
    """One source's stream of documents (blocks in seeded order, epoch after epoch), emitted turn by turn.

    Holds O(blocks) numbers and at most one block's ends.
    """

    def __init__(self, seed: int, index: int, parts: Sequence[MixturePart], target: int, read_ends: ReadEnds):
        self.seed, self.index, self.target, self.read_ends = seed, index, target, read_ends
        # block k: documents firsts[k] .. stops[k] - 1 of part parts[k]'s segment, its ids starts[k] .. ends[k] - 1
        self.names = [part.segment for part in parts]
        cuts = [block_starts(part.documents) for part in parts]
        ends = [np.array(part.block_ends, dtype=np.int64) for part in parts]
        self.parts = np.repeat(np.arange(len(parts)), [e.size for e in ends])
        self.firsts = np.concatenate([c[:-1] for c in cuts] or [np.zeros(0, dtype=np.int64)])
        self.stops = np.concatenate([c[1:] for c in cuts] or [np.zeros(0, dtype=np.int64)])
        self.ends = np.concatenate(ends or [np.zeros(0, dtype=np.int64)])
        self.starts = np.concatenate([np.concatenate([[0], e[:-1]]) for e in ends] or [np.zeros(0, dtype=np.int64)])
        if target > 0 and not self.ends.any():
            raise BuildError(None, f"--mix: source {index} has no train tokens", got=f"a target of {target:,}")
        self.epoch, self.order, self.position = -1, np.zeros(0, dtype=np.int64), 0
        self.segment, self.first, self.stop, self.start, self.end = "", 0, 0, 0, 0  # the current block's rest
        self.read: Callable[[int, int], np.ndarray] | None = None  # the current block's ends, once a cut needs them
        self.emitted = 0

    def emit_to(self, mark: int) -> Iterator[DocumentRange]:
        """The next documents, until ``mark`` tokens have been emitted: one range per block."""
        while self.emitted < mark:
            if self.first == self.stop:
                self._next_block()
            need = mark - self.emitted
            if self.end - self.start < need:
                first, end = self.stop, self.end  # the rest of the block
            else:
                first, end = self._cut(self.start + need)
            yield DocumentRange(self.segment, self.first, first - self.first, self.start, end - self.start)
            self.emitted += end - self.start
            self.first, self.start = first, end

    def _next_block(self) -> None:
        self.position += 1
        if self.position >= self.order.size:
            self.epoch, self.position = self.epoch + 1, 0
            rng = np.random.default_rng([self.seed, MIX_TAG, self.index, self.epoch])
            self.order = rng.permutation(self.ends.size)
        k = int(self.order[self.position])
        self.segment, self.first, self.stop = self.names[self.parts[k]], int(self.firsts[k]), int(self.stops[k])
        self.start, self.end = int(self.starts[k]), int(self.ends[k])
        self.read = None

    def _cut(self, mark: int) -> tuple[int, int]:
        """The first document of the block's rest that ends at or past ``mark``: (the document after it, its end)."""
        read = self._reader()
        crossing = self.first + count_fitting(read, self.first, self.stop, mark - 1)
        end = int(read(crossing, 1)[0]) if crossing < self.stop else -1
        if not mark <= end <= self.end or (crossing == self.stop - 1 and end != self.end):
            raise FormatError(
                self.segment,
                "a segment's document ends must agree with its part's block ends",
                expected=f"a document of {self.first}..{self.stop - 1} ending in {mark}..{self.end} "
                f"(the block's last at {self.end})",
                got=f"document {crossing} ending at {end}" if end >= 0 else "none",
            )
        return crossing + 1, end

    def _reader(self) -> Callable[[int, int], np.ndarray]:
        """``read(first, count)`` in the current block: its rest read once if small, else each read passed on."""
        if self.read is None:
            segment, first, count = self.segment, self.first, self.stop - self.first
            if count > READ_WHOLE_BLOCK:
                self.read = lambda i, n: self.read_ends(segment, i, n)
            else:
                ends = np.asarray(self.read_ends(segment, first, count))
                if ends.shape != (count,):
                    raise FormatError(
                        segment, "a segment's ends must cover its documents", expected=f"{count} ends", got=ends.size
                    )
                self.read = lambda i, n: ends[i - first : i - first + n]
        return self.read
