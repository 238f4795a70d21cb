"""llm.c .bin token files (the llm.c layout): writer, reader, manifest.

Expected bytes are built here with ``struct``, independently of the encoder.
"""

from __future__ import annotations

import dataclasses
import json
import struct
import tracemalloc
from importlib import resources

import jsonschema
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_tokbin.errors import FormatError
from hf_tokbin.formats import llmc, megatron

MAGIC = 20240520


def llmc_bytes(ids, vocab_size, version=1, header_ints=None) -> bytes:
    """An llm.c file built by hand: 256 little-endian int32, then the ids."""
    header = [MAGIC, version, len(ids), vocab_size] + [0] * 252
    for i, value in (header_ints or {}).items():
        header[i] = value
    code = {1: "H", 2: "I"}[version]
    return struct.pack("<256i", *header) + struct.pack(f"<{len(ids)}{code}", *ids)


def read_back(path) -> tuple[tuple[int, ...], list[int]]:
    """(the first four header ints, the ids) of a file, decoded with struct only."""
    data = path.read_bytes()
    header = struct.unpack_from("<4i", data)
    width = {1: 2, 2: 4}[header[1]]
    code = {2: "H", 4: "I"}[width]
    ids = list(struct.unpack_from(f"<{header[2]}{code}", data, 1024))
    return header, ids


# ------------------------------------------------------------------ worked example


def test_worked_example_is_exactly_the_seed_bytes(tmp_path):
    expected = (
        struct.pack("<4i", 20240520, 1, 3, 256)  # 88 d8 34 01 | 01 00 00 00 | 03 00 00 00 | 00 01 00 00
        + bytes(1008)
        + struct.pack("<3H", 1, 2, 3)
    )
    assert len(expected) == 1030
    assert expected[:4] == bytes.fromhex("88d83401")

    llmc.write_tokens(tmp_path / "a.bin", [1, 2, 3], vocab_size=256)
    with llmc.LlmcWriter(tmp_path / "w", "train", vocab_size=256) as writer:  # the byte tokenizer: no separator
        writer.add_document([1, 2, 3])

    assert (tmp_path / "a.bin").read_bytes() == expected
    assert (tmp_path / "w" / "train-00000.bin").read_bytes() == expected


# ------------------------------------------------------------------ versions


@pytest.mark.parametrize(
    "vocab_size, version, width",
    [(256, 1, 2), (50257, 1, 2), (65536, 1, 2), (65537, 2, 4), (128256, 2, 4)],
)
def test_version_follows_vocab_size(tmp_path, vocab_size, version, width):
    top = vocab_size - 1
    llmc.write_tokens(tmp_path / "t.bin", [0, top], vocab_size)
    data = (tmp_path / "t.bin").read_bytes()
    assert struct.unpack_from("<4i", data) == (MAGIC, version, 2, vocab_size)
    assert len(data) == 1024 + 2 * width
    assert llmc.open_tokens(tmp_path / "t.bin").tolist() == [0, top]


def test_writer_rejects_out_of_range_ids_and_non_integers(tmp_path):
    writer = llmc.LlmcWriter(tmp_path, "train", vocab_size=100)
    with pytest.raises(FormatError, match="token id out of range: expected 0 <= id < 100, got 100"):
        writer.add_document([1, 100])
    with pytest.raises(FormatError, match="token id out of range"):
        writer.add_document([-1])
    with pytest.raises(FormatError, match="token ids must be integers"):
        writer.add_document(np.array([1.5]))
    with pytest.raises(FormatError, match="document lengths must add up"):
        writer.add_documents(np.array([1, 2, 3]), np.array([1, 1]))
    with pytest.raises(FormatError, match="document lengths must not be negative"):
        writer.add_documents(np.array([1, 2]), np.array([3, -1]))
    assert writer.close() == []
    assert list(tmp_path.iterdir()) == []


def _write_llmc(path, ids, vocab_size):
    llmc.write_tokens(path, ids, vocab_size)


def _write_llama3(path, ids, vocab_size):
    llmc.write_tokens(path, ids, vocab_size, family="llama3")


def _write_megatron(path, ids, vocab_size):
    with megatron.MegatronWriter(path, vocab_size, eod_id=None) as writer:
        writer.add_document(ids)
        writer.close()


