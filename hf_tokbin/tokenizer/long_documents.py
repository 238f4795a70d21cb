r"""Long documents encoded in bounded pieces, with exactly the ids of the whole text.

``tokenizers`` needs about 120 bytes of memory per byte of a document it
encodes (its ``Encoding`` keeps a token string, offsets and masks per token,
its pre-tokenizer an alignment per byte): one 16 MiB document took 2.2 GB in
a build (``scripts/bench_long_document.py``). :func:`encode_in_bounded_pieces`
cuts every document longer than :data:`PIECE_CHARS` characters into pieces
of about that length and encodes them one after the other, where the cut
provably leaves every id unchanged; memory then grows with the piece, not
the document.

Why a cut never changes an id. For a byte-level BPE, the ids of a text are
the BPE ids of each pre-token in turn, and the pre-tokens are the matches of
a regex, found left to right (leftmost-first), each search starting where
the last match ended. The cut is made only for tokenizers of exactly these
shapes (:func:`cuts_keep_ids`):

- no normalizer, no truncation, no padding; a BPE model without dropout; a
  ``ByteLevel`` (or no) post-processor, which adds no id without special
  tokens;
- the pre-tokenizer is ``ByteLevel(add_prefix_space=False, use_regex=True)``
  (GPT-2's pattern) or ``Split(GPT-2's or Llama 3's pattern, Isolated)`` then
  ``ByteLevel(add_prefix_space=False, use_regex=False)``.

and only between a printable ASCII character other than the space (``!``
to ``~``) and a following space (U+0020). In both patterns a space belongs
to a match only as its first character (`` ?``, Llama 3's one-character
prefix) or inside a whitespace run, so no match goes on from a non-space
character to a space. So:

1. the whole text's pre-tokens have a boundary at the cut;
2. the pre-tokens after the cut are those of the second piece alone: the
   patterns have no lookbehind, no anchor, no ``\b``, so a search that
   starts at the cut reads only what follows it;
3. the pre-tokens before the cut are those of the first piece alone: once a
   match consumed the character before the cut, the only tests it can make
   at the cut are character classes without the space (``\p{L}``,
   ``\p{N}``, ``[^\s\p{L}\p{N}]``, ``[\r\n]``) or a contraction's next
   letter, which a space and the end of the text both fail; ``\s+(?!\S)``, the one test where the end of the
   text differs from a character, would need whitespace right before the
   cut. ASCII only: ``tokenizers``' Unicode tables are older than Python's,
   and every ASCII character is classed alike in both.

Added tokens are cut out of the text before the pre-tokenizer; a document
holding the text of an added token that is parsed is never cut (without such
text, added tokens touch neither the whole nor any piece). The ids of each
piece come from the encoder's own ``encode_batch`` (its fast engine only
where it is proven for that piece's text). ``tests/pipeline/test_faults_long_documents.py``
checks all of this against ``tokenizers`` on the whole text, with GPT-2's
and Llama 3's real tokenizers and hypothesis-chosen texts.

A long document without such a cut (no ASCII character before a space, e.g.
Chinese text) is encoded whole, and so is every long document of a tokenizer
of another shape.

The fast-path check compares the two engines on the corpus sample
(:mod:`hf_tokbin.tokenizer.encoder`); it is given the start of each sampled
document, at most :data:`PIECE_CHARS` characters (:func:`bounded_prefixes`):
a prefix is a text like any other, the engines are compared on the same
strings, and their memory grows with the bound, not with the document.
"""

from __future__ import annotations

import functools
import json
import re

import numpy as np

PIECE_CHARS = 1 << 18  # characters per piece of a long document: ~35 MB of tokenizers' memory

# The exact pre-tokenizer patterns the argument above is made for.
GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
    r"\s*[\r\n]+|\s+(?!\S)|\s+"
)

_CUT = re.compile(r"[!-~](?= )")  # a cut goes right after the character, before the space


def _byte_level(step: dict, use_regex: bool) -> bool:
    return (
        step.get("type") == "ByteLevel"
        and step.get("add_prefix_space") is False
        and step.get("use_regex", True) is use_regex
    )


