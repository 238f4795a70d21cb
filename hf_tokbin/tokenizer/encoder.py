"""Encoding documents to ids: ``tokenizers`` defines them, a faster engine may reproduce them.

Every encoder here has the same batch contract, the one the build calls inside
``Dataset.map(batched=True)``::

    ids, lengths = encoder.encode_batch(texts)

- ``ids``: one 1-D array of unsigned integers, the ids of ``texts[0]``, then
  of ``texts[1]``, ... with no special token added (boundary tokens are each
  output format's business); ``uint32`` for :class:`DocumentEncoder`,
  ``uint8`` for :class:`ByteEncoder`;
- ``lengths``: ``int64``, ``lengths[i]`` is the id count of ``texts[i]``, so
  ``lengths.sum() == len(ids)``.

The fast path. ``tokenizers`` is the definition of the ids:
``Tokenizer.encode(text, add_special_tokens=False).ids``. ``gigatoken`` (the
``fast`` extra) encodes byte-level BPEs several times faster, but a speed-up
must never change a token, so :class:`DocumentEncoder` uses it only after
:meth:`DocumentEncoder.check_fast_path` has seen it give identical ids on the
corpus sample the build passes plus :data:`PROBE_TEXTS` and every added token
inside text. If gigatoken is missing, cannot load the tokenizer (it rejects
normalizers and pre-tokenizers it does not implement) or differs on any
document, encoding stays with ``tokenizers``; ``fast="require"`` makes that an
error instead, ``fast="never"`` skips the check.

Worker processes. ``Dataset.map(num_proc=N)`` pickles the map function and
its arguments to each worker, and ``datasets`` hashes them (with dill) for its
cache fingerprint. Neither engine object is pickled: the state is the
``tokenizer.json`` text, the mode and the decision of the check, which are
deterministic, and each process loads its engine on first use.
"""

from __future__ import annotations

import importlib.metadata
import os
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..errors import TokenizerError
from .resolve import TOKENIZER_FILE, load_tokenizer_json

FastMode = Literal["auto", "never", "require"]
FAST_MODES: tuple[str, ...] = ("auto", "never", "require")

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


@dataclass(frozen=True)
class FastPathCheck:
    """The outcome of :meth:`DocumentEncoder.check_fast_path`: the engine chosen, and why."""

    used: bool
    engine: str  # "gigatoken 0.10.0" or "tokenizers 0.23.3": what run_config.json records
    reason: str


def _engine_name(package: str) -> str:
    return f"{package} {importlib.metadata.version(package)}"


