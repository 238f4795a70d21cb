"""``hf-tokbin verify`` and ``hf-tokbin info`` on single token files.

A broken file gives exit status 1 and exactly one line on stderr naming the
file and the broken rule, never a traceback. Most cases run ``main([...])`` in
process; a few run the installed console script to prove the real entry point.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

from hf_tokbin.cli import main

CONSOLE_SCRIPT = Path(sys.executable).with_name("hf-tokbin")


def llmc_file(path: Path, ids, vocab_size=256, header_ints=None, cut=0) -> Path:
    header = [20240520, 1, len(ids), vocab_size] + [0] * 252
    for i, value in (header_ints or {}).items():
        header[i] = value
    data = struct.pack("<256i", *header) + struct.pack(f"<{len(ids)}H", *ids)
    path.write_bytes(data[: len(data) - cut])
    return path


def llama3_file(path: Path, ids) -> Path:
    """Upstream llm.c's Llama 3 layout, as data_common.write_datafile(model_desc="llama-3") writes it."""
    header = [20240801, 7, len(ids)] + [0] * 253
    path.write_bytes(struct.pack("<256i", *header) + struct.pack(f"<{len(ids)}I", *ids))
    return path


def megatron_pair(folder: Path, lengths, tokens, pointers=None, doc_indices=None, cut_idx=0, cut_bin=0) -> Path:
    """A uint16 pair built by hand; returns the .idx path."""
    if pointers is None:
        pointers = [2 * sum(lengths[:i]) for i in range(len(lengths))]
    if doc_indices is None:
        doc_indices = list(range(len(lengths) + 1))
    idx = (
        b"MMIDIDX\x00\x00"
        + struct.pack("<QBQQ", 1, 8, len(lengths), len(doc_indices))
        + struct.pack(f"<{len(lengths)}i", *lengths)
        + struct.pack(f"<{len(pointers)}q", *pointers)
        + struct.pack(f"<{len(doc_indices)}q", *doc_indices)
    )
    data = struct.pack(f"<{len(tokens)}H", *tokens)
    (folder / "part-000000.idx").write_bytes(idx[: len(idx) - cut_idx])
    (folder / "part-000000.bin").write_bytes(data[: len(data) - cut_bin])
    return folder / "part-000000.idx"