def _pre_tokenizer_cuts(pre_tokenizer: dict | None) -> bool:
    if not pre_tokenizer:
        return False
    if _byte_level(pre_tokenizer, use_regex=True):
        return True  # ByteLevel's own regex is GPT-2's pattern
    steps = pre_tokenizer.get("pretokenizers") if pre_tokenizer.get("type") == "Sequence" else None
    if not steps or len(steps) != 2:
        return False
    split, byte_level = steps
    pattern = (split.get("pattern") or {}).get("Regex")
    return (
        split.get("type") == "Split"
        and pattern in (GPT2_PATTERN, LLAMA3_PATTERN)
        and split.get("behavior") == "Isolated"
        and split.get("invert") is False
        and _byte_level(byte_level, use_regex=False)
    )


@functools.lru_cache(maxsize=4)
def cuts_keep_ids(tokenizer_json: str) -> bool:
    """Whether this tokenizer is one of the shapes for which a cut between a printable ASCII character and a space
    keeps every id (module docstring)."""
    config = json.loads(tokenizer_json)
    model = config.get("model") or {}
    post = config.get("post_processor")
    return (
        config.get("normalizer") is None
        and config.get("truncation") is None
        and config.get("padding") is None
        and model.get("type") == "BPE"
        and model.get("dropout") is None
        and (post is None or post.get("type") == "ByteLevel")
        and _pre_tokenizer_cuts(config.get("pre_tokenizer"))
    )


def pieces(text: str, piece_chars: int = PIECE_CHARS):
    """The text in pieces of at least ``piece_chars`` characters, each cut between a printable ASCII character and a
    space."""
    start = 0
    while len(text) - start > piece_chars:
        cut = _CUT.search(text, start + piece_chars - 1)
        if cut is None:
            break  # no cut point further on: the rest stays whole
        yield text[start : cut.end()]
        start = cut.end()
    yield text[start:]


def bounded_prefixes(texts: list[str]) -> list[str]:
    """Each text's first :data:`PIECE_CHARS` characters: what a comparison of the engines encodes of a long document."""
    return [text[:PIECE_CHARS] if len(text) > PIECE_CHARS else text for text in texts]


def encode_in_bounded_pieces(
    encoder, texts: list[str], piece_chars: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``encoder.encode_batch(texts)``, with every long document encoded piece by piece where that keeps its ids.

    Same result as the encoder's (flat ids, lengths); documents up to
    ``piece_chars`` (default :data:`PIECE_CHARS`) characters are encoded
    together in one call, as before.
    """
    piece_chars = piece_chars or PIECE_CHARS

    long = [i for i, text in enumerate(texts) if len(text) > piece_chars]
    tokenizer_json = getattr(encoder, "tokenizer_json", None)  # a DocumentEncoder's; the byte tokenizer has none
    if not long or tokenizer_json is None or not cuts_keep_ids(tokenizer_json):
        return encoder.encode_batch(texts)  # bytes (ByteEncoder) need no pieces: memory is linear
    added = encoder.parsed_added_tokens()
    ids, lengths = [], []
    start = 0
    for i in [*long, len(texts)]:
        if start < i:  # the short documents before this long one, in one call
            batch_ids, batch_lengths = encoder.encode_batch(texts[start:i])
            ids.append(batch_ids)
            lengths.append(batch_lengths)
        if i == len(texts):
            break
        text = texts[i]
        parts = [text] if any(token in text for token in added) else pieces(text, piece_chars)
        counts = getattr(encoder, "documents_by_engine", None)
        before = list(counts) if counts is not None else None
        document = [encoder.encode_batch([part])[0] for part in parts]
        if before is not None:  # one document, however many pieces: tokenizers' if it encoded any piece
            slow = counts[1] > before[1]
            counts[0], counts[1] = before[0] + (not slow), before[1] + slow
        ids.extend(document)
        lengths.append(np.array([sum(part.size for part in document)], dtype=np.int64))
        start = i + 1
    return np.concatenate(ids) if ids else np.zeros(0, np.uint32), np.concatenate(lengths)
