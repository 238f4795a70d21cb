"""Upstream llm.c's own uint32 token files, as ``train_llama3.py`` reads them.

This is the layout llm.c's ``dev/data/data_common.py`` ``write_datafile(...,
model_desc="llama-3")`` writes and ``train_llama3.py`` ``_peek_data_shard`` /
``_load_data_shard`` read: not the course's version 2 (seed 000), a separate
format with its own magic. All integers are little-endian::

    offset  size               field
    0       1024               header: 256 x int32
    1024    n_tokens * 4       token ids, uint32

    header[0]       magic 20240801
    header[1]       version 7
    header[2]       n_tokens, the number of ids that follow (< 2**31, data_common asserts it)
    header[3..255]  0 (upstream writes zeros; no vocab_size field, unlike seed 000)

The file size is exactly ``1024 + n_tokens * 4`` (``_load_data_shard`` asserts
``len(tokens) == ntok``). Upstream readers check only the magic and version;
this reader also rejects a size that disagrees with n_tokens, a non-zero
reserved int, and (given a vocabulary) an id >= vocab_size.

Worked example (ids [1, 2, 3]): 1,036 bytes,
``a1 d9 34 01 | 07 00 00 00 | 03 00 00 00 | 1012 x 00 | 01 00 00 00 02 00 00 00 03 00 00 00``.

:class:`LlmcLlama3Writer` is :class:`hf_tokbin.llmc.LlmcWriter` with this
header and uint32 ids: same constructor, ``add_documents(flat_ids, lengths)``,
``close() -> [LlmcFileEntry]``, same file names, whole documents per file and
the same ``_MANIFEST.json`` (whose ``vocab_size`` stands in for the missing
header field).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np

from . import llmc
from ._io import atomic_open
from .errors import FormatError

MAGIC = 20240801
VERSION = 7
DTYPE = np.dtype("<u4")


def encode_header(n_tokens: int) -> bytes:
    header = np.zeros(llmc.HEADER_INTS, dtype="<i4")
    header[0] = MAGIC
    header[1] = VERSION
    header[2] = n_tokens
    return header.tobytes()


def read_header(path: str | os.PathLike) -> int:
    """Check the header of ``path`` and the file size it implies; return n_tokens."""
    path = Path(path)
    size = path.stat().st_size
    if size < llmc.HEADER_BYTES:
        raise FormatError(path, "truncated header", expected=f"at least {llmc.HEADER_BYTES} bytes", got=f"{size} bytes")
    with open(path, "rb") as file:
        header = np.frombuffer(file.read(llmc.HEADER_BYTES), dtype="<i4")
    if header[0] != MAGIC:
        hint = "a seed-000 llm.c file (magic 20240520): read it with hf_tokbin.llmc" if header[0] == llmc.MAGIC else None
        raise FormatError(path, "wrong magic in header[0]", expected=MAGIC, got=int(header[0]), hint=hint)
    if header[1] != VERSION:
        raise FormatError(path, "unknown version in header[1]", expected=VERSION, got=int(header[1]))
    n_tokens = int(header[2])
    if n_tokens < 0:
        raise FormatError(path, "negative n_tokens in header[2]", got=n_tokens)
    nonzero = np.flatnonzero(header[3:])
    if nonzero.size:
        i = int(nonzero[0]) + 3
        raise FormatError(path, f"reserved header[{i}] must be 0", expected=0, got=int(header[i]))
    expected = llmc.HEADER_BYTES + n_tokens * DTYPE.itemsize
    if size != expected:
        rule = "truncated file" if size < expected else "trailing bytes after the tokens"
        raise FormatError(path, f"{rule}: size must be 1024 + n_tokens * 4", expected=f"{expected} bytes", got=f"{size} bytes")
    return n_tokens


def open_tokens(path: str | os.PathLike, vocab_size: int | None = None) -> np.ndarray:
    """A zero-copy, read-only view of the ids of ``path``; with ``vocab_size`` every id is checked."""
    n_tokens = read_header(path)
    if n_tokens == 0:
        return np.zeros(0, dtype=DTYPE)
    tokens = np.memmap(path, dtype=DTYPE, mode="r", offset=llmc.HEADER_BYTES, shape=(n_tokens,))
    if vocab_size is not None:
        llmc.check_ids_below(path, tokens, vocab_size)
    return tokens


def write_tokens(path: str | os.PathLike, ids: Sequence[int] | np.ndarray, vocab_size: int) -> None:
    """Write one file holding ``ids`` exactly (no separators added), atomically."""
    array = llmc.checked_ids(ids, vocab_size, path)
    if array.size > llmc.MAX_TOKENS_PER_FILE:
        raise FormatError(path, "too many tokens for one file", expected=f"<= {llmc.MAX_TOKENS_PER_FILE}", got=array.size)
    with atomic_open(path) as file:
        file.write(encode_header(array.size))
        file.write(array.astype(DTYPE).tobytes())


def verify_token_file(path: str | os.PathLike, entry: llmc.LlmcFileEntry | None = None, vocab_size: int | None = None, doc_sep_id: int | None = None) -> int:
    """Check one file completely (against its manifest entry when given); return n_tokens."""
    tokens = open_tokens(path, vocab_size)
    if entry is not None:
        llmc.check_against_entry(Path(path), tokens, entry, doc_sep_id)
    return int(tokens.size)


class LlmcLlama3Writer(llmc.LlmcWriter):
    """:class:`~hf_tokbin.llmc.LlmcWriter` writing upstream's Llama 3 layout (magic 20240801, version 7, uint32)."""

    def _layout(self, vocab_size: int) -> tuple[int, np.dtype]:
        # Always uint32, whatever the vocabulary: that is what train_llama3.py reads.
        return VERSION, DTYPE

    def _header(self) -> bytes:
        return encode_header(self._n_tokens)
