"""Seed 002's pure-Python encoder must give ``tokenizers``' ids: it is the speed baseline, not a new definition."""

from __future__ import annotations

import json
import pickle
import random
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tinystories_reference import (
    ChunkCacheEncoder,
    bytes_to_unicode,
    gpt2_pretokenizer,
)
from tokenizer_files import gpt2_tokenizer_json, llama3_tokenizer_json, story_texts
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

from hf_tokbin.errors import TokenizerError
from hf_tokbin.tokenizer import train_bpe

TRICKY_TEXTS = [
    "",
    " ",
    "Hello world<|endoftext|> it's 12345 ok",
    "<|endoftext|><|endoftext|>x<|endoftext|>",
    "  many   spaces\n\n\ttabs  \r\n",
    "café naïve ﬁne ＦＵＬＬ ½",
    "emoji 😀👍🏽👨‍👩‍👧 🇫🇷",
    "日本語のテキスト 中文 한국어",
    "I'm you'll they've she'd IT'S ’s",
    "\x00\x1c\x1f\u0085\u00a0\u2028\u3000 x",
    "digits 0123456789 ٣ Ⅻ ①",
]


def _byte_level(text: str) -> str:
    symbols = bytes_to_unicode()
    return "".join(symbols[b] for b in text.encode("utf-8"))


def _tokenizers_ids(tokenizer: Tokenizer, text: str) -> list[int]:
    return tokenizer.encode(text, add_special_tokens=False).ids


@pytest.fixture(scope="module")
def gpt2():
    path = gpt2_tokenizer_json() / "tokenizer.json"
    return Tokenizer.from_file(str(path)), ChunkCacheEncoder.from_tokenizer_json(path)


@pytest.fixture(scope="module")
def small_bpe(tmp_path_factory):
    """A byte-level BPE trained the way ``hf-tokbin tokenizer train`` trains it for the TinyStories rules."""
    path = train_bpe(story_texts(400, seed=1), 1000, tmp_path_factory.mktemp("bpe"))
    return Tokenizer.from_file(str(path)), ChunkCacheEncoder.from_tokenizer_json(path)


def _train_byte_level(tmp_path, add_prefix_space=False, ignore_merges=False, added=()) -> str:
    tokenizer = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=700,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(story_texts(300, seed=2), trainer)
    tokenizer.add_tokens(list(added))
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    return str(path)


# ------------------------------------------------------------ pre-tokenizer


def test_byte_symbols_are_tokenizers_byte_level_alphabet():
    symbols = bytes_to_unicode()
    assert sorted(symbols) == list(range(256))
    assert set(symbols.values()) == set(pre_tokenizers.ByteLevel.alphabet())
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    for b in range(128):
        assert byte_level.pre_tokenize_str(chr(b))[0][0] == symbols[b]
    assert byte_level.pre_tokenize_str("é")[0][0] == symbols[0xC3] + symbols[0xA9]


def _sample_code_points() -> list[int]:
    """Every code point below U+3000 and a random sample above, assigned in Python's Unicode tables."""
    rng = random.Random(0)
    sample = list(range(0x3000)) + rng.sample(range(0x3000, 0x110000), 4000)
    return [cp for cp in sample if not 0xD800 <= cp < 0xE000 and unicodedata.category(chr(cp)) != "Cn"]


def test_pretokenizer_splits_like_tokenizers_for_every_character_class():
    # Each character after a letter, a digit, punctuation and spaces: its class decides every split.
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
    pattern = gpt2_pretokenizer()
    for cp in _sample_code_points():
        c = chr(cp)
        text = f"x{c} 1{c}!{c}  {c}{c}\n"
        expected = [piece for piece, _ in byte_level.pre_tokenize_str(text)]
        assert [_byte_level(chunk) for chunk in pattern.findall(text)] == expected, hex(cp)


# ------------------------------------------------------------ ids


@pytest.mark.parametrize("text", TRICKY_TEXTS)
def test_gpt2_tricky_texts_match_tokenizers(gpt2, text):
    tokenizer, encoder = gpt2
    assert encoder.encode(text) == _tokenizers_ids(tokenizer, text)


