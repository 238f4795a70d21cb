"""Long documents are encoded in bounded pieces with exactly ``tokenizers``' ids of the whole text.

The reference is always ``tokenizers`` itself on the whole document
(``encode(text, add_special_tokens=False)`` with special-token text as
ordinary text), with GPT-2's and Llama 3's real tokenizers; hypothesis
chooses the texts and a tiny piece size, so that every text is cut many
times at every kind of neighbourhood.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from release_fixtures import stories, write_corpus
from tokenizer_files import gpt2_tokenizer_json, llama3_tokenizer_json
from tokenizers import Tokenizer

from hf_tokbin.pipeline import build, plan_build
from hf_tokbin.tokenizer import long_documents, resolve_tokenizer, train_bpe
from hf_tokbin.tokenizer.encoder import DocumentEncoder
from hf_tokbin.tokenizer.long_documents import cuts_keep_ids, encode_in_bounded_pieces, pieces

pytestmark = pytest.mark.slow  # long documents with real tokenizers

# Pieces of text where pre-tokenizers, contractions and Unicode tables are most likely to part.
FRAGMENTS = [
    "a",
    "Z",
    "word",
    "Hello",
    " the",
    " ",
    "  ",
    "   ",
    "\n",
    "\n\n",
    "\r\n",
    "\t",
    " \n",
    "'s",
    "'S",
    "'LL",
    "'ve",
    "n't",
    "don't",
    "’s",
    "'",
    '"',
    "1",
    "12",
    "1234567",
    " 42",
    ",",
    ".",
    "!?",
    "...",
    "é",
    "ſ",
    "K",
    "naïve",
    "日本語",
    "한국어",
    "😀",
    "👨‍👩‍👧",
    "\u00a0",
    "\u3000",
    "\u0301",
    "\ua7ce",
    "\u2028",
    "\x00",
    "<|endoftext|>",
    "<|begin_of_text|>",
    "a b",
    "x y z",
]
TEXTS = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=6)), max_size=60).map("".join)


@functools.lru_cache(maxsize=4)
def reference_tokenizer(tokenizer_path: Path) -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(tokenizer_path / "tokenizer.json"))
    tokenizer.encode_special_tokens = True  # special-token text is ordinary text, as the build encodes it
    return tokenizer


def whole_text_ids(tokenizer_path: Path, texts: list[str]) -> list[list[int]]:
    return [reference_tokenizer(tokenizer_path).encode(text, add_special_tokens=False).ids for text in texts]


def split_by_lengths(ids: np.ndarray, lengths: np.ndarray) -> list[list[int]]:
    ends = np.cumsum(lengths)
    return [ids[end - n : end].tolist() for end, n in zip(ends, lengths)]


@pytest.fixture(scope="module", params=["gpt2", "llama3"])
def tokenizer_path(request) -> Path:
    return {"gpt2": gpt2_tokenizer_json, "llama3": llama3_tokenizer_json}[request.param]()


@pytest.fixture(scope="module", params=["never", "auto"])
def encoder(request, tokenizer_path) -> DocumentEncoder:
    encoder = DocumentEncoder.from_tokenizer_json(tokenizer_path, fast=request.param)
    encoder.check_fast_path([])
    return encoder


def test_real_byte_level_tokenizers_are_cut(tokenizer_path, tmp_path):
    assert cuts_keep_ids((tokenizer_path / "tokenizer.json").read_text(encoding="utf-8"))
    train_bpe(stories(100, seed=1), 400, tmp_path / "tok")  # hf-tokbin's own: ByteLevel, GPT-2's pattern
    assert cuts_keep_ids((tmp_path / "tok" / "tokenizer.json").read_text(encoding="utf-8"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(TEXTS, min_size=1, max_size=4), piece_chars=st.integers(1, 40))
def test_pieces_give_the_ids_of_the_whole_text(encoder, tokenizer_path, texts, piece_chars):
    ids, lengths = encode_in_bounded_pieces(encoder, texts, piece_chars)
    assert lengths.dtype == np.int64 and lengths.size == len(texts)
    assert split_by_lengths(ids, lengths) == whole_text_ids(tokenizer_path, texts)


@settings(max_examples=200, deadline=None)
@given(text=TEXTS, piece_chars=st.integers(1, 40))
def test_pieces_join_to_the_text_and_each_cut_is_between_a_printable_ascii_character_and_a_space(text, piece_chars):
    parts = list(pieces(text, piece_chars))
    assert "".join(parts) == text
    for part, following in zip(parts, parts[1:]):
        assert len(part) >= piece_chars
        assert "!" <= part[-1] <= "~" and following[0] == " "


def test_a_long_story_is_really_cut():
    text = " ".join(stories(50, seed=2))
    assert len(list(pieces(text, 100))) > 10


def test_a_document_holding_a_parsed_added_token_is_never_cut(tmp_path):
    # An added token spanning a letter and a space: cutting inside it would split it in two.
    tokenizer = Tokenizer.from_file(str(gpt2_tokenizer_json() / "tokenizer.json"))
    tokenizer.add_tokens(["lovely day"])
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    encoder = DocumentEncoder.from_tokenizer_json(tmp_path, fast="never")
    text = "What a lovely day it was, a lovely day indeed"
    expected = whole_text_ids(tmp_path, [text])
    ids, lengths = encode_in_bounded_pieces(encoder, [text], piece_chars=12)
    assert split_by_lengths(ids, lengths) == expected
    cut_blindly = np.concatenate([encoder.encode_batch([part])[0] for part in pieces(text, 12)]).tolist()
    assert [cut_blindly] != expected  # the rule matters: a blind cut changes the ids here


def edited(tokenizer_json: str, edit) -> str:
    config = json.loads(tokenizer_json)
    edit(config)
    return json.dumps(config)


def test_other_tokenizer_shapes_are_never_cut():
    gpt2 = (gpt2_tokenizer_json() / "tokenizer.json").read_text(encoding="utf-8")
    llama3 = (llama3_tokenizer_json() / "tokenizer.json").read_text(encoding="utf-8")
    refused = [
        edited(gpt2, lambda c: c.update(normalizer={"type": "NFC"})),
        edited(gpt2, lambda c: c["pre_tokenizer"].update(add_prefix_space=True)),  # a space before every split
        edited(
            gpt2,
            lambda c: c.update(
                truncation={"max_length": 8, "strategy": "LongestFirst", "stride": 0, "direction": "Right"}
            ),
        ),
        edited(gpt2, lambda c: c["model"].update(dropout=0.1)),
        edited(
            llama3, lambda c: c["pre_tokenizer"]["pretokenizers"][0]["pattern"].update(Regex=r"(?<=a) |\p{L}+|\s+")
        ),
        edited(llama3, lambda c: c["pre_tokenizer"]["pretokenizers"][0].update(behavior="MergedWithPrevious")),
        edited(
            llama3,
            lambda c: c.update(
                post_processor={"type": "TemplateProcessing", "single": [], "pair": [], "special_tokens": {}}
            ),
        ),
    ]
    for tokenizer_json in refused:
        assert not cuts_keep_ids(tokenizer_json)


@pytest.fixture(scope="module")
def long_corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("long_documents")
    train_bpe(stories(300, seed=1), 500, root / "tok")
    long_story = " ".join(stories(400, seed=5))  # ~20,000 characters
    write_corpus(
        root / "corpus",
        [
            ("train", [*stories(30, seed=6), long_story, *stories(30, seed=7)]),
            ("validation", [long_story[:5000], "x"]),
        ],
    )
    return root


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_build_encodes_no_piece_longer_than_the_bound_and_gives_the_bytes_of_whole_documents(
    long_corpus, tmp_path, monkeypatch
):
    plan = lambda out: plan_build(  # noqa: E731
        long_corpus / "corpus", resolve_tokenizer(str(long_corpus / "tok")), out, fast="never"
    )
    seen = []
    encode_batch = DocumentEncoder.encode_batch

    def spy(self, texts):
        seen.append(max(map(len, texts), default=0))
        return encode_batch(self, texts)

    monkeypatch.setattr(DocumentEncoder, "encode_batch", spy)
    monkeypatch.setattr(long_documents, "PIECE_CHARS", 1000)
    build(plan(tmp_path / "pieces"), progress=False)
    assert 1000 <= max(seen) < 1100  # the tokenizer never saw the ~20,000-character story whole
    monkeypatch.setattr(long_documents, "PIECE_CHARS", 10**9)  # nothing is long: every document whole
    build(plan(tmp_path / "whole"), progress=False)
    assert max(seen) > 19_000
    assert tree_bytes(tmp_path / "pieces") == tree_bytes(tmp_path / "whole")


@pytest.mark.parametrize("fast", ["auto", "never"])
def test_no_engine_sees_a_text_longer_than_the_bound_anywhere_in_a_build(long_corpus, tmp_path, monkeypatch, fast):
    """The encoding, the fast-path check on the corpus sample (the long story is in it) and the dry run."""
    from hf_tokbin.pipeline.run import describe_plan
    from hf_tokbin.tokenizer import encoder as encoder_module

    seen = []
    with_tokenizers, with_gigatoken = DocumentEncoder._encode_with_tokenizers, encoder_module._encode_with_gigatoken

    def tokenizers_spy(self, texts):
        seen.append(max(map(len, texts), default=0))
        return with_tokenizers(self, texts)

    def gigatoken_spy(engine, texts):
        seen.append(max(map(len, texts), default=0))
        return with_gigatoken(engine, texts)

    monkeypatch.setattr(DocumentEncoder, "_encode_with_tokenizers", tokenizers_spy)
    monkeypatch.setattr(encoder_module, "_encode_with_gigatoken", gigatoken_spy)
    monkeypatch.setattr(long_documents, "PIECE_CHARS", 1000)
    monkeypatch.setenv("HF_TOKBIN_CACHE", str(tmp_path / "cache"))  # the full check, not a cached one
    plan = plan_build(long_corpus / "corpus", resolve_tokenizer(str(long_corpus / "tok")), tmp_path / "out", fast=fast)
    describe_plan(plan)
    build(plan, progress=False)
    assert seen and max(seen) < 1100  # never the ~20,000-character story whole


@pytest.mark.slow
def test_peak_memory_of_a_build_does_not_grow_with_a_long_document(tmp_path):
    """Peak RSS of real builds (fresh processes): one 8 MiB document, first in its shard, against the same corpus
    without it."""
    from bench_long_document import MIB, long_document, peak_rss_of_build

    short = stories(200, seed=3)
    base = write_corpus(tmp_path / "base", [("train", short), ("validation", short[:20])])
    size = 8 * MIB
    corpus = write_corpus(tmp_path / "long", [("train", [long_document(size), *short]), ("validation", short[:20])])
    tokenizer = gpt2_tokenizer_json()
    for fast in ("never", "auto"):
        without, _ = peak_rss_of_build(base, tokenizer, tmp_path / f"base-{fast}", fast)
        with_it, _ = peak_rss_of_build(corpus, tokenizer, tmp_path / f"long-{fast}", fast)
        # Whole in tokenizers, the document cost ~120 bytes per byte (140x on the fast path's check); in pieces ~10.
        assert with_it - without < 25 * size, (
            f"--fast {fast}: {(with_it - without) / size:.1f} bytes of memory per byte of the document"
        )