@pytest.mark.parametrize("write", [_write_llmc, _write_llama3, _write_megatron], ids=["llmc", "llama3", "megatron"])
@pytest.mark.parametrize(
    "ids, rule",
    [
        (np.array([1.0, 2.0]), "token ids must be integers: got dtype float64"),
        (np.array([3, 256]), "token id out of range: expected 0 <= id < 256, got 256"),
        (np.array([-1, 3]), "token id out of range: expected 0 <= id < 256, got -1"),
    ],
)
def test_every_writer_checks_ids_the_same_way(tmp_path, write, ids, rule):
    with pytest.raises(FormatError) as info:
        write(tmp_path / "t.bin", ids, 256)
    assert str(info.value) == f"{tmp_path / 't.bin'}: {rule}"
    assert list(tmp_path.iterdir()) == []


def test_writer_rejects_bad_settings(tmp_path):
    with pytest.raises(FormatError, match="split must be train or val"):
        llmc.LlmcWriter(tmp_path, "validation", vocab_size=10)
    with pytest.raises(FormatError, match="doc_sep_id must be a valid id"):
        llmc.LlmcWriter(tmp_path, "train", vocab_size=10, doc_sep_id=10)
    with pytest.raises(FormatError, match="max_tokens per file out of range"):
        llmc.LlmcWriter(tmp_path, "train", vocab_size=10, max_tokens=0)


# ------------------------------------------------------------------ separators and roll-over


def test_separator_precedes_every_document(tmp_path):
    with llmc.LlmcWriter(tmp_path, "val", vocab_size=50257, doc_sep_id=50256) as writer:
        writer.add_document([7, 8])
        writer.add_documents(np.array([9, 10, 11]), np.array([1, 0, 2]))  # an empty document still gets its separator
    assert [e.name for e in writer.files] == ["val-00000.bin"]
    header, ids = read_back(tmp_path / "val-00000.bin")
    assert header == (MAGIC, 1, 9, 50257)  # 5 ids + 4 separators
    assert ids == [50256, 7, 8, 50256, 9, 50256, 50256, 10, 11]


def test_default_limit_is_one_hundred_million():
    assert llmc.DEFAULT_MAX_TOKENS == 100_000_000
    assert llmc.LlmcWriter("unused", "train", vocab_size=10).max_tokens == 100_000_000


def test_roll_over_at_exact_boundaries(tmp_path):
    # max 5 tokens per file; with the separator the documents take 3, 2, 5, 1, 4, 2 tokens.
    docs = [[1, 1], [2], [3, 3, 3, 3], [], [4, 4, 4], [5]]
    with llmc.LlmcWriter(tmp_path, "train", vocab_size=10, doc_sep_id=0, max_tokens=5) as writer:
        # fills file 0 exactly, then file 1 exactly
        writer.add_documents(np.array([1, 1, 2, 3, 3, 3, 3]), np.array([2, 1, 4]))
        for doc in docs[3:]:
            writer.add_document(doc)
    files = [(e.name, e.n_tokens, e.n_docs) for e in writer.files]
    assert files == [
        ("train-00000.bin", 5, 2),  # 3 + 2 = 5: exactly full, no roll-over before doc 1
        ("train-00001.bin", 5, 1),  # a document of exactly max_tokens fits alone
        ("train-00002.bin", 5, 2),  # 1 + 4 = 5
        ("train-00003.bin", 2, 1),  # 5 + 2 would pass 5: a new file before the document
    ]
    assert read_back(tmp_path / "train-00000.bin")[1] == [0, 1, 1, 0, 2]
    assert read_back(tmp_path / "train-00001.bin")[1] == [0, 3, 3, 3, 3]
    assert read_back(tmp_path / "train-00002.bin")[1] == [0, 0, 4, 4, 4]
    assert read_back(tmp_path / "train-00003.bin")[1] == [0, 5]


def test_roll_over_one_token_past_the_limit(tmp_path):
    with llmc.LlmcWriter(tmp_path, "train", vocab_size=10, max_tokens=4) as writer:  # no separator
        writer.add_documents(np.array([1, 2, 3, 4, 5]), np.array([3, 2]))  # 3 + 2 = 5 > 4
    assert [(e.n_tokens, e.n_docs) for e in writer.files] == [(3, 1), (2, 1)]


