"""Megatron IndexedDataset v1 pairs: writer, validating reader, forged indices, megatron-core interop.

Expected and forged bytes are built here with ``struct``/numpy, independently of
the writer. megatron-core (with CPU torch) is imported inside the tests that
need it: it is installed in CI, so a missing install fails, it never skips.
"""

from __future__ import annotations

import hashlib
import struct
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_tokbin.errors import FormatError
from hf_tokbin.formats import megatron

MAGIC = b"MMIDIDX\x00\x00"


def idx_bytes(
    lengths, itemsize=2, code=8, pointers=None, doc_indices=None, sequence_count=None, document_count=None, version=1
) -> bytes:
    """An .idx built by hand from its fields (defaults: one document per sequence, contiguous pointers)."""
    if pointers is None:
        pointers, offset = [], 0
        for n in lengths:
            pointers.append(offset)
            offset += n * itemsize
    if doc_indices is None:
        doc_indices = list(range(len(lengths) + 1))
    s = len(lengths) if sequence_count is None else sequence_count
    d = len(doc_indices) if document_count is None else document_count
    return (
        MAGIC
        + struct.pack("<Q", version)
        + struct.pack("<B", code)
        + struct.pack("<QQ", s, d)
        + struct.pack(f"<{len(lengths)}i", *lengths)
        + struct.pack(f"<{len(pointers)}q", *pointers)
        + struct.pack(f"<{len(doc_indices)}q", *doc_indices)
    )


def write_pair(tmp_path, idx: bytes, tokens, fmt="H", name="p"):
    (tmp_path / f"{name}.idx").write_bytes(idx)
    data = tokens if isinstance(tokens, bytes) else struct.pack(f"<{len(tokens)}{fmt}", *tokens)
    (tmp_path / f"{name}.bin").write_bytes(data)
    return tmp_path / f"{name}.idx"


# ------------------------------------------------------------------ writer layout


def test_writer_bytes_match_the_layout(tmp_path):
    with megatron.MegatronWriter(tmp_path / "p.bin", vocab_size=50257, eod_id=50256) as writer:
        writer.add_document([10, 11, 12])
        writer.add_documents(np.array([13, 14]), np.array([0, 2]))
        pair = writer.close()
    assert (tmp_path / "p.bin").read_bytes() == struct.pack("<7H", 10, 11, 12, 50256, 50256, 13, 14) + struct.pack(
        "<H", 50256
    )
    expected_idx = (
        b"MMIDIDX\x00\x00"
        + struct.pack("<Q", 1)  # version
        + struct.pack("<B", 8)  # dtype code: uint16
        + struct.pack("<QQ", 3, 4)  # sequences, documents + 1
        + struct.pack("<3i", 4, 1, 3)  # lengths, EOD counted
        + struct.pack("<3q", 0, 8, 10)  # byte pointers
        + struct.pack("<4q", 0, 1, 2, 3)  # document indices
    )
    assert (tmp_path / "p.idx").read_bytes() == expected_idx
    assert (pair.n_documents, pair.n_tokens, pair.bin_size, pair.idx_size) == (3, 8, 16, len(expected_idx))
    assert pair.bin_sha256 == hashlib.sha256((tmp_path / "p.bin").read_bytes()).hexdigest()
    assert pair.idx_sha256 == hashlib.sha256(expected_idx).hexdigest()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.bin", "p.idx"]  # no scratch files left


@pytest.mark.parametrize(
    "vocab_size, code, fmt", [(50257, 8, "H"), (65536, 8, "H"), (65537, 4, "i"), (128256, 4, "i")]
)
def test_dtype_code_follows_vocab_size(tmp_path, vocab_size, code, fmt):
    with megatron.MegatronWriter(tmp_path / "p.bin", vocab_size, eod_id=vocab_size - 1) as writer:
        writer.add_document([vocab_size - 2])
        writer.close()
    assert (tmp_path / "p.idx").read_bytes()[17] == code
    assert (tmp_path / "p.bin").read_bytes() == struct.pack(f"<2{fmt}", vocab_size - 2, vocab_size - 1)


def test_writer_rejects_bad_input_and_abort_leaves_nothing(tmp_path):
    with pytest.raises(FormatError, match="eod_id must be a valid id"):
        megatron.MegatronWriter(tmp_path / "p.bin", 100, eod_id=100)
    with pytest.raises(FormatError, match="token id out of range: expected 0 <= id < 100, got 100"):
        with megatron.MegatronWriter(tmp_path / "p.bin", 100, eod_id=0) as writer:
            writer.add_document([5])
            writer.add_document([100])
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(FormatError, match="document lengths must add up"):
        with megatron.MegatronWriter(tmp_path / "p.bin", 100, eod_id=0) as writer:
            writer.add_documents(np.array([1, 2]), np.array([1]))
    assert list(tmp_path.iterdir()) == []


