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
   else and encodes each piece between them on its own. gigatoken is given
   the tokenizer *without* added tokens. Where every parsed token (none of
   the special ones by default) matches as plain text, the router cuts a
   document the same way (:meth:`_Router.pieces`) and routes each piece;
   otherwise a document holding parsed added-token text is encoded by
   ``tokenizers``. Without such text, added tokens have no effect in
   ``tokenizers`` either.
2. The normalizer. None, ``Prepend`` and one-character ``Replace``
   (SentencePiece's space to "▁") map a code point on its own, so the
   per-code-point proof covers them. ``NFC`` alone (Qwen's) composes across
   code points: gigatoken gets the tokenizer without it, and a document
   holding a code point that NFC could touch is checked by ``tokenizers``'
   own normalizer first (:mod:`hf_tokbin.tokenizer.proof`). Any other
   normalizer (NFKC, lowercasing, ...) keeps the build on ``tokenizers``.
3. The pre-tokenizer. A regex split sees a character only through the
   classes the pattern names: general categories (``\\p{L}``, ``\\p{Lu}``,
   ``\\p{M}``, ``\\p{P}``, ...), ``\\s`` and brackets of literal ranges
   (GPT-2's, Llama 3's, Qwen's, DeepSeek V3's and o200k's patterns; others
   keep the build on ``tokenizers``). Each code point's classes are compared
   through the pieces both engines make of probe texts, read with boundary
   tokenizers (:mod:`hf_tokbin.tokenizer.proof`), so no merge can hide a
   boundary; which probes suffice is decided for the pattern by
   ``tokenizers`` itself. ASCII literals and case-insensitive contractions
   (``(?i:'s|'t|...)``) are covered by encoding every pair of ASCII
   characters in contraction contexts, and the non-ASCII characters that
   ``tokenizers`` case-folds onto ASCII letters (``ſ``, the Kelvin sign) in them.
4. The model (BPE only; other models keep the build on ``tokenizers``). Each code point is encoded end to end by both
   engines in :data:`~hf_tokbin.tokenizer.proof.CODE_POINT_PROBE` (at the start, after a letter, before ``'s`` and
   ``111``): that covers its vocabulary entry or byte fallback, and the classes the real pattern reads. The BPE merge
   loop itself is a deterministic function of a pre-token's bytes and the merge ranks; gigatoken's implementation of it
   is the one thing trusted, and it is checked on the corpus sample, :data:`PROBE_TEXTS` and every added token inside
   text.

Then every document (or piece between added tokens) is routed on its own
(within the batch, order kept): gigatoken if all its code points are proven
and it holds no parsed added-token text, ``tokenizers`` otherwise. A code point outside the universe
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
from dataclasses import dataclass
from itertools import chain

import numpy as np

from ..engines.panics import engine_output_held, is_engine_panic, panic_message
from ..errors import TokenizerError
from ..formats.build_options import FAST_MODES, FastMode
from ..formats.run_config import as_id_definition
from ..versions import package_version
from . import long_documents, proof
from .info import TOKENIZER_FILE, load_tokenizer_json, take_resolved_tokenizer, vocab_size_of

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

# gigatoken sizes its tables by the largest id (about 64 bytes per id, measured with gigatoken
# 0.10): a vocabulary whose ids leave a large gap (one entry at 2**31 - 1) would make it
# allocate gigabytes, or abort the process. Beyond this span the build stays on tokenizers.
_GIGATOKEN_MAX_ID_GAP = 1 << 20
_chain = chain.from_iterable
GPT2_CLASSES = ("\\p{L}", "\\p{N}", "\\s")  # what ByteLevel's own regex (use_regex) reads


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
        self._vocab_size: int | None = None  # largest id + 1, computed once
        self.parse_special = bool(parse_special)
        dropout = getattr(tokenizer.model, "dropout", None)
        if dropout:  # tokenizers then skips merges at random: two encodings of one text differ
            raise TokenizerError(
                source,
                "BPE dropout makes the ids random (each encoding of a text differs), "
                "so no release could be reproduced",
                got=f"model.dropout {dropout:.3g}",
                hint='set "dropout": null in tokenizer.json',
            )
        self._tokenizer = as_id_definition(tokenizer, self.parse_special)
        self._tokenizer_json: str | None = None
        self._gigatoken = None
        self._check = FastPathCheck(False, _engine_name("tokenizers"), "fast path not checked yet")
        # inclusive code point ranges decided by the check (ASCII, outside the universe)
        self._decided: tuple[tuple[int, int], ...] = ()
        self._unproven: tuple[tuple[int, int], ...] = ()  # of those, the ranges routed to tokenizers
        self._parsed_added: tuple[str, ...] = ()  # added-token texts whose documents are routed to tokenizers
        self._gigatoken_json: str | None = None  # what gigatoken loads: tokenizer.json without added tokens (nor NFC)
        self._probes: tuple[proof.BoundaryProbe, ...] = ()  # the boundary probes chosen for the pattern
        self._classes: list[str] = []  # the classes the pre-tokenizer reads (regexes)
        self._cut_added = False  # documents are cut at parsed added-token text, the pieces routed on their own
        self._nfc = False  # the normalizer is NFC: documents NFC could change are checked by tokenizers' own
        self._router = None
        self._code_point_proof = None
        self.documents_by_engine = [0, 0]  # documents this process encoded with gigatoken, with tokenizers

    @classmethod
    def from_tokenizer_json(
        cls, path: str | os.PathLike, fast: FastMode = "auto", parse_special: bool = False
    ) -> "DocumentEncoder":
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
            "probes": self._probes,
            "nfc": self._nfc,
            "cut_added": self._cut_added,
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
        self._probes = state["probes"]
        self._nfc = state["nfc"]
        self._cut_added = state["cut_added"]
        self._router = None
        self._code_point_proof = None
        self.documents_by_engine = [0, 0]

    @property
    def tokenizer(self):
        """The ``tokenizers.Tokenizer``: the definition of the ids."""
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            self._tokenizer = as_id_definition(Tokenizer.from_str(self._tokenizer_json), self.parse_special)
        return self._tokenizer

    @property
    def engine(self) -> str:
        """The engines encode_batch uses now, e.g. ``"gigatoken 0.10.0 (tokenizers 0.23.3 for ...)"`` or
        ``"tokenizers 0.23.3"``."""
        return self._check.engine

    @property
    def vocab_size(self) -> int:
        """Largest id + 1 (see :func:`hf_tokbin.tokenizer.vocab_size_of`)."""
        if self._vocab_size is None:
            self._vocab_size = vocab_size_of(self.tokenizer)
        return self._vocab_size

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
        self._code_point_proof, self._probes = None, ()
        self._parsed_added = tuple(self.parsed_added_tokens())
        texts = [*sample_texts, *PROBE_TEXTS, *self._added_token_probes()]
        config = self._components()
        unavailable = gigatoken_unavailable()
        reason = f"{GIGATOKEN_UNAVAILABLE} ({unavailable})" if unavailable else self._unsupported_shape(config)
        unproven_count = 0
        if reason is None:
            try:
                with engine_output_held():  # a panic's report is dropped: it becomes the reason
                    self._load_gigatoken()
                    reason = self._select_probes(config)
                    if reason is None:
                        self._decided, self._unproven = _ascii_at_check(self._prove)
                        reason = _first_difference(
                            texts, self._encode_with_tokenizers(texts), self._encode_routed(texts)
                        )
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
                raise TokenizerError(self.source, "fast path required but unavailable",
                                     expected="gigatoken ids identical to tokenizers", got=reason)
        return self._check

    def _unsupported_shape(self, config: dict) -> str | None:
        """Why the proof cannot cover this tokenizer's model, normalizer or pre-tokenizer (``config``: tokenizer.json),
        or None."""
        model = (config.get("model") or {}).get("type")
        if model != "BPE":  # the merge loop is what the proof trusts; other models are not covered
            return f"fast path not proven for the model {model} (only BPE is)"
        entries, id_space = self.tokenizer.get_vocab_size(with_added_tokens=True), self.vocab_size
        if id_space > 2 * entries + _GIGATOKEN_MAX_ID_GAP:
            return (f"fast path not used: the ids leave a large gap ({entries:,} entries, "
                    f"largest id {id_space - 1:,}), and gigatoken's tables grow with the largest id")
        steps = _steps(config.get("normalizer"), "normalizers")
        self._nfc = [step.get("type") for step in steps] == ["NFC"]
        for step in steps if not self._nfc else ():
            kind = step.get("type")
            if kind == "Prepend" or (kind == "Replace" and len(step.get("pattern", {}).get("String") or "") == 1):
                continue
            return (f"fast path not proven for the normalizer {kind} "
                    "(only Prepend, one-character Replace and NFC alone are)")
        parsed = set(self._parsed_added)
        # NFC leaves every document routed to gigatoken as it is, so matching it or its normalized form is one.
        if steps and not self._nfc and any(t.normalized for t in self.tokenizer.get_added_tokens_decoder().values()
                                           if t.content in parsed):
            return "fast path not proven for added tokens matched on normalized text"
        self._classes = []
        for step in _steps(config.get("pre_tokenizer"), "pretokenizers"):
            kind = step.get("type")
            if kind == "Metaspace" or (kind == "Split" and "String" in (step.get("pattern") or {})):
                continue  # no character classes: the end-to-end probes cover them
            if kind == "ByteLevel":
                if step.get("use_regex", True):
                    self._classes.extend(GPT2_CLASSES)
                continue
            pattern = (step.get("pattern") or {}).get("Regex") if kind == "Split" else None
            if pattern is None:
                return f"fast path not proven for the pre-tokenizer {kind}"
            classes, why = proof.pattern_classes(pattern)
            if why is not None:
                return f"fast path not proven for {why}"
            self._classes.extend(classes)
        if self._classes and not any(step.get("type") == "ByteLevel"
                                     for step in _steps(config.get("pre_tokenizer"), "pretokenizers")):
            return ("fast path not proven for a regex split without a byte-level pre-tokenizer "
                    "(the boundary probes read bytes)")
        self._classes = sorted(set(self._classes))
        # tokenizers cuts parsed added-token text out first and encodes each piece between on its own: so can we,
        # where a token matches as plain text (no lstrip, rstrip, single_word), all in one pass (one normalized
        # flag; normalized ones only with no normalizer), and no pre-tokenizer step treats the first piece apart.
        added = [t for t in self.tokenizer.get_added_tokens_decoder().values() if t.content in parsed]
        first_only = any(s.get("type") == "Metaspace" and s.get("prepend_scheme") == "first"
                         for s in _steps(config.get("pre_tokenizer"), "pretokenizers"))
        plain = (all(not (t.lstrip or t.rstrip or t.single_word) for t in added)
                 and len({t.normalized for t in added}) == 1)
        # A special token encoded as text is still matched, then skipped: a parsed token overlapping it is not cut
        # there.
        skipped = [t.content for t in self.tokenizer.get_added_tokens_decoder().values() if t.content not in parsed]
        hidden = _any_hidden(skipped, [t.content for t in added])
        self._cut_added = (bool(added) and plain and not first_only and not (added[0].normalized and steps)
                           and not hidden)
        return None

    def _select_probes(self, config: dict) -> str | None:
        """Choose the boundary probes that read every class of the pattern (none without classes), or say why none
        can."""
        if not self._classes:
            return None
        reference = proof.BoundaryEngines(config["pre_tokenizer"], _load_tokenizers)
        probes, why = proof.select_probes(config["pre_tokenizer"], self._classes, reference)
        self._probes = tuple(probes)
        return None if why is None else f"fast path not proven for this pattern: {why}"

    def _added_token_probes(self) -> list[str]:
        """Each added token glued to words, after a space and doubled: where matching rules differ."""
        contents = [token.content for token in self.tokenizer.get_added_tokens_decoder().values()]
        return [f"a{c}b {c} c {c}{c}\n{c}" for c in contents]

    def _components(self) -> dict:
        """The parts of tokenizer.json the proof reads (model type, normalizer, pre-tokenizer), without parsing the
        vocabulary."""
        tokenizer = self.tokenizer

        def state(component):
            return None if component is None else json.loads(component.__getstate__())

        return {
            "model": {"type": type(tokenizer.model).__name__},
            "normalizer": state(tokenizer.normalizer),
            "pre_tokenizer": state(tokenizer.pre_tokenizer),
        }

    def _load_gigatoken(self):
        """gigatoken with the tokenizer minus its added tokens (documents holding parsed added-token text never reach
        it), and without NFC (documents are given to it in NFC: _Router.normalized)."""
        if self._gigatoken is None:
            import gigatoken

            if self._gigatoken_json is None:
                self._gigatoken_json = _without_added_tokens(self.tokenizer_json, drop_normalizer=self._nfc)
            self._gigatoken = gigatoken.Tokenizer.from_json(self._gigatoken_json)
        return self._gigatoken

    def _route(self, texts: list[str]) -> list[int]:
        """Indices of the texts tokenizers encodes: gigatoken is not proven on a code point, or on parsed added-token
        text (where documents are not cut at it), of theirs."""
        router = self._get_router()
        cut = router.pieces(texts)
        if cut is None:
            return router.unproven_texts(texts, router.normalized(texts))
        pieces, owners, _ = cut
        text_index = [i for i, piece in enumerate(pieces) if not isinstance(piece, int)]
        text_pieces = [pieces[i] for i in text_index]
        slow = router.unproven_texts(text_pieces, router.normalized(text_pieces), search_added=False)
        return sorted({int(owners[text_index[i]]) for i in slow})

    def _get_router(self) -> "_Router":
        if self._router is None:
            normalize = _nfc_normalizer().normalize_str if self._nfc else None
            parsed = set(self._parsed_added)
            decoder = self.tokenizer.get_added_tokens_decoder().items() if self._cut_added else ()
            added_ids = {t.content: i for i, t in decoder if t.content in parsed} if self._cut_added else None
            self._router = _Router(self._decided, self._unproven, self._parsed_added, self._prove, normalize, added_ids)
        return self._router

    def encode_utf8(self, offsets: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`encode_batch` of documents given as one UTF-8 buffer (``uint8``, valid UTF-8) and their ``int64``
        offsets into it.

        The buffer goes to gigatoken whole, as an awkward string array: no
        Python ``str`` per document (30% of the encoding time at 200 MB).
        None where the batch needs :meth:`encode_batch`'s per-document way:
        the fast path is not in use, a document may be long
        (:mod:`~hf_tokbin.tokenizer.long_documents`), or a document holds
        unproven text.
        """
        lengths = np.diff(offsets)
        # bytes >= characters
        if not self._check.used or not lengths.size or int(lengths.max()) > long_documents.PIECE_CHARS:
            return None
        batch = self._get_router().proven_utf8(offsets, data)
        if batch is None:
            return None
        offsets, data = batch
        import awkward as ak

        chars = ak.contents.NumpyArray(data, parameters={"__array__": "char"})
        texts = ak.Array(
            ak.contents.ListOffsetArray(ak.index.Index64(offsets), chars, parameters={"__array__": "string"})
        )
        encoded = _encode_with_gigatoken(self._load_gigatoken(), texts)
        self._count(offsets.size - 1, 0)
        return encoded

    def _prove(self, code_points: np.ndarray) -> np.ndarray:
        """True where gigatoken is NOT proven on a code point (:class:`hf_tokbin.tokenizer.proof.CodePointProof`)."""
        if self._code_point_proof is None:
            pre_tokenizer = self._components()["pre_tokenizer"] if self._probes else None
            self._code_point_proof = _code_point_proof(
                self.tokenizer, self._load_gigatoken(), list(self._probes), pre_tokenizer, self._nfc
            )
        return self._code_point_proof.unproven(code_points)

    # -------------------------------------------------------------- encoding

    def encode_batch(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Ids of every text, concatenated (``uint32``), and each text's id count (``int64``)."""
        if self._check.used:
            return self._encode_routed(texts)
        self.documents_by_engine[1] += len(texts)
        return self._encode_with_tokenizers(texts)

    def _encode_routed(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """gigatoken for the proven documents (in NFC where the tokenizer normalizes so), tokenizers for the others, in
        order.

        Where the router cuts documents at parsed added-token text (:meth:`_Router.pieces`), each piece between two
        added tokens is routed on its own, as ``tokenizers`` encodes it on its own, and the tokens' ids go between.
        """
        router = self._get_router()
        cut = router.pieces(texts)
        if cut is None:
            ids, lengths, slow = self._encode_documents(texts, router)
            self._count(len(texts), len(slow))
            return ids, lengths
        pieces, owners, token_ids = cut
        is_token = np.fromiter((isinstance(p, int) for p in pieces), dtype=bool, count=len(pieces))
        text_index, token_index = np.flatnonzero(~is_token), np.flatnonzero(is_token)
        text_ids, text_lengths, slow = self._encode_documents([pieces[i] for i in text_index], router, added_cut=True)
        self._count(len(texts), np.unique(owners[text_index[slow]]).size)
        piece_lengths = np.ones(len(pieces), dtype=np.int64)
        piece_lengths[text_index] = text_lengths
        ids = _assemble(
            piece_lengths,
            (
                (text_index, text_ids, text_lengths),
                (token_index, token_ids, np.ones(token_index.size, dtype=np.int64)),
            ),
        )
        return ids, np.bincount(owners, weights=piece_lengths, minlength=len(texts)).astype(np.int64)

    def _count(self, documents: int, by_tokenizers: int) -> None:
        self.documents_by_engine[0] += documents - by_tokenizers
        self.documents_by_engine[1] += by_tokenizers

    def _encode_documents(
        self, texts: list[str], router: "_Router", added_cut: bool = False
    ) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """:meth:`_encode_routed` of documents (or pieces: ``added_cut``, no added-token text left in them), and the
        indices of those tokenizers encoded."""
        fast_texts = router.normalized(texts)
        slow = router.unproven_texts(texts, fast_texts, search_added=not added_cut)
        if not slow:
            return (*_encode_with_gigatoken(self._load_gigatoken(), fast_texts), slow)
        if len(slow) == len(texts):
            return (*self._encode_with_tokenizers(texts), slow)
        slow_index = np.asarray(slow, dtype=np.int64)
        fast_index = np.setdiff1d(np.arange(len(texts), dtype=np.int64), slow_index, assume_unique=True)
        fast_ids, fast_lengths = _encode_with_gigatoken(self._load_gigatoken(), [fast_texts[i] for i in fast_index])
        slow_ids, slow_lengths = self._encode_with_tokenizers([texts[i] for i in slow])
        lengths = np.empty(len(texts), dtype=np.int64)
        lengths[fast_index], lengths[slow_index] = fast_lengths, slow_lengths
        return (
            _assemble(lengths, ((fast_index, fast_ids, fast_lengths), (slow_index, slow_ids, slow_lengths))),
            lengths,
            slow,
        )

    def _encode_with_tokenizers(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        return _encode_tokenizers(self.tokenizer, texts)


# A code point's state in a process's router; _NORMALIZE: proven, but NFC may change a document holding it.
_UNDECIDED, _PROVEN, _UNPROVEN, _NORMALIZE = 0, 1, 2, 3


class _Router:
    """Finds the documents of a batch that must go to tokenizers, without a Python loop over characters.

    Code points: the batch as one UTF-32 array, looked up in a table of the
    1,114,112 code points (undecided, proven or unproven); an all-ASCII batch
    skips that when ASCII is proven. A code point no document of this process
    held before is proven then (``prove``: :func:`prove_code_points`, which
    decides each code point on its own, so the outcome never depends on the
    batch, the process or what else it met). Added-token text: one regex of
    the parsed tokens' texts. With ``normalize`` (NFC's ``normalize_str`` in
    ``tokenizers``), a document holding a code point that is not NFC-inert
    (:func:`hf_tokbin.tokenizer.proof.nfc_inert`) goes to gigatoken as
    ``tokenizers``' own normalizer makes it (:meth:`normalized`), its code
    points proven in that form.
    """

    def __init__(
        self,
        decided,
        unproven,
        added_tokens: tuple[str, ...],
        prove,
        normalize=None,
        added_ids: dict[str, int] | None = None,
    ):
        self.state = np.full(proof.LAST_CODE_POINT + 1, _UNDECIDED, dtype=np.int8)
        for ranges, value in ((decided, _PROVEN), (unproven, _UNPROVEN)):
            for first, last in ranges:
                self.state[first : last + 1] = value
        self.prove = prove
        self.normalize = normalize
        self.ascii_proven = bool((self.state[:128] == _PROVEN).all())
        # The code points decided so far, and how many of them are unproven: what FastPathCheck reports.
        self.decided = int((self.state != _UNDECIDED).sum())
        self.unproven = int((self.state == _UNPROVEN).sum())
        # At each place the longest token matches, scanning from the left: tokenizers' leftmost-longest.
        words = sorted({t for t in added_tokens if t})
        self.added_pattern = re.compile(_trie_pattern(words)) if words else None
        self.added_search = self.added_pattern.search if words else None
        # The same over bytes: each UTF-8 byte read as one Latin-1 character, the pattern written back byte for byte.
        as_bytes = [w.encode("utf-8").decode("latin-1") for w in words]
        self.added_search_utf8 = re.compile(_trie_pattern(as_bytes).encode("latin-1")).search if words else None
        self.added_ids = added_ids  # content -> id where documents are cut at added-token text, else None

    def pieces(self, texts: list[str]):
        """``texts`` cut at parsed added-token text, as ``tokenizers`` cuts it, or None where nothing is cut.

        Returns (pieces, owners, token ids): the pieces in order, each a text
        between tokens or a token's id; each piece's document; the tokens' ids
        in order. Empty texts between tokens are left out (``tokenizers``
        encodes them to nothing).
        """
        if self.added_ids is None or self.added_search is None:
            return None
        search = self.added_search
        holding = {i for i, text in enumerate(texts) if search(text) is not None}
        if not holding:
            return None
        pieces, owners, token_ids = [], [], []
        for i, text in enumerate(texts):
            at = 0
            for match in self.added_pattern.finditer(text) if i in holding else ():
                if match.start() > at:
                    pieces.append(text[at : match.start()])
                    owners.append(i)
                token = self.added_ids[match.group()]
                pieces.append(token)
                owners.append(i)
                token_ids.append(token)
                at = match.end()
            if at < len(text) or i not in holding:
                pieces.append(text[at:])
                owners.append(i)
        return pieces, np.asarray(owners, dtype=np.int64), np.asarray(token_ids, dtype=np.uint32)

    def normalized(self, texts: list[str]) -> list[str]:
        """``texts`` as gigatoken is given them: each one holding a code point NFC may change, through ``tokenizers``'
        NFC.

        Without a normalizer to apply, ``texts`` itself. A text of NFC-inert
        code points is its own NFC, so every text returned is what
        ``tokenizers``' normalizer makes of the one given.
        """
        if self.normalize is None:
            return texts
        joined = "".join(texts)
        if joined.isascii():
            return texts
        touched = self._documents_holding(texts, self._states(joined), _NORMALIZE)
        if not touched:
            return texts
        normalized = list(texts)
        for i in touched:
            normalized[i] = self.normalize(texts[i])
        return normalized

    def unproven_texts(
        self, texts: list[str], fast_texts: list[str] | None = None, search_added: bool = True
    ) -> list[int]:
        """Indices of the documents that go to tokenizers: ``fast_texts`` (:meth:`normalized`; default ``texts``) holds
        an unproven code point, or either holds parsed added-token text (unless ``search_added`` is False: pieces cut
        at it by :meth:`pieces` hold none)."""
        fast_texts = texts if fast_texts is None else fast_texts
        joined = "".join(fast_texts)
        found = set()
        if not (self.ascii_proven and joined.isascii()):
            found.update(self._documents_holding(fast_texts, self._states(joined), _UNPROVEN))
        if self.added_search is not None and search_added:
            search = self.added_search
            found.update(i for i, text in enumerate(texts) if search(text) is not None)
            if fast_texts is not texts:  # added tokens matched on normalized text
                found.update(
                    i
                    for i, (text, fast) in enumerate(zip(texts, fast_texts))
                    if fast is not text and search(fast) is not None
                )
        return sorted(found)

    @staticmethod
    def _documents_holding(texts: list[str], states: np.ndarray, state: int) -> list[int]:
        """The indices of the texts (joined: ``states``) holding a code point in ``state``."""
        positions = np.flatnonzero(states == state)
        if not positions.size:
            return []
        ends = np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)))
        return np.unique(np.searchsorted(ends, positions, side="right")).tolist()

    def proven_utf8(self, offsets: np.ndarray, utf8: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """A batch given as its valid UTF-8 bytes (``uint8``) and ``int64`` offsets as gigatoken may take it whole (in
        NFC where the tokenizer normalizes so, :meth:`normalized`), or None where a document must go to tokenizers.

        Added-token text is searched for in the batch as a whole: a match
        across two documents only sends the batch the per-document way.
        """
        if not self.ascii_proven:
            proven = not (self._states(utf8.tobytes().decode("utf-8")) != _PROVEN).any() and self._no_added_text(utf8)
            return (offsets, utf8) if proven else None
        places, codes = non_ascii_code_points(utf8)  # straight from the bytes: no str is made
        states = self._states_of(codes)
        if (states == _UNPROVEN).any():
            return None
        touched = places[states == _NORMALIZE]
        # Added tokens are matched on the text as given (before NFC): NFC can break one apart ("<think>" + U+0338).
        if touched.size and not self._no_added_text(utf8):
            return None
        if touched.size:  # documents NFC may change: through tokenizers' own normalizer, their new code points proven
            changed = {}
            for i in np.unique(np.searchsorted(offsets, touched, side="right") - 1).tolist():
                text = utf8[offsets[i] : offsets[i + 1]].tobytes().decode("utf-8")
                normalized = self.normalize(text)
                if normalized != text:
                    if (self._states(normalized) == _UNPROVEN).any():
                        return None
                    changed[i] = np.frombuffer(normalized.encode("utf-8"), dtype=np.uint8)
            if changed:
                offsets, utf8 = _replaced(offsets, utf8, changed)
        return (offsets, utf8) if self._no_added_text(utf8) else None

    def _no_added_text(self, utf8: np.ndarray) -> bool:
        return self.added_search_utf8 is None or self.added_search_utf8(memoryview(utf8)) is None

    def _states(self, text: str) -> np.ndarray:
        """Each code point's state, the undecided ones decided first."""
        # surrogatepass: a lone surrogate becomes its code point, which is never proven.
        return self._states_of(np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4"))

    def _states_of(self, codes: np.ndarray) -> np.ndarray:
        states = self.state[codes]
        if (states == _UNDECIDED).any():
            self._decide(np.unique(codes[states == _UNDECIDED]))
            states = self.state[codes]
        return states

    def _decide(self, code_points: np.ndarray) -> None:
        unproven = self.prove(code_points.astype(np.int64))
        proven = _PROVEN if self.normalize is None else np.where(proof.nfc_inert(code_points), _PROVEN, _NORMALIZE)
        self.state[code_points] = np.where(unproven, _UNPROVEN, proven)
        self.decided += int(code_points.size)
        self.unproven += int(unproven.sum())


def non_ascii_code_points(utf8: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The byte offsets and code points (``uint32``) of the non-ASCII characters of valid UTF-8 bytes (``uint8``).

    No str is made: decoding and encoding to UTF-32 cost more than the encoder's own work on the bytes.
    """
    lead = np.flatnonzero(utf8 >= 0xC0)
    if not lead.size:
        return lead, np.zeros(0, dtype=np.uint32)
    first = utf8[lead].astype(np.uint32)
    last = utf8.size - 1  # a shorter sequence's later bytes are never read: clipped to stay in the buffer
    c1, c2, c3 = ((utf8[np.minimum(lead + k, last)] & 0x3F).astype(np.uint32) for k in (1, 2, 3))
    two = ((first & 0x1F) << 6) | c1
    three = ((first & 0x0F) << 12) | (c1 << 6) | c2
    four = ((first & 0x07) << 18) | (c1 << 12) | (c2 << 6) | c3
    return lead, np.where(first >= 0xF0, four, np.where(first >= 0xE0, three, two))


def _trie_pattern(words: list[str]) -> str:
    """A regex matching the longest of ``words`` (non-empty) at a place, as a trie.

    Gemma 3 has 6,406 added tokens: one alternative per token made each search
    try them one after the other at every place; a trie branches on each character.
    """
    trie: dict = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}  # a word ends here

    def pattern(node: dict) -> str:
        branches = [re.escape(char) + pattern(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body  # greedy: the longer word first, the shorter if it fails

    return pattern(trie)


def _any_hidden(skipped: list[str], parsed: list[str]) -> bool:
    """Whether a match of a ``skipped`` text can hide a ``parsed`` one from leftmost-longest matching: the parsed text
    starts inside it (lies within it, or a proper prefix of it is a proper suffix of the skipped text)."""
    suffixes = {text[k:] for text in skipped for k in range(1, len(text))}
    return any(p in s for s in skipped for p in parsed) or any(
        p[:k] in suffixes for p in parsed for k in range(1, len(p))
    )


def _replaced(offsets: np.ndarray, utf8: np.ndarray, documents: dict[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The batch (offsets, UTF-8 bytes) with the bytes of some of its documents replaced (index -> new bytes)."""
    parts, at = [], 0
    lengths = np.diff(offsets)
    for i in sorted(documents):
        parts += [utf8[offsets[at] : offsets[i]], documents[i]]
        lengths[i] = documents[i].size
        at = i + 1
    parts.append(utf8[offsets[at] :])
    new_offsets = np.zeros(offsets.size, dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    return new_offsets, np.concatenate(parts)


def _assemble(lengths: np.ndarray, groups) -> np.ndarray:
    """The flat ids of items of ``lengths`` ids each, from groups of (item indices, their flat ids, their lengths)."""
    starts = np.cumsum(lengths) - lengths
    ids = np.empty(int(lengths.sum()), dtype=np.uint32)
    for index, part_ids, part_lengths in groups:
        # Each id of the group moves by (its item's place in the output - its place in the group).
        part_starts = np.cumsum(part_lengths) - part_lengths
        ids[np.repeat(starts[index] - part_starts, part_lengths) + np.arange(part_ids.size)] = part_ids
    return ids


def _nfc_normalizer():
    """tokenizers' NFC normalizer: the whole normalizer of a tokenizer the fast path takes with NFC, without loading
    it."""
    from tokenizers import normalizers

    return normalizers.NFC()


def _without_added_tokens(tokenizer_json: str, drop_normalizer: bool) -> str:
    """``tokenizer.json`` text (as ``tokenizers`` writes it) with no added tokens, and without its normalizer if asked.

    Edited as text: the vocabulary is most of the file, and parsing and writing
    it again cost 0.4 s for a 150,000-entry tokenizer. ``tokenizers`` writes the
    top-level keys in one order, and a JSON string never holds an unescaped
    quote, so ``"added_tokens":[`` ... ``],"normalizer":`` is the list itself.
    """
    head, added, rest = tokenizer_json.partition('"added_tokens":[')
    _, marker, tail = rest.partition('],"normalizer":')
    normalizer, pre_tokenizer, after = tail.partition(',"pre_tokenizer":')
    if not (added and marker and pre_tokenizer and head.startswith('{"version":')):  # another writer: parse it
        config = json.loads(tokenizer_json)
        config["added_tokens"] = []
        if drop_normalizer:
            config["normalizer"] = None
        return json.dumps(config)
    return (
        head + '"added_tokens":[],"normalizer":' + ("null" if drop_normalizer else normalizer) + pre_tokenizer + after
    )


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

    # in a worker process gigatoken encodes on the calling thread
    rows = engine.encode_batch(texts if isinstance(texts, ak.Array) else list(texts))
    if len(rows) != len(texts):  # never align ids to the wrong documents
        raise RuntimeError(f"gigatoken returned {len(rows)} documents for {len(texts)} texts")
    ids = np.ascontiguousarray(ak.to_numpy(ak.flatten(rows, axis=1)), dtype=np.uint32)
    lengths = ak.to_numpy(ak.num(rows, axis=1)).astype(np.int64, copy=False)
    return ids, lengths


# ---------------------------------------------------------------- the per-code-point proof


def prove_code_points(
    tokenizer, engine, code_points: np.ndarray | None = None, probes=(), pre_tokenizer=None, nfc=False
) -> np.ndarray:
    """For each code point (default: the whole universe), True where gigatoken is NOT proven identical.

    ``tokenizer``: the ``tokenizers.Tokenizer``; ``engine``: gigatoken's;
    ``probes``/``pre_tokenizer``: the boundary probes chosen for the pattern
    (:func:`hf_tokbin.tokenizer.proof.select_probes`) and the pre-tokenizer they read;
    ``nfc``: the tokenizer's normalizer is NFC, which gigatoken's texts have been through.
    """
    code_points = proof.code_point_universe() if code_points is None else np.asarray(code_points, dtype=np.int64)
    return _code_point_proof(tokenizer, engine, list(probes), pre_tokenizer, nfc).unproven(code_points)


def _code_point_proof(tokenizer, engine, probes: list, pre_tokenizer, nfc: bool) -> proof.CodePointProof:
    boundaries = (
        [proof.BoundaryEngines(pre_tokenizer, load) for load in (_load_tokenizers, _load_gigatoken_encode)]
        if probes
        else [None, None]
    )
    encode = functools.partial(_encode_with_gigatoken, engine)
    if nfc:  # as documents reach it: through tokenizers' NFC first (_Router.normalized)
        normalize = _nfc_normalizer().normalize_str
        encode = functools.partial(_encode_normalized, encode, normalize)
    return proof.CodePointProof(functools.partial(_encode_tokenizers, tokenizer), encode, probes, *boundaries)


def _encode_normalized(encode, normalize, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    return encode([normalize(text) for text in texts])


def _encode_tokenizers(tokenizer, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """tokenizers' ids of ``texts``, flat, and each text's count (encode_batch_fast: no offsets, the same ids)."""
    per_text = [e.ids for e in tokenizer.encode_batch_fast(texts, add_special_tokens=False)]
    lengths = np.fromiter(map(len, per_text), dtype=np.int64, count=len(per_text))
    return np.fromiter(_chain(per_text), dtype=np.uint32, count=int(lengths.sum())), lengths


def _load_tokenizers(tokenizer_json: str):
    from tokenizers import Tokenizer

    return functools.partial(_encode_tokenizers, Tokenizer.from_str(tokenizer_json))


def _load_gigatoken_encode(tokenizer_json: str):
    import gigatoken

    return functools.partial(_encode_with_gigatoken, gigatoken.Tokenizer.from_json(tokenizer_json))


def _ascii_at_check(prove) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """(decided, unproven) code point ranges before any document: ASCII, proven by ``prove``.

    Every other code point is proven in the process that first meets it (:class:`_Router`).
    """
    unproven = np.zeros(proof.LAST_CODE_POINT + 1, dtype=bool)
    unproven[:128] = prove(np.arange(128, dtype=np.int64))
    return ((0, 127),), _ranges(unproven)


def _ranges(mask: np.ndarray) -> tuple[tuple[int, int], ...]:
    """The runs of True in ``mask`` as inclusive (first, last) code point pairs."""
    edges = np.flatnonzero(np.diff(np.concatenate(([False], mask, [False])).astype(np.int8)))
    return tuple((int(lo), int(hi) - 1) for lo, hi in zip(edges[0::2], edges[1::2]))


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
            return (f"gigatoken differs from tokenizers on text {i} {text[:40]!r}: ids {have[:8].tolist()}..."
                    f" instead of {want[:8].tolist()}...")
    # same documents, extra ids past the last one
    return f"gigatoken returned {len(got_ids)} ids for {len(expected_ids)}"


class ByteEncoder:
    """The 256-entry byte tokenizer: a text's ids are its UTF-8 bytes (``uint8``)."""

    vocab_size = 256
    engine = "utf-8 bytes"

    def check_fast_path(self, sample_texts=()) -> FastPathCheck:
        """Nothing to check: bytes are their own definition."""
        return FastPathCheck(False, self.engine, "the byte tokenizer needs no fast path")

    def encode_utf8(self, offsets: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`encode_batch` of documents given as one UTF-8 buffer and their offsets into it: the buffer is the
        ids."""
        return data, np.diff(offsets)

    def encode_batch(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        encoded = [text.encode("utf-8") for text in texts]
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        # frombuffer shares the joined bytes: the array is read-only, which the writers never mind.
        return np.frombuffer(b"".join(encoded), dtype=np.uint8), lengths


def _recorded_tokenizer(path: str | os.PathLike, sha256: str):
    """``tokenizer.json`` at ``path`` loaded from its bytes, which must be the ones of digest ``sha256`` (the build's
    record): a node whose copy differs would encode other ids into a release that names the driver's."""
    import hashlib

    try:
        data = open(path, "rb").read()
    except OSError as e:
        raise TokenizerError(path, "cannot read tokenizer.json", got=e.strerror or str(e)) from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise TokenizerError(
            path, "tokenizer.json differs from the one the build resolved (its SHA-256)", expected=sha256, got=digest,
            hint="every node must read the driver's tokenizer.json at the same path",
        )
    return load_tokenizer_json(path, data)


def encoder_for(
    tokenizer_json: str | os.PathLike | None,
    fast: FastMode = "auto",
    parse_special: bool = False,
    sha256: str | None = None,
) -> DocumentEncoder | ByteEncoder:
    """The encoder for a resolved tokenizer: ``None`` (no tokenizer.json) is the byte tokenizer.

    ``parse_special``: special-token text inside documents becomes the special
    token (``--parse-special-tokens``); by default it is ordinary text. The byte
    tokenizer has no special tokens.
    """
    if tokenizer_json is None:
        return ByteEncoder()
    resolved = take_resolved_tokenizer(sha256)  # the tokenizer resolve_tokenizer loaded from the bytes of this digest
    if resolved is None and sha256 is not None:  # another process (a Ray worker): the recorded bytes, or nothing
        tokenizer = _recorded_tokenizer(tokenizer_json, sha256)
        return DocumentEncoder(tokenizer, fast, source=os.fspath(tokenizer_json), parse_special=parse_special)
    if resolved is None:
        return DocumentEncoder.from_tokenizer_json(tokenizer_json, fast, parse_special=parse_special)
    tokenizer, vocab_size = resolved
    encoder = DocumentEncoder(tokenizer, fast, source=os.fspath(tokenizer_json), parse_special=parse_special)
    encoder._vocab_size = vocab_size
    return encoder
