"""Readers: llm.c and Megatron splits as numpy views, seeded windows, batches, Grain and torch."""

from __future__ import annotations

import functools
import pickle
import subprocess
import sys

import numpy as np
import pytest
from consumer_fixtures import docs_of, write_llmc_folder, write_pairs, write_release

from hf_tokbin.errors import FormatError, MissingDependencyError
from hf_tokbin.formats import llmc
from hf_tokbin.readers import LlmcSplit, MegatronSplit, RandomWindows, TokenStream

VOCAB, SEP = 300, 299


@pytest.fixture
def release(tmp_path):
    rng = np.random.default_rng(0)
    train = [docs_of(rng, 12, VOCAB, avoid=SEP), docs_of(rng, 9, VOCAB, avoid=SEP)]
    validation = [docs_of(rng, 5, VOCAB, avoid=SEP)]
    root = write_release(tmp_path / "rel", train, validation, VOCAB, SEP, max_tokens=60)
    return root, train, validation


def expected_llmc_stream(docs, sep=SEP):
    return [t for d in docs for t in [sep, *d]]


# ------------------------------------------------------------------ llm.c


def test_llmc_split_from_release_is_the_manifest_files_in_order(release):
    root, train, _ = release
    split = LlmcSplit.open(root, "train")
    folder = root / "tokens" / "tok" / "toy"
    manifest = llmc.TokensManifest.read(folder / "_MANIFEST.json")
    assert [p.name for p in split.paths] == [f.name for f in manifest.files if f.split == "train"]
    assert len(split.parts) > 1  # max_tokens=60 rolls over
    assert all(isinstance(p, np.memmap) for p in split.parts)
    assert np.concatenate(split.parts).tolist() == expected_llmc_stream([d for part in train for d in part])
    assert split.doc_sep_id == SEP and split.vocab_size == VOCAB
    assert split.n_tokens == len(split) == sum(f.n_tokens for f in manifest.files if f.split == "train")


def test_llmc_split_names_and_sources(release):
    root, _, validation = release
    folder = root / "tokens" / "tok" / "toy"
    for source, name in ((root, "validation"), (folder, "val")):
        split = LlmcSplit.open(source, name)
        assert np.concatenate(split.parts).tolist() == expected_llmc_stream(validation[0])
    one = LlmcSplit.open(folder / "val-00000.bin")
    assert one.doc_sep_id is None and one.parts[0].tolist()[:1] == [SEP]
    with pytest.raises(FormatError, match="unknown split: expected train, val or validation, got test"):
        LlmcSplit.open(root, "test")


def test_llmc_split_refuses_missing_split_and_ambiguous_release(tmp_path):
    folder = write_llmc_folder(tmp_path / "tokens" / "a" / "toy", {"train": [[1, 2]]}, VOCAB, SEP)
    with pytest.raises(FormatError, match="no val files in the manifest"):
        LlmcSplit.open(folder, "val")
    write_llmc_folder(tmp_path / "tokens" / "b" / "toy", {"train": [[1, 2]]}, VOCAB, SEP)
    with pytest.raises(FormatError, match="several llm.c token folders"):
        LlmcSplit.open(tmp_path, "train")
    with pytest.raises(FormatError, match="no llm.c token folder"):
        LlmcSplit.open(tmp_path / "tokens", "train")


def test_llmc_split_checks_files_against_manifest(tmp_path):
    folder = write_llmc_folder(tmp_path, {"train": [[1, 2, 3]]}, VOCAB, SEP)
    llmc.write_tokens(folder / "train-00000.bin", [SEP, 1, 2], VOCAB)  # one token short of the manifest
    with pytest.raises(FormatError, match="n_tokens disagrees with the manifest: expected 4, got 3"):
        LlmcSplit.open(folder)
    llmc.write_tokens(folder / "train-00000.bin", [SEP, 1, 2, 3], VOCAB)
    (folder / "train-00000.bin").write_bytes((folder / "train-00000.bin").read_bytes()[:-1])
    with pytest.raises(FormatError, match="truncated file"):
        LlmcSplit.open(folder)


def test_llmc_split_checks_ids_against_manifest_vocab(tmp_path):
    folder = write_llmc_folder(tmp_path, {"train": [[1, 250]]}, VOCAB, SEP)
    manifest = llmc.TokensManifest.read(folder / "_MANIFEST.json")
    llmc.TokensManifest(**{**manifest.__dict__, "vocab_size": 200, "doc_sep_id": 0}).write(folder)
    with pytest.raises(FormatError, match="token 0: id must be in 0..vocab_size-1: expected < 200, got 299"):
        LlmcSplit.open(folder)
    assert LlmcSplit.open(folder, check_ids=False).n_tokens == 3


def test_llmc_split_reads_upstream_llama3_files(tmp_path):
    docs = [[1, 70000, 2], [128000 - 5]]
    folder = write_llmc_folder(tmp_path, {"train": docs}, 128256, 128000, writer=functools.partial(llmc.LlmcWriter, family="llama3"))
    split = LlmcSplit.open(folder)
    assert split.parts[0].dtype == np.dtype("<u4")
    assert split.parts[0].tolist() == [128000, 1, 70000, 2, 128000, 127995]