def test_document_longer_than_the_limit_is_an_error(tmp_path):
    writer = llmc.LlmcWriter(tmp_path, "train", vocab_size=10, doc_sep_id=0, max_tokens=4)
    writer.add_document([1, 2, 3])  # 4 with its separator: fits
    with pytest.raises(
        FormatError, match=r"document 1 of split train is longer than one file may hold: expected <= 4 tokens, got 5"
    ):
        writer.add_document([1, 2, 3, 4])
    entries = writer.close()
    assert [(e.n_tokens, e.n_docs) for e in entries] == [(4, 1)]  # nothing of the rejected document was written


def test_abort_leaves_no_file_under_a_final_name(tmp_path):
    with pytest.raises(RuntimeError):
        with llmc.LlmcWriter(tmp_path, "train", vocab_size=10, max_tokens=2) as writer:
            writer.add_documents(np.array([1, 2, 3]), np.array([2, 1]))  # file 0 finished, file 1 open
            raise RuntimeError("the build died")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train-00000.bin"]


@settings(max_examples=60, deadline=None)
@given(
    docs=st.lists(st.lists(st.integers(0, 999), max_size=12), max_size=30),
    sep=st.one_of(st.none(), st.integers(0, 999)),
    max_tokens=st.integers(13, 40),
    batch=st.integers(1, 7),
)
def test_round_trip_never_splits_a_document(tmp_path_factory, docs, sep, max_tokens, batch):
    out = tmp_path_factory.mktemp("llmc")
    with llmc.LlmcWriter(out, "train", vocab_size=1000, doc_sep_id=sep, max_tokens=max_tokens) as writer:
        for start in range(0, len(docs), batch):
            chunk = docs[start : start + batch]
            writer.add_documents(
                np.array([i for d in chunk for i in d], dtype=np.int64), np.array([len(d) for d in chunk])
            )
    stored = [d if sep is None else [sep] + d for d in docs]

    remaining = list(stored)
    for entry in writer.files:
        ids = llmc.open_tokens(out / entry.name).tolist()
        assert len(ids) == entry.n_tokens <= max_tokens
        # The file is exactly the next n_docs whole documents.
        held, remaining = remaining[: entry.n_docs], remaining[entry.n_docs :]
        assert ids == [i for d in held for i in d]
        # And the next document would not have fitted (files are filled greedily).
        if remaining and entry is not writer.files[-1]:
            assert entry.n_tokens + len(remaining[0]) > max_tokens
    assert remaining == []
    assert sum(e.n_tokens for e in writer.files) == sum(len(d) for d in stored)  # token conservation
    assert sum(e.n_docs for e in writer.files) == len(docs)


