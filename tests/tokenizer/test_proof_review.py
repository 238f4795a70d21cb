"""A hostile review of the fast path's proof and routing: documents on which the build's ids must equal ``tokenizers``'.

Each test is a document (and a tokenizer) found to break the promise, kept so it stays fixed.
"""

from __future__ import annotations

import functools
import json
import random

import numpy as np
import pytest
from tokenizer_files import MODEL_TOKENIZERS, gpt2_tokenizer_json, llama3_tokenizer_json, model_tokenizer_json
from tokenizers import AddedToken, Tokenizer

from hf_tokbin.tokenizer import proof
from hf_tokbin.tokenizer.encoder import DocumentEncoder, _encode_tokenizers, _load_tokenizers

pytestmark = pytest.mark.slow  # real tokenizers on both engines


def _utf8(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    encoded = [t.encode("utf-8") for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return offsets, np.frombuffer(b"".join(encoded), dtype=np.uint8)


def _want(tokenizer: Tokenizer, texts: list[str]) -> tuple[list[int], list[int]]:
    tokenizer.encode_special_tokens = True
    per_text = [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]
    return [i for ids in per_text for i in ids], [len(ids) for ids in per_text]


def _assert_both_ways(encoder: DocumentEncoder, tokenizer: Tokenizer, texts: list[str]) -> None:
    want_ids, want_lengths = _want(tokenizer, texts)
    ids, lengths = encoder.encode_batch(texts)
    assert (ids.tolist(), lengths.tolist()) == (want_ids, want_lengths)
    fast = encoder.encode_utf8(*_utf8(texts))
    if fast is not None:
        assert (fast[0].tolist(), fast[1].tolist()) == (want_ids, want_lengths)


@functools.cache
def _qwen3() -> tuple[DocumentEncoder, Tokenizer]:
    path = model_tokenizer_json("qwen3") / "tokenizer.json"
    encoder = DocumentEncoder.from_tokenizer_json(path)
    assert encoder.check_fast_path().used
    return encoder, Tokenizer.from_file(str(path))


@pytest.mark.parametrize("text", ["a<think>\u0338 b", "x</think>\u0338", "<tool_call>\u0338", "<|fim_prefix|>\u0338"])
def test_nfc_that_breaks_an_added_token_apart_keeps_the_token_in_the_utf8_way(text):
    """Qwen3's added tokens are matched on the text as given, before NFC; ">" + U+0338 composes to "≯".

    The UTF-8 way searched for added-token text only in the NFC'd batch, where
    "<think>" + U+0338 reads "<think≯": gigatoken got the document without the token.
    """
    encoder, tokenizer = _qwen3()
    _assert_both_ways(encoder, tokenizer, [text, "hello"])


def test_a_special_token_skipped_as_text_still_hides_a_parsed_token_inside_it():
    """With special tokens encoded as text, ``tokenizers`` still matches them (leftmost-longest), then skips them.

    A non-special token starting inside a special token's text ("|>qqz" in
    "<|endoftext|>qqz") is then never matched there; cutting documents at
    non-special tokens alone cut it there. The check's probes never hold such a text.
    """
    tokenizer = Tokenizer.from_file(str(gpt2_tokenizer_json() / "tokenizer.json"))
    tokenizer.add_tokens([AddedToken("|>qqz", normalized=False)])
    encoder = DocumentEncoder(Tokenizer.from_str(tokenizer.to_str()))
    assert encoder.check_fast_path().used
    _assert_both_ways(encoder, tokenizer, ["<|endoftext|>qqz", "x|>qqz", "a<|endoftext|>b"])


def test_any_hidden_is_the_pairwise_rule_on_every_small_case():
    """The one-pass check of Gemma's 6,406 parsed tokens against the skipped ones says what the pair-by-pair rule says:
    a parsed text hidden inside a skipped one, or starting in its last characters."""
    import itertools
    import random

    from hf_tokbin.tokenizer.encoder import _any_hidden

    def pairwise(skipped: str, parsed: str) -> bool:
        return parsed in skipped or any(skipped.endswith(parsed[:k]) for k in range(1, min(len(skipped), len(parsed))))

    texts = ["".join(t) for n in range(1, 4) for t in itertools.product("ab|", repeat=n)]
    rng = random.Random(0)
    for _ in range(3000):
        skipped, parsed = rng.sample(texts, rng.randint(1, 2)), rng.sample(texts, rng.randint(1, 3))
        want = any(pairwise(s, p) for s in skipped for p in parsed)
        assert _any_hidden(skipped, parsed) == want, (skipped, parsed)


def _o200k_reading(extra_marks: str) -> dict:
    """GPT-4o's pre-tokenizer as an engine would run it whose tables put ``extra_marks`` in \\p{M} rather than
    \\p{L}.
    """
    config = json.loads((model_tokenizer_json("gpt4o") / "tokenizer.json").read_text(encoding="utf-8"))["pre_tokenizer"]
    split = config["pretokenizers"][0]["pattern"]
    not_letter = "[\\p{L}&&[^" + extra_marks + "]]"  # Oniguruma: the letters but these
    split["Regex"] = (
        split["Regex"]
        .replace("[^\\r\\n\\p{L}\\p{N}]", "[^\\r\\n\\p{N}" + not_letter + "]")
        .replace("[^\\s\\p{L}\\p{N}]", "[^\\s\\p{N}" + not_letter + "]")
    )
    return config


def test_a_letter_read_as_a_mark_is_caught_by_the_boundary_probes():
    """o200k splits a letter and a mark alike after one character, but not after two ("!!ʰ" vs "!!\u0300").

    select_probes found no probe telling U+02B0 (Lm) from U+0300 (Mn) and took
    them as split alike, reading contexts of one character each side. An
    engine whose tables call U+02B0 a mark then makes other pieces of
    "!!ʰ" and passed every chosen probe.
    """
    real = json.loads((model_tokenizer_json("gpt4o") / "tokenizer.json").read_text(encoding="utf-8"))["pre_tokenizer"]
    engine = _o200k_reading("\\u02b0")
    pieces = [
        Tokenizer.from_str(proof.boundary_tokenizer_json(pre, "left", "a")).pre_tokenizer.pre_tokenize_str("!!\u02b0")
        for pre in (real, engine)
    ]
    assert pieces[0] != pieces[1]  # the engine does read U+02B0 otherwise
    classes, why = proof.pattern_classes(real["pretokenizers"][0]["pattern"]["Regex"])
    assert why is None
    reference = proof.BoundaryEngines(real, _load_tokenizers)
    probes, why = proof.select_probes(real, classes, reference)
    assert why is None  # the fast path stays proven for o200k
    ids = functools.partial(
        _encode_tokenizers, Tokenizer.from_file(str(model_tokenizer_json("gpt4o") / "tokenizer.json"))
    )
    check = proof.CodePointProof(ids, ids, probes, reference, proof.BoundaryEngines(engine, _load_tokenizers))
    assert check.unproven(np.array([0x2B0, 0x61])).tolist() == [True, False]


@pytest.mark.parametrize("context, c", [("あ", "い"), ("日", "旦"), ("。", "〃")])
def test_a_character_sharing_the_context_s_first_bytes_shows_it_is_joined(context, c):
    """DeepSeek V3 keeps "あい" in one piece; the left boundary tokenizer showed no merge there.

    "あ" is E3 81 82, "い" E3 81 84: the context's first merge (E3 81) also
    joins the first bytes of "い", and the context then has no byte after
    it to merge with. Both engines gave the same ids whether or not they cut
    between the two, so the probe read nothing for ~200 code points (U+3000
    to U+307F, U+65C0 to U+65FF), and select_probes read a boundary that was not there.
    """
    pre_tokenizer = json.loads((model_tokenizer_json("deepseek_v3") / "tokenizer.json").read_text(encoding="utf-8"))[
        "pre_tokenizer"
    ]
    splitter = Tokenizer.from_str(proof.boundary_tokenizer_json(pre_tokenizer, "left", context)).pre_tokenizer
    assert len(splitter.pre_tokenize_str(context + c)) == 1  # one piece (the CJK bracket)
    probe = proof.BoundaryProbe("left", context, context + "{c}")
    assert proof.BoundaryEngines(pre_tokenizer, _load_tokenizers).joined(probe, np.array([ord(c)])).tolist() == [True]


# ---------------------------------------------------------------- brute force

_ALL_TOKENIZERS = ("gpt2", "llama3", *MODEL_TOKENIZERS)
# Scripts, numbers, white space, marks that compose (U+0338 with "<" ">" "="), NFC singletons and
# compatibility ideographs, Hangul jamo, Indic vowel signs, SentencePiece's "▁", emoji, contractions.
_PIECES = [
    *"aZé ß Ωжא日한ـ0189٣३१²½Ⅻ \t\n\r\u00a0\u3000\u0085\u2028\x0b\x0c",
    *"\u0301\u0308\u0338\u030a\u3099\u200d\ufe0f'’\"!?.,-_/\\<|>=ſ\u212a\u212b\u2126\uf900\uf9d1",
    *"\u1100\u1161\u11a8\uac00\u0915\u093c\u0958\u0bc6\u0bbe\u0bca\u0cbf\u0cd5\u0d46\u0d3e\u0dd9\u0dcf\u0b47\u0b3eあい。ゞ▁",
    "'s",
    "'LL",
    " world",
    "123456",
    "  ",
    "\n\n",
    "\n\n\n",
    "\r\n",
    "😀",
    "👨‍👩‍👧",
    "A\u030a",
    "e\u0301",
    "\u1112\u1161\u11ab",
    "\u0338",
    "\u0338",
    "\u0301",
    "\u0301",  # often: right after added-token text too
]


def _random_batches(rng: random.Random, added: list[str], count: int) -> list[list[str]]:
    pieces = (
        _PIECES
        + [chr(rng.randrange(0x20, 0x3100)) for _ in range(60)]
        + [chr(rng.randrange(0x3100, 0x30000)) for _ in range(30)]
    )
    pieces = [p for p in pieces if not 0xD800 <= ord(p[0]) < 0xE000]

    def document() -> str:
        return "".join(
            rng.choice(added) if added and rng.random() < 0.15 else rng.choice(pieces)
            for _ in range(rng.randrange(14))
        )

    return [[document() for _ in range(rng.randrange(1, 8))] for _ in range(count)]


@pytest.mark.parametrize("name", _ALL_TOKENIZERS)
def test_random_texts_with_added_token_text_give_tokenizers_ids_both_ways(name):
    """Random batches of many scripts, composing marks and added-token text, both ways a build encodes."""
    folder = {"gpt2": gpt2_tokenizer_json, "llama3": llama3_tokenizer_json}.get(
        name, lambda: model_tokenizer_json(name)
    )()
    path = folder / "tokenizer.json"
    encoder = DocumentEncoder.from_tokenizer_json(path)
    assert encoder.check_fast_path().used
    tokenizer = Tokenizer.from_file(str(path))
    added = sorted(t.content for t in tokenizer.get_added_tokens_decoder().values())
    for texts in _random_batches(random.Random(name), added, 1500):
        _assert_both_ways(encoder, tokenizer, texts)


def test_a_long_document_encoded_in_pieces_counts_once():
    """The build's "documents encoded by gigatoken N, tokenizers M" counted each piece of a long document.

    Three documents, two of them long (cut into pieces of ~50 characters), one
    holding a private-use character: one document each way, not 21 and 1.
    """
    from hf_tokbin.tokenizer.long_documents import encode_in_bounded_pieces

    encoder = DocumentEncoder.from_tokenizer_json(gpt2_tokenizer_json())
    assert encoder.check_fast_path().used
    encoder.documents_by_engine = [0, 0]
    texts = ["word " * 100, "short", "x" * 10 + " \U000f0000 " + "word " * 100]
    encode_in_bounded_pieces(encoder, texts, piece_chars=50)
    assert encoder.documents_by_engine == [2, 1]


def _shape(name: str) -> tuple[str, list[AddedToken]]:
    """A model's tokenizer.json with non-special tokens added where the cutting rules meet the normalizer."""
    config = json.loads((model_tokenizer_json(name) / "tokenizer.json").read_text(encoding="utf-8"))
    if name == "llama2":  # Prepend "▁" on every piece between tokens
        return json.dumps(config), [AddedToken(t, normalized=False) for t in ("<x>", "\n\n", "▁▁", " y")]
    if name == "deepseek_v3":  # normalized tokens, an empty normalizer
        return json.dumps(config), [AddedToken(t, normalized=True) for t in ("\n\n", "日本", "'s")]
    # qwen3: tokens matched before NFC, whose text NFC makes (A + U+030A is Å) or breaks
    return json.dumps(config), [AddedToken(t, normalized=False) for t in ("\u00c5", "e\u0301", "'s", "a>")]


@pytest.mark.parametrize("name", ["llama2", "deepseek_v3", "qwen3"])
def test_documents_cut_at_added_tokens_meet_the_normalizer_as_tokenizers_does(name):
    """Added tokens next to the normalizer's work: Prepend per piece, normalized tokens, NFC that makes or breaks a
    token.
    """
    config, added = _shape(name)
    tokenizer = Tokenizer.from_str(config)
    tokenizer.add_tokens(added)
    encoder = DocumentEncoder(Tokenizer.from_str(tokenizer.to_str()))
    assert encoder.check_fast_path().used
    contents = sorted(t.content for t in added)
    for texts in _random_batches(random.Random(name), contents + ["A\u030a", ">\u0338", "\u212b"], 500):
        _assert_both_ways(encoder, tokenizer, texts)
