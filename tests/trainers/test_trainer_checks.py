"""``verify --for TARGET``: for each target, files that pass and files that trip each rule."""

from __future__ import annotations

import functools
import json
import os

import numpy as np
import pytest
from consumer_fixtures import (
    SHA,
    docs_of,
    write_llmc_folder,
    write_pairs,
    write_release,
)

from hf_tokbin import trainers
from hf_tokbin.cli import main
from hf_tokbin.errors import FormatError, VerificationError
from hf_tokbin.formats import llmc, megatron
from hf_tokbin.trainers import LoaderSettings, check
from hf_tokbin.trainers.megatron_lm import MEGATRON_UINT16_BELOW
from hf_tokbin.trainers.modded_nanogpt import most_documents_per_micro_batch

SMALL = LoaderSettings(batch_size=2, seq_len=8)  # B*T+1 = 17 tokens per file
GPT2_EOT = 50256


def rules(findings, level=None):
    return sorted({f.rule for f in findings if level is None or f.level == level})


def only(findings, rule):
    (finding,) = [f for f in findings if f.rule == rule]
    return finding


def docs(n, vocab, sep, seed=0, low=5, high=12):
    return docs_of(np.random.default_rng(seed), n, vocab, low, high, avoid=sep)


def lone_llmc(tmp_path, ids, vocab_size, name="train-00000.bin"):
    path = tmp_path / name
    llmc.write_tokens(path, ids, vocab_size)
    return path


def sparse_llmc(path, n_tokens):
    """A uint16 file claiming ``n_tokens`` (vocab unknown, so never scanned), sparse on disk."""
    header = np.zeros(256, "<i4")
    header[:3] = (llmc.MAGIC, 1, n_tokens)
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.truncate(1024 + 2 * n_tokens)
    return path


# ------------------------------------------------------------------ llmc


@pytest.fixture
def gpt2_release(tmp_path):
    """Two train parts and one validation part, GPT-2 ids, <|endoftext|> separators."""
    vocab = 50257
    train = [docs(8, vocab, GPT2_EOT, 1), docs(8, vocab, GPT2_EOT, 2)]
    validation = [docs(6, vocab, GPT2_EOT, 3)]
    return write_release(tmp_path / "rel", train, validation, vocab, GPT2_EOT, max_tokens=60)


def test_llmc_passes_a_gpt2_release_and_reports_capacity(gpt2_release):
    findings = check(gpt2_release, "llmc", SMALL)
    assert not rules(findings, "error") and not rules(findings, "warning")
    folder = gpt2_release / "tokens" / "tok" / "toy"
    manifest = llmc.TokensManifest.read(folder / "_MANIFEST.json")
    capacity = {f.file: f.message for f in findings if f.rule == "capacity"}
    assert set(capacity) == {str(folder / f.name) for f in manifest.files}
    for f in manifest.files:
        assert f"the largest B*T this file supports is {f.n_tokens - 1:,}" in capacity[str(folder / f.name)]


def test_llmc_refuses_uint32_and_llama3_files(tmp_path):
    v2 = lone_llmc(tmp_path, np.arange(40), 70000, "v2.bin")
    l3 = tmp_path / "l3.bin"
    llmc.write_tokens(l3, np.arange(40), 128256, family="llama3")
    for path, got in ((v2, "magic 20240520 version 2"), (l3, "magic 20240801 version 7")):
        finding = only(check(path, "llmc", SMALL), "magic-version")
        assert (
            finding.level == "error"
            and got in finding.message
            and "accepts magic 20240520 version 1 only" in finding.message
        )


def test_llmc_min_tokens_and_empty_file(tmp_path):
    short = lone_llmc(tmp_path, np.arange(16), 256)
    finding = only(check(short, "llmc", SMALL), "min-tokens")
    assert (
        finding.level == "error" and "world_size*B*T+1 = 17 tokens" in finding.message and "has 16" in finding.message
    )
    assert "min-tokens" not in rules(check(lone_llmc(tmp_path, np.arange(17), 256, "ok.bin"), "llmc", SMALL))
    two_procs = LoaderSettings(batch_size=2, seq_len=8, world_size=2)
    assert only(check(tmp_path / "ok.bin", "llmc", two_procs), "min-tokens").message.count("33 tokens") == 1
    empty = lone_llmc(tmp_path, [], 256, "empty.bin")
    assert only(check(empty, "llmc", SMALL), "empty-file").level == "error"


