"""DocumentEncoder gives ``tokenizers``' ids whichever engine runs; the fast path is taken only when proven
identical.
"""

from __future__ import annotations

import pickle
import re
import sys

import numpy as np
import pytest
from datasets import Dataset
from datasets.fingerprint import Hasher
from encoder_cases import TRICKY_TEXTS, definition_ids, train_shape
from tokenizer_files import gpt2_tokenizer_json, llama3_tokenizer_json, story_texts
from tokenizers import (
    AddedToken,
    Regex,
    Tokenizer,
    models,
    normalizers,
    pre_tokenizers,
)

from hf_tokbin.errors import TokenizerError
from hf_tokbin.tokenizer import train_bpe
from hf_tokbin.tokenizer.encoder import PROBE_TEXTS, ByteEncoder, DocumentEncoder, encoder_for


def _assert_encodes_like_tokenizers(
    encoder: DocumentEncoder, tokenizer: Tokenizer, texts: list[str], parse_special: bool = False
) -> None:
    ids, lengths = encoder.encode_batch(texts)
    assert ids.dtype == np.uint32 and lengths.dtype == np.int64
    expected_ids, expected_lengths = definition_ids(tokenizer, texts, parse_special)
    assert lengths.tolist() == expected_lengths
    assert ids.tolist() == expected_ids


@pytest.fixture(scope="module")
def small_bpe(tmp_path_factory):
    """The byte-level BPE ``hf-tokbin tokenizer train`` makes (the TinyStories rules' 8k, smaller here)."""
    return str(train_bpe(story_texts(400, seed=1), 1000, tmp_path_factory.mktemp("bpe")))


def _real_and_trained(small_bpe):
    return {
        "gpt2": str(gpt2_tokenizer_json() / "tokenizer.json"),
        "llama3": str(llama3_tokenizer_json() / "tokenizer.json"),
        "small_bpe": small_bpe,
    }


# ------------------------------------------------------------ fast path taken


@pytest.mark.parametrize("name", ["gpt2", "llama3", "small_bpe"])
def test_fast_path_is_used_and_ids_are_tokenizers_ids(small_bpe, name):
    path = _real_and_trained(small_bpe)[name]
    encoder = DocumentEncoder.from_tokenizer_json(path)
    check = encoder.check_fast_path(story_texts(20, seed=8))
    assert check.used and check.engine.startswith("gigatoken ") and encoder.engine == check.engine
    _assert_encodes_like_tokenizers(
        encoder, Tokenizer.from_file(path), [*story_texts(50, seed=9), *TRICKY_TEXTS, *PROBE_TEXTS]
    )


@pytest.mark.parametrize("name", ["gpt2", "llama3", "small_bpe"])
def test_tokenizers_path_gives_the_same_ids(small_bpe, name):
    path = _real_and_trained(small_bpe)[name]
    encoder = DocumentEncoder.from_tokenizer_json(path, fast="never")
    check = encoder.check_fast_path(["anything"])
    assert not check.used and encoder.engine.startswith("tokenizers ") and "never" in check.reason
    _assert_encodes_like_tokenizers(encoder, Tokenizer.from_file(path), [*story_texts(20, seed=9), *TRICKY_TEXTS])


@pytest.mark.parametrize(
    "shape",
    [
        {"byte_fallback": True},
        {"added": ["<mytok>", AddedToken("<strip>", lstrip=True, rstrip=True)]},
        {"pre_tokenizer": pre_tokenizers.ByteLevel(add_prefix_space=True)},
        # gigatoken gets x<mytok>y wrong; documents holding added-token text go to tokenizers.
        {"added": [AddedToken("<mytok>", single_word=True)]},
    ],
    ids=["byte_fallback", "added_tokens_inside_text", "prefix_space", "single_word_added_token"],
)
def test_fast_path_used_for_shapes_gigatoken_reproduces(tmp_path, shape):
    path = train_shape(tmp_path, **shape)
    encoder = DocumentEncoder.from_tokenizer_json(path)
    assert encoder.check_fast_path(story_texts(10)).used
    texts = [*story_texts(30, seed=10), *TRICKY_TEXTS, "a<mytok>b <strip> c<strip>d \u00e9\u0301 ☃ \x00"]
    _assert_encodes_like_tokenizers(encoder, Tokenizer.from_file(path), texts)


# ------------------------------------------------------------ fallback to tokenizers