def test_memory_does_not_grow_with_the_stream(tmp_path):
    """A stream 40x larger than one batch is written with memory of about one batch."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 400, size=2000)
    ids = rng.integers(0, 50256, size=int(lengths.sum())).astype(np.uint16)
    n_batches = 40
    writer = llmc.LlmcWriter(tmp_path, "train", vocab_size=50257, doc_sep_id=50256)
    tracemalloc.start()
    try:
        for _ in range(n_batches):
            writer.add_documents(ids, lengths)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    entries = writer.close()
    written = 2 * sum(e.n_tokens for e in entries)
    assert written == n_batches * 2 * (ids.size + lengths.size)
    assert peak < 4 * ids.nbytes < written / 10


# ------------------------------------------------------------------ reader


def test_reader_returns_a_read_only_memmap(tmp_path):
    path = tmp_path / "t.bin"
    path.write_bytes(llmc_bytes([5, 6, 7, 8], vocab_size=50257))
    tokens = llmc.open_tokens(path)
    assert isinstance(tokens, np.memmap)
    assert tokens.dtype == np.dtype("<u2") and not tokens.flags.writeable
    assert tokens.tolist() == [5, 6, 7, 8]
    assert llmc.read_header(path) == llmc.LlmcHeader(version=1, n_tokens=4, vocab_size=50257)


def test_reader_accepts_vocab_zero_as_llm_c_writes_it(tmp_path):
    path = tmp_path / "t.bin"
    path.write_bytes(llmc_bytes([60000, 1], vocab_size=0))
    assert llmc.open_tokens(path).tolist() == [60000, 1]


def test_reader_reads_version_2(tmp_path):
    path = tmp_path / "t.bin"
    path.write_bytes(llmc_bytes([128000, 3], vocab_size=128256, version=2))
    tokens = llmc.open_tokens(path)
    assert tokens.dtype == np.dtype("<u4") and tokens.tolist() == [128000, 3]


@pytest.mark.parametrize(
    "data, rule",
    [
        (
            llmc_bytes([1, 2], 256, header_ints={0: 20240521}),
            "wrong magic in header[0]: expected 20240520 or 20240801, got 20240521",
        ),
        (
            llmc_bytes([1, 2], 256, header_ints={0: 20240801}),
            "unknown version in header[1]: expected 7 for magic 20240801, got 1",
        ),
        (llmc_bytes([1, 2], 256, header_ints={1: 3}), "unknown version in header[1]"),
        (
            llmc_bytes([1, 2], 256, header_ints={2: 3}),
            "truncated file: size must be 1024 + n_tokens * 2: expected 1030 bytes, got 1028 bytes",
        ),
        (
            llmc_bytes([1, 2], 256)[:-1],
            "truncated file: size must be 1024 + n_tokens * 2: expected 1028 bytes, got 1027 bytes",
        ),
        (llmc_bytes([1, 2], 256) + b"\0", "trailing bytes after the tokens"),
        (llmc_bytes([1, 2], 256)[:1023], "truncated header: expected at least 1024 bytes, got 1023 bytes"),
        (llmc_bytes([1, 2], 256, header_ints={255: 1}), "reserved header[255] must be 0: expected 0, got 1"),
        (llmc_bytes([1, 2], 256, header_ints={4: -7}), "reserved header[4] must be 0"),
        (llmc_bytes([1, 256], 256), "token 1: id must be in 0..vocab_size-1: expected < 256, got 256"),
        (llmc_bytes([1, 2], 70000), "version 1 (uint16) cannot hold vocab_size"),
        (llmc_bytes([1, 2], 256, header_ints={2: -2}), "negative n_tokens"),
    ],
)
def test_reader_rejects(tmp_path, data, rule):
    path = tmp_path / "bad.bin"
    path.write_bytes(data)
    with pytest.raises(FormatError) as info:
        llmc.open_tokens(path)
    assert str(info.value).startswith(f"{path}: ")
    assert rule in str(info.value)


def test_verify_token_file_against_its_manifest_entry(tmp_path):
    with llmc.LlmcWriter(tmp_path, "train", vocab_size=300, doc_sep_id=299) as writer:
        writer.add_documents(np.array([1, 2, 3]), np.array([2, 1]))
    (entry,) = writer.files
    path = tmp_path / entry.name
    assert llmc.verify_token_file(path, entry, vocab_size=300, doc_sep_id=299).n_tokens == 5
    data = bytearray(path.read_bytes())
    data[-2:] = struct.pack("<H", 4)  # same size, valid id, different bytes
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="sha256 disagrees with the manifest"):
        llmc.verify_token_file(path, entry, vocab_size=300)


# ------------------------------------------------------------------ manifest


def make_manifest(tmp_path, doc_sep_id=0) -> llmc.TokensManifest:
    with llmc.LlmcWriter(tmp_path, "train", vocab_size=10, doc_sep_id=doc_sep_id, max_tokens=4) as train:
        train.add_documents(np.array([1, 2, 3, 4]), np.array([2, 2]))
    with llmc.LlmcWriter(tmp_path, "val", vocab_size=10, doc_sep_id=doc_sep_id) as val:
        val.add_document([5])
    return llmc.TokensManifest(
        "byte", "a" * 64, 10, doc_sep_id, "tiny", "v1", "b" * 64, tuple(train.files + val.files)
    )


def schema() -> dict:
    text = resources.files("hf_tokbin").joinpath("formats/schemas/tokens-manifest.schema.json").read_text()
    return json.loads(text)


def test_manifest_round_trip_matches_the_schema_and_is_deterministic(tmp_path):
    manifest = make_manifest(tmp_path / "one")
    path = manifest.write(tmp_path / "one")
    obj = json.loads(path.read_text())
    jsonschema.validate(obj, schema())
    assert list(obj) == [
        "tokenizer_id",
        "tokenizer_sha256",
        "vocab_size",
        "doc_sep_id",
        "dataset",
        "version",
        "corpus_manifest_sha256",
        "files",
    ]
    assert [(f["name"], f["split"], f["n_tokens"], f["n_docs"]) for f in obj["files"]] == [
        ("train-00000.bin", "train", 3, 1),
        ("train-00001.bin", "train", 3, 1),
        ("val-00000.bin", "val", 2, 1),
    ]
    assert llmc.TokensManifest.read(path) == manifest
    again = make_manifest(tmp_path / "two").write(tmp_path / "two")
    assert again.read_bytes() == path.read_bytes()  # no timestamps, no absolute paths


def test_schema_allows_a_null_separator_and_rejects_broken_manifests(tmp_path):
    obj = json.loads(make_manifest(tmp_path, doc_sep_id=None).to_json())
    assert obj["doc_sep_id"] is None
    jsonschema.validate(obj, schema())
    broken = [
        {k: v for k, v in obj.items() if k != "vocab_size"},
        {**obj, "tokenizer_sha256": "A" * 64},
        {**obj, "extra": 1},
        {**obj, "files": [{**obj["files"][0], "split": "validation"}]},
        {**obj, "files": [{**obj["files"][0], "name": "train-0.bin"}]},
        {**obj, "files": [{**obj["files"][0], "n_tokens": 2**31}]},
    ]
    for bad in broken:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema())


@pytest.mark.parametrize("digest", ["a" * 64 + "\n", "A" * 64, "a" * 63, 64])
def test_manifest_digests_are_exactly_64_lowercase_hex_digits(tmp_path, digest):
    manifest = make_manifest(tmp_path)
    with pytest.raises(FormatError, match="tokenizer_sha256 must be"):
        dataclasses.replace(manifest, tokenizer_sha256=digest)
    bad_file = dataclasses.replace(manifest.files[0], sha256=digest)
    with pytest.raises(FormatError, match="sha256 must be 64 lowercase hex digits"):
        dataclasses.replace(manifest, files=(bad_file,))


def test_manifest_reader_rejects_a_missing_key(tmp_path):
    obj = json.loads(make_manifest(tmp_path).to_json())
    del obj["files"][0]["sha256"]
    path = tmp_path / "_MANIFEST.json"
    path.write_text(json.dumps(obj))
    with pytest.raises(FormatError, match=r"files\[0\] keys"):
        llmc.TokensManifest.read(path)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 99), max_size=6), min_size=1, max_size=8),
    st.sampled_from([None, 7]),
    st.sampled_from(["before", "after"]),
    st.integers(8, 20),
)
def test_separator_before_or_after_and_bos_first_in_every_document(
    tmp_path_factory, documents, bos, separator, max_tokens
):
    folder = tmp_path_factory.mktemp("layout")
    with llmc.LlmcWriter(
        folder, "train", 100, doc_sep_id=99, max_tokens=max_tokens, bos_id=bos, separator=separator
    ) as writer:
        writer.add_documents(
            np.array([i for d in documents for i in d], dtype=np.int64), np.array([len(d) for d in documents])
        )
    files = writer.files
    head = [] if bos is None else [bos]
    expected = [[99, *head, *d] if separator == "before" else [*head, *d, 99] for d in documents]
    assert [i for f in files for i in llmc.open_tokens(folder / f.name).tolist()] == [i for d in expected for i in d]
    assert sum(f.n_docs for f in files) == len(documents)
    for f in files:  # every file holds whole documents in this layout
        llmc.verify_token_file(folder / f.name, f, 100, 99, separator)
        llmc.verify_token_file(folder / f.name, f, 100, 99, None)  # a folder whose layout is not recorded


def test_separator_position_is_checked(tmp_path):
    with pytest.raises(FormatError, match="separator must be before or after"):
        llmc.LlmcWriter(tmp_path, "train", 10, doc_sep_id=9, separator="between")
    with llmc.LlmcWriter(tmp_path, "train", 10, doc_sep_id=9, separator="after") as writer:
        writer.add_document([1, 2])
    entry = writer.files[0]
    with pytest.raises(FormatError, match="a file must start with the document separator"):
        llmc.verify_token_file(tmp_path / entry.name, entry, 10, 9, "before")