def test_read_spans_files(tmp_path):
    stream = TokenStream([np.arange(5), np.arange(5, 8), np.zeros(0, dtype=np.int64), np.arange(8, 12)], ["a", "b", "c", "d"])
    assert stream.read(3, 10).tolist() == list(range(3, 10))
    assert stream.read(5, 8).base is not None  # inside one file: a view
    assert stream.read(11, 11).tolist() == []
    with pytest.raises(IndexError):
        stream.read(0, 13)


# ------------------------------------------------------------------ windows and batches


def test_windows_are_seeded_slices_inside_one_file(release):
    root, _, _ = release
    split = LlmcSplit.open(root)
    seq_len = 16
    windows = split.windows(seq_len, seed=7)
    assert len(windows) == sum((p.size - 1) // seq_len for p in split.parts)
    seen_files = set()
    for i in range(len(windows)):
        part, start = windows.start_of(i)
        window = windows[i]
        assert window.size == seq_len + 1
        assert start + seq_len + 1 <= split.parts[part].size  # never crosses into the next file
        assert window.tolist() == split.parts[part][start : start + seq_len + 1].tolist()
        assert np.shares_memory(window, split.parts[part])  # a slice of the memory map, not a copy
        seen_files.add(part)
    assert seen_files == {i for i, p in enumerate(split.parts) if p.size > seq_len}
    again = split.windows(seq_len, seed=7)
    order = list(range(len(windows)))[::-1]
    assert [again[i].tolist() for i in order] == [windows[i].tolist() for i in order]  # order-independent
    other = split.windows(seq_len, seed=8)
    assert [other.start_of(i) for i in range(len(windows))] != [windows.start_of(i) for i in range(len(windows))]
    assert windows[-1].tolist() == windows[len(windows) - 1].tolist()
    with pytest.raises(IndexError):
        windows[len(windows)]


def test_windows_cover_every_start(tmp_path):
    # One file of 40 tokens, seq_len 4: starts 0..35 are all allowed and drawn.
    llmc.write_tokens(tmp_path / "x.bin", np.arange(40), 256)
    windows = RandomWindows(LlmcSplit.open(tmp_path / "x.bin"), 4, seed=0)
    starts = {windows.start_of(i)[1] for i in range(len(windows))}
    assert starts <= set(range(36))
    many = {RandomWindows(windows.stream, 4, seed=s).start_of(0)[1] for s in range(400)}
    assert many == set(range(36))


def test_aligned_windows_start_at_the_separator(release):
    root, _, _ = release
    split = LlmcSplit.open(root)
    windows = split.windows(8, seed=3, aligned=True)
    for i in range(len(windows)):
        part, start = windows.start_of(i)
        assert windows[i][0] == SEP
        assert start + 9 <= split.parts[part].size
    unaligned = split.windows(8, seed=3)
    assert any(unaligned[i][0] != SEP for i in range(len(unaligned)))


def test_aligned_needs_a_separator(tmp_path):
    llmc.write_tokens(tmp_path / "x.bin", np.arange(40), 256)
    with pytest.raises(FormatError, match="document-aligned windows need document boundaries"):
        LlmcSplit.open(tmp_path / "x.bin").windows(4, aligned=True)


def test_too_short_for_a_window(tmp_path):
    llmc.write_tokens(tmp_path / "x.bin", np.arange(10), 256)
    with pytest.raises(FormatError, match="no window of seq_len \\+ 1 tokens fits inside one file: expected >= 11 tokens, got 10 tokens"):
        LlmcSplit.open(tmp_path / "x.bin").windows(10)
    assert len(LlmcSplit.open(tmp_path / "x.bin").windows(9)) == 1
    with pytest.raises(FormatError, match="seq_len must be a positive integer"):
        LlmcSplit.open(tmp_path / "x.bin").windows(0)


def test_batches_are_shifted_windows(release):
    root, _, _ = release
    split = LlmcSplit.open(root)
    windows = split.windows(12, seed=5)
    batches = list(split.batches(3, 12, seed=5))
    assert len(batches) == len(windows) // 3
    for b, (inputs, targets) in enumerate(batches):
        assert inputs.shape == targets.shape == (3, 12)
        assert inputs.dtype == targets.dtype == np.int64
        for row in range(3):
            window = windows[b * 3 + row].tolist()
            assert inputs[row].tolist() == window[:-1]
            assert targets[row].tolist() == window[1:]
    with pytest.raises(FormatError, match="batch_size must be a positive integer"):
        next(split.batches(0, 12))


def test_seed_002_window_length(tmp_path):
    # seed 002 trains on random 513-token windows: seq_len 512.
    llmc.write_tokens(tmp_path / "x.bin", np.arange(3000) % 256, 256)
    inputs, targets = next(LlmcSplit.open(tmp_path / "x.bin").batches(2, 512))
    assert inputs.shape == (2, 512) and np.array_equal(inputs[:, 1:], targets[:, :-1])


def test_llmc_split_pickles_by_path(tmp_path):
    llmc.write_tokens(tmp_path / "x.bin", np.arange(100_000) % 256, 256)
    split = LlmcSplit.open(tmp_path / "x.bin")
    data = pickle.dumps(split.windows(64, seed=1))
    assert len(data) < 10_000  # the token bytes (200 KB) are not in it
    windows = pickle.loads(data)
    assert windows[3].tolist() == split.windows(64, seed=1)[3].tolist()


# ------------------------------------------------------------------ Megatron


def test_megatron_split_documents_across_pairs(release):
    root, train, _ = release
    split = MegatronSplit.open(root, "train", vocab_size=VOCAB)
    docs = [d for part in train for d in part]
    assert len(split) == len(docs) == 21
    assert [split[i].tolist() for i in range(len(split))] == [d + [SEP] for d in docs]
    assert split[-1].tolist() == docs[-1] + [SEP]
    assert split[np.int64(13)].tolist() == docs[13] + [SEP]
    assert split.n_tokens == sum(len(d) + 1 for d in docs)
    with pytest.raises(IndexError):
        split[21]
    assert np.shares_memory(split[0], split.pairs[0].tokens)


def test_megatron_split_sources(release, tmp_path):
    root, _, validation = release
    folder = root / "shards" / "validation"
    for source, name in ((root, "val"), (folder, "train"), (folder / "part-000000.idx", "train"), (folder / "part-000000.bin", "train")):
        split = MegatronSplit.open(source, name)
        assert [split[i].tolist() for i in range(len(split))] == [d + [SEP] for d in validation[0]]
    with pytest.raises(FormatError, match="no Megatron pairs"):
        MegatronSplit.open(tmp_path)


def test_megatron_split_refuses_a_forged_index(tmp_path):
    (idx,) = write_pairs(tmp_path, [[[1, 2, 3]]], VOCAB, SEP)
    data = bytearray(idx.read_bytes())
    data[34:38] = (9).to_bytes(4, "little")  # sequence length 9: past the end of .bin
    idx.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="sequences end past the end of .bin"):
        MegatronSplit.open(tmp_path)


