"""Verification of token files, Megatron pairs and whole releases.

:func:`verify_path` accepts what ``hf-tokbin verify`` accepts and returns a
one-paragraph report; any broken rule raises a :class:`~hf_tokbin.errors.TokbinError`
naming the file.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from . import llmc, llmc_llama3, megatron
from .errors import FormatError


def token_file_kind(path: str | os.PathLike) -> str:
    """``"llmc"`` or ``"megatron"`` for a token file, by suffix and magic."""
    path = Path(path)
    if path.suffix == ".idx":
        return "megatron"
    if path.suffix != ".bin":
        raise FormatError(path, "not a token file", expected="an llm.c .bin, a Megatron .idx/.bin, or a release folder", got=path.suffix or "no suffix")
    if file_magic(path) in (llmc.MAGIC, llmc_llama3.MAGIC):
        return "llmc"
    if megatron.idx_path_for(path).exists():
        return "megatron"
    # Neither an llm.c header nor a pair: report it as an llm.c file with a wrong magic.
    return "llmc"


def file_magic(path: str | os.PathLike) -> int | None:
    """header[0] of a token file as a little-endian int32, or None for a file under 4 bytes."""
    with open(path, "rb") as file:
        head = file.read(4)
    return int(np.frombuffer(head, "<i4")[0]) if len(head) == 4 else None


def verify_token_file(path: str | os.PathLike) -> str:
    path = Path(path)
    if token_file_kind(path) == "llmc" and file_magic(path) == llmc_llama3.MAGIC:
        n_tokens = llmc_llama3.verify_token_file(path)
        return f"{path}: OK: upstream llm.c Llama 3 file (magic {llmc_llama3.MAGIC}, version {llmc_llama3.VERSION}), {n_tokens:,} tokens"
    if token_file_kind(path) == "llmc":
        header = llmc.verify_token_file(path)
        return f"{path}: OK: llm.c version {header.version}, {header.n_tokens:,} tokens, vocab_size {header.vocab_size}"
    pair = megatron.MegatronPair(path)
    return f"{path}: OK: Megatron pair, {len(pair):,} sequences, {pair.n_tokens:,} tokens, dtype {pair.dtype.name}"


def verify_path(path: str | os.PathLike) -> str:
    path = Path(path)
    if not path.exists():
        raise FormatError(path, "no such file or folder")
    if path.is_dir():
        from .release import COMPLETE_NAME
        from .verify_release import verify_llmc_folder, verify_release

        if not (path / COMPLETE_NAME).exists() and (path / llmc.MANIFEST_NAME).exists():
            manifest = verify_llmc_folder(path)
            tokens = sum(f.n_tokens for f in manifest.files)
            return f"{path}: OK: llm.c token folder, {len(manifest.files)} files, {tokens:,} tokens, vocab_size {manifest.vocab_size}"
        return verify_release(path).summary()
    return verify_token_file(path)
