"""The TinyStories rules' code: their story reader and their chunk-cache BPE encoder (the baselines).

:func:`stories` is the TinyStories rules' reader, verbatim: the reference the
fast reader in :mod:`hf_tokbin.corpus.builders.tinystories` must match, and the
baseline of ``scripts/bench_corpus.py`` and ``scripts/bench_build.py``.

This is the encoder the TinyStories rules measured (2.56 MB/s): split a
text into chunks with GPT-2's pre-tokenizer, run the BPE merge loop on each
chunk, and remember each chunk's ids in a dictionary, because merges never
cross a chunk boundary so a chunk always encodes the same way. It exists so
that ``scripts/bench_encode.py`` can measure the fast path against it; the
build never uses it. ``tokenizers`` defines the ids; this encoder reproduces
them for the tokenizers it accepts (tests check it on GPT-2 and a trained BPE).

Accepted ``tokenizer.json`` files are byte-level BPEs as ``tokenizers``
writes them for GPT-2 and ``hf-tokbin tokenizer train``:

- ``normalizer``: none;
- ``pre_tokenizer``: ``ByteLevel`` with ``use_regex`` (GPT-2's pattern),
  ``add_prefix_space`` either way;
- ``model``: ``BPE`` without dropout, byte fallback, subword prefix or
  suffix, every one of the 256 byte symbols in the vocabulary;
- ``added_tokens``: matched anywhere in the text (no ``single_word``,
  ``lstrip`` or ``rstrip``), as ``tokenizers`` does before pre-tokenizing.

Anything else raises :class:`~hf_tokbin.errors.TokenizerError`.

GPT-2's pattern is ``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+|
?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``. The standard ``re`` module has no
``\\p{..}`` classes, so :func:`gpt2_pretokenizer` spells them out from
:mod:`unicodedata` (letters: categories L*; numbers: N*; white space as
Oniguruma, the engine ``tokenizers`` uses, defines ``\\s``: tab to carriage
return, U+0085 and categories Zs, Zl, Zp). This matches ``tokenizers`` on
every character assigned in Python's Unicode tables (14.0 in Python 3.11);
characters assigned later are "other" here and may split differently.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import unicodedata

import numpy as np

from hf_tokbin.errors import TokenizerError

DELIMITER = "<|endoftext|>"


def stories(path: str | os.PathLike):
    """The TinyStories rules' reader, verbatim: stories split on lines holding only the delimiter."""
    lines: list[str] = []
    with open(path, encoding="utf-8", newline="") as file:
        for line in file:
            if line.rstrip("\r\n") != DELIMITER:
                lines.append(line)
                continue
            story = "".join(lines).strip("\n")
            lines = []
            if story:
                yield story
    story = "".join(lines).strip("\n")
    if story:
        yield story


_WHITESPACE_CONTROLS = "\t\n\x0b\x0c\r\x85"
_WHITESPACE_CATEGORIES = ("Zs", "Zl", "Zp")
_SURROGATES = range(0xD800, 0xE000)


@functools.cache
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> symbol table: printable Latin-1 bytes map to themselves, the rest to U+0100 on."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def _char_classes() -> dict[str, str]:
    """``re`` character-class bodies (no brackets) for letters ``L``, numbers ``N`` and white space ``S``."""
    ranges: dict[str, list[list[int]]] = {"L": [], "N": [], "S": []}
    for cp in range(sys.maxunicode + 1):
        if cp in _SURROGATES:
            continue
        char = chr(cp)
        category = unicodedata.category(char)
        if category[0] in "LN":
            kind = category[0]
        elif category in _WHITESPACE_CATEGORIES or char in _WHITESPACE_CONTROLS:
            kind = "S"
        else:
            continue
        spans = ranges[kind]
        if spans and spans[-1][1] == cp - 1:
            spans[-1][1] = cp
        else:
            spans.append([cp, cp])
    return {
        kind: "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in spans)
        for kind, spans in ranges.items()
    }