def run_main(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(err: str, path: Path, rule: str) -> None:
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert str(path) in lines[0]
    assert rule in lines[0]


# ------------------------------------------------------------------ good files


def test_verify_and_info_of_a_good_llmc_file(tmp_path, capsys):
    path = llmc_file(tmp_path / "train-00000.bin", [1, 2, 3])
    code, out, err = run_main(capsys, "verify", str(path))
    assert (code, err) == (0, "")
    assert out == f"{path}: OK: llm.c gpt2 layout (magic 20240520, version 1, uint16), 3 tokens, vocab_size 256\n"
    code, out, err = run_main(capsys, "info", str(path))
    assert (code, err) == (0, "")
    assert "llm.c token file" in out and "tokens      3" in out and "first ids   [1, 2, 3]" in out


def test_info_of_an_upstream_llama3_file(tmp_path, capsys):
    path = llama3_file(tmp_path / "train-00000.bin", [0, 70000, 128255])
    code, out, err = run_main(capsys, "info", str(path))
    assert (code, err) == (0, "")
    assert f"{path}: upstream llm.c Llama 3 token file (magic 20240801)" in out
    assert "version     7 (uint32 ids)" in out and "tokens      3" in out and "first ids   [0, 70000, 128255]" in out


def test_info_of_a_truncated_llama3_file_is_one_line(tmp_path, capsys):
    path = llama3_file(tmp_path / "train-00000.bin", [1, 2])
    path.write_bytes(path.read_bytes()[:-1])
    code, out, err = run_main(capsys, "info", str(path))
    assert (code, out) == (1, "")
    assert_one_line_error(err, path, "truncated file: size must be 1024 + n_tokens * 4")


def test_info_of_a_release_whose_stats_json_is_broken_is_one_line(tmp_path, capsys):
    (tmp_path / "stats.json").write_text("{not json")
    code, out, err = run_main(capsys, "info", str(tmp_path))
    assert (code, out) == (1, "")
    assert_one_line_error(err, tmp_path / "stats.json", "not valid UTF-8 JSON")


@pytest.mark.parametrize("name", ["part-000000.idx", "part-000000.bin"])
def test_verify_and_info_of_a_good_megatron_pair(tmp_path, capsys, name):
    megatron_pair(tmp_path, [3, 1], [7, 8, 0, 0])
    path = tmp_path / name
    code, out, err = run_main(capsys, "verify", str(path))
    assert (code, err) == (0, "")
    assert out == f"{path}: OK: Megatron pair, 2 sequences, 4 tokens, dtype uint16\n"
    code, out, err = run_main(capsys, "info", str(path))
    assert (code, err) == (0, "")
    assert "Megatron IndexedDataset v1 pair" in out and "sequences   2" in out and "first ids   [7, 8, 0]" in out


# ------------------------------------------------------------------ broken files


def broken_llmc(tmp_path, case) -> tuple[Path, str]:
    path = tmp_path / "train-00000.bin"
    if case == "wrong magic":
        return (
            llmc_file(path, [1, 2], header_ints={0: 1234}),
            "wrong magic in header[0]: expected 20240520 or 20240801, got 1234",
        )
    if case == "unknown version":
        return llmc_file(path, [1, 2], header_ints={1: 9}), "unknown version in header[1]"
    if case == "size not matching the count":
        return (
            llmc_file(path, [1, 2], header_ints={2: 5}),
            "truncated file: size must be 1024 + n_tokens * 2: expected 1034 bytes, got 1028 bytes",
        )
    if case == "truncated by one byte":
        return (
            llmc_file(path, [1, 2], cut=1),
            "truncated file: size must be 1024 + n_tokens * 2: expected 1028 bytes, got 1027 bytes",
        )
    if case == "truncated header":
        return llmc_file(path, [], cut=1), "truncated header"
    if case == "id >= vocab_size":
        return (
            llmc_file(path, [1, 256], vocab_size=256),
            "token 1: id must be in 0..vocab_size-1: expected < 256, got 256",
        )
    if case == "reserved header int":
        return llmc_file(path, [1, 2], header_ints={17: 3}), "reserved header[17] must be 0: expected 0, got 3"
    raise AssertionError(case)


LLMC_CASES = [
    "wrong magic",
    "unknown version",
    "size not matching the count",
    "truncated by one byte",
    "truncated header",
    "id >= vocab_size",
    "reserved header int",
]


def broken_megatron(tmp_path, case) -> tuple[Path, str]:
    if case == "wrong magic":
        idx = megatron_pair(tmp_path, [2], [1, 0])
        idx.write_bytes(b"MMIDIDY" + idx.read_bytes()[7:])
        return idx, "wrong magic"
    if case == "unknown version":
        idx = megatron_pair(tmp_path, [2], [1, 0])
        data = idx.read_bytes()
        idx.write_bytes(data[:9] + struct.pack("<Q", 3) + data[17:])
        return idx, "unknown version: expected 1, got 3"
    if case == "size not matching the count":
        idx = megatron_pair(tmp_path, [2], [1, 0])
        data = idx.read_bytes()
        idx.write_bytes(data[:18] + struct.pack("<Q", 2) + data[26:])  # claims 2 sequences, holds 1
        return idx, "truncated index: size must be 34 + 12 * sequences + 8 * documents"
    if case == ".idx truncated by one byte":
        return megatron_pair(tmp_path, [2], [1, 0], cut_idx=1), "truncated index"
    if case == ".bin truncated by one byte":
        megatron_pair(tmp_path, [2], [1, 0], cut_bin=1)
        return tmp_path / "part-000000.bin", "size must be a multiple of the dtype size 2"
    if case == "forged pointer":
        return (
            megatron_pair(tmp_path, [2, 1], [1, 0, 0], pointers=[0, 1 << 40]),
            "sequence 1: pointer must follow the previous sequence: expected 4, got 1099511627776",
        )
    if case == "document index out of order":
        return (
            megatron_pair(tmp_path, [1, 1, 1], [0, 0, 0], doc_indices=[0, 2, 1, 3]),
            "document index 2 must not decrease",
        )
    raise AssertionError(case)


MEGATRON_CASES = [
    "wrong magic",
    "unknown version",
    "size not matching the count",
    ".idx truncated by one byte",
    ".bin truncated by one byte",
    "forged pointer",
    "document index out of order",
]


@pytest.mark.parametrize("command", ["verify", "info"])
@pytest.mark.parametrize("case", LLMC_CASES)
def test_broken_llmc_file(tmp_path, capsys, command, case):
    path, rule = broken_llmc(tmp_path, case)
    code, out, err = run_main(capsys, command, str(path))
    assert (code, out) == (1, "")
    assert_one_line_error(err, path, rule)
    assert err.startswith(f"hf-tokbin {command}: error: {path}: ")


@pytest.mark.parametrize("command", ["verify", "info"])
@pytest.mark.parametrize("case", MEGATRON_CASES)
def test_broken_megatron_pair(tmp_path, capsys, command, case):
    path, rule = broken_megatron(tmp_path, case)
    code, out, err = run_main(capsys, command, str(path))
    assert (code, out) == (1, "")
    assert_one_line_error(err, path, rule)


def test_missing_file(tmp_path, capsys):
    path = tmp_path / "nope.bin"
    code, _, err = run_main(capsys, "verify", str(path))
    assert code == 1
    assert_one_line_error(err, path, "no such file or folder")


def test_megatron_bin_without_its_idx_reads_as_a_bad_llmc_file(tmp_path, capsys):
    megatron_pair(tmp_path, [2], [1, 0])
    (tmp_path / "part-000000.idx").unlink()
    path = tmp_path / "part-000000.bin"
    code, _, err = run_main(capsys, "verify", str(path))
    assert code == 1
    assert_one_line_error(err, path, "truncated header")


# ------------------------------------------------------------------ the real console script


@pytest.mark.parametrize("kind", ["llmc", "megatron"])
def test_console_script_prints_one_line_and_no_traceback(tmp_path, kind):
    if kind == "llmc":
        path, rule = broken_llmc(tmp_path, "id >= vocab_size")
    else:
        path, rule = broken_megatron(tmp_path, "forged pointer")
    for command in ("verify", "info"):
        result = subprocess.run([str(CONSOLE_SCRIPT), command, str(path)], capture_output=True, text=True, timeout=60)
        assert result.returncode == 1
        assert result.stdout == ""
        assert_one_line_error(result.stderr, path, rule)


def test_console_script_verifies_a_good_file(tmp_path):
    path = llmc_file(tmp_path / "val-00000.bin", [0, 255])
    result = subprocess.run([str(CONSOLE_SCRIPT), "verify", str(path)], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stderr) == (0, "")
    assert (
        result.stdout
        == f"{path}: OK: llm.c gpt2 layout (magic 20240520, version 1, uint16), 2 tokens, vocab_size 256\n"
    )


# ------------------------------------------------------------------ light core


def test_core_never_imports_heavy_dependencies():
    code = (
        "import sys, hf_tokbin, hf_tokbin.llmc, hf_tokbin.megatron, hf_tokbin.verify, hf_tokbin.verify.info\n"
        "heavy = ('torch', 'ray', 'megatron', 'datasets', 'grain')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
