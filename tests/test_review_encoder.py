"""Review: a tokenizer.json that carries truncation or padding settings must not cut or pad documents.

``Tokenizer.save`` keeps ``enable_truncation``/``enable_padding``, so such files
exist on the Hub. ``tokenizers`` then cuts every document at ``max_length`` and
fills the shorter documents of a batch with the pad id: a release would hold
neither the document's text nor ids equal to the fast path's.
"""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from tokenizer_files import gpt2_tokenizer_json, story_texts
from tokenizers import Tokenizer

from hf_tokbin.tokenizer.encoder import DocumentEncoder

SETTINGS = {
    "truncation": {"direction": "Right", "max_length": 300, "strategy": "LongestFirst", "stride": 0},
    "padding": {"strategy": "BatchLongest", "direction": "Right", "pad_to_multiple_of": None, "pad_id": 50256, "pad_type_id": 0, "pad_token": "<|endoftext|>"},
}


def _whole_ids(texts: list[str]) -> list[list[int]]:
    """tokenizers' ids of each whole text (the plain GPT-2 file: no truncation, no padding)."""
    reference = Tokenizer.from_file(str(gpt2_tokenizer_json() / "tokenizer.json"))
    reference.encode_special_tokens = True
    return [reference.encode(t, add_special_tokens=False).ids for t in texts]


@pytest.mark.parametrize("settings", [["truncation"], ["padding"], ["truncation", "padding"]])
@pytest.mark.parametrize("fast", ["auto", "never"])
def test_truncation_and_padding_in_tokenizer_json_change_no_document(tmp_path, settings, fast):
    config = json.loads((gpt2_tokenizer_json() / "tokenizer.json").read_text())
    config.update({name: SETTINGS[name] for name in settings})
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(config))
    texts = [*story_texts(6, seed=2), "word " * 800, "short"]  # one document well over max_length
    encoder = DocumentEncoder.from_tokenizer_json(path, fast=fast)
    encoder.check_fast_path(story_texts(4))
    want = _whole_ids(texts)
    for engine in (encoder, pickle.loads(pickle.dumps(encoder))):  # as Dataset.map's workers receive it
        ids, lengths = engine.encode_batch(texts)
        assert lengths.tolist() == [len(w) for w in want]
        assert ids.tolist() == [i for w in want for i in w]