class DocumentEncoder:
    """Encode batches of documents with a ``tokenizers.Tokenizer``'s ids, fast where proven identical.

    ``source`` names the tokenizer in error messages only.
    """

    def __init__(self, tokenizer, fast: FastMode = "auto", source: str = "tokenizer.json"):
        if fast not in FAST_MODES:
            raise TokenizerError(source, "unknown fast-path mode", expected=" or ".join(FAST_MODES), got=fast)
        self.source = source
        self.fast = fast
        self._tokenizer = tokenizer
        self._tokenizer_json: str | None = None
        self._gigatoken = None
        self._check = FastPathCheck(False, _engine_name("tokenizers"), "fast path not checked yet")

    @classmethod
    def from_tokenizer_json(cls, path: str | os.PathLike, fast: FastMode = "auto") -> "DocumentEncoder":
        """Load ``tokenizer.json`` (or a folder holding one) with ``tokenizers``."""
        path = os.fspath(path)
        if os.path.isdir(path):
            path = os.path.join(path, TOKENIZER_FILE)
        return cls(load_tokenizer_json(path), fast, source=path)

    # -------------------------------------------------------------- state

    @property
    def tokenizer_json(self) -> str:
        """The tokenizer's JSON text, computed once: what pickling carries."""
        if self._tokenizer_json is None:
            self._tokenizer_json = self.tokenizer.to_str()
        return self._tokenizer_json

    def __getstate__(self) -> dict:
        # Only what decides the ids; engines are reloaded per process (gigatoken's do not pickle).
        return {"tokenizer_json": self.tokenizer_json, "fast": self.fast, "check": self._check}

    def __setstate__(self, state: dict) -> None:
        self.source = "tokenizer.json"
        self.fast = state["fast"]
        self._tokenizer_json = state["tokenizer_json"]
        self._tokenizer = None  # loaded on first use: a worker on the fast path never needs it
        self._gigatoken = None
        self._check = state["check"]

    @property
    def tokenizer(self):
        """The ``tokenizers.Tokenizer``: the definition of the ids."""
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            self._tokenizer = Tokenizer.from_str(self._tokenizer_json)
        return self._tokenizer

    @property
    def engine(self) -> str:
        """The engine encode_batch uses now, e.g. ``"gigatoken 0.10.0"`` or ``"tokenizers 0.23.3"``."""
        return self._check.engine

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.get_vocab_size(with_added_tokens=True)

    # -------------------------------------------------------------- fast path

    def check_fast_path(self, sample_texts=()) -> FastPathCheck:
        """Decide the engine: gigatoken if it gives ``tokenizers``' ids on every text checked.

        The texts checked are ``sample_texts`` (a sample of the corpus), then
        :data:`PROBE_TEXTS`, then each added token inside text. With
        ``fast="require"`` a failed check raises :class:`TokenizerError`.
        """
        if self.fast == "never":
            self._check = FastPathCheck(False, _engine_name("tokenizers"), "fast path disabled (fast='never')")
            return self._check
        texts = [*sample_texts, *PROBE_TEXTS, *self._added_token_probes()]
        self._gigatoken = None
        reason = None
        try:
            fast_encoded = _encode_with_gigatoken(self._load_gigatoken(), texts)
        except ImportError:
            reason = "gigatoken is not installed (pip install 'hf_tokbin[fast]')"
        except Exception as e:  # gigatoken raises RuntimeError (and others) for what it does not implement
            reason = f"gigatoken cannot load or run this tokenizer: {str(e).splitlines()[0][:200]}"
        else:
            reason = _first_difference(texts, self._encode_with_tokenizers(texts), fast_encoded)
        if reason is None:
            self._check = FastPathCheck(True, _engine_name("gigatoken"), f"identical ids on {len(texts)} texts")
        else:
            self._gigatoken = None
            self._check = FastPathCheck(False, _engine_name("tokenizers"), reason)
            if self.fast == "require":
                raise TokenizerError(self.source, "fast path required but unavailable", expected="gigatoken ids identical to tokenizers", got=reason)
        return self._check

    def _added_token_probes(self) -> list[str]:
        """Each added token glued to words, after a space and doubled: where matching rules differ."""
        contents = [token.content for token in self.tokenizer.get_added_tokens_decoder().values()]
        return [f"a{c}b {c} c {c}{c}\n{c}" for c in contents]

    def _load_gigatoken(self):
        if self._gigatoken is None:
            import gigatoken

            self._gigatoken = gigatoken.Tokenizer.from_json(self.tokenizer_json)
        return self._gigatoken

    # -------------------------------------------------------------- encoding

    def encode_batch(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Ids of every text, concatenated (``uint32``), and each text's id count (``int64``)."""
        if self._check.used:
            return _encode_with_gigatoken(self._load_gigatoken(), texts)
        return self._encode_with_tokenizers(texts)

    def _encode_with_tokenizers(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        # encode_batch_fast skips offset tracking, which we do not use; same ids.
        encodings = self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)
        per_text = [np.asarray(e.ids, dtype=np.uint32) for e in encodings]
        lengths = np.fromiter(map(len, per_text), dtype=np.int64, count=len(per_text))
        ids = np.concatenate(per_text) if per_text else np.empty(0, dtype=np.uint32)
        return ids, lengths


def _encode_with_gigatoken(engine, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """gigatoken returns an awkward array (one flat buffer plus offsets): unpack it without copying per token."""
    import awkward as ak

    rows = engine.encode_batch(list(texts))  # in a worker process gigatoken encodes on the calling thread
    ids = np.ascontiguousarray(ak.to_numpy(ak.flatten(rows, axis=1)), dtype=np.uint32)
    lengths = ak.to_numpy(ak.num(rows, axis=1)).astype(np.int64, copy=False)
    return ids, lengths


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

    def encode_batch(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        encoded = [text.encode("utf-8") for text in texts]
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        # frombuffer shares the joined bytes: the array is read-only, which the writers never mind.
        return np.frombuffer(b"".join(encoded), dtype=np.uint8), lengths


def encoder_for(tokenizer_json: str | os.PathLike | None, fast: FastMode = "auto") -> DocumentEncoder | ByteEncoder:
    """The encoder for a resolved tokenizer: ``None`` (no tokenizer.json) is the byte tokenizer."""
    if tokenizer_json is None:
        return ByteEncoder()
    return DocumentEncoder.from_tokenizer_json(tokenizer_json, fast)