def test_gpt2_stories_match_tokenizers_and_cache_fills(gpt2):
    tokenizer, encoder = gpt2
    stories = story_texts(200, seed=3)
    for story in stories:
        assert encoder.encode(story) == _tokenizers_ids(tokenizer, story)
    assert "Lily" in encoder.chunk_cache or " Lily" in encoder.chunk_cache
    # Now mostly cache hits: still the same ids.
    for story in stories[:50]:
        assert encoder.encode(story) == _tokenizers_ids(tokenizer, story)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cn")), max_size=60))
def test_gpt2_any_text_matches_tokenizers(gpt2, text):
    tokenizer, encoder = gpt2
    assert encoder.encode(text) == _tokenizers_ids(tokenizer, text)


def test_trained_bpe_matches_tokenizers(small_bpe):
    tokenizer, encoder = small_bpe
    for text in [*story_texts(100, seed=4), *TRICKY_TEXTS]:
        assert encoder.encode(text) == _tokenizers_ids(tokenizer, text)


@pytest.mark.parametrize(
    "options", [{"add_prefix_space": True}, {"ignore_merges": True}, {"added": ["Lily", "Lily went"]}]
)
def test_byte_level_options_match_tokenizers(tmp_path, options):
    path = _train_byte_level(tmp_path, **options)
    tokenizer, encoder = Tokenizer.from_file(path), ChunkCacheEncoder.from_tokenizer_json(path)
    for text in [*story_texts(50, seed=5), *TRICKY_TEXTS, "Lily wentLily went <|endoftext|>Lily"]:
        assert encoder.encode(text) == _tokenizers_ids(tokenizer, text)


def test_encode_batch_concatenates_and_counts(small_bpe):
    tokenizer, encoder = small_bpe
    texts = [*story_texts(5, seed=6), "", "a"]
    ids, lengths = encoder.encode_batch(texts)
    expected = [_tokenizers_ids(tokenizer, t) for t in texts]
    assert ids.dtype == np.uint32 and lengths.dtype == np.int64
    assert lengths.tolist() == [len(e) for e in expected]
    assert ids.tolist() == [i for e in expected for i in e]


def test_pickle_drops_the_cache_and_encodes_the_same(small_bpe):
    tokenizer, encoder = small_bpe
    encoder.encode("Lily went to the park.")
    copy = pickle.loads(pickle.dumps(encoder))
    assert copy.chunk_cache == {}
    assert copy.encode("Lily went to the park.") == _tokenizers_ids(tokenizer, "Lily went to the park.")


# ------------------------------------------------------------ rejected tokenizers


def _edit_json(tmp_path, source: str, edit) -> str:
    config = json.loads(open(source, encoding="utf-8").read())
    edit(config)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda c: c.update(normalizer={"type": "NFKC"}), "normalizer"),
        (lambda c: c["model"].update(byte_fallback=True), "model.byte_fallback"),
        (lambda c: c["pre_tokenizer"].update(use_regex=False), "pre_tokenizer.use_regex"),
        (lambda c: c["added_tokens"][0].update(single_word=True), "single_word"),
        (lambda c: c["model"]["vocab"].pop("Ā"), "256 byte symbols"),
    ],
)
def test_unsupported_tokenizer_is_rejected(tmp_path, edit, field):
    path = _edit_json(tmp_path, _train_byte_level(tmp_path), edit)
    with pytest.raises(TokenizerError) as error:
        ChunkCacheEncoder.from_tokenizer_json(path)
    assert str(error.value).startswith(f"{path}: ") and field in str(error.value)


def test_llama3_pretokenizer_is_rejected():
    path = llama3_tokenizer_json() / "tokenizer.json"
    with pytest.raises(TokenizerError, match="pre_tokenizer.type.*expected 'ByteLevel', got 'Sequence'"):
        ChunkCacheEncoder.from_tokenizer_json(path)


def test_unreadable_file_is_rejected(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(TokenizerError, match="cannot read tokenizer.json"):
        ChunkCacheEncoder.from_tokenizer_json(path)


def test_added_token_with_lstrip_is_rejected(tmp_path):
    tokenizer = Tokenizer.from_file(_train_byte_level(tmp_path))
    tokenizer.add_tokens([AddedToken("<x>", lstrip=True)])
    path = tmp_path / "lstrip.json"
    tokenizer.save(str(path))
    with pytest.raises(TokenizerError, match="'<x>' lstrip"):
        ChunkCacheEncoder.from_tokenizer_json(path)
