"""Encoding documents to ids: ``tokenizers`` defines them, a faster engine may reproduce them.

Every encoder here has the same batch contract, the one the build calls on
each bounded batch of a shard (:mod:`hf_tokbin.pipeline.encode`)::

    ids, lengths = encoder.encode_batch(texts)

- ``ids``: one 1-D array of unsigned integers, the ids of ``texts[0]``, then
  of ``texts[1]``, ... with no special token added (boundary tokens are each
  output format's business); ``uint32`` for :class:`DocumentEncoder`,
  ``uint8`` for :class:`ByteEncoder`;
- ``lengths``: ``int64``, ``lengths[i]`` is the id count of ``texts[i]``, so
  ``lengths.sum() == len(ids)``.

The definition. A document's ids are ``tokenizers``'
``Tokenizer.encode(text, add_special_tokens=False).ids`` with
``Tokenizer.encode_special_tokens = True``: a special token's text inside a
document (``<|endoftext|>``, ``<|begin_of_text|>``) is ordinary text, encoded
as GPT-2's ``encode_ordinary`` encodes it, never a boundary token.
``parse_special=True`` parses it as the token instead (added tokens that are
not special are parsed either way, as ``tokenizers`` does).
A ``tokenizer.json``'s ``truncation`` and ``padding`` settings are switched
off (they would cut documents and add pad ids), and BPE ``dropout`` is refused
(it makes the ids random).

The fast path, and why it never changes an id. ``gigatoken`` encodes
byte-level BPEs many times faster. It is a separate implementation: its
pre-tokenizers are hand-written state machines for the regex patterns it
recognises (GPT-2's, Llama 3's, ...), classifying characters with its own
Unicode tables (``src/pretokenize/unicode.rs``, a newer Unicode than the
Oniguruma tables ``tokenizers`` uses: U+A7CE, assigned in Unicode 16, is a
letter to gigatoken and not to ``tokenizers``). So a sample of documents
proves nothing about the next one. What can differ, and how each is closed:

1. Added tokens. ``tokenizers`` cuts them out of the text before anything
   else. gigatoken is given the tokenizer *without* added tokens, and every
   document that contains the text of an added token that would be parsed
   (none of the special ones by default) is encoded by ``tokenizers``.
   Without such text, added tokens have no effect in ``tokenizers`` either.
2. The normalizer. Only none, ``Prepend`` and one-character ``Replace``
   (SentencePiece's space to "▁") are accepted: each maps a code point on
   its own, so the per-code-point proof below covers it. Any other
   normalizer (NFC, lowercasing, ...) keeps the whole build on ``tokenizers``.
3. The pre-tokenizer. A regex split sees a character only through the
   classes the pattern names. Accepted patterns name ``\\p{L}``, ``\\p{N}``,
   ``\\s`` and ASCII literals (GPT-2's, Llama 3's, Qwen's; others keep the
   build on ``tokenizers``). At check time every code point of
   :func:`code_point_universe` (the ~150,000 code points Python's Unicode
   tables assign, planes 15-16's private use excluded) is classified by both
   engines: ``tokenizers``' classes come from its own regex engine
   (a ``Replace`` with ``\\p{L}``, ``\\p{N}``, ``\\s``), gigatoken's from the
   split its pre-tokenizer makes of ``a<c>a``, ``1<c>1`` and ``!<c>!`` (read
   from the pieces themselves, so no merge can hide a boundary). A code
   point whose classes differ is unproven. ASCII literals and case-insensitive
   contractions (``(?i:'s|'t|...)``) are covered by encoding every pair of
   ASCII characters in contraction contexts, and the non-ASCII characters that
   ``tokenizers`` case-folds onto ASCII letters (``ſ``, the Kelvin sign) in them.
   Reading gigatoken's classes through its GPT-2 pre-tokenizer assumes its
   other pre-tokenizers read the same tables; measured over the 960,901 code
   points outside the universe, the ones whose ids differ under Llama 3's and
   GPT-2's own patterns are exactly the 4,657 whose classes differ here.
4. The model (BPE only; other models keep the build on ``tokenizers``). Each code point is encoded end to end by both engines in
   :data:`CODE_POINT_PROBE` (at the start, after a letter, before ``'s`` and
   ``111``): that covers its vocabulary entry or byte fallback, and the
   classes the real pattern reads.
   The BPE merge loop itself is a deterministic function of a pre-token's
   bytes and the merge ranks; gigatoken's implementation of it is the one
   thing trusted, and it is checked on the corpus sample, :data:`PROBE_TEXTS`
   and every added token inside text.

Then every document is routed on its own (within the batch, order kept):
gigatoken if all its code points are proven and it holds no parsed
added-token text, ``tokenizers`` otherwise. A code point outside the universe
(unassigned in Python's tables, a surrogate, private use of planes 15-16) is
unproven, so a character newer than every table tested goes to ``tokenizers``.
The check runs once per build, in the parent process; its outcome (the
unproven code point ranges) travels to workers with the encoder.

If gigatoken is missing, cannot load the tokenizer, or differs on any checked
text even with this routing, encoding stays with ``tokenizers``;
``fast="require"`` makes that an error instead, ``fast="never"`` skips the check.

Worker processes. The build's worker pool pickles the encoder to each
worker. Neither engine object is pickled: the state is the
``tokenizer.json`` text, the options and the outcome of the check (the
unproven code point ranges, the parsed added-token texts and the JSON
gigatoken loads), all deterministic; each process loads its engines on first
use, ``tokenizers`` only when a document is routed to it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import time
import unicodedata
from dataclasses import dataclass
from itertools import chain

import numpy as np

from ..engines.panics import engine_output_held, is_engine_panic, panic_message
from ..errors import TokenizerError
from ..formats.build_options import FAST_MODES, FastMode
from ..formats.run_config import as_id_definition
from ..versions import package_version
from . import long_documents
from .resolve import TOKENIZER_FILE, load_tokenizer_json, vocab_size_of

# The start of a check's reason when gigatoken cannot be used at all (--fast auto says so in one line).
GIGATOKEN_UNAVAILABLE = "gigatoken cannot be used here"

# Texts every fast-path check encodes besides the corpus sample: the places
# where another engine is most likely to part from tokenizers.
PROBE_TEXTS: tuple[str, ...] = (
    "",
    "Once upon a time, there was a little girl named Lily. She loved to play outside!",
    "It's 2024: 1234567890 apples, 3.14159 pies and 1,000,000 coins; 12 345 678.",
    "  two  spaces,\n\n\ttabs\t\t and trailing spaces   \r\nthen CRLF \n",
    "I'm sure you'll see they've said she'd go; IT'S WE'RE DON'T 'S ’s",
    "café naïve Ångström façade — “quotes” ‘apostrophes’ ﬁ ligature ＦＵＬＬ width ½ ²",
    "emoji 😀👍🏽👨‍👩‍👧 flags 🇫🇷🇯🇵 and 🐈‍⬛",
    "日本語のテキスト。中文文本，한국어 텍스트",
    "Привет, мир! Γειά σου κόσμε العربية हिन्दी ไทย",
    "controls \x00\x01\x1c\x1f\x7f next\u0085line nbsp\u00a0 sep\u2028 ideo\u3000space",
    "<|endoftext|> <s> </s> <unk> [CLS] <|begin_of_text|> <pad>",
)

# Each code point c of the universe is encoded by both engines in this text: c at the
# start and after a letter, before "'s" (a single token that splits off only if c is a
# letter, digit or space) and before "111" (one token unless c is a digit under \p{N}{1,3}).
# The classes themselves are compared exactly by _class_mismatches; this checks c's own
# encoding (vocabulary entry, byte fallback) and the real pattern's reading of it.
CODE_POINT_PROBE = "{c}'s a{c}111"
# Contexts of the contractions (?i:'s|'t|'re|'ve|'m|'ll|'d): every ASCII pair xy, and
# every character tokenizers case-folds onto an ASCII letter, go through these.
CONTRACTION_PROBE = "{x}{y} '{x}{y}'{y}{x}"
_FOLD_PROBE = "'{c} '{c}e '{c}l 'r{c} 'v{c} 'l{c} {c}'{c}"

# Regex escapes an accepted pre-tokenizer pattern may use: the classes the proof
# compares (\p{L}, \p{N}, \s and their negations) and escaped ASCII literals.
_ALLOWED_ESCAPE = re.compile(r"\\(?:[pP]\{[LN]\}|[sSrnt]|[^A-Za-z0-9])")
_ANY_ESCAPE = re.compile(r"\\(?:[pP]\{[^}]*\}|.)")
_LAST_CODE_POINT = 0x10FFFF
# gigatoken sizes its tables by the largest id (about 64 bytes per id, measured with gigatoken
# 0.10): a vocabulary whose ids leave a large gap (one entry at 2**31 - 1) would make it
# allocate gigabytes, or abort the process. Beyond this span the build stays on tokenizers.
_GIGATOKEN_MAX_ID_GAP = 1 << 20
_chain = chain.from_iterable
_MARK = "\U0010ffff"  # a noncharacter, never in the universe: marks a class member in Replace output


@dataclass(frozen=True)
class FastPathCheck:
    """The outcome of :meth:`DocumentEncoder.check_fast_path`: the engine chosen, and why."""

    used: bool
    engine: str  # "gigatoken 0.10.0 (tokenizers 0.23.3 for documents it is not proven on)" or "tokenizers 0.23.3"
    reason: str
    seconds: float = 0.0  # what the check cost
    unproven_in_universe: int = 0  # universe code points left to tokenizers (all others outside it are too)


def _engine_name(package: str) -> str:
    return f"{package} {package_version(package) or '(version unknown)'}"


def gigatoken_unavailable() -> str | None:
    """Why gigatoken cannot be used in this process (not installed, a broken install), or None if it can.

    Its version must be known too: the proof holds for the version it was made with.
    """
    try:
        import awkward  # noqa: F401 - gigatoken returns its ids as awkward arrays
        import gigatoken  # noqa: F401
    except Exception as e:  # noqa: BLE001 - ImportError, or whatever a broken extension module raises
        if isinstance(e, ModuleNotFoundError) and e.name in ("gigatoken", "awkward"):
            return f"{e.name} is not installed"
        return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}".rstrip(": ")
    if package_version("gigatoken") is None:
        return "no package metadata, so no version to prove it for: a broken install"
    return None


class DocumentEncoder:
    """Encode batches of documents with a ``tokenizers.Tokenizer``'s ids, fast where proven identical.

    ``source`` names the tokenizer in error messages only. ``parse_special``
    parses special-token text inside documents as the special token (default:
    ordinary text).
    """

    def __init__(self, tokenizer, fast: FastMode = "auto", source: str = "tokenizer.json", parse_special: bool = False):
        if fast not in FAST_MODES:
            raise TokenizerError(source, "unknown fast-path mode", expected=" or ".join(FAST_MODES), got=fast)
        self.source = source
        self.fast = fast
        self.parse_special = bool(parse_special)
        dropout = getattr(tokenizer.model, "dropout", None)
        if dropout:  # tokenizers then skips merges at random: two encodings of one text differ
            raise TokenizerError(
                source, "BPE dropout makes the ids random (each encoding of a text differs), so no release could be reproduced", got=f"model.dropout {dropout:.3g}", hint='set "dropout": null in tokenizer.json'
            )
        self._tokenizer = as_id_definition(tokenizer, self.parse_special)
        self._tokenizer_json: str | None = None
        self._gigatoken = None
        self._check = FastPathCheck(False, _engine_name("tokenizers"), "fast path not checked yet")
        self._decided: tuple[tuple[int, int], ...] = ()  # inclusive code point ranges decided by the check (ASCII, outside the universe)
        self._unproven: tuple[tuple[int, int], ...] = ()  # of those, the ranges routed to tokenizers
        self._parsed_added: tuple[str, ...] = ()  # added-token texts whose documents are routed to tokenizers
        self._gigatoken_json: str | None = None  # what gigatoken loads: tokenizer.json without added tokens
        self._router = None

    @classmethod
    def from_tokenizer_json(cls, path: str | os.PathLike, fast: FastMode = "auto", parse_special: bool = False) -> "DocumentEncoder":
        """Load ``tokenizer.json`` (or a folder holding one) with ``tokenizers``."""
        path = os.fspath(path)
        if os.path.isdir(path):
            path = os.path.join(path, TOKENIZER_FILE)
        return cls(load_tokenizer_json(path), fast, source=path, parse_special=parse_special)

    # -------------------------------------------------------------- state

    @property
    def tokenizer_json(self) -> str:
        """The tokenizer's JSON text, computed once: what pickling carries."""
        if self._tokenizer_json is None:
            self._tokenizer_json = self.tokenizer.to_str()
        return self._tokenizer_json

    def __getstate__(self) -> dict:
        # Only what decides the ids; engines are reloaded per process (gigatoken's do not pickle).
        return {
            "tokenizer_json": self.tokenizer_json,
            "fast": self.fast,
            "parse_special": self.parse_special,
            "check": dataclasses.replace(self._check, seconds=0.0),  # timing must not change the fingerprint
            "decided": self._decided,
            "unproven": self._unproven,
            "parsed_added": self._parsed_added,
            # Made once by the check: a worker loads gigatoken without parsing tokenizer.json again.
            "gigatoken_json": self._gigatoken_json if self._check.used else None,
        }

    def __setstate__(self, state: dict) -> None:
        self.source = "tokenizer.json"
        self.fast = state["fast"]
        self.parse_special = state["parse_special"]
        self._tokenizer_json = state["tokenizer_json"]
        self._tokenizer = None  # loaded on first use
        self._gigatoken = None
        self._check = state["check"]
        self._decided = state["decided"]
        self._unproven = state["unproven"]
        self._parsed_added = state["parsed_added"]
        self._gigatoken_json = state["gigatoken_json"]
        self._router = None

    @property
    def tokenizer(self):
        """The ``tokenizers.Tokenizer``: the definition of the ids."""
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            self._tokenizer = as_id_definition(Tokenizer.from_str(self._tokenizer_json), self.parse_special)
        return self._tokenizer

    @property
    def engine(self) -> str:
        """The engines encode_batch uses now, e.g. ``"gigatoken 0.10.0 (tokenizers 0.23.3 for ...)"`` or ``"tokenizers 0.23.3"``."""
        return self._check.engine

    @property
    def vocab_size(self) -> int:
        """Largest id + 1 (see :func:`hf_tokbin.tokenizer.vocab_size_of`)."""
        return vocab_size_of(self.tokenizer)

    def parsed_added_tokens(self) -> list[str]:
        """The added tokens ``tokenizers`` cuts out of document text: all, or only the non-special ones."""
        tokens = self.tokenizer.get_added_tokens_decoder().values()
        return [t.content for t in tokens if self.parse_special or not t.special]

    # -------------------------------------------------------------- fast path

    def check_fast_path(self, sample_texts=()) -> FastPathCheck:
        """Decide the engine: gigatoken for the documents it is proven to encode identically.

        Builds the per-code-point proof (module docstring), then checks the
        routed encoding on ``sample_texts`` (a sample of the corpus),
        :data:`PROBE_TEXTS` and each added token inside text. With
        ``fast="require"`` a failed check raises :class:`TokenizerError`.
        """
        started = time.perf_counter()
        if self.fast == "never":
            self._check = FastPathCheck(False, _engine_name("tokenizers"), "fast path disabled (fast='never')")
            return self._check
        self._gigatoken, self._gigatoken_json, self._router, self._decided, self._unproven = None, None, None, (), ()
        self._parsed_added = tuple(self.parsed_added_tokens())
        texts = [*sample_texts, *PROBE_TEXTS, *self._added_token_probes()]
        config = json.loads(self.tokenizer_json)
        unavailable = gigatoken_unavailable()
        reason = f"{GIGATOKEN_UNAVAILABLE} ({unavailable})" if unavailable else self._unsupported_shape(config)
        unproven_count = 0
        if reason is None:
            try:
                with engine_output_held():  # a panic's report is dropped: it becomes the reason
                    self._load_gigatoken(config)
                    self._decided, self._unproven = _ascii_at_check(self._prove)
                    reason = _first_difference(texts, self._encode_with_tokenizers(texts), self._encode_routed(texts))
                    unproven_count = self._router.unproven
            except ImportError:
                reason = "gigatoken is not installed (pip install gigatoken)"
            except Exception as e:  # gigatoken raises RuntimeError (and others) for what it does not implement
                reason = f"gigatoken cannot load or run this tokenizer: {str(e).splitlines()[0][:200]}"
            except BaseException as e:  # a Rust panic in either engine (pyo3's PanicException), on a checked text
                if not is_engine_panic(e):
                    raise
                reason = f"an engine panicked on a checked text: {panic_message(e)}"
        seconds = time.perf_counter() - started
        if reason is None:
            self._check = FastPathCheck(
                True,
                f"{_engine_name('gigatoken')} ({_engine_name('tokenizers')} for documents it is not proven on)",
                f"identical ids on {len(texts)} texts; each code point is proven when a document first holds it, "
                f"{unproven_count} of the {self._router.decided} met so far unproven "
                "(documents holding one are encoded by tokenizers)",
                seconds,
                unproven_count,
            )
        else:
            self._gigatoken, self._router, self._decided, self._unproven = None, None, (), ()
            self._check = FastPathCheck(False, _engine_name("tokenizers"), reason, seconds)
            if self.fast == "require":
                raise TokenizerError(self.source, "fast path required but unavailable", expected="gigatoken ids identical to tokenizers", got=reason)
        return self._check

    def _unsupported_shape(self, config: dict) -> str | None:
        """Why the proof cannot cover this tokenizer's model, normalizer or pre-tokenizer (``config``: tokenizer.json), or None."""
        model = (config.get("model") or {}).get("type")
        if model != "BPE":  # the merge loop is what the proof trusts; other models are not covered
            return f"fast path not proven for the model {model} (only BPE is)"
        entries, id_space = self.tokenizer.get_vocab_size(with_added_tokens=True), vocab_size_of(self.tokenizer)
        if id_space > 2 * entries + _GIGATOKEN_MAX_ID_GAP:
            return f"fast path not used: the ids leave a large gap ({entries:,} entries, largest id {id_space - 1:,}), and gigatoken's tables grow with the largest id"
        normalizer = config.get("normalizer")
        for step in _steps(normalizer, "normalizers"):
            kind = step.get("type")
            if kind == "Prepend" or (kind == "Replace" and len(step.get("pattern", {}).get("String") or "") == 1):
                continue
            return f"fast path not proven for the normalizer {kind} (only Prepend and one-character Replace are)"
        parsed = set(self._parsed_added)
        if normalizer and any(t.normalized for t in self.tokenizer.get_added_tokens_decoder().values() if t.content in parsed):
            return "fast path not proven for added tokens matched on normalized text"
        for step in _steps(config.get("pre_tokenizer"), "pretokenizers"):
            kind = step.get("type")
            if kind == "ByteLevel" or kind == "Metaspace":
                continue
            pattern = (step.get("pattern") or {}).get("Regex") if kind == "Split" else None
            if pattern is None:
                return f"fast path not proven for the pre-tokenizer {kind}"
            unknown = set(_ANY_ESCAPE.findall(pattern)) - set(_ALLOWED_ESCAPE.findall(pattern))
            if not pattern.isascii():
                return "fast path not proven for a pattern with non-ASCII literals"
            if unknown or "[:" in pattern:
                used = ", ".join(sorted(unknown) or ["[:class:]"])
                return f"fast path not proven for a pattern using {used} (only \\p{{L}}, \\p{{N}}, \\s and ASCII literals are)"
        return None

    def _added_token_probes(self) -> list[str]:
        """Each added token glued to words, after a space and doubled: where matching rules differ."""
        contents = [token.content for token in self.tokenizer.get_added_tokens_decoder().values()]
        return [f"a{c}b {c} c {c}{c}\n{c}" for c in contents]

    def _load_gigatoken(self, config: dict | None = None):
        """gigatoken with the tokenizer minus its added tokens: documents holding parsed added-token text never reach it."""
        if self._gigatoken is None:
            import gigatoken

            if self._gigatoken_json is None:
                config = dict(config or json.loads(self.tokenizer_json))
                config["added_tokens"] = []
                self._gigatoken_json = json.dumps(config)
            self._gigatoken = gigatoken.Tokenizer.from_json(self._gigatoken_json)
        return self._gigatoken

    def _route(self, texts: list[str]) -> list[int]:
        """Indices of the texts gigatoken is not proven on: an unproven code point, or parsed added-token text."""
        return self._get_router().unproven_texts(texts)

    def _get_router(self) -> "_Router":
        if self._router is None:
            self._router = _Router(self._decided, self._unproven, self._parsed_added, self._prove)
        return self._router

    def encode_utf8(self, offsets: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`encode_batch` of documents given as one UTF-8 buffer (``uint8``, valid UTF-8) and their ``int64`` offsets into it.

        The buffer goes to gigatoken whole, as an awkward string array: no
        Python ``str`` per document (30% of the encoding time at 200 MB).
        None where the batch needs :meth:`encode_batch`'s per-document way:
        the fast path is not in use, a document may be long
        (:mod:`~hf_tokbin.tokenizer.long_documents`), or a document holds
        unproven text.
        """
        lengths = np.diff(offsets)
        if not self._check.used or not lengths.size or int(lengths.max()) > long_documents.PIECE_CHARS:  # bytes >= characters
            return None
        if not self._get_router().all_proven(data):
            return None
        import awkward as ak

        chars = ak.contents.NumpyArray(data, parameters={"__array__": "char"})
        texts = ak.Array(ak.contents.ListOffsetArray(ak.index.Index64(offsets), chars, parameters={"__array__": "string"}))
        return _encode_with_gigatoken(self._load_gigatoken(), texts)

    def _prove(self, code_points: np.ndarray) -> np.ndarray:
        """True where gigatoken is NOT proven on a code point: outside the universe, or :func:`prove_code_points` says so."""
        unproven = ~in_universe(code_points)
        unproven[~unproven] = prove_code_points(self.tokenizer, self._load_gigatoken(), code_points[~unproven])
        return unproven

    # -------------------------------------------------------------- encoding

    def encode_batch(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Ids of every text, concatenated (``uint32``), and each text's id count (``int64``)."""
        if self._check.used:
            return self._encode_routed(texts)
        return self._encode_with_tokenizers(texts)

    def _encode_routed(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """gigatoken for the proven documents, tokenizers for the others, in the order given."""
        slow = self._route(texts)
        if not slow:
            return _encode_with_gigatoken(self._load_gigatoken(), texts)
        if len(slow) == len(texts):
            return self._encode_with_tokenizers(texts)
        slow_index = np.asarray(slow, dtype=np.int64)
        fast_index = np.setdiff1d(np.arange(len(texts), dtype=np.int64), slow_index, assume_unique=True)
        fast_ids, fast_lengths = _encode_with_gigatoken(self._load_gigatoken(), [texts[i] for i in fast_index])
        slow_ids, slow_lengths = self._encode_with_tokenizers([texts[i] for i in slow])
        lengths = np.empty(len(texts), dtype=np.int64)
        lengths[fast_index], lengths[slow_index] = fast_lengths, slow_lengths
        starts = np.cumsum(lengths) - lengths
        ids = np.empty(int(lengths.sum()), dtype=np.uint32)
        for index, part_ids, part_lengths in ((fast_index, fast_ids, fast_lengths), (slow_index, slow_ids, slow_lengths)):
            # Each id of the part moves by (its document's place in the output - its place in the part).
            part_starts = np.cumsum(part_lengths) - part_lengths
            ids[np.repeat(starts[index] - part_starts, part_lengths) + np.arange(part_ids.size)] = part_ids
        return ids, lengths

    def _encode_with_tokenizers(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        # encode_batch_fast skips offset tracking, which we do not use; same ids.
        encodings = self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)
        per_text = [e.ids for e in encodings]
        lengths = np.fromiter(map(len, per_text), dtype=np.int64, count=len(per_text))
        ids = np.fromiter(_chain(per_text), dtype=np.uint32, count=int(lengths.sum()))
        return ids, lengths


_UNDECIDED, _PROVEN, _UNPROVEN = 0, 1, 2  # a code point's state in a process's router


class _Router:
    """Finds the documents of a batch that must go to tokenizers, without a Python loop over characters.

    Code points: the batch as one UTF-32 array, looked up in a table of the
    1,114,112 code points (undecided, proven or unproven); an all-ASCII batch
    skips that when ASCII is proven. A code point no document of this process
    held before is proven then (``prove``: :func:`prove_code_points`, which
    decides each code point on its own, so the outcome never depends on the
    batch, the process or what else it met). Added-token text: one regex of
    the parsed tokens' texts.
    """

    def __init__(self, decided, unproven, added_tokens: tuple[str, ...], prove):
        self.state = np.full(_LAST_CODE_POINT + 1, _UNDECIDED, dtype=np.int8)
        for ranges, value in ((decided, _PROVEN), (unproven, _UNPROVEN)):
            for first, last in ranges:
                self.state[first : last + 1] = value
        self.prove = prove
        self.ascii_proven = bool((self.state[:128] == _PROVEN).all())
        # The code points decided so far, and how many of them are unproven: what FastPathCheck reports.
        self.decided = int((self.state != _UNDECIDED).sum())
        self.unproven = int((self.state == _UNPROVEN).sum())
        alternatives = [re.escape(t) for t in sorted(set(added_tokens), key=len, reverse=True) if t]
        self.added_search = re.compile("|".join(alternatives)).search if alternatives else None

    def unproven_texts(self, texts: list[str]) -> list[int]:
        joined = "".join(texts)
        found = set()
        if not (self.ascii_proven and joined.isascii()):
            bad = np.flatnonzero(self._states(joined) == _UNPROVEN)
            if bad.size:
                ends = np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)))
                found.update(np.unique(np.searchsorted(ends, bad, side="right")).tolist())
        if self.added_search is not None:
            search = self.added_search
            found.update(i for i, text in enumerate(texts) if search(text) is not None)
        return sorted(found)

    def all_proven(self, utf8: np.ndarray) -> bool:
        """Whether every document of a batch given as its valid UTF-8 bytes (``uint8``) may go to gigatoken: what :meth:`unproven_texts` finds in none.

        Added-token text is searched for in the batch as a whole: a match
        across two documents only sends the batch the per-document way.
        """
        ascii_only = not utf8.size or int(utf8.max()) < 0x80
        text = None
        if not (self.ascii_proven and ascii_only):
            text = utf8.tobytes().decode("utf-8")
            if (self._states(text) == _UNPROVEN).any():
                return False
        if self.added_search is not None:
            text = utf8.tobytes().decode("utf-8") if text is None else text
            return self.added_search(text) is None
        return True

    def _states(self, text: str) -> np.ndarray:
        """Each code point's state, the undecided ones decided first."""
        # surrogatepass: a lone surrogate becomes its code point, which is never proven.
        codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
        states = self.state[codes]
        if (states == _UNDECIDED).any():
            self._decide(np.unique(codes[states == _UNDECIDED]))
            states = self.state[codes]
        return states

    def _decide(self, code_points: np.ndarray) -> None:
        unproven = self.prove(code_points.astype(np.int64))
        self.state[code_points] = np.where(unproven, _UNPROVEN, _PROVEN)
        self.decided += int(code_points.size)
        self.unproven += int(unproven.sum())