def test_megatron_aligned_windows_start_at_documents(release):
    root, _, _ = release
    split = MegatronSplit.open(root)
    windows = split.stream.windows(6, seed=2, aligned=True)
    starts = [set((np.asarray(p.pointers) // p.dtype.itemsize).tolist()) for p in split.pairs]
    for i in range(len(windows)):
        part, start = windows.start_of(i)
        assert start in starts[part]


def test_megatron_split_is_a_grain_source(release):
    grain = pytest.importorskip("grain")
    root, train, _ = release
    split = MegatronSplit.open(root)
    lengths = grain.MapDataset.source(split).map(lambda doc: int(doc.size))
    assert list(lengths) == [len(d) + 1 for part in train for d in part]
    shuffled = grain.MapDataset.source(split).shuffle(seed=3).map(lambda doc: tuple(doc.tolist()))
    assert sorted(shuffled) == sorted(tuple(d + [SEP]) for part in train for d in part)
    windows = grain.MapDataset.source(split.stream.windows(8, seed=1)).batch(2)
    first = windows[0]
    assert first.shape == (2, 9)
    restored = pickle.loads(pickle.dumps(split))
    assert restored[5].tolist() == split[5].tolist()


# ------------------------------------------------------------------ torch


def test_torch_dataset_over_documents_and_windows(release):
    torch = pytest.importorskip("torch")
    from hf_tokbin.readers.torch import torch_dataset

    root, train, _ = release
    docs = torch_dataset(MegatronSplit.open(root))
    assert isinstance(docs, torch.utils.data.Dataset)
    assert len(docs) == 21
    assert docs[0].dtype == torch.int64 and docs[0].tolist() == train[0][0] + [SEP]
    windows = LlmcSplit.open(root).windows(10, seed=4)
    pairs = torch_dataset(windows)
    x, y = pairs[2]
    assert x.tolist() == windows[2].tolist()[:-1] and y.tolist() == windows[2].tolist()[1:]
    loader = torch.utils.data.DataLoader(pairs, batch_size=4, shuffle=False)
    bx, by = next(iter(loader))
    assert bx.shape == by.shape == (4, 10)
    assert torch.equal(bx[:, 1:], by[:, :-1])
    with pytest.raises(TypeError, match="expected a MegatronSplit or RandomWindows"):
        torch_dataset([1, 2, 3])


def test_torch_missing_gives_an_install_hint(monkeypatch):
    from hf_tokbin.readers import torch as module

    module._dataset_class.cache_clear()
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` raise ImportError
    try:
        with pytest.raises(MissingDependencyError, match=r"pip install torch, or pip install -e '\.\[torch\]' in the hf_tokbin checkout"):
            module.torch_dataset(None)
    finally:
        module._dataset_class.cache_clear()


def test_readers_never_import_torch_or_grain():
    code = "import sys, hf_tokbin.readers, hf_tokbin.readers.torch, hf_tokbin.trainers; print(sorted(m for m in ('torch', 'grain') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