def test_llmc_seek_offset_boundary(tmp_path):
    # B = T = 1: the last batch starts at byte 1024 + 2 * (n - 2); int32 holds it up to n = 1,073,741,313.
    one = LoaderSettings(batch_size=1, seq_len=1)
    fits = sparse_llmc(tmp_path / "fits.bin", 1_073_741_313)
    assert "seek-offset" not in rules(check(fits, "llmc", one))
    wraps = sparse_llmc(tmp_path / "wraps.bin", 1_073_741_314)
    finding = only(check(wraps, "llmc", one), "seek-offset")
    assert finding.level == "error" and "2,147,483,648" in finding.message


def test_llmc_seq_len_vocab_order_and_val(tmp_path):
    assert (
        only(check(lone_llmc(tmp_path, np.arange(40), 256), "llmc", LoaderSettings(seq_len=1025)), "seq-len").level
        == "error"
    )
    big = lone_llmc(tmp_path, np.arange(40), 60000, "big.bin")
    assert (
        only(check(big, "llmc", SMALL), "gpt2-vocab").level == "warning"
    )  # a .bin checkpoint may hold them; recipe refuses the rest
    # Files named train-9, train-10: glob order is train-10 first.
    folder = tmp_path / "order"
    folder.mkdir()
    entries = []
    for name in ("train-9.bin", "train-10.bin"):
        lone_llmc(folder, np.arange(20), 256, name)
        entries.append(llmc.LlmcFileEntry(name, "train", 20, 1, SHA))
    llmc.TokensManifest("tok", SHA, 256, None, "toy", "v1", SHA, tuple(entries)).write(folder)
    findings = check(folder, "llmc", SMALL)
    assert only(findings, "file-order").level == "warning"
    assert only(findings, "no-val").level == "warning"


def test_llmc_reports_a_broken_file_as_format_error(tmp_path):
    path = lone_llmc(tmp_path, np.arange(40), 256)
    path.write_bytes(path.read_bytes()[:-2])
    finding = only(check(path, "llmc", SMALL), "format")
    assert finding.level == "error" and finding.message.startswith("truncated file") and finding.file == str(path)


# ------------------------------------------------------------------ modded-nanogpt


def test_modded_nanogpt_passes_a_gpt2_release_but_for_its_tiny_val_split(gpt2_release):
    findings = check(gpt2_release, "modded-nanogpt", LoaderSettings(seq_len=64))
    # A few dozen val tokens: the val loader (align_to_bos=False) needs one micro-batch of 2,048 tokens per process +
    # 2.
    assert [(f.level, f.rule) for f in findings] == [("error", "val-tokens")]