@functools.cache
def gpt2_pretokenizer() -> re.Pattern:
    """GPT-2's pre-tokenizer pattern with ``\\p{L}``, ``\\p{N}`` and ``\\s`` spelled out for ``re``."""
    classes = _char_classes()
    letter, number, space = classes["L"], classes["N"], classes["S"]
    return re.compile(
        rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{letter}]+| ?[{number}]+| "
        rf"?[^{space}{letter}{number}]+|[{space}]+(?![^{space}])|[{space}]+"
    )


class ChunkCacheEncoder:
    """Pre-tokenize, merge each chunk, cache each chunk's ids.

    ``vocab`` maps byte-level symbols to ids, ``merges`` lists symbol pairs in
    priority order, ``added_tokens`` maps added-token contents to ids.
    """

    def __init__(
        self,
        vocab: dict[str, int],
        merges: list[tuple[str, str]],
        added_tokens: dict[str, int],
        add_prefix_space: bool = False,
        ignore_merges: bool = False,
    ):
        self.vocab = vocab
        self.merges = merges
        self.added_tokens = added_tokens
        self.add_prefix_space = add_prefix_space
        self.ignore_merges = ignore_merges
        self._setup()

    def _setup(self) -> None:
        self.ranks = {pair: rank for rank, pair in enumerate(self.merges)}
        self.byte_symbols = bytes_to_unicode()
        self.pretokenize = gpt2_pretokenizer().findall
        # Longest first: at one position, re's alternation takes the first that matches,
        # and tokenizers takes the longest added token.
        contents = sorted(self.added_tokens, key=len, reverse=True)
        self.added_split = re.compile("(" + "|".join(map(re.escape, contents)) + ")").split if contents else None
        self.chunk_cache: dict[str, list[int]] = {}

    def __getstate__(self) -> dict:
        # The cache and compiled tables are rebuilt in each process.
        return {k: self.__dict__[k] for k in ("vocab", "merges", "added_tokens", "add_prefix_space", "ignore_merges")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._setup()

    @classmethod
    def from_tokenizer_json(cls, path: str | os.PathLike) -> "ChunkCacheEncoder":
        """Read the vocabulary, merges and added tokens of a byte-level BPE ``tokenizer.json``."""
        try:
            with open(path, encoding="utf-8") as file:
                config = json.load(file)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise TokenizerError(path, "cannot read tokenizer.json", got=str(e)) from e
        model = config.get("model") or {}
        pre_tokenizer = config.get("pre_tokenizer") or {}
        _require(path, "normalizer", config.get("normalizer"), None)
        _require(path, "pre_tokenizer.type", pre_tokenizer.get("type"), "ByteLevel")
        _require(path, "pre_tokenizer.use_regex", pre_tokenizer.get("use_regex", True), True)
        _require(path, "model.type", model.get("type"), "BPE")
        _require(path, "model.dropout", model.get("dropout"), None)
        _require(path, "model.byte_fallback", model.get("byte_fallback", False), False)
        _require(path, "model.continuing_subword_prefix", model.get("continuing_subword_prefix") or None, None)
        _require(path, "model.end_of_word_suffix", model.get("end_of_word_suffix") or None, None)
        vocab = model.get("vocab") or {}
        missing = [s for s in bytes_to_unicode().values() if s not in vocab]
        if missing:
            raise TokenizerError(
                path, "a byte-level BPE has all 256 byte symbols", expected="256", got=256 - len(missing)
            )
        # tokenizers writes merges as "a b" strings (old files) or [a, b] pairs.
        merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in model.get("merges") or []]
        added = {}
        for token in config.get("added_tokens") or []:
            for option in ("single_word", "lstrip", "rstrip"):
                _require(path, f"added token {token['content']!r} {option}", token.get(option, False), False)
            added[token["content"]] = token["id"]
        return cls(
            vocab, merges, added, pre_tokenizer.get("add_prefix_space", False), model.get("ignore_merges", False)
        )

    def encode_chunk(self, chunk: str) -> list[int]:
        """The merge loop: merge the best-ranked adjacent pair everywhere, until no pair has a rank."""
        word = [self.byte_symbols[b] for b in chunk.encode("utf-8")]
        if self.ignore_merges and "".join(word) in self.vocab:
            return [self.vocab["".join(word)]]
        ranks = self.ranks
        while len(word) > 1:
            best = min(zip(word, word[1:]), key=lambda pair: ranks.get(pair, float("inf")))
            if best not in ranks:
                break
            left, right = best
            merged = []
            i = 0
            while i < len(word):
                if i + 1 < len(word) and word[i] == left and word[i + 1] == right:
                    merged.append(left + right)
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = merged
        return [self.vocab[symbol] for symbol in word]

    def _encode_segment(self, text: str, output: list[int]) -> None:
        """The TinyStories rules' ``encode``: every chunk through the cache."""
        if self.add_prefix_space and not text.startswith(" "):
            text = " " + text
        cache = self.chunk_cache
        for chunk in self.pretokenize(text):
            token_ids = cache.get(chunk)
            if token_ids is None:
                token_ids = cache[chunk] = self.encode_chunk(chunk)
            output.extend(token_ids)

    def encode(self, text: str) -> list[int]:
        """Ids of one text, added tokens matched first as ``tokenizers`` does; no special tokens added."""
        output: list[int] = []
        if self.added_split is None:
            self._encode_segment(text, output)
            return output
        # split() with a capturing group alternates: text, added token, text, ...
        for i, piece in enumerate(self.added_split(text)):
            if i % 2:
                output.append(self.added_tokens[piece])
            elif piece:
                self._encode_segment(piece, output)
        return output

    def encode_batch(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Same contract as :meth:`hf_tokbin.tokenizer.encoder.DocumentEncoder.encode_batch`."""
        flat: list[int] = []
        lengths = np.empty(len(texts), dtype=np.int64)
        for i, text in enumerate(texts):
            ids = self.encode(text)
            lengths[i] = len(ids)
            flat.extend(ids)
        return np.array(flat, dtype=np.uint32), lengths


def _require(path, field: str, got, expected) -> None:
    if got != expected:
        raise TokenizerError(
            path, f"{field} is not supported by the chunk-cache encoder", expected=repr(expected), got=repr(got)
        )


# GPT-2's pattern as tokenizers writes it, for the `regex` module (which has \p{..} classes).
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


class ChunkCacheRegexEncoder(ChunkCacheEncoder):
    r"""The chunk-cache method as fast as pure Python makes it: the same chunk cache and merge loop, a C pre-tokenizer.

    The ``regex`` package matches ``\p{L}``/``\p{N}`` with its own tables
    instead of ``re``'s spelled-out classes (thousands of ranges searched per
    character); the per-document loop only looks chunks up. ``regex``'s
    ``\s`` and Unicode version are not Oniguruma's: rare characters may split
    differently from ``tokenizers`` (the benchmark checks the ids it got).
    """

    def _setup(self) -> None:
        import regex

        super()._setup()
        self.pretokenize = regex.compile(GPT2_PATTERN).findall
        contents = sorted(self.added_tokens, key=len, reverse=True)
        self.added_search = re.compile("|".join(map(re.escape, contents))).search if contents else None

    def encode_batch(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        flat: list[int] = []
        lengths = np.empty(len(texts), dtype=np.int64)
        cache, encode_chunk, pretokenize, added = (
            self.chunk_cache,
            self.encode_chunk,
            self.pretokenize,
            self.added_search,
        )
        for i, text in enumerate(texts):
            start = len(flat)
            if self.add_prefix_space or (added is not None and added(text) is not None):
                flat += self.encode(text)
            else:
                for chunk in pretokenize(text):
                    ids = cache.get(chunk)
                    if ids is None:
                        ids = cache[chunk] = encode_chunk(chunk)
                    flat += ids
            lengths[i] = len(flat) - start
        return np.array(flat, dtype=np.uint32), lengths

