"""llm.c segments and packing: files cut from segments by byte ranges equal one sequential LlmcWriter's, byte for byte.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_tokbin.errors import FormatError
from hf_tokbin.formats import llmc, llmc_segments
from hf_tokbin.formats.llmc_order import llmc_order
from hf_tokbin.formats.llmc_segments import DocumentRange, SegmentWriter, TokenRange, plan_files, write_packed_file

VOCAB = 300


def write_segments(folder, parts, layout, sep, bos, separator):
    """One segment per part (a list of documents); returns each whole segment as one DocumentRange."""
    segments = []
    for k, documents in enumerate(parts):
        writer = SegmentWriter(folder / f"part-{k}", layout, sep, bos, separator)
        lengths = np.array([len(d) for d in documents], dtype=np.int64)
        flat = np.array([i for d in documents for i in d], dtype=np.int64)
        half = len(documents) // 2  # two batches, so a segment is written in steps
        cut = int(lengths[:half].sum())
        writer.add_checked_documents(flat[:cut], lengths[:half])
        writer.add_checked_documents(flat[cut:], lengths[half:])
        done = writer.close()
        segments.append(DocumentRange(f"part-{k}", 0, done.n_documents, 0, done.n_tokens))
    return segments


def read_ends_from(folder):
    calls = []

    def read_ends(name, first, count):
        calls.append((name, first, count))
        with open(folder / f"{name}.ends", "rb") as f:
            return llmc_segments.ends_of(os.pread(f.fileno(), count * 8, first * 8), name)

    return read_ends, calls


def pack(folder, out, files, layout):
    width = layout.dtype.itemsize

    def copy(token_range: TokenRange, fd: int) -> None:
        llmc_segments.copy_file_range_into(
            folder / f"{token_range.segment}.tokens", token_range.start * width, token_range.length * width, fd
        )

    for plan in files:
        write_packed_file(out / plan.name, plan, layout, VOCAB, copy)


documents = st.lists(st.integers(0, VOCAB - 1), min_size=0, max_size=12)


@settings(max_examples=60, deadline=None)
@given(
    parts=st.lists(st.lists(documents, min_size=0, max_size=8), min_size=1, max_size=5),
    max_tokens=st.integers(14, 40),
    separator=st.sampled_from(["before", "after"]),
    bos=st.sampled_from([None, 7]),
    family=st.sampled_from(["gpt2", "llama3"]),
)
def test_packed_files_are_the_bytes_of_one_sequential_writer(
    tmp_path_factory, parts, max_tokens, separator, bos, family
):
    folder = tmp_path_factory.mktemp("segments")
    layout = llmc.layout_for(VOCAB, family)
    sep = 3
    segments = write_segments(folder, parts, layout, sep, bos, separator)
    read_ends, _ = read_ends_from(folder)
    files = plan_files("train", segments, max_tokens, read_ends)
    (folder / "packed").mkdir()
    pack(folder, folder / "packed", files, layout)

    (folder / "sequential").mkdir()
    with llmc.LlmcWriter(
        folder / "sequential", "train", VOCAB, sep, max_tokens, family=family, bos_id=bos, separator=separator
    ) as writer:
        for part in parts:
            for document in part:
                writer.add_document(np.array(document, dtype=np.int64))
    expected = writer.files
    assert [f.name for f in files] == [e.name for e in expected]
    assert [(f.n_tokens, f.n_docs) for f in files] == [(e.n_tokens, e.n_docs) for e in expected]
    for entry in expected:
        assert (folder / "packed" / entry.name).read_bytes() == (folder / "sequential" / entry.name).read_bytes()


def test_the_cuts_read_few_ends_of_a_long_segment(tmp_path, monkeypatch):
    """A file that ends inside a segment of 100,000 documents costs
    a bisection (single reads, one block), not the whole .ends.
    """
    layout = llmc.layout_for(VOCAB)
    rng = np.random.default_rng(0)
    part = [list(rng.integers(0, VOCAB, size=int(n))) for n in rng.integers(1, 9, size=100_000)]
    segments = write_segments(tmp_path, [part], layout, 3, None, "before")
    read_ends, calls = read_ends_from(tmp_path)
    files = plan_files("train", segments, 100_000, read_ends)
    cuts = len(files) - 1
    assert cuts >= 4
    assert sum(count for _, _, count in calls) <= cuts * (llmc_segments._BISECT_BLOCK + 40)
    assert sum(f.n_docs for f in files) == 100_000 and sum(f.n_tokens for f in files) == segments[0].n_tokens


def test_a_segment_whole_in_the_current_file_reads_no_ends(tmp_path):
    layout = llmc.layout_for(VOCAB)
    segments = write_segments(tmp_path, [[[1, 2]], [[4, 5, 6]], [[8]]], layout, 3, None, "before")
    read_ends, calls = read_ends_from(tmp_path)
    files = plan_files("val", segments, 1000, read_ends)
    assert calls == [] and [f.name for f in files] == ["val-00000.bin"] and files[0].n_tokens == 9


def test_a_document_longer_than_a_file_is_an_error(tmp_path):
    layout = llmc.layout_for(VOCAB)
    segments = write_segments(tmp_path, [[[1] * 20]], layout, 3, None, "before")
    read_ends, _ = read_ends_from(tmp_path)
    with pytest.raises(FormatError, match="longer than one llm.c file"):
        plan_files("train", segments, 10, read_ends)


def test_a_short_segment_fails_the_pack_and_leaves_no_file(tmp_path):
    layout = llmc.layout_for(VOCAB)
    segments = write_segments(tmp_path, [[[1, 2, 3], [4, 5]]], layout, 3, None, "before")
    read_ends, _ = read_ends_from(tmp_path)
    files = plan_files("train", segments, 1000, read_ends)
    with open(tmp_path / "part-0.tokens", "r+b") as f:
        f.truncate(4)
    (tmp_path / "out").mkdir()
    with pytest.raises(FormatError, match="segment is shorter"):
        pack(tmp_path, tmp_path / "out", files, layout)
    assert os.listdir(tmp_path / "out") == []


@settings(max_examples=25, deadline=None)
@given(
    parts=st.lists(st.lists(documents, min_size=0, max_size=300), min_size=1, max_size=4),
    max_tokens=st.integers(14, 400),
    seed=st.integers(0, 2**63 - 1),
)
def test_interleaved_blocks_pack_to_the_bytes_of_one_writer_in_that_order(tmp_path_factory, parts, max_tokens, seed):
    """With a seed the ranges are blocks (their ends from the segments,
    as the parts record them); the files are still one writer's.
    """
    folder = tmp_path_factory.mktemp("blocks")
    layout = llmc.layout_for(VOCAB)
    segments = write_segments(folder, parts, layout, 3, None, "before")
    block_ends = [
        llmc_segments.block_token_ends(folder / f"{s.segment}.ends", s.n_documents, interleaved=True) for s in segments
    ]
    blocks = llmc_order(seed, "train", [s.n_documents for s in segments])
    read_ends, _ = read_ends_from(folder)
    files = plan_files(
        "train",
        llmc_segments.ranges_in_order(blocks, [s.segment for s in segments], block_ends),
        max_tokens,
        read_ends,
    )
    (folder / "packed").mkdir()
    pack(folder, folder / "packed", files, layout)
    (folder / "sequential").mkdir()
    with llmc.LlmcWriter(folder / "sequential", "train", VOCAB, 3, max_tokens, separator="before") as writer:
        for p, first, count in zip(blocks.part.tolist(), blocks.first.tolist(), blocks.count.tolist()):
            for document in parts[p][first : first + count]:
                writer.add_document(np.array(document, dtype=np.int64))
    assert [(f.name, f.n_tokens, f.n_docs) for f in files] == [(e.name, e.n_tokens, e.n_docs) for e in writer.files]
    for entry in writer.files:
        assert (folder / "packed" / entry.name).read_bytes() == (folder / "sequential" / entry.name).read_bytes()
