"""Fuzzing the readers: a mutated llm.c file or Megatron pair is accepted as valid, or refused with one line.

Seeded random mutations (bit flips, overwritten ints, truncations, appended bytes)
of real files. For each one, the reader either accepts it -- and then every view
it returns is in bounds and every id below the vocabulary -- or raises a
:class:`FormatError`: never another exception (an IndexError from numpy, an
OverflowError, a MemoryError from a forged count), and the CLI prints one line.
Bounded: a fixed number of cases, each on files of a few kilobytes.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hf_tokbin.errors import FormatError
from hf_tokbin.formats import llmc, megatron
from hf_tokbin.verify.files import verify_path

CASES = 300
CONSOLE_SCRIPT = Path(sys.executable).with_name("hf-tokbin")


def _mutate(data: bytes, rng: random.Random) -> bytes:
    data = bytearray(data)
    kind = rng.choice(["flip", "int32", "int64", "truncate", "append"])
    if kind == "flip":
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
    elif kind in ("int32", "int64"):
        width = 4 if kind == "int32" else 8
        i = rng.randrange(0, max(1, len(data) - width))
        value = rng.choice([0, -1, 1, 2**31 - 1, -(2**31), 2**63 - 1, rng.randrange(-(2**40), 2**40)])
        data[i : i + width] = int(value % (1 << (8 * width))).to_bytes(width, "little")
    elif kind == "truncate":
        del data[rng.randrange(len(data)) :]
    else:
        data += bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    return bytes(data)


def _check_llmc_view(path: Path) -> None:
    header = llmc.read_header(path)
    tokens = llmc.open_tokens(path)
    assert tokens.size == header.n_tokens
    if header.vocab_size and tokens.size:
        assert int(tokens.max()) < header.vocab_size


def _check_pair_view(idx: Path, vocab_size: int) -> None:
    pair = megatron.MegatronPair(idx, vocab_size=vocab_size)
    total = 0
    for i in range(len(pair)):
        sequence = pair[i]
        assert sequence.size == int(pair.lengths[i])
        total += sequence.size
    assert total == pair.n_tokens
    if pair.n_tokens:
        assert 0 <= int(pair.tokens.min()) and int(pair.tokens.max()) < vocab_size


@pytest.mark.parametrize("vocab_size", [300, 70_000])
def test_mutated_llmc_files_are_valid_or_refused(tmp_path, vocab_size):
    good = tmp_path / "good.bin"
    llmc.write_tokens(good, np.random.default_rng(0).integers(0, vocab_size, 500), vocab_size)
    rng = random.Random(vocab_size)
    refused = 0
    for case in range(CASES):
        path = tmp_path / f"m{case}.bin"
        path.write_bytes(_mutate(good.read_bytes(), rng))
        try:
            _check_llmc_view(path)
        except FormatError:
            refused += 1
        path.unlink()
    assert 0 < refused < CASES  # the mutations reach both outcomes


@pytest.mark.parametrize("vocab_size", [300, 70_000])
def test_mutated_megatron_pairs_are_valid_or_refused(tmp_path, vocab_size):
    rng_np = np.random.default_rng(1)
    good = tmp_path / "good.bin"
    with megatron.MegatronWriter(good, vocab_size, 0) as writer:
        for _ in range(40):
            writer.add_document(rng_np.integers(1, vocab_size, rng_np.integers(0, 30)))
    rng = random.Random(vocab_size + 1)
    refused = 0
    for case in range(CASES):
        prefix = tmp_path / f"m{case}"
        target = rng.choice(["idx", "bin"])
        for suffix in ("idx", "bin"):
            data = (tmp_path / f"good.{suffix}").read_bytes()
            Path(f"{prefix}.{suffix}").write_bytes(_mutate(data, rng) if suffix == target else data)
        try:
            _check_pair_view(Path(f"{prefix}.idx"), vocab_size)
        except FormatError:
            refused += 1
        for suffix in ("idx", "bin"):
            Path(f"{prefix}.{suffix}").unlink()
    assert 0 < refused < CASES


def test_negative_ids_of_an_int32_pair_are_refused_by_verify_and_info(tmp_path):
    with megatron.MegatronWriter(tmp_path / "p.bin", 70_000, 0) as writer:
        writer.add_document([5, 6, 7])
    data = bytearray((tmp_path / "p.bin").read_bytes())
    data[4:8] = (-3 % 2**32).to_bytes(4, "little")  # the second id of an int32 .bin becomes -3
    (tmp_path / "p.bin").write_bytes(bytes(data))
    for command in ("verify", "info"):
        result = subprocess.run(
            [str(CONSOLE_SCRIPT), command, str(tmp_path / "p.idx")], capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 1, (command, result.stdout)
        assert len(result.stderr.strip().splitlines()) == 1 and "id must be in 0..vocab_size-1" in result.stderr, (
            result.stderr
        )


def test_cli_gives_one_line_for_mutated_files(tmp_path):
    """A sample of the mutations through the console script: exit 0, or 1 with one line and no traceback."""
    good = tmp_path / "good.bin"
    llmc.write_tokens(good, list(range(200)), 256)
    rng = random.Random(7)
    for case in range(12):
        path = tmp_path / f"m{case}.bin"
        path.write_bytes(_mutate(good.read_bytes(), rng))
        result = subprocess.run([str(CONSOLE_SCRIPT), "verify", str(path)], capture_output=True, text=True, timeout=60)
        assert result.returncode in (0, 1) and "Traceback" not in result.stderr
        if result.returncode:
            assert len(result.stderr.strip().splitlines()) == 1
        else:
            assert verify_path(path).startswith(f"{path}: OK")
