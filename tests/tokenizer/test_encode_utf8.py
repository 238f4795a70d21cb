"""A batch handed to the encoder as its UTF-8 buffer (``encode_utf8``) gives exactly ``tokenizers``' ids, or goes the
per-document way.

The build reads each batch as a pyarrow string array; ``EncodeBatch`` hands
its buffer to gigatoken whole (an awkward string array, no Python ``str`` per
document) when every document of the batch is proven, and falls back to
``encode_batch`` otherwise. Both ways must give the definition's ids.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from encoder_cases import TRICKY_TEXTS, definition_ids, train_shape
from tokenizer_files import gpt2_tokenizer_json, llama3_tokenizer_json, story_texts
from tokenizers import AddedToken, Tokenizer

from hf_tokbin.formats.corpus_shard import utf8_buffer
from hf_tokbin.pipeline.encode import EncodeBatch
from hf_tokbin.tokenizer import train_bpe
from hf_tokbin.tokenizer.encoder import _UNPROVEN, ByteEncoder, DocumentEncoder
from hf_tokbin.tokenizer.long_documents import PIECE_CHARS


@pytest.fixture(scope="module")
def small_bpe(tmp_path_factory):
    return str(train_bpe(story_texts(400, seed=1), 1000, tmp_path_factory.mktemp("bpe")))


def _checked(path: str, **options) -> DocumentEncoder:
    encoder = DocumentEncoder.from_tokenizer_json(path, **options)
    encoder.check_fast_path(story_texts(10, seed=3))
    return encoder


def _buffers(texts: list[str]):
    return utf8_buffer(pa.array(texts, pa.string()))


def _assert_batch_ids(encoder: DocumentEncoder, path: str, array, parse_special: bool = False) -> None:
    """EncodeBatch on the pyarrow array gives the definition's ids, narrowed to the release's width."""
    texts = array.to_pylist()
    vocab_size = Tokenizer.from_file(path).get_vocab_size()
    flat, lengths = EncodeBatch(encoder, vocab_size).encode(array)
    expected_ids, expected_lengths = definition_ids(Tokenizer.from_file(path), texts, parse_special)
    assert lengths.tolist() == expected_lengths
    assert flat.tolist() == expected_ids


@pytest.mark.parametrize("name", ["gpt2", "llama3", "small_bpe"])
def test_proven_batches_go_whole_and_give_tokenizers_ids(small_bpe, name):
    path = {
        "gpt2": str(gpt2_tokenizer_json() / "tokenizer.json"),
        "llama3": str(llama3_tokenizer_json() / "tokenizer.json"),
        "small_bpe": small_bpe,
    }[name]
    encoder = _checked(path)
    stories = story_texts(60, seed=11)
    non_ascii = ["café naïve ½", "日本語のテキスト 한국어 😀", "", "x"]
    for texts in (stories, non_ascii, [*stories, *non_ascii]):
        assert encoder.encode_utf8(*_buffers(texts)) is not None, "a proven batch goes to gigatoken whole"
        _assert_batch_ids(encoder, path, pa.array(texts, pa.string()))
    # Every way a build's batch may come: sliced (offsets not from 0), large_string, a one-chunk chunked array.
    whole = pa.array([*TRICKY_TEXTS, *stories, *non_ascii], pa.string())
    for array in (
        whole.slice(7, 40),
        whole.slice(len(whole) - 3),
        whole.cast(pa.large_string()).slice(2, 30),
        pa.chunked_array([whole.slice(5, 20)]),
    ):
        _assert_batch_ids(encoder, path, array)


def test_batches_holding_unproven_text_go_document_by_document(tmp_path):
    # parse_special: text of a parsed added token must go to tokenizers, which makes it the token.
    path = train_shape(tmp_path, added=["<mytok>", AddedToken("<strip>", lstrip=True, rstrip=True)])
    encoder = _checked(path, parse_special=True)
    with_token = ["Lily went home.", "a<mytok>b <strip> c"]
    assert encoder.encode_utf8(*_buffers(with_token)) is None
    assert encoder.encode_utf8(*_buffers(["Lily went home."])) is not None
    _assert_batch_ids(encoder, path, pa.array([*story_texts(20, seed=4), *with_token]), parse_special=True)


def test_an_unproven_code_point_sends_the_batch_document_by_document(small_bpe):
    encoder = _checked(small_bpe)
    encoder.encode_batch(["warm"])  # the router exists once the fast path has encoded
    encoder._get_router().state[ord("é")] = _UNPROVEN  # as the proof leaves a code point gigatoken gets wrong
    assert encoder.encode_utf8(*_buffers(["plain", "café"])) is None
    assert encoder.encode_utf8(*_buffers(["plain", "cafe"])) is not None
    _assert_batch_ids(encoder, small_bpe, pa.array(["plain", "café", *story_texts(5, seed=2)]))


def test_long_documents_and_the_tokenizers_path_go_document_by_document(small_bpe):
    long = "Once upon a time. " * (PIECE_CHARS // 18 + 1)
    assert len(long.encode()) > PIECE_CHARS
    encoder = _checked(small_bpe)
    assert encoder.encode_utf8(*_buffers(["short", long])) is None  # long_documents.py encodes it in pieces
    _assert_batch_ids(encoder, small_bpe, pa.array(["short", long]))
    never = _checked(small_bpe, fast="never")
    assert never.encode_utf8(*_buffers(["short"])) is None
    _assert_batch_ids(never, small_bpe, pa.array(["short", "café"]))


def test_byte_encoder_takes_the_buffer_as_its_ids():
    texts = ["héllo", "", "😀 x"]
    ids, lengths = ByteEncoder().encode_utf8(*_buffers(texts))
    expected_ids, expected_lengths = ByteEncoder().encode_batch(texts)
    assert ids.tolist() == expected_ids.tolist() and lengths.tolist() == expected_lengths.tolist()
    flat, lengths = EncodeBatch(ByteEncoder(), 256).encode(pa.array(texts).slice(1))
    assert flat.tolist() == list("".join(texts[1:]).encode()) and lengths.tolist() == [0, 6]


def test_utf8_buffer_views_the_array_without_copying():
    array = pa.array(["ab", "", "cdé", "f"], pa.string()).slice(1, 2)
    offsets, data = utf8_buffer(array)
    assert offsets.dtype == np.int64 and offsets.tolist() == [0, 0, 4]
    assert data.tobytes() == "cdé".encode()
    assert utf8_buffer(pa.array(["a", None])) is None
    assert utf8_buffer(pa.chunked_array([pa.array(["a"]), pa.array(["b"])])) is None
    assert utf8_buffer(pa.array([b"a"], pa.binary())) is None
    offsets, data = utf8_buffer(pa.array(["", ""]))
    assert offsets.tolist() == [0, 0, 0] and data.size == 0


def test_an_empty_array_without_offsets_is_an_empty_batch():
    # Arrow lets a length-0 string array have empty offsets and data buffers
    # (valid: from_buffers, the C data interface).
    empty = pa.StringArray.from_buffers(0, pa.py_buffer(b""), pa.py_buffer(b""))
    empty.validate(full=True)
    offsets, data = utf8_buffer(empty)
    assert offsets.tolist() == [0] and data.size == 0
    flat, lengths = EncodeBatch(ByteEncoder(), 256).encode(empty)
    assert flat.size == 0 and lengths.size == 0
