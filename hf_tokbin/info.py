"""``hf-tokbin info``: what a token file or release holds, at a glance."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from . import llmc, llmc_llama3, megatron
from ._io import read_json
from .errors import FormatError
from .readers import open_llmc_file
from .release import COMPLETE_NAME, STATS_NAME
from .verify import token_file_kind

_PREVIEW = 8
_LLMC_LAYOUTS = {llmc.MAGIC: "llm.c token file", llmc_llama3.MAGIC: "upstream llm.c Llama 3 token file"}


def describe(path: str | os.PathLike) -> str:
    path = Path(path)
    if not path.exists():
        raise FormatError(path, "no such file or folder")
    if path.is_dir():
        return describe_folder(path)
    if token_file_kind(path) == "llmc":
        return describe_llmc_file(path)
    pair = megatron.MegatronPair(path)
    lengths = pair.lengths
    mean = float(lengths.mean()) if len(pair) else 0.0
    return "\n".join(
        [
            f"{pair.idx_path}: Megatron IndexedDataset v1 pair",
            f"  dtype       {pair.dtype.name} (code {pair.header.code})",
            f"  sequences   {len(pair):,}",
            f"  documents   {pair.header.document_count - 1:,}",
            f"  tokens      {pair.n_tokens:,}",
            f"  mean length {mean:,.1f} tokens",
            f"  first ids   {pair[0][:_PREVIEW].tolist() if len(pair) else []}",
        ]
    )


def describe_llmc_file(path: Path) -> str:
    """A seed 000 or upstream Llama 3 llm.c file; the reader picks the layout by its magic."""
    tokens = open_llmc_file(path)  # every check verify makes, ids < vocab_size included where the header has it
    # Both layouts start with magic, version, n_tokens; header[3] is vocab_size in seed 000, a reserved 0 in Llama 3.
    with open(path, "rb") as file:
        magic, version, n_tokens, vocab_size = np.frombuffer(file.read(16), dtype="<i4").tolist()
    return "\n".join(
        [
            f"{path}: {_LLMC_LAYOUTS[magic]} (magic {magic})",
            f"  version     {version} ({tokens.dtype.name} ids)",
            f"  tokens      {n_tokens:,}",
            f"  vocab_size  {vocab_size or 'unknown (0)'}",
            f"  size        {path.stat().st_size:,} bytes",
            f"  first ids   {tokens[:_PREVIEW].tolist()}",
        ]
    )


def describe_folder(path: Path) -> str:
    """A release folder (stats.json) or an llm.c token folder (_MANIFEST.json)."""
    stats = path / STATS_NAME
    manifest = path / llmc.MANIFEST_NAME
    if stats.exists():
        complete = "complete" if (path / COMPLETE_NAME).exists() else "INCOMPLETE (no COMPLETE.json)"
        return f"{path}: release, {complete}\n" + json.dumps(read_json(stats, FormatError), indent=2)
    if manifest.exists():
        m = llmc.TokensManifest.read(manifest)
        lines = [f"{path}: llm.c tokens, tokenizer {m.tokenizer_id} (vocab {m.vocab_size}), dataset {m.dataset}"]
        for f in m.files:
            lines.append(f"  {f.name:<18} {f.n_tokens:>14,} tokens {f.n_docs:>10,} docs")
        return "\n".join(lines)
    raise FormatError(path, "not a release or token folder", expected="stats.json or _MANIFEST.json inside")