def test_memory_does_not_grow_with_the_stream(tmp_path):
    """Ids and lengths go to disk as they come: 40 batches need about one batch of memory."""
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, 400, size=2000)
    ids = rng.integers(0, 50256, size=int(lengths.sum())).astype(np.uint16)
    writer = megatron.MegatronWriter(tmp_path / "p.bin", 50257, eod_id=50256)
    tracemalloc.start()
    try:
        for _ in range(40):
            writer.add_documents(ids, lengths)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    pair = writer.close()
    assert pair.n_documents == 40 * lengths.size
    assert peak < 8 * ids.nbytes < pair.bin_size / 4


# ------------------------------------------------------------------ reader


def test_reader_views_each_sequence(tmp_path):
    idx = write_pair(tmp_path, idx_bytes([2, 1, 3]), [5, 9, 9, 7, 8, 9])
    pair = megatron.MegatronPair(idx, vocab_size=10)
    assert len(pair) == 3 and pair.n_tokens == 6
    assert [pair[i].tolist() for i in range(3)] == [[5, 9], [9], [7, 8, 9]]
    assert pair[-1].tolist() == [7, 8, 9]
    assert isinstance(pair.tokens, np.memmap) and not pair.tokens.flags.writeable
    pair.check_one_document_per_sequence(eod_id=9)
    with pytest.raises(IndexError):
        pair[3]
    # The .bin path names the same pair.
    assert megatron.MegatronPair(tmp_path / "p.bin").lengths.tolist() == [2, 1, 3]


def test_reader_accepts_an_empty_pair(tmp_path):
    idx = write_pair(tmp_path, idx_bytes([]), [])
    pair = megatron.MegatronPair(idx)
    assert len(pair) == 0 and pair.n_tokens == 0


def test_reader_accepts_several_sequences_per_document(tmp_path):
    # Megatron allows it (document indices [0, 2, 3]); the release rule does not.
    idx = write_pair(tmp_path, idx_bytes([1, 1, 1], doc_indices=[0, 2, 3]), [1, 2, 3])
    pair = megatron.MegatronPair(idx)
    with pytest.raises(FormatError, match="document count must be sequences \\+ 1: expected 4, got 3"):
        pair.check_one_document_per_sequence()


def test_release_rule_every_sequence_ends_with_eod(tmp_path):
    idx = write_pair(tmp_path, idx_bytes([2, 2]), [1, 0, 2, 3])
    with pytest.raises(FormatError, match="sequence 1 must end with EOD: expected 0, got 3"):
        megatron.MegatronPair(idx).check_one_document_per_sequence(eod_id=0)


