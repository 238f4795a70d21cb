"""Upstream llm.c's Llama 3 layout: worked example, writer, reader, and every rejection."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from consumer_fixtures import flat
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_tokbin.errors import FormatError
from hf_tokbin.formats import llmc
from hf_tokbin.verify import verify_path

LLAMA3_VOCAB = 128256


def header_bytes(magic: int, version: int, n_tokens: int, rest: dict[int, int] | None = None) -> bytes:
    ints = [magic, version, n_tokens] + [0] * 253
    for i, v in (rest or {}).items():
        ints[i] = v
    return b"".join(int(v).to_bytes(4, "little", signed=True) for v in ints)


def test_worked_example_bytes(tmp_path):
    path = tmp_path / "x.bin"
    llmc.write_tokens(path, [1, 2, 3], LLAMA3_VOCAB, family="llama3")
    data = path.read_bytes()
    assert len(data) == 1036
    assert data[:12] == bytes.fromhex("a1d93401" "07000000" "03000000")
    assert data[12:1024] == bytes(1012)
    assert data[1024:] == bytes.fromhex("01000000" "02000000" "03000000")


def test_reads_what_upstream_data_common_writes(tmp_path):
    # data_common.write_datafile(model_desc="llama-3"): header [20240801, 7, n, 0...], then uint32 ids.
    ids = np.array([0, 70000, 128255, 5], dtype="<u4")
    path = tmp_path / "upstream.bin"
    path.write_bytes(header_bytes(20240801, 7, ids.size) + ids.tobytes())
    assert llmc.read_header(path).n_tokens == 4
    assert llmc.open_tokens(path, vocab_size=LLAMA3_VOCAB).tolist() == ids.tolist()


def test_writer_mirrors_llmc_writer_with_uint32_ids(tmp_path):
    docs = [[1, 2, 3], [70000], [4, 5, 6, 7], [8, 9]]
    w = llmc.LlmcWriter(tmp_path / "l3", "train", LLAMA3_VOCAB, doc_sep_id=128000, max_tokens=7, family="llama3")
    w.add_documents(*flat(docs))
    entries = w.close()
    # The same documents through the llm.c layout's writer give the same files, entries and ids.
    ref = llmc.LlmcWriter(tmp_path / "ref", "train", LLAMA3_VOCAB, doc_sep_id=128000, max_tokens=7)
    ref.add_documents(*flat(docs))
    ref_entries = ref.close()
    assert [(e.name, e.n_tokens, e.n_docs) for e in entries] == [(e.name, e.n_tokens, e.n_docs) for e in ref_entries]
    assert [(e.name, e.n_tokens, e.n_docs) for e in entries] == [
        ("train-00000.bin", 6, 2),
        ("train-00001.bin", 5, 1),
        ("train-00002.bin", 3, 1),
    ]
    for e in entries:
        path = tmp_path / "l3" / e.name
        assert e.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
        assert path.read_bytes()[:8] == bytes.fromhex("a1d93401" "07000000")
        assert llmc.open_tokens(path).dtype == np.dtype("<u4")
    stream = np.concatenate([llmc.open_tokens(tmp_path / "l3" / e.name) for e in entries]).tolist()
    assert stream == [128000, 1, 2, 3, 128000, 70000, 128000, 4, 5, 6, 7, 128000, 8, 9]


def test_small_vocab_is_still_uint32(tmp_path):
    w = llmc.LlmcWriter(tmp_path, "val", 256, family="llama3")
    w.add_document([1, 2])
    (entry,) = w.close()
    assert (tmp_path / entry.name).stat().st_size == 1024 + 2 * 4


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, LLAMA3_VOCAB - 2), min_size=0, max_size=12), min_size=1, max_size=12),
    st.integers(14, 40),
)
def test_round_trip_property(tmp_path_factory, docs, max_tokens):
    folder = tmp_path_factory.mktemp("rt")
    sep = LLAMA3_VOCAB - 1
    w = llmc.LlmcWriter(folder, "train", LLAMA3_VOCAB, doc_sep_id=sep, max_tokens=max_tokens, family="llama3")
    w.add_documents(*flat(docs))
    entries = w.close()
    for e in entries:
        assert llmc.verify_token_file(folder / e.name, e, LLAMA3_VOCAB, sep).n_tokens == e.n_tokens
    stream = np.concatenate([llmc.open_tokens(folder / e.name) for e in entries]).tolist()
    assert stream == [t for d in docs for t in [sep, *d]]
    assert sum(e.n_docs for e in entries) == len(docs)


@pytest.mark.parametrize(
    "raw, rule",
    [
        (header_bytes(20240519, 7, 0), "wrong magic"),
        (header_bytes(20240801, 2, 0), "unknown version"),
        (header_bytes(20240801, 7, -1), "negative n_tokens"),
        (header_bytes(20240801, 7, 0, {3: 128256}), "reserved header[3]"),
        (header_bytes(20240801, 7, 0, {255: 1}), "reserved header[255]"),
        (header_bytes(20240801, 7, 2) + bytes(7), "truncated file"),
        (header_bytes(20240801, 7, 1) + bytes(5), "trailing bytes"),
        (header_bytes(20240801, 7, 0)[:1000], "truncated header"),
    ],
)
def test_reader_rejects(tmp_path, raw, rule):
    path = tmp_path / "bad.bin"
    path.write_bytes(raw)
    with pytest.raises(FormatError) as e:
        llmc.open_tokens(path)
    assert rule in str(e.value) and str(path) in str(e.value)


def test_one_reader_tells_the_layouts_apart(tmp_path):
    """One table of layouts: the same reader opens both families and says which it read."""
    gpt2, llama3 = tmp_path / "v1.bin", tmp_path / "v7.bin"
    llmc.write_tokens(gpt2, [1, 2], 256)
    llmc.write_tokens(llama3, [1, 2], 256, family="llama3")
    assert (llmc.read_header(gpt2).layout.family, llmc.read_header(gpt2).dtype) == ("gpt2", np.dtype("<u2"))
    assert (llmc.read_header(llama3).layout.family, llmc.read_header(llama3).dtype) == ("llama3", np.dtype("<u4"))
    assert llmc.open_tokens(gpt2).tolist() == llmc.open_tokens(llama3).tolist() == [1, 2]


def test_ids_checked_against_vocab(tmp_path):
    path = tmp_path / "x.bin"
    path.write_bytes(header_bytes(20240801, 7, 3) + np.array([1, 300, 2], "<u4").tobytes())
    assert llmc.open_tokens(path).tolist() == [1, 300, 2]
    with pytest.raises(FormatError, match="token 1: id must be in 0..vocab_size-1: expected < 300, got 300"):
        llmc.open_tokens(path, vocab_size=300)
    with pytest.raises(FormatError, match="token id out of range"):
        llmc.write_tokens(tmp_path / "y.bin", [300], 300, family="llama3")


def test_verify_against_manifest_entry(tmp_path):
    w = llmc.LlmcWriter(tmp_path, "train", 500, doc_sep_id=499, family="llama3")
    w.add_documents(*flat([[1, 2], [3]]))
    (entry,) = w.close()
    path = tmp_path / entry.name
    assert llmc.verify_token_file(path, entry, 500, 499).n_tokens == 5
    data = bytearray(path.read_bytes())
    data[-4] = 7  # same size, different id
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="sha256 disagrees with the manifest"):
        llmc.verify_token_file(path, entry, 500, 499)


def test_hf_tokbin_verify_reads_llama3_files(tmp_path):
    path = tmp_path / "train-00000.bin"
    llmc.write_tokens(path, [5, 6, 7, 8], LLAMA3_VOCAB, family="llama3")
    assert "OK: llm.c llama3 layout (magic 20240801, version 7, uint32), 4 tokens" in verify_path(path)