def test_modded_nanogpt_short_documents_overflow_its_documents_per_micro_batch(tmp_path):
    """~140-token documents: a 16,384-token micro-batch holds ~118 of them, TRAIN_MAX_NUM_DOCS gives 63 slots."""
    rng = np.random.default_rng(9)
    short = [rng.integers(0, GPT2_EOT, 140).tolist() for _ in range(600)]
    root = write_release(tmp_path / "rel", [short, short], [short], 50257, GPT2_EOT)
    (finding,) = [
        f for f in check(root, "modded-nanogpt", LoaderSettings(seq_len=896)) if f.rule == "documents-per-micro-batch"
    ]
    assert finding.level == "error" and "{16384: 128, 32768: 256, 49152: 352}" in finding.message
    # the loader's own rule, replayed: documents from each BOS until 16,385 tokens are gathered
    tokens = llmc.open_tokens(sorted((root / "tokens" / "tok" / "toy").glob("train-*.bin"))[0])
    assert most_documents_per_micro_batch(tokens, 16384, 896) == -(-16385 // 141)


def test_modded_nanogpt_bos_id_and_single_file(tmp_path):
    root = write_release(tmp_path / "rel", [docs(4, 300, 299)], [], 300, 299)
    findings = check(root, "modded-nanogpt", SMALL)
    assert (
        only(findings, "bos-id").level == "error"
        and "this release's separator is 299" in only(findings, "bos-id").message
    )
    assert only(findings, "single-file").level == "error"
    assert only(findings, "no-bos").level == "error"


def test_modded_nanogpt_bos_first_and_long_docs(tmp_path):
    ids = [7, 8, 9, GPT2_EOT, *range(20), GPT2_EOT, 1, 2]
    findings = check(lone_llmc(tmp_path, ids, 50257), "modded-nanogpt", SMALL)
    assert only(findings, "bos-first").message.startswith("the first 3 tokens")
    long_docs = only(findings, "long-docs")
    assert long_docs.level == "warning" and long_docs.message.startswith(
        "1 of 2 documents are longer than max_seq_len=8"
    )
    assert "long-docs" not in rules(check(tmp_path / "train-00000.bin", "modded-nanogpt", LoaderSettings(seq_len=21)))


def test_modded_nanogpt_vocab_and_version(tmp_path):
    assert only(check(lone_llmc(tmp_path, [GPT2_EOT, 1], 60000), "modded-nanogpt", SMALL), "vocab").level == "error"
    finding = only(
        check(lone_llmc(tmp_path, [GPT2_EOT, 1], 70000, "v2.bin"), "modded-nanogpt", SMALL), "magic-version"
    )
    assert "modded-nanogpt's _load_data_shard" in finding.message


# ------------------------------------------------------------------ llmc-llama3


def test_llmc_llama3_passes_its_files_and_refuses_seed000(tmp_path):
    vocab, sep = 128256, 128000
    folder = write_llmc_folder(
        tmp_path / "l3",
        {"train": docs(6, vocab, sep), "val": docs(3, vocab, sep, 4)},
        vocab,
        sep,
        writer=functools.partial(llmc.LlmcWriter, family="llama3"),
    )
    findings = check(folder, "llmc-llama3", SMALL)
    assert rules(findings) == ["capacity"]
    seed000 = write_llmc_folder(tmp_path / "v2", {"train": docs(6, vocab, sep)}, vocab, sep)
    finding = only(check(seed000, "llmc-llama3", SMALL), "magic-version")
    assert (
        finding.level == "error"
        and "magic 20240520 version 2" in finding.message
        and "--llmc-layout llama3" in finding.message
    )


def test_llmc_llama3_min_tokens_seq_len_and_vocab(tmp_path):
    path = tmp_path / "x.bin"
    llmc.write_tokens(path, np.arange(16), 128256, family="llama3")
    assert only(check(path, "llmc-llama3", SMALL), "min-tokens").level == "error"
    assert only(check(path, "llmc-llama3", LoaderSettings(seq_len=8193)), "seq-len").level == "error"
    folder = write_llmc_folder(
        tmp_path / "big",
        {"train": docs(4, 200000, 1)},
        200000,
        1,
        writer=functools.partial(llmc.LlmcWriter, family="llama3"),
    )
    assert only(check(folder, "llmc-llama3", SMALL), "vocab").level == "warning"


# ------------------------------------------------------------------ megatron


@pytest.fixture
def pair_release(tmp_path):
    train = [docs(8, 300, 299, 1), docs(8, 300, 299, 2)]
    return write_release(tmp_path / "rel", train, [docs(4, 300, 299, 3)], 300, 299)


def test_megatron_passes_a_release(pair_release):
    findings = check(pair_release, "megatron", SMALL)
    assert [(f.level, f.rule) for f in findings] == [("info", "eod")]
    assert findings[0].message.endswith("to 299")


def test_megatron_eod_rules(tmp_path):
    folder = tmp_path / "pairs"
    folder.mkdir()
    write_pairs(folder, [docs(4, 300, None)], 300, None)  # no EOD appended
    assert only(check(folder, "megatron", SMALL), "eod").level == "warning"  # unknown: cannot check
    finding = only(check(folder, "megatron", LoaderSettings(2, 8, eod_id=299)), "one-document-per-sequence")
    assert finding.level == "error" and "must end with EOD" in finding.message


def test_megatron_empty_and_short_pairs(tmp_path):
    folder = tmp_path / "pairs"
    folder.mkdir()
    write_pairs(folder, [[], [[1, 2, 3]]], 300, 299)
    findings = check(folder, "megatron", LoaderSettings(2, 8, eod_id=299))
    assert only(findings, "empty-pair").file.endswith("part-000000.idx")
    short = only(findings, "short-pair")
    assert (
        short.level == "warning"
        and short.file.endswith("part-000001.idx")
        and "4 tokens < seq_length+1 = 9" in short.message
    )
    assert "short-pair" not in rules(check(folder / "part-000001.idx", "megatron", LoaderSettings(1, 3, eod_id=299)))


@pytest.mark.parametrize("vocab, warned", [(65499, False), (65500, True), (65536, True)])
def test_megatron_dtype_cutoff(tmp_path, vocab, warned):
    root = write_release(tmp_path / "rel", [docs(3, vocab, vocab - 1)], [], vocab, vocab - 1)
    assert ("dtype-cutoff" in rules(check(root, "megatron", SMALL), "warning")) == warned


def test_megatron_forged_index_is_a_format_error(pair_release):
    idx = pair_release / "shards" / "train" / "part-000001.idx"
    data = bytearray(idx.read_bytes())
    data[9] = 2  # version 2
    idx.write_bytes(bytes(data))
    finding = only(check(pair_release, "megatron", SMALL), "format")
    assert finding.file == str(idx) and "unknown version" in finding.message


# ------------------------------------------------------------------ maxtext


def test_maxtext_passes_a_release(pair_release):
    findings = check(pair_release, "maxtext", SMALL)
    assert [(f.level, f.rule, f.message) for f in findings] == [("info", "eod", "set mmap_eod_id=299")]


def test_maxtext_split_sentences(tmp_path):
    # Two sequences (sentences) in one document: document indices [0, 2].
    folder = tmp_path / "pairs"
    folder.mkdir()
    ids = np.array([1, 2, 299, 3, 299], "<u2")
    (folder / "part-000000.bin").write_bytes(ids.tobytes())
    header = (
        megatron.MAGIC + (1).to_bytes(8, "little") + bytes([8]) + (2).to_bytes(8, "little") + (2).to_bytes(8, "little")
    )
    body = np.array([3, 2], "<i4").tobytes() + np.array([0, 6], "<i8").tobytes() + np.array([0, 2], "<i8").tobytes()
    (folder / "part-000000.idx").write_bytes(header + body)
    finding = only(check(folder, "maxtext", LoaderSettings(1, 2, eod_id=299)), "one-document-per-sequence")
    assert finding.level == "error" and "document count must be sequences + 1" in finding.message


def test_maxtext_folder_rules(tmp_path):
    folder = tmp_path / "a:b"
    folder.mkdir()
    paths = write_pairs(folder, [docs(3, 300, 299)] * 11, 300, 299)
    for i in (9, 10):  # part-9 and part-10: string order puts 10 first
        for suffix in ("idx", "bin"):
            os.rename(paths[i].with_suffix(f".{suffix}"), folder / f"part-{i}.{suffix}")
    findings = check(folder, "maxtext", LoaderSettings(1, 4, eod_id=299))
    assert only(findings, "path-chars").level == "warning"
    assert only(findings, "file-order").level == "warning"
    (folder / "extra.idx").write_bytes((folder / "part-000000.idx").read_bytes())
    (folder / "extra.bin").write_bytes((folder / "part-000000.bin").read_bytes())
    assert "extra.idx" in only(check(folder, "maxtext", LoaderSettings(1, 4, eod_id=299)), "stray-idx").message


def test_maxtext_no_samples(pair_release):
    folder = pair_release / "shards" / "validation"
    total = sum(megatron.MegatronPair(p).n_tokens for p in folder.glob("*.idx"))
    assert "no-samples" not in rules(check(folder, "maxtext", LoaderSettings(1, total, eod_id=299)))
    finding = only(check(folder, "maxtext", LoaderSettings(1, total + 1, eod_id=299)), "no-samples")
    assert finding.level == "error"


# ------------------------------------------------------------------ settings and CLI


def test_settings_and_targets_are_validated(pair_release):
    with pytest.raises(FormatError, match="batch_size must be a positive integer"):
        LoaderSettings(batch_size=0)
    with pytest.raises(FormatError, match="unknown target"):
        check(pair_release, "nanotron")
    with pytest.raises(FormatError, match="no such file or folder"):
        check(pair_release / "nope", "llmc")
    assert trainers.has_errors([trainers.Finding("error", "f", "r", "m")]) and not trainers.has_errors(
        [trainers.Finding("warning", "f", "r", "m")]
    )


def test_cli_prints_findings_and_exits_by_level(gpt2_release, tmp_path, capsys):
    # The llm.c folder: verify --for also checks every byte, and the fixture's release has no COMPLETE.json.
    assert main(["verify", str(gpt2_release / "tokens" / "tok" / "toy"), "--for", "llmc", "-B", "2", "-T", "8"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert all(line.startswith("info: ") for line in out[:-1])
    assert out[-1].endswith("--for llmc (B=2, T=8): 0 error(s), 0 warning(s)")
    short = lone_llmc(tmp_path, np.arange(10), 256)
    assert main(["verify", str(short), "--for", "llmc", "--batch-size", "2", "--seq-len", "8"]) == 1
    out = capsys.readouterr().out
    assert f"error: {short}: min-tokens: " in out and "1 error(s)" in out
    assert main(["verify", str(short), "--for", "megatron"]) == 1  # an llm.c file is no pair
    assert (
        f"error: {short.with_suffix('.idx')}: format: the other half of the pair is missing" in capsys.readouterr().out
    )
    (tmp_path / "empty").mkdir()
    assert main(["verify", str(tmp_path / "empty"), "--for", "maxtext"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("hf-tokbin verify: error: ") and "no Megatron pairs" in err and err.count("\n") == 1
    with pytest.raises(SystemExit):
        main(["verify", str(short), "--for", "nanotron"])


def test_release_run_config_eod_is_used(pair_release):
    config = json.loads((pair_release / "run_config.json").read_text())
    config["doc_sep"]["id"] = 5
    (pair_release / "run_config.json").write_text(json.dumps(config))
    finding = only(check(pair_release, "maxtext", SMALL), "eod")
    assert finding.message == "set mmap_eod_id=5"
    assert "one-document-per-sequence" in rules(check(pair_release, "maxtext", SMALL), "error")
    config["doc_sep"]["id"] = "x"
    (pair_release / "run_config.json").write_text(json.dumps(config))
    with pytest.raises(
        VerificationError, match="doc_sep.id must be an id < vocab_size"
    ):  # read by RunConfig, the one reader
        check(pair_release, "maxtext", SMALL)


def test_megatron_rules_match_megatron_core(pair_release):
    """The dtype cut-off is megatron-core's own, and its IndexedDataset reads the pairs we check."""
    pytest.importorskip("torch")
    indexed_dataset = pytest.importorskip("megatron.core.datasets.indexed_dataset")
    assert indexed_dataset.DType.optimal_dtype(MEGATRON_UINT16_BELOW - 1) == np.uint16
    assert indexed_dataset.DType.optimal_dtype(MEGATRON_UINT16_BELOW) == np.int32
    from hf_tokbin.readers import MegatronSplit

    split = MegatronSplit.open(pair_release)
    for pair in split.pairs:
        real = indexed_dataset.IndexedDataset(str(pair.idx_path.with_suffix("")))
        assert len(real) == len(pair)
        assert all(real[i].tolist() == pair[i].tolist() for i in range(len(pair)))


# ------------------------------------------------------------------ nanoGPT


def test_nanogpt_dtype_min_tokens_and_vocab(tmp_path):
    small = write_release(tmp_path / "small", [docs(2, 300, 299, 1, low=2, high=3)], [], 300, 299)
    findings = check(small, "nanogpt", SMALL)  # 2 documents of 2 ids + separators: 6 tokens <= T=8
    assert rules(findings, "error") == ["min-tokens"]
    assert "dtype=np.uint16, offset=1024" in only(findings, "dtype").message
    big = write_release(tmp_path / "big", [docs(4, 70000, 69999, 2)], [], 70000, 69999)
    findings = check(big, "nanogpt", SMALL)
    assert "dtype=np.uint32" in only(findings, "dtype").message
    assert "meta.pkl with vocab_size=70000" in only(findings, "vocab").message
    assert rules(check(big, "nanogpt", LoaderSettings(batch_size=1, seq_len=4)), "error") == []


def test_llmc_llama3_begin_of_text_warning_names_the_default_build(tmp_path):
    """llm.c's own Llama 3 data puts 128000 before each document; a build with --llmc-layout llama3 does by default."""
    vocab = 128256
    folder = write_llmc_folder(
        tmp_path / "eos",
        {"train": docs(6, vocab, 128001)},
        vocab,
        128001,
        writer=functools.partial(llmc.LlmcWriter, family="llama3"),
    )
    finding = only(check(folder, "llmc-llama3", SMALL), "begin-of-text")
    assert finding.level == "warning" and "separator is 128001" in finding.message
    assert "build with --llmc-layout llama3 and without --doc-sep, --bos or --llmc-sep" in finding.message