# (name, .idx bytes, .bin tokens or bytes, struct code of the .bin, the rule the error names)
FORGERIES = [
    ("magic", b"MMIDIDX\x00\x01" + idx_bytes([2])[9:], [1, 2], "H", "wrong magic"),
    ("version", idx_bytes([2], version=2), [1, 2], "H", "unknown version: expected 1, got 2"),
    ("dtype code", idx_bytes([2], code=9), [1, 2], "H", "unknown dtype code"),
    (
        "float dtype",
        idx_bytes([2], code=6, itemsize=8),
        [1, 2],
        "q",
        "token dtype code must be 8 (uint16) or 4 (int32)",
    ),
    ("idx truncated by one byte", idx_bytes([2, 1])[:-1], [1, 2, 3], "H", "truncated index"),
    ("idx trailing byte", idx_bytes([2, 1]) + b"\0", [1, 2, 3], "H", "trailing bytes after the document indices"),
    (
        "idx header truncated",
        idx_bytes([2])[:33],
        [1, 2],
        "H",
        "truncated header: expected at least 34 bytes, got 33 bytes",
    ),
    ("sequence count too large", idx_bytes([2], sequence_count=2**40), [1, 2], "H", "truncated index"),
    ("sequence count does not fit the lengths", idx_bytes([2, 1], sequence_count=1), [1, 2, 3], "H", "trailing bytes"),
    ("no document indices", idx_bytes([], doc_indices=[]), [], "H", "document count must be at least 1"),
    (
        "bin truncated by one byte",
        idx_bytes([2, 1]),
        struct.pack("<3H", 1, 2, 3)[:-1],
        "H",
        "size must be a multiple of the dtype size 2",
    ),
    (
        "bin one token short",
        idx_bytes([2, 2]),
        [1, 2, 3],
        "H",
        "sequences end past the end of .bin: expected 8 bytes, got 6 bytes",
    ),
    ("bin one token long", idx_bytes([2, 1]), [1, 2, 3, 4], "H", "bytes in .bin after the last sequence"),
    (
        "pointer past the end",
        idx_bytes([2, 1], pointers=[0, 2**40]),
        [1, 2, 3],
        "H",
        "sequence 1: pointer must follow the previous sequence: expected 4, got 1099511627776",
    ),
    ("negative pointer", idx_bytes([2, 1], pointers=[-4, 0]), [1, 2, 3], "H", "sequence 0: pointer must follow"),
    (
        "overlapping pointers",
        idx_bytes([2, 1], pointers=[0, 2]),
        [1, 2, 3],
        "H",
        "sequence 1: pointer must follow the previous sequence: expected 4, got 2",
    ),
    ("negative length", idx_bytes([2, -1, 2]), [1, 2, 3], "H", "sequence 1: length must not be negative"),
    ("huge length", idx_bytes([2**31 - 1]), [1, 2], "H", "sequences end past the end of .bin"),
    (
        "doc index not starting at 0",
        idx_bytes([1, 1], doc_indices=[1, 1, 2]),
        [1, 2],
        "H",
        "document index 0 must be 0",
    ),
    (
        "doc index not ending at S",
        idx_bytes([1, 1], doc_indices=[0, 1, 3]),
        [1, 2],
        "H",
        "the last document index must be the sequence count: expected 2, got 3",
    ),
    (
        "doc index out of order",
        idx_bytes([1, 1, 1], doc_indices=[0, 2, 1, 3]),
        [1, 2, 3],
        "H",
        "document index 2 must not decrease: expected >= 2, got 1",
    ),
    (
        "int32 pointer stride",
        idx_bytes([1, 1], code=4, itemsize=2),
        [1, 2],
        "i",
        "sequence 1: pointer must follow the previous sequence: expected 4, got 2",
    ),
]


@pytest.mark.parametrize("idx, tokens, fmt, rule", [pytest.param(*f[1:], id=f[0]) for f in FORGERIES])
def test_forged_index_is_an_error_never_a_read(tmp_path, idx, tokens, fmt, rule):
    idx_path = write_pair(tmp_path, idx, tokens, fmt)
    with pytest.raises(FormatError) as info:
        megatron.MegatronPair(idx_path)
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'p.'}")  # names the .idx or the .bin
    assert rule in message


def test_missing_half_of_the_pair(tmp_path):
    (tmp_path / "p.idx").write_bytes(idx_bytes([1]))
    with pytest.raises(FormatError, match=r"p\.bin: the other half of the pair is missing"):
        megatron.MegatronPair(tmp_path / "p.idx")


def test_ids_are_checked_against_a_vocabulary(tmp_path):
    idx = write_pair(tmp_path, idx_bytes([2, 1], code=4, itemsize=4), [5, -1, 7], fmt="i")
    with pytest.raises(FormatError, match="token 1: id must be in 0..vocab_size-1"):
        megatron.MegatronPair(idx, vocab_size=10)
    idx = write_pair(tmp_path, idx_bytes([2, 1]), [5, 10, 7], name="q")
    with pytest.raises(FormatError, match="token 1: id must be in 0..vocab_size-1: expected < 10, got 10"):
        megatron.MegatronPair(idx, vocab_size=10)


@settings(max_examples=60, deadline=None)
@given(
    docs=st.lists(st.lists(st.integers(0, 70000), max_size=10), max_size=25),
    big_vocab=st.booleans(),
    batch=st.integers(1, 6),
)
def test_round_trip(tmp_path_factory, docs, big_vocab, batch):
    vocab = 128256 if big_vocab else 65536
    eod = vocab - 1
    docs = [[i % vocab for i in d] for d in docs]
    out = tmp_path_factory.mktemp("meg")
    with megatron.MegatronWriter(out / "p.bin", vocab, eod) as writer:
        for start in range(0, len(docs), batch):
            chunk = docs[start : start + batch]
            writer.add_documents(
                np.array([i for d in chunk for i in d], dtype=np.int64), np.array([len(d) for d in chunk])
            )
        result = writer.close()
    pair = megatron.MegatronPair(out / "p.idx", vocab_size=vocab)
    pair.check_one_document_per_sequence(eod_id=eod)
    assert [pair[i].tolist() for i in range(len(pair))] == [d + [eod] for d in docs]
    assert result.n_tokens == pair.n_tokens == sum(len(d) + 1 for d in docs)  # token conservation, EOD counted
    assert result.n_documents == len(docs)


# ------------------------------------------------------------------ megatron-core interop


