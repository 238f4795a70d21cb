"""Id widths come from the largest id, and every id is checked before the narrowing cast.

A valid ``tokenizer.json`` may number its vocabulary with gaps: here GPT-2's
50,257 entries with one token moved to id 65,636. Counting entries says
50,257 (uint16 files) and 65,636 would be stored as 100.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from release_fixtures import write_corpus
from tokenizer_files import gpt2_tokenizer_json
from tokenizers import Tokenizer

from hf_tokbin.errors import BuildError
from hf_tokbin.formats import megatron
from hf_tokbin.pipeline import build, plan_build
from hf_tokbin.pipeline.encode import EncodeBatch
from hf_tokbin.tokenizer.encoder import DocumentEncoder
from hf_tokbin.tokenizer.resolve import resolve_tokenizer, vocab_size_of

MOVED_TOKEN, MOVED_ID = "Ġhello", 65636


@pytest.fixture(scope="module")
def gapped(tmp_path_factory) -> Path:
    """GPT-2's tokenizer with the token " hello" moved to id 65,636: 50,257 entries, largest id 65,636."""
    config = json.loads((gpt2_tokenizer_json() / "tokenizer.json").read_text())
    assert MOVED_TOKEN in config["model"]["vocab"]
    config["model"]["vocab"][MOVED_TOKEN] = MOVED_ID
    folder = tmp_path_factory.mktemp("gapped")
    (folder / "tokenizer.json").write_text(json.dumps(config))
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 50256}))
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    assert tokenizer.get_vocab_size(with_added_tokens=True) == 50257
    assert tokenizer.encode(" hello", add_special_tokens=False).ids == [MOVED_ID]
    return folder


def test_vocab_size_is_the_largest_id_plus_one(gapped):
    assert resolve_tokenizer(str(gapped)).vocab_size == MOVED_ID + 1
    assert vocab_size_of(Tokenizer.from_file(str(gapped / "tokenizer.json"))) == MOVED_ID + 1
    assert DocumentEncoder.from_tokenizer_json(gapped, fast="never").vocab_size == MOVED_ID + 1
    # Without a gap, the same number as the count of entries.
    assert resolve_tokenizer(str(gpt2_tokenizer_json())).vocab_size == 50257


def test_added_tokens_count_in_the_largest_id(tmp_path):
    from tokenizers import AddedToken

    tokenizer = Tokenizer.from_file(str(gpt2_tokenizer_json() / "tokenizer.json"))
    tokenizer.add_special_tokens([AddedToken("<|pad|>", special=True)])
    assert vocab_size_of(tokenizer) == 50258


@pytest.mark.parametrize("fast", ["auto", "never"])
def test_a_release_keeps_the_id_above_65535(tmp_path, gapped, fast):
    texts = ["Lily said hello to Tom.", "hello hello", "no greeting"]
    corpus = write_corpus(tmp_path / "corpus", [("train", texts), ("validation", ["hello"])])
    build(
        plan_build(corpus, resolve_tokenizer(str(gapped)), tmp_path / "r", formats=("megatron",), fast=fast),
        progress=False,
    )
    pair = megatron.MegatronPair(tmp_path / "r" / "shards" / "train" / "part-000000.bin")
    assert pair.tokens.dtype.itemsize == 4
    tokenizer = Tokenizer.from_file(str(gapped / "tokenizer.json"))
    for i, text in enumerate(texts):
        assert pair[i].tolist() == tokenizer.encode(text, add_special_tokens=False).ids + [50256]
    assert MOVED_ID in pair[1].tolist()


class _EncoderReturning:
    def __init__(self, ids):
        self.ids = np.asarray(ids, dtype=np.uint32)

    def encode_batch(self, texts):
        return self.ids, np.asarray([self.ids.size], dtype=np.int64)

    def encode_utf8(self, offsets, data):  # the way a build's pyarrow batches go: checked the same
        return self.encode_batch(None)


def test_an_id_outside_the_vocabulary_is_refused_before_the_cast():
    table = pa.table({"text": ["x"]})
    with pytest.raises(
        BuildError,
        match=r"shard\.parquet: the encoder produced an id outside the tokenizer's vocabulary: "
        r"expected ids < 65536, got 65636",
    ):
        EncodeBatch(_EncoderReturning([5, 65636]), 65536, "shard.parquet")(table)
    with pytest.raises(BuildError, match=r"expected ids < 50257, got 50257"):
        EncodeBatch(_EncoderReturning([50257]), 50257, "shard.parquet")(table)
    ids = EncodeBatch(_EncoderReturning([5, 65535]), 65536, "shard.parquet")(table).column("ids")
    assert ids.to_pylist() == [[5, 65535]] and ids.type.value_type == pa.uint16()