def _steps(component: dict | None, key: str) -> list[dict]:
    """A normalizer or pre-tokenizer as its flat list of steps (a Sequence unrolled)."""
    if not component:
        return []
    if component.get("type") == "Sequence":
        return [step for inner in component.get(key, []) for step in _steps(inner, key)]
    return [component]


def _encode_with_gigatoken(engine, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """gigatoken returns an awkward array (one flat buffer plus offsets): unpack it without copying per token."""
    import awkward as ak

    rows = engine.encode_batch(texts if isinstance(texts, ak.Array) else list(texts))  # in a worker process gigatoken encodes on the calling thread
    if len(rows) != len(texts):  # never align ids to the wrong documents
        raise RuntimeError(f"gigatoken returned {len(rows)} documents for {len(texts)} texts")
    ids = np.ascontiguousarray(ak.to_numpy(ak.flatten(rows, axis=1)), dtype=np.uint32)
    lengths = ak.to_numpy(ak.num(rows, axis=1)).astype(np.int64, copy=False)
    return ids, lengths


# ---------------------------------------------------------------- the per-code-point proof


def in_universe(code_points: np.ndarray) -> np.ndarray:
    """Per code point, whether the proof may cover it: assigned in Python's Unicode tables, below plane 15.

    Anything else (unassigned, surrogates, the private use planes 15-16) is
    never proven: documents holding it are encoded by ``tokenizers``.
    """
    code_points = np.asarray(code_points, dtype=np.int64)
    category = unicodedata.category
    assigned = np.fromiter((category(chr(c)) != "Cn" for c in code_points.tolist()), dtype=bool, count=code_points.size)
    return assigned & (code_points < 0xF0000) & ~((code_points >= 0xD800) & (code_points < 0xE000))


@functools.lru_cache(maxsize=1)
def code_point_universe() -> np.ndarray:
    """Every code point :func:`in_universe` (sorted ``int64``): the ~150,000 a full proof covers."""
    candidates = np.arange(0xF0000, dtype=np.int64)
    return candidates[in_universe(candidates)]


def prove_code_points(tokenizer, engine, code_points: np.ndarray | None = None) -> np.ndarray:
    """For each code point (default: :func:`code_point_universe`), True where gigatoken is NOT proven identical.

    Each code point is decided by its own probes alone, never by a group it
    was tested with: the outcome is the same whichever code points are proven
    together, in whichever process (documents are proven as they come).
    """
    code_points = code_point_universe() if code_points is None else np.asarray(code_points, dtype=np.int64)
    unproven = _class_mismatches(code_points)
    unproven |= ~_same_ids(tokenizer, engine, [CODE_POINT_PROBE.format(c=chr(c)) for c in code_points.tolist()])
    ascii_chars = code_points < 128
    if ascii_chars.any() and not _same_ids(tokenizer, engine, _ascii_pair_probes()).all():
        unproven[ascii_chars] = True
    folds = _case_folds_onto_ascii(code_points)
    unproven[folds] |= ~_same_ids(tokenizer, engine, [_FOLD_PROBE.format(c=chr(c)) for c in code_points[folds].tolist()])
    return unproven


def _ascii_pair_probes() -> list[str]:
    return [CONTRACTION_PROBE.format(x=chr(x), y=chr(y)) for x in range(128) for y in range(128)]


def _ascii_at_check(prove) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """(decided, unproven) code point ranges before any document: ASCII, proven by ``prove``.

    Every other code point is proven in the process that first meets it (:class:`_Router`).
    """
    unproven = np.zeros(_LAST_CODE_POINT + 1, dtype=bool)
    unproven[:128] = prove(np.arange(128, dtype=np.int64))
    return ((0, 127),), _ranges(unproven)


def _ranges(mask: np.ndarray) -> tuple[tuple[int, int], ...]:
    """The runs of True in ``mask`` as inclusive (first, last) code point pairs."""
    edges = np.flatnonzero(np.diff(np.concatenate(([False], mask, [False])).astype(np.int8)))
    return tuple((int(lo), int(hi) - 1) for lo, hi in zip(edges[0::2], edges[1::2]))


def _as_text(code_points: np.ndarray) -> str:
    return np.asarray(code_points, dtype="<u4").tobytes().decode("utf-32-le")


def _tokenizers_classes(universe: np.ndarray) -> np.ndarray:
    """Per code point, tokenizers' own regex classes as bits: 1 \\p{L}, 2 \\p{N}, 4 neither and not \\s."""
    from tokenizers import Regex, normalizers

    text = _as_text(universe)
    member = {}
    for name, atom in (("L", r"\p{L}"), ("N", r"\p{N}"), ("s", r"\s")):
        marked = normalizers.Replace(Regex(atom), _MARK).normalize_str(text)
        member[name] = np.frombuffer(marked.encode("utf-32-le"), dtype="<u4") == ord(_MARK)
    other = ~(member["L"] | member["N"] | member["s"])
    return member["L"] * 1 + member["N"] * 2 + other * 4


def _gigatoken_classes(universe: np.ndarray) -> np.ndarray:
    """Per code point, gigatoken's classes read from its GPT-2 pre-tokenizer's pieces (same bits as above).

    c is a letter if ``a c a`` stays one piece, a number if ``1 c 1`` does,
    other (punctuation, symbols, ...) if ``! c !`` does, white space if none does.
    """
    import gigatoken

    width = 1 + (universe >= 0x80) + (universe >= 0x800) + (universe >= 0x10000)  # UTF-8 bytes of each c
    classes = np.zeros(universe.size, dtype=np.int64)
    for bit, context in ((1, "a"), (2, "1"), (4, "!")):
        triples = np.empty((universe.size, 3), dtype=np.int64)
        triples[:, 0] = triples[:, 2] = ord(context)
        triples[:, 1] = universe
        data = _as_text(triples.ravel()).encode("utf-8")
        piece_ends = np.cumsum(np.fromiter(map(len, gigatoken.pretokenizer(data)), dtype=np.int64))
        boundary = np.zeros(len(data) + 1, dtype=bool)
        boundary[piece_ends] = True
        starts = np.cumsum(width + 2) - (width + 2)
        joined = ~boundary[starts + 1] & ~boundary[starts + 1 + width]
        classes += joined * bit
    return classes


def _class_mismatches(universe: np.ndarray) -> np.ndarray:
    """True where gigatoken's \\p{L} / \\p{N} / \\s class of a code point differs from tokenizers'."""
    return _tokenizers_classes(universe) != _gigatoken_classes(universe)


def _case_folds_onto_ascii(universe: np.ndarray) -> np.ndarray:
    """Indices of the non-ASCII code points tokenizers' regex matches case-insensitively with an ASCII letter."""
    from tokenizers import Regex, normalizers

    text = _as_text(universe)
    marked = normalizers.Replace(Regex("(?i)[a-z]"), _MARK).normalize_str(text)
    hits = np.frombuffer(marked.encode("utf-32-le"), dtype="<u4") == ord(_MARK)
    hits &= universe >= 0x80
    return np.flatnonzero(hits) if len(marked) == len(text) else np.flatnonzero(universe >= 0x80)


def _same_ids(tokenizer, engine, texts: list[str]) -> np.ndarray:
    """Per text, whether tokenizers and gigatoken give the same ids."""
    if not texts:
        return np.ones(0, dtype=bool)
    want = [e.ids for e in tokenizer.encode_batch_fast(texts, add_special_tokens=False)]
    want_lengths = np.fromiter(map(len, want), dtype=np.int64, count=len(want))
    want_ids = np.fromiter(_chain(want), dtype=np.uint32, count=int(want_lengths.sum()))
    got_ids, got_lengths = _encode_with_gigatoken(engine, texts)
    same = want_lengths == got_lengths
    # Where the counts agree, compare id by id; a text with any differing id is not the same.
    document = np.repeat(np.flatnonzero(same), want_lengths[same])
    want_kept, got_kept = want_ids[np.repeat(same, want_lengths)], got_ids[np.repeat(same, got_lengths)]
    same[document[want_kept != got_kept]] = False
    return same


def _first_difference(texts, expected: tuple[np.ndarray, np.ndarray], got: tuple[np.ndarray, np.ndarray]) -> str | None:
    """None if both encodings are identical, else which text differs first and how."""
    (expected_ids, expected_lengths), (got_ids, got_lengths) = expected, got
    if np.array_equal(expected_lengths, got_lengths) and np.array_equal(expected_ids, got_ids):
        return None
    if len(got_lengths) != len(expected_lengths):  # first: the loop below indexes both by text
        return f"gigatoken returned {len(got_lengths)} documents for {len(expected_lengths)} texts"
    expected_ends, got_ends = np.cumsum(expected_lengths), np.cumsum(got_lengths)
    for i, text in enumerate(texts):
        want = expected_ids[expected_ends[i] - expected_lengths[i] : expected_ends[i]]
        have = got_ids[got_ends[i] - got_lengths[i] : got_ends[i]]
        if not np.array_equal(want, have):
            return f"gigatoken differs from tokenizers on text {i} {text[:40]!r}: ids {have[:8].tolist()}... instead of {want[:8].tolist()}..."
    return f"gigatoken returned {len(got_ids)} ids for {len(expected_ids)}"  # same documents, extra ids past the last one


class ByteEncoder:
    """The 256-entry byte tokenizer: a text's ids are its UTF-8 bytes (``uint8``)."""

    vocab_size = 256
    engine = "utf-8 bytes"

    def check_fast_path(self, sample_texts=()) -> FastPathCheck:
        """Nothing to check: bytes are their own definition."""
        return FastPathCheck(False, self.engine, "the byte tokenizer needs no fast path")

    def encode_utf8(self, offsets: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`encode_batch` of documents given as one UTF-8 buffer and their offsets into it: the buffer is the ids."""
        return data, np.diff(offsets)

    def encode_batch(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        encoded = [text.encode("utf-8") for text in texts]
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        # frombuffer shares the joined bytes: the array is read-only, which the writers never mind.
        return np.frombuffer(b"".join(encoded), dtype=np.uint8), lengths


def encoder_for(tokenizer_json: str | os.PathLike | None, fast: FastMode = "auto", parse_special: bool = False) -> DocumentEncoder | ByteEncoder:
    """The encoder for a resolved tokenizer: ``None`` (no tokenizer.json) is the byte tokenizer.

    ``parse_special``: special-token text inside documents becomes the special
    token (``--parse-special-tokens``); by default it is ordinary text. The byte
    tokenizer has no special tokens.
    """
    if tokenizer_json is None:
        return ByteEncoder()
    return DocumentEncoder.from_tokenizer_json(tokenizer_json, fast, parse_special=parse_special)
