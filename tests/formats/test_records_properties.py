"""Property tests of the JSON records: what is written reads back equal, byte-identical, and hand-edits are refused."""

from __future__ import annotations

import json
import string

from hypothesis import example, given, settings
from hypothesis import strategies as st

from hf_tokbin.errors import FormatError, VerificationError
from hf_tokbin.formats.corpus_manifest import CorpusManifest, CorpusShard
from hf_tokbin.formats.llmc import LlmcFileEntry, TokensManifest
from hf_tokbin.formats.records import FileEntry
from hf_tokbin.formats.release import Complete, Receipt, SplitCounts

NAME = st.text(string.ascii_lowercase + string.digits + "_-", min_size=1, max_size=12)
SHA = st.text("0123456789abcdef", min_size=64, max_size=64)
COUNT = st.integers(0, 2**40)
PATH = st.lists(NAME, min_size=1, max_size=3).map("/".join)
ENTRIES = st.lists(st.builds(FileEntry, PATH, COUNT, SHA), max_size=6, unique_by=lambda e: e.path)


@st.composite
def receipts(draw):
    split = draw(st.sampled_from(["train", "validation"]))
    documents = draw(st.integers(0, 10**6))
    counts = SplitCounts(documents, draw(COUNT), draw(st.integers(0, documents)), draw(COUNT))
    return Receipt(
        f"part-{draw(st.integers(0, 999_999)):06d}",
        draw(st.builds(FileEntry, PATH, COUNT, SHA)),
        {split: counts},
        tuple(draw(ENTRIES)),
    )


ONE_RECEIPT = Receipt(
    "part-000000", FileEntry("data/train-00000.parquet", 1, "a" * 64), {"train": SplitCounts(1, 2, 1, 3)}, ()
)


@settings(max_examples=60, deadline=None)
@given(receipts())
def test_receipt_round_trip(tmp_path_factory, receipt):
    root = tmp_path_factory.mktemp("r")
    path = receipt.write(root)
    again = Receipt.read(path)
    assert again == receipt
    assert again.to_json() == path.read_text(encoding="utf-8")  # canonical: the same bytes again


@settings(max_examples=60, deadline=None)
@given(ENTRIES)
def test_complete_round_trip(tmp_path_factory, entries):
    root = tmp_path_factory.mktemp("c")
    complete = Complete(tuple(sorted(entries, key=lambda e: e.path)))
    path = complete.write(root)
    assert Complete.read(path) == complete
    assert Complete.read(path).to_json() == path.read_text(encoding="utf-8")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["train", "val"]), COUNT.filter(lambda n: n < 2**31), COUNT, SHA), max_size=5),
    st.integers(1, 2**20),
    NAME,
)
def test_tokens_manifest_round_trip(tmp_path_factory, files, vocab_size, dataset):
    root = tmp_path_factory.mktemp("m")
    counters = {"train": 0, "val": 0}
    entries = []
    for split, n_tokens, n_docs, sha in files:
        entries.append(LlmcFileEntry(f"{split}-{counters[split]:05d}.bin", split, n_tokens, n_docs, sha))
        counters[split] += 1
    manifest = TokensManifest(dataset, "a" * 64, vocab_size, vocab_size - 1, dataset, "v1", "b" * 64, tuple(entries))
    path = manifest.write(root)
    assert TokensManifest.read(path) == manifest


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["train", "validation"]), COUNT, COUNT, SHA), min_size=1, max_size=5), NAME)
def test_corpus_manifest_round_trip(tmp_path_factory, shards, name):
    root = tmp_path_factory.mktemp("k")
    listed = tuple(
        CorpusShard(f"data/{split}-{i:05d}.parquet", split, rows, size, sha)
        for i, (split, rows, size, sha) in enumerate(shards)
    )
    manifest = CorpusManifest(name, "files", (), listed, "mit", ("en",))
    manifest.write(root)
    assert CorpusManifest.read(root) == manifest


@settings(max_examples=60, deadline=None)
@given(
    receipts(),
    st.sampled_from(["part", "input_shard", "splits", "files"]),
    st.sampled_from([None, -1, "x", [], {}, 1.5, True]),
)
@example(receipt=ONE_RECEIPT, field="files", value={})  # a fresh clone's counterexample: an empty {} passed for a list
@example(receipt=ONE_RECEIPT, field="splits", value=[])
def test_a_hand_edited_receipt_field_is_refused(tmp_path_factory, receipt, field, value):
    if (field, value) == ("files", []):
        return  # a part with no files (an empty split, llm.c only) is a valid receipt
    root = tmp_path_factory.mktemp("e")
    path = receipt.write(root)
    obj = json.loads(path.read_text())
    obj[field] = value
    path.write_text(json.dumps(obj))
    try:
        Receipt.read(path)
    except (FormatError, VerificationError) as e:
        assert str(path) in str(e)
    else:
        raise AssertionError(f"{field}={value!r} was accepted")