@pytest.fixture(scope="module")
def megatron_core():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Transformer Engine and Apex are not installed"
        import torch
        from megatron.core.datasets import indexed_dataset
    return torch, indexed_dataset


def interop_documents(vocab_size: int, eod: int) -> list[list[int]]:
    rng = np.random.default_rng(vocab_size)
    docs = [rng.integers(0, vocab_size, size=int(n)).tolist() for n in rng.integers(0, 50, size=40)]
    docs[3] = []  # an empty document is still one sequence: [EOD]
    docs[5] = [vocab_size - 1, 0, eod]  # the extremes of the vocabulary
    return docs


@pytest.mark.parametrize("vocab_size, eod, numpy_dtype", [(50257, 50256, np.uint16), (128256, 128001, np.int32)])
def test_megatron_core_reads_our_pairs_and_writes_the_same_bytes(
    tmp_path, megatron_core, vocab_size, eod, numpy_dtype
):
    torch, indexed_dataset = megatron_core
    docs = interop_documents(vocab_size, eod)

    with megatron.MegatronWriter(tmp_path / "ours.bin", vocab_size, eod) as writer:
        for start in range(0, len(docs), 7):
            chunk = docs[start : start + 7]
            writer.add_documents(
                np.array([i for d in chunk for i in d], dtype=np.int64), np.array([len(d) for d in chunk])
            )
        writer.close()

    # megatron-core reads ours, document for document.
    dataset = indexed_dataset.IndexedDataset(str(tmp_path / "ours"))
    assert len(dataset) == len(docs)
    assert dataset.index.dtype == numpy_dtype
    assert dataset.document_indices.tolist() == list(range(len(docs) + 1))
    assert dataset.sequence_lengths.tolist() == [len(d) + 1 for d in docs]
    for i, doc in enumerate(docs):
        assert dataset[i].tolist() == doc + [eod]

    # megatron-core's builder, fed the same documents, writes the same bytes.
    builder = indexed_dataset.IndexedDatasetBuilder(str(tmp_path / "theirs.bin"), dtype=numpy_dtype)
    for doc in docs:
        builder.add_item(torch.tensor(doc + [eod], dtype=torch.int64))
        builder.end_document()
    builder.finalize(str(tmp_path / "theirs.idx"))
    assert (tmp_path / "ours.bin").read_bytes() == (tmp_path / "theirs.bin").read_bytes()
    assert (tmp_path / "ours.idx").read_bytes() == (tmp_path / "theirs.idx").read_bytes()

    # And our reader accepts theirs.
    theirs = megatron.MegatronPair(tmp_path / "theirs.idx", vocab_size=vocab_size)
    assert [theirs[i].tolist() for i in range(len(theirs))] == [d + [eod] for d in docs]


def test_without_eod_the_documents_are_written_as_given(tmp_path):
    # The build's staging pairs: no EOD; the caller may reuse its array at once.
    ids = np.array([3, 4, 5], dtype=np.int64)
    with megatron.MegatronWriter(tmp_path / "s.bin", 10, eod_id=None) as writer:
        writer.add_documents(ids, np.array([2, 1]))
        ids[:] = 9
        pair = writer.close()
    assert (tmp_path / "s.bin").read_bytes() == struct.pack("<3H", 3, 4, 5)
    assert pair.bin_sha256 == hashlib.sha256(struct.pack("<3H", 3, 4, 5)).hexdigest()
    assert megatron.MegatronPair(tmp_path / "s.idx").lengths.tolist() == [2, 1]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 99), max_size=6), min_size=1, max_size=8), st.sampled_from([None, 7]))
def test_bos_and_eod_around_every_document_counted_in_its_length(tmp_path_factory, documents, bos):
    folder = tmp_path_factory.mktemp("bos")
    with megatron.MegatronWriter(folder / "p.bin", 100, 99, bos_id=bos) as writer:
        writer.add_documents(
            np.array([i for d in documents for i in d], dtype=np.int64), np.array([len(d) for d in documents])
        )
    pair = megatron.MegatronPair(folder / "p.idx", vocab_size=100)
    head = [] if bos is None else [bos]
    assert [pair[i].tolist() for i in range(len(pair))] == [head + d + [99] for d in documents]
    pair.check_one_document_per_sequence(99, bos)
    if bos is not None:
        with pytest.raises(FormatError, match="sequence 0 must begin with BOS"):
            pair.check_one_document_per_sequence(99, bos + 1)


def test_bos_id_must_be_valid(tmp_path):
    with pytest.raises(FormatError, match="bos_id must be a valid id"):
        megatron.MegatronWriter(tmp_path / "p.bin", 10, 9, bos_id=10)