@pytest.mark.parametrize(
    "shape, reason",
    [
        ({"normalizer": normalizers.NFKC()}, "not proven for the normalizer NFKC"),
        ({"normalizer": normalizers.Lowercase()}, "not proven for the normalizer Lowercase"),
        (
            {
                "pre_tokenizer": pre_tokenizers.Sequence(
                    [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
                )
            },
            "not proven for the pre-tokenizer Digits",
        ),
        (
            # A script is no general category: the proof does not read it.
            {
                "pre_tokenizer": pre_tokenizers.Sequence(
                    [
                        pre_tokenizers.Split(Regex(r"\p{Greek}+|[^\p{Greek}]+"), "isolated"),
                        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
                    ]
                )
            },
            r"not proven for a pattern using \p{Greek} (only general categories",
        ),
    ],
    ids=["nfkc", "lowercase", "digit_splitting", "script_class"],
)
def test_fallback_when_gigatoken_fails_or_differs(tmp_path, shape, reason):
    path = train_shape(tmp_path, **shape)
    encoder = DocumentEncoder.from_tokenizer_json(path)
    check = encoder.check_fast_path(story_texts(10))
    assert not check.used and reason in check.reason
    assert check.engine.startswith("tokenizers ") and encoder.engine == check.engine
    _assert_encodes_like_tokenizers(
        encoder, Tokenizer.from_file(path), [*story_texts(20), *TRICKY_TEXTS, "ＦＵＬＬ 2024 x<mytok>y"]
    )


def test_models_other_than_bpe_stay_on_tokenizers(tmp_path):
    tokenizer = Tokenizer(
        models.Unigram([("<unk>", 0.0), ("a", -1.0), ("b", -2.0), ("ab", -1.5)], 0, byte_fallback=False)
    )
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    encoder = DocumentEncoder.from_tokenizer_json(tmp_path / "tokenizer.json")
    check = encoder.check_fast_path(["ab ba"])
    assert not check.used and "not proven for the model Unigram" in check.reason
    _assert_encodes_like_tokenizers(
        encoder, Tokenizer.from_file(str(tmp_path / "tokenizer.json")), ["ab", "ba", "abab"]
    )


def test_require_raises_when_the_fast_path_is_unavailable(tmp_path):
    path = train_shape(tmp_path, normalizer=normalizers.NFKC())
    encoder = DocumentEncoder.from_tokenizer_json(path, fast="require")
    with pytest.raises(
        TokenizerError,
        match=r"fast path required but unavailable: expected gigatoken ids identical to tokenizers, "
        r"got fast path not proven for the normalizer NFKC",
    ):
        encoder.check_fast_path([])


class _EngineWrongOn:
    """A stand-in fast engine that is right except on texts containing ``word``."""

    def __init__(self, real, word: str):
        self.real, self.word = real, word

    def encode_batch(self, texts):
        import awkward as ak

        rows = self.real.encode_batch(texts).to_list()
        return ak.Array([row[::-1] if self.word in text and len(row) > 1 else row for row, text in zip(rows, texts)])

    def encode_batch_list(self, texts):
        return self.encode_batch(texts).to_list()


def test_the_corpus_sample_decides(monkeypatch, small_bpe):
    # Only the sample holds the word the engine gets wrong: without it the check passes, with it it fails.
    real_load = DocumentEncoder._load_gigatoken
    monkeypatch.setattr(DocumentEncoder, "_load_gigatoken", lambda self: _EngineWrongOn(real_load(self), "zebra"))
    encoder = DocumentEncoder.from_tokenizer_json(small_bpe)
    assert encoder.check_fast_path(["a cat sat"]).used
    check = encoder.check_fast_path(["a cat sat", "the zebra ran home"])
    assert not check.used and "text 1 'the zebra ran home'" in check.reason
    _assert_encodes_like_tokenizers(encoder, Tokenizer.from_file(small_bpe), ["the zebra ran home", "ok"])


class _EngineDroppingTheLastText:
    """A gigatoken engine that returns one row fewer than the texts it was given."""

    def __init__(self, real):
        self.real = real

    def encode_batch(self, texts):
        return self.real.encode_batch(texts)[:-1]

    def encode_batch_list(self, texts):
        return self.real.encode_batch_list(texts)


def test_fewer_documents_than_texts_is_a_difference_not_a_crash(monkeypatch, small_bpe):
    real_load = DocumentEncoder._load_gigatoken
    monkeypatch.setattr(DocumentEncoder, "_load_gigatoken", lambda self: _EngineDroppingTheLastText(real_load(self)))
    encoder = DocumentEncoder.from_tokenizer_json(small_bpe)
    check = encoder.check_fast_path(["a cat sat"])
    counts = re.search(r"gigatoken returned (\d+) documents for (\d+) texts$", check.reason)
    assert not check.used and counts and int(counts[1]) == int(counts[2]) - 1


def test_fallback_when_gigatoken_is_not_installed(monkeypatch, small_bpe):
    monkeypatch.setitem(sys.modules, "gigatoken", None)  # makes `import gigatoken` raise ImportError
    encoder = DocumentEncoder.from_tokenizer_json(small_bpe)
    check = encoder.check_fast_path(["hello"])
    assert not check.used and "not installed" in check.reason


def test_tokenizers_is_used_until_the_check_passes(small_bpe):
    encoder = DocumentEncoder.from_tokenizer_json(small_bpe)
    assert encoder.engine.startswith("tokenizers ")
    _assert_encodes_like_tokenizers(encoder, Tokenizer.from_file(small_bpe), ["Lily went home."])


# ------------------------------------------------------------ contract, pickling, worker processes


@pytest.mark.parametrize("fast", ["auto", "never"])
def test_empty_batch_and_empty_texts(small_bpe, fast):
    encoder = DocumentEncoder.from_tokenizer_json(small_bpe, fast=fast)
    encoder.check_fast_path()
    ids, lengths = encoder.encode_batch([])
    assert (ids.dtype, ids.shape, lengths.dtype, lengths.shape) == (np.uint32, (0,), np.int64, (0,))
    ids, lengths = encoder.encode_batch(["", ""])
    assert ids.shape == (0,) and lengths.tolist() == [0, 0]


def test_pickle_keeps_the_decision_and_the_ids(small_bpe):
    encoder = DocumentEncoder.from_tokenizer_json(small_bpe)
    encoder.check_fast_path(story_texts(5))
    copy = pickle.loads(pickle.dumps(encoder))
    assert copy.engine == encoder.engine and copy.engine.startswith("gigatoken ")
    texts = story_texts(10, seed=11)
    for got, want in zip(copy.encode_batch(texts), encoder.encode_batch(texts)):
        assert np.array_equal(got, want)


def test_fingerprint_depends_on_the_tokenizer_only(small_bpe):
    gpt2 = str(gpt2_tokenizer_json() / "tokenizer.json")
    first, second, other = (DocumentEncoder.from_tokenizer_json(p) for p in (small_bpe, small_bpe, gpt2))
    for encoder in (first, second, other):
        encoder.check_fast_path(["same sample"])
    assert Hasher.hash(first) == Hasher.hash(second)
    assert Hasher.hash(first) != Hasher.hash(other)


def _expected_arrays(tokenizer, texts):
    ids, lengths = definition_ids(tokenizer, texts)
    return np.asarray(ids), np.cumsum(lengths)[:-1]


def _encode_column(batch, encoder):
    ids, lengths = encoder.encode_batch(batch["text"])
    return {"ids": np.split(ids, np.cumsum(lengths)[:-1]) if len(lengths) else []}


def test_dataset_map_in_two_worker_processes(small_bpe):
    # The check ran gigatoken's thread pool in this process before the workers fork: they must not hang.
    encoder = DocumentEncoder.from_tokenizer_json(small_bpe)
    assert encoder.check_fast_path(story_texts(5)).used
    texts = story_texts(200, seed=12)
    mapped = Dataset.from_dict({"text": texts}).map(
        _encode_column,
        batched=True,
        batch_size=32,
        num_proc=2,
        fn_kwargs={"encoder": encoder},
        remove_columns=["text"],
    )
    assert mapped["ids"] == [
        ids.tolist() for ids in np.split(*_expected_arrays(Tokenizer.from_file(small_bpe), texts))
    ]


# ------------------------------------------------------------ loading, byte tokenizer


def test_missing_tokenizer_json_is_a_tokenizer_error(tmp_path):
    with pytest.raises(TokenizerError, match=r"tokenizer.json: cannot load tokenizer.json"):
        DocumentEncoder.from_tokenizer_json(tmp_path)


def test_unknown_fast_mode_is_rejected(small_bpe):
    with pytest.raises(
        TokenizerError, match="unknown fast-path mode: expected auto or never or require, got sometimes"
    ):
        DocumentEncoder.from_tokenizer_json(small_bpe, fast="sometimes")


def test_byte_encoder_ids_are_utf8_bytes():
    texts = ["héllo", "", "日本 😀", "\x00"]
    ids, lengths = ByteEncoder().encode_batch(texts)
    assert ids.dtype == np.uint8 and lengths.dtype == np.int64
    assert lengths.tolist() == [len(t.encode("utf-8")) for t in texts]
    assert ids.tobytes() == "".join(texts).encode("utf-8")
    assert pickle.loads(pickle.dumps(ByteEncoder())).encode_batch(["ab"])[0].tolist() == [97, 98]


def test_encoder_for_picks_the_byte_or_document_encoder(small_bpe):
    assert isinstance(encoder_for(None), ByteEncoder)
    encoder = encoder_for(small_bpe, fast="never")
    assert isinstance(encoder, DocumentEncoder) and encoder.fast == "never"
