"""The per-code-point proof that a fast engine gives ``tokenizers``' ids, whatever the engine.

An engine here is anything that loads a ``tokenizer.json`` and encodes a list
of texts to (flat ``uint32`` ids, ``int64`` lengths): gigatoken, or another.
The proof treats it as a black box and compares it with ``tokenizers`` on
texts built to expose what could differ. Each code point is decided on its
own probes alone, so the outcome never depends on which code points are
proven together or in which process.

What a code point must pass (all with the tokenizer as the model repo ships it,
unless said otherwise):

1. The universe: assigned in Python's Unicode tables, below plane 15
   (:func:`in_universe`). Anything else is never proven.
2. Its classes, as the pre-tokenizer's pattern reads them. A regex split sees
   a character only through the classes the pattern names (``\\p{L}``,
   ``\\p{Lu}``, ``\\p{M}``, ``\\p{P}``, ``\\s``, a bracket of literal ranges,
   ...), and the engines' Unicode tables may be of different versions. The
   pieces a pre-tokenizer makes are invisible in real ids (no merge need span
   a boundary), so each engine also loads *boundary tokenizers*: the real
   pre-tokenizer over a byte-level BPE whose only merges join one context
   character ``k`` with any byte after it (``left``) or any byte with ``k``
   after it (``right``). In a probe such as ``"A{c}a"`` the context character
   appears once, so a merge token in the ids means exactly "no boundary
   between ``k`` and ``c``". Both engines must give the same ids on every
   selected probe (:class:`BoundaryProbes`).

   Which probes suffice is decided per pattern, at check time, by
   ``tokenizers`` itself: the universe is grouped by general category and by
   ``tokenizers``' membership in each class the pattern names; every two
   groups whose memberships differ must be told apart by some probe (else the
   fast path is not proven for the pattern). An engine whose tables put ``c``
   in another group than ``tokenizers`` does then splits some selected probe
   differently. This reads the engine's classes through its pieces, so it
   assumes what any regex engine does: a character is seen through its
   general category (and white space), and the pattern's other logic is the
   regex's, trusted as the BPE merge loop is and checked on the sample.
3. End to end: ``c`` at the start, after a letter, before ``'s`` and before
   ``111`` (:data:`CODE_POINT_PROBE`): its vocabulary entry or byte fallback
   and the real normalizer's effect on it.
4. ASCII: every pair in contraction contexts (:data:`CONTRACTION_PROBE`), and
   the characters ``tokenizers`` case-folds onto ASCII letters in them.

NFC (Qwen's normalizer) composes across code points, so no code point proves
it alone. A code point is *NFC-inert* (:func:`nfc_inert`) when it is a
starter that NFC leaves alone, that never composes with what precedes it and
whose decomposition starts with such a starter; text made only of inert code
points is its own NFC under every Unicode version (the Unicode normalization
stability policy: existing characters keep their decompositions, combining
classes and compositions). A document holding any other code point is
checked by ``tokenizers``' own normalizer, and goes to ``tokenizers`` if that
changes it. The engine is given the tokenizer without its NFC step.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Callable

import numpy as np

# (flat uint32 ids, int64 lengths) of a list of texts: what every engine is compared on.
Encode = Callable[[list[str]], tuple[np.ndarray, np.ndarray]]

LAST_CODE_POINT = 0x10FFFF
# Each code point c of the universe is encoded by both engines in this text: c at the
# start and after a letter, before "'s" (a single token that splits off only if c is a
# letter, digit or space) and before "111" (one token unless c is a digit under \p{N}{1,3}).
CODE_POINT_PROBE = "{c}'s a{c}111"
# Contexts of the contractions (?i:'s|'t|'re|'ve|'m|'ll|'d): every ASCII pair xy, and
# every character tokenizers case-folds onto an ASCII letter, go through these.
CONTRACTION_PROBE = "{x}{y} '{x}{y}'{y}{x}"
FOLD_PROBE = "'{c} '{c}e '{c}l 'r{c} 'v{c} 'l{c} {c}'{c}"
_MARK = "\U0010ffff"  # a noncharacter, never in the universe: marks a class member in Replace output

# Boundary probes: the characters whose merges reveal a boundary, and what may stand around them.
# The CJK ones stand for brackets of literal ranges (DeepSeek V3 isolates Han and kana runs first).
CONTEXT_CHARACTERS = "aAbB12!? \n'日あ。"
_AFTER = ("", "a", "A", "Aa", "1", "!", " ", "'s")
_BEFORE = ("", "a", "A", "1", "!", " ")
# What may stand before a left context: o200k splits "!!ʰ" and "!!\u0300" differently, "!ʰ" and "!\u0300" alike.
_LEAD = ("?", "!", "a", " ", "1")
# The general categories \p{...} may name, and the one-letter groups of them.
GENERAL_CATEGORIES = frozenset(
    "L Lu Ll Lt Lm Lo M Mn Mc Me N Nd Nl No P Pc Pd Ps Pe Pi Pf Po S Sm Sc Sk So Z Zs Zl Zp C Cc Cf Co".split()
)


# ---------------------------------------------------------------- the universe


def in_universe(code_points: np.ndarray) -> np.ndarray:
    """Per code point, whether the proof may cover it: assigned in Python's Unicode tables, below plane 15.

    Anything else (unassigned, surrogates, the private use planes 15-16) is
    never proven: documents holding it are encoded by ``tokenizers``.
    """
    code_points = np.asarray(code_points, dtype=np.int64)
    outside = (code_points < 0) | (code_points > LAST_CODE_POINT)
    text = as_text(np.where(outside, 0xF0000, code_points))  # planes 15-16 are never in the universe
    assigned = np.fromiter(map(unicodedata.category, text), dtype="<U2", count=code_points.size) != "Cn"
    assigned &= ~outside
    return assigned & (code_points < 0xF0000) & ~((code_points >= 0xD800) & (code_points < 0xE000))


@functools.lru_cache(maxsize=1)
def code_point_universe() -> np.ndarray:
    """Every code point :func:`in_universe` (sorted ``int64``): the ~150,000 a full proof covers."""
    candidates = np.arange(0xF0000, dtype=np.int64)
    return candidates[in_universe(candidates)]


def as_text(code_points) -> str:
    return np.asarray(code_points, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")


# ---------------------------------------------------------------- patterns and their classes


_ESCAPE = re.compile(r"\\(?:[pP]\{([^}]*)\}|.)", re.DOTALL)


def pattern_classes(pattern: str) -> tuple[list[str], str | None]:
    """The classes a split pattern reads a character through, as regexes, or why the proof cannot cover it.

    Accepted: ``\\p{X}``/``\\P{X}`` of a general category, ``\\s``/``\\S``,
    ``\\r\\n\\t``, escaped ASCII punctuation, ASCII literals, and brackets of
    literal characters and ranges (each such bracket is a class of its own).
    """
    classes: set[str] = set()
    depth, start = 0, 0
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            match = _ESCAPE.match(pattern, i)
            escape = match.group(0)
            if match.group(1) is not None:
                if match.group(1) not in GENERAL_CATEGORIES:
                    return [], f"a pattern using {escape} (only general categories, \\s and literals are proven)"
                classes.add(f"\\p{{{match.group(1)}}}")
            elif escape in ("\\s", "\\S"):
                classes.add("\\s")
            elif escape[1].isalnum() and escape not in ("\\r", "\\n", "\\t"):
                return [], f"a pattern using {escape} (only general categories, \\s and literals are proven)"
            elif not escape.isascii():
                return [], "a pattern with an escaped non-ASCII literal"
            i = match.end()
            continue
        if ch == "[":
            if depth:
                return [], "a pattern with a nested bracket or a [:class:]"
            depth, start = 1, i
            i += 1 + (pattern[i + 1 : i + 2] == "^")
            if pattern[i : i + 1] == "]":  # a literal ] first in the bracket
                i += 1
            continue
        if ch == "]" and depth:
            depth = 0
            bracket = pattern[start : i + 1]
            if not bracket.isascii():  # literal ranges beyond ASCII: membership is its own class
                classes.add(bracket)
            i += 1
            continue
        if not ch.isascii():
            if not depth:
                return [], "a pattern with a non-ASCII literal outside a bracket"
        i += 1
    if depth:
        return [], "a pattern with an unclosed bracket"
    return sorted(classes), None


def class_membership(classes: list[str], code_points: np.ndarray) -> np.ndarray:
    """Per code point, a bit per class: ``tokenizers``' own regex engine's membership (an ``int64`` bit vector)."""
    from tokenizers import Regex, normalizers

    text = as_text(code_points)
    bits = np.zeros(code_points.size, dtype=np.int64)
    for bit, regex in enumerate(classes):
        marked = normalizers.Replace(Regex(regex), _MARK).normalize_str(text)
        member = np.frombuffer(marked.encode("utf-32-le"), dtype="<u4") == ord(_MARK)
        if member.size != code_points.size:  # a class matching more than one character: not a class
            raise ValueError(f"{regex} does not match one character at a time")
        bits |= member.astype(np.int64) << bit
    return bits


# ---------------------------------------------------------------- boundary tokenizers


@functools.lru_cache(maxsize=1)
def _byte_alphabet() -> tuple[str, ...]:
    """The byte-level pre-tokenizer's character for each byte (GPT-2's ``bytes_to_unicode``)."""
    from tokenizers import pre_tokenizers

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    if set(chars.values()) != set(alphabet):  # the mapping is the one tokenizers uses
        raise RuntimeError("unexpected byte-level alphabet")
    return tuple(chars[b] for b in range(256))


def boundary_tokenizer_json(pre_tokenizer: dict, side: str, context: str) -> str:
    """The real pre-tokenizer over a byte-level BPE whose only merges put ``context`` beside a byte.

    First ``context``'s own bytes merge into one token (a character is never
    split between pieces), then ``side="left"``: that token + any byte, and
    that token + each of its own partial tokens (a ``c`` starting with the
    context's first bytes has them merged so); ``"right"``: any byte + that
    token. Those last merges are the ids from :func:`boundary_merge_start` on.
    """
    alphabet = _byte_alphabet()
    vocab = {alphabet[b]: b for b in range(256)}
    symbols = [alphabet[b] for b in context.encode("utf-8")]
    pairs = []
    for symbol in symbols[1:]:  # build the context character: k1 k2 -> k12, k12 k3 -> k123
        pairs.append(("".join(symbols[: len(pairs) + 1]), symbol))
    k = "".join(symbols)
    pairs += [(k, alphabet[b]) if side == "left" else (alphabet[b], k) for b in range(256)]
    # c may start with the context's first bytes, merged as the context's are: "あ" + "い" is k, k12 84
    if side == "left":
        pairs += [(k, "".join(symbols[:n])) for n in range(2, len(symbols))]
    for left, right in pairs:
        vocab[left + right] = len(vocab)
    model = {
        "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
        "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
        "vocab": vocab, "merges": [[left, right] for left, right in pairs],
    }
    config = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
              "pre_tokenizer": pre_tokenizer, "post_processor": None, "decoder": None, "model": model}
    return json.dumps(config)


def boundary_merge_start(context: str) -> int:
    """The first id of a boundary tokenizer's context-beside-a-byte merges."""
    return 256 + len(context.encode("utf-8")) - 1


@dataclass(frozen=True)
class BoundaryProbe:
    """A probe text around a code point ``c``: ``template`` holds ``context`` once, on ``side`` of ``{c}``."""

    side: str
    context: str
    template: str

    def applies_to(self, code_point: int) -> bool:
        return chr(code_point) != self.context  # c == context: no merge joins the two


def candidate_probes() -> list[BoundaryProbe]:
    """Every probe the selection may pick: a context character right before or right after c."""
    probes = []
    for context in CONTEXT_CHARACTERS:
        for after in _AFTER:
            if context not in after[:-1]:  # the context's only merge partner is c
                probes.append(BoundaryProbe("left", context, context + "{c}" + after))
        for lead in _LEAD:
            if lead != context:
                probes.append(BoundaryProbe("left", context, lead + context + "{c}"))
        for before, after in itertools.product(_BEFORE, ("", "a")):
            if context not in before and context not in after:
                probes.append(BoundaryProbe("right", context, before + "{c}" + context + after))
    return probes


class BoundaryEngines:
    """One engine's boundary tokenizers for a pre-tokenizer, loaded on first use (``load``: JSON text to an encode)."""

    def __init__(self, pre_tokenizer: dict, load: Callable[[str], Encode]):
        self.pre_tokenizer = pre_tokenizer
        self.load = load
        self._loaded: dict[tuple[str, str], Encode] = {}

    def encode(self, probe: BoundaryProbe, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        key = (probe.side, probe.context)
        if key not in self._loaded:
            self._loaded[key] = self.load(boundary_tokenizer_json(self.pre_tokenizer, *key))
        return self._loaded[key](texts)

    def joined(self, probe: BoundaryProbe, code_points: np.ndarray) -> np.ndarray:
        """Per code point, whether ``probe`` shows ``c`` and its context in one piece (a merge token in the ids)."""
        ids, lengths = self.encode(probe, [probe.template.format(c=chr(c)) for c in code_points.tolist()])
        document = np.repeat(np.arange(lengths.size), lengths)
        joined = np.zeros(lengths.size, dtype=bool)
        joined[document[ids >= boundary_merge_start(probe.context)]] = True
        return joined


def select_probes(
    pre_tokenizer: dict, classes: list[str], reference: BoundaryEngines
) -> tuple[list[BoundaryProbe], str | None]:
    """The probes that tell apart every two groups of the universe the pattern reads differently, or why none can.

    Groups: general category (Python's tables) and ``tokenizers``' membership in
    each class. Two groups no probe tells apart must be split alike by
    ``tokenizers``' own pre-tokenizer in every context of one character each
    side drawn from the groups and :data:`CONTEXT_CHARACTERS`, and of two
    context characters on one side (:func:`_split_signatures`); then the pattern
    is taken not to tell them apart either. Chosen greedily, in a fixed
    order: the same for the same pattern and tables, in every process.
    """
    universe = code_point_universe()
    membership = class_membership(classes, universe)
    category = np.fromiter(map(unicodedata.category, as_text(universe)), dtype="<U2", count=universe.size)
    representatives: dict[tuple[str, int], int] = {}
    for c, cat, bits in zip(universe.tolist(), category.tolist(), membership.tolist()):
        representatives.setdefault((cat, bits), c)
    keys = sorted(representatives)
    reps = np.array([representatives[k] for k in keys], dtype=np.int64)
    probes = candidate_probes()
    seen = np.array([[p.applies_to(int(c)) for p in probes] for c in reps])
    joined = np.stack([reference.joined(p, reps) for p in probes], axis=1)
    # separates[p, pair]: probe p shows the two groups of the pair on different sides of a boundary.
    pairs = [(i, j) for i, j in itertools.combinations(range(len(keys)), 2) if keys[i][1] != keys[j][1]]
    if not pairs:
        return [], None
    first, second = np.array(pairs).T
    separates = (seen[first] & seen[second] & (joined[first] != joined[second])).T
    signature = _split_signatures(pre_tokenizer, reps)
    for pair in np.flatnonzero(~separates.any(axis=0)).tolist():
        i, j = pairs[pair]
        if signature(int(reps[i])) != signature(int(reps[j])):
            return [], (
                f"no probe tells U+{reps[i]:04X} ({keys[i][0]}) from U+{reps[j]:04X} ({keys[j][0]}), "
                "which the pattern splits differently"
            )
    open_pairs = separates.any(axis=0)
    chosen: list[int] = []
    while open_pairs.any():
        best = int(np.argmax((separates & open_pairs).sum(axis=1)))  # the first of the best: a fixed order
        chosen.append(best)
        open_pairs &= ~separates[best]
    return [probes[p] for p in sorted(chosen)], None


def _split_signatures(pre_tokenizer: dict, reps: np.ndarray):
    """``signature(c)``: the pieces ``tokenizers``' pre-tokenizer cuts ``u c v`` into, for every context of one
    character each side, and of two context characters on one side (one character is not enough: o200k splits "!!ʰ" and
    "!!\u0300" differently, "!ʰ" and "!\u0300" alike). Two code points split alike when their signatures are equal;
    each is computed once."""
    from tokenizers import Tokenizer

    splitter = Tokenizer.from_str(boundary_tokenizer_json(pre_tokenizer, "left", "a")).pre_tokenizer
    around = ["", *CONTEXT_CHARACTERS, *map(chr, reps.tolist())]
    two = ["".join(pair) for pair in itertools.product(CONTEXT_CHARACTERS, repeat=2)]
    one = ["", *CONTEXT_CHARACTERS]
    contexts = [*itertools.product(around, around), *itertools.product(two, one), *itertools.product(one, two)]

    @functools.cache
    def signature(c: int) -> tuple:
        return tuple(tuple(offsets for _, offsets in splitter.pre_tokenize_str(u + chr(c) + v)) for u, v in contexts)

    return signature


# ---------------------------------------------------------------- the proof of a code point


def same_ids(want: tuple[np.ndarray, np.ndarray], got: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Per text, whether two encodings of the same texts give the same ids."""
    (want_ids, want_lengths), (got_ids, got_lengths) = want, got
    if want_lengths.size != got_lengths.size:
        return np.zeros(want_lengths.size, dtype=bool)
    same = want_lengths == got_lengths
    document = np.repeat(np.flatnonzero(same), want_lengths[same])
    want_kept, got_kept = want_ids[np.repeat(same, want_lengths)], got_ids[np.repeat(same, got_lengths)]
    same[document[want_kept != got_kept]] = False
    return same


def ascii_pair_probes() -> list[str]:
    return [CONTRACTION_PROBE.format(x=chr(x), y=chr(y)) for x in range(128) for y in range(128)]


def case_folds_onto_ascii(code_points: np.ndarray) -> np.ndarray:
    """Indices of the non-ASCII code points tokenizers' regex matches case-insensitively with an ASCII letter."""
    from tokenizers import Regex, normalizers

    text = as_text(code_points)
    marked = normalizers.Replace(Regex("(?i)[a-z]"), _MARK).normalize_str(text)
    hits = np.frombuffer(marked.encode("utf-32-le"), dtype="<u4") == ord(_MARK)
    hits &= code_points >= 0x80
    return np.flatnonzero(hits) if len(marked) == len(text) else np.flatnonzero(code_points >= 0x80)


@dataclass
class CodePointProof:
    """Decides code points for one engine: True where it is NOT proven to give ``tokenizers``' ids.

    ``reference``/``engine``: the real tokenizer in each engine; ``probes``:
    the boundary probes :func:`select_probes` chose (none: the pre-tokenizer
    reads no class); ``reference_boundaries``/``engine_boundaries``: each
    engine's boundary tokenizers.
    """

    reference: Encode
    engine: Encode
    probes: list[BoundaryProbe]
    reference_boundaries: BoundaryEngines | None
    engine_boundaries: BoundaryEngines | None

    def unproven(self, code_points: np.ndarray) -> np.ndarray:
        code_points = np.asarray(code_points, dtype=np.int64)
        unproven = ~in_universe(code_points)
        inside = np.flatnonzero(~unproven)
        unproven[inside] = self._unproven_in_universe(code_points[inside])
        return unproven

    def _unproven_in_universe(self, code_points: np.ndarray) -> np.ndarray:
        unproven = np.zeros(code_points.size, dtype=bool)
        for probe in self.probes:
            seen = np.flatnonzero([probe.applies_to(c) for c in code_points.tolist()])
            if seen.size:
                texts = [probe.template.format(c=chr(c)) for c in code_points[seen].tolist()]
                same = same_ids(
                    self.reference_boundaries.encode(probe, texts), self.engine_boundaries.encode(probe, texts)
                )
                unproven[seen[~same]] = True
        unproven |= ~self._same([CODE_POINT_PROBE.format(c=chr(c)) for c in code_points.tolist()])
        ascii_chars = code_points < 128
        if ascii_chars.any() and not self._same(ascii_pair_probes()).all():
            unproven[ascii_chars] = True
        folds = case_folds_onto_ascii(code_points)
        unproven[folds] |= ~self._same([FOLD_PROBE.format(c=chr(c)) for c in code_points[folds].tolist()])
        return unproven

    def _same(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.ones(0, dtype=bool)
        return same_ids(self.reference(texts), self.engine(texts))


# ---------------------------------------------------------------- NFC


@functools.lru_cache(maxsize=1)
def _composition_seconds() -> frozenset[int]:
    """Code points that NFC may compose with the character before them (Python's tables)."""
    seconds = set()
    for c in code_point_universe().tolist():
        decomposition = unicodedata.decomposition(chr(c))
        if decomposition and not decomposition.startswith("<"):
            parts = [int(p, 16) for p in decomposition.split()]
            if len(parts) == 2 and unicodedata.normalize("NFC", chr(parts[0]) + chr(parts[1])) == chr(c):
                seconds.add(parts[1])
    seconds.update(range(0x1161, 0x1176))  # Hangul vowels and trailing consonants compose arithmetically
    seconds.update(range(0x11A8, 0x11C3))
    return frozenset(seconds)


def nfc_inert(code_points: np.ndarray) -> np.ndarray:
    """Per code point, whether text made only of such code points is its own NFC (module docstring)."""
    seconds = _composition_seconds()

    def starter(c: str) -> bool:
        return unicodedata.combining(c) == 0 and ord(c) not in seconds

    def inert(c: str) -> bool:
        return starter(c) and unicodedata.normalize("NFC", c) == c and starter(unicodedata.normalize("NFD", c)[0])

    code_points = np.asarray(code_points, dtype=np.int64)
    return np.fromiter((inert(chr(c)) for c in code_points.tolist()), dtype=bool, count=code_points.size)
