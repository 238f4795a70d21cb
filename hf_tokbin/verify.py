"""Verification of token files, Megatron pairs and whole releases.

:func:`verify_path` accepts what ``hf-tokbin verify`` accepts and returns a
one-paragraph report; any broken rule raises a :class:`~hf_tokbin.errors.TokbinError`
naming the file.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from . import llmc, megatron
from .errors import FormatError


def token_file_kind(path: str | os.PathLike) -> str:
    """``"llmc"`` or ``"megatron"`` for a token file, by suffix and magic."""
    path = Path(path)
    if path.suffix == ".idx":
        return "megatron"
    if path.suffix != ".bin":
        raise FormatError(path, "not a token file", expected="an llm.c .bin, a Megatron .idx/.bin, or a release folder", got=path.suffix or "no suffix")
    with open(path, "rb") as file:
        head = file.read(4)
    if len(head) == 4 and int(np.frombuffer(head, "<i4")[0]) in (llmc.MAGIC, 20240801):
        return "llmc"
    if megatron.idx_path_for(path).exists():
        return "megatron"
    # Neither an llm.c header nor a pair: report it as an llm.c file with a wrong magic.
    return "llmc"


def verify_token_file(path: str | os.PathLike) -> str:
    path = Path(path)
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
        from .verify_release import verify_release

        return verify_release(path).summary()
    return verify_token_file(path)
