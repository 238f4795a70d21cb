"""``hf-tokbin info``: what a token file or release holds, at a glance."""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import llmc, megatron
from .errors import FormatError
from .verify import token_file_kind

_PREVIEW = 8


def describe(path: str | os.PathLike) -> str:
    path = Path(path)
    if not path.exists():
        raise FormatError(path, "no such file or folder")
    if path.is_dir():
        return describe_folder(path)
    if token_file_kind(path) == "llmc":
        header = llmc.read_header(path)
        tokens = llmc.open_tokens(path)  # every check verify makes, ids < vocab_size included
        return "\n".join(
            [
                f"{path}: llm.c token file",
                f"  version     {header.version} ({header.dtype.name} ids)",
                f"  tokens      {header.n_tokens:,}",
                f"  vocab_size  {header.vocab_size or 'unknown (0)'}",
                f"  size        {header.file_size:,} bytes",
                f"  first ids   {tokens[:_PREVIEW].tolist()}",
            ]
        )
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


def describe_folder(path: Path) -> str:
    """A release folder (stats.json) or an llm.c token folder (_MANIFEST.json)."""
    stats = path / "stats.json"
    manifest = path / llmc.MANIFEST_NAME
    if stats.exists():
        from .release import COMPLETE_NAME

        complete = "complete" if (path / COMPLETE_NAME).exists() else "INCOMPLETE (no COMPLETE.json)"
        return f"{path}: release, {complete}\n" + json.dumps(json.loads(stats.read_text()), indent=2)
    if manifest.exists():
        m = llmc.TokensManifest.read(manifest)
        lines = [f"{path}: llm.c tokens, tokenizer {m.tokenizer_id} (vocab {m.vocab_size}), dataset {m.dataset}"]
        for f in m.files:
            lines.append(f"  {f.name:<18} {f.n_tokens:>14,} tokens {f.n_docs:>10,} docs")
        return "\n".join(lines)
    raise FormatError(path, "not a release or token folder", expected="stats.json or _MANIFEST.json inside")
