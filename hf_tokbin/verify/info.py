"""``hf-tokbin info``: what a token file or release holds, at a glance."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .._io import read_json
from ..errors import FormatError
from ..formats import llmc, megatron
from ..formats.corpus_manifest import CorpusManifest
from ..formats.release import COMPLETE_NAME, STATS_NAME
from ..formats.sniff import sniff

_PREVIEW = 8
_LLMC_LAYOUTS = {"gpt2": "llm.c token file", "llama3": "upstream llm.c Llama 3 token file"}


def describe(path: str | os.PathLike) -> str:
    path = Path(path)
    if not path.exists():
        raise FormatError(path, "no such file or folder")
    kind = sniff(path)
    if kind in ("release", "llmc-folder", "corpus"):
        return describe_folder(path, kind)
    if kind == "llmc-file":
        return describe_llmc_file(path)
    pair = megatron.MegatronPair(path)
    pair.check_ids()
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
    header = llmc.read_header(path)
    tokens = llmc.open_tokens(path)  # every check verify makes, ids < vocab_size included where the header has it
    return "\n".join(
        [
            f"{path}: {_LLMC_LAYOUTS[header.layout.family]} (magic {header.magic})",
            f"  version     {header.version} ({tokens.dtype.name} ids)",
            f"  tokens      {header.n_tokens:,}",
            f"  vocab_size  {header.vocab_size or 'unknown (0)'}",
            f"  size        {path.stat().st_size:,} bytes",
            f"  first ids   {tokens[:_PREVIEW].tolist()}",
        ]
    )


def describe_folder(path: Path, kind: str) -> str:
    """A release folder (stats.json), a corpus folder or an llm.c token folder (each with its own _MANIFEST.json)."""
    stats = path / STATS_NAME
    manifest = path / llmc.MANIFEST_NAME
    if kind == "corpus":
        corpus = CorpusManifest.read(path)
        lines = [f"{path}: corpus {corpus.name} (license {corpus.license}, split rule {corpus.split_rule})"]
        for shard in corpus.shards:
            lines.append(f"  {shard.path:<34} {shard.split:<11} {shard.rows:>12,} documents {shard.size:>14,} bytes")
        return "\n".join(lines)
    if kind == "release" and stats.exists():
        complete = "complete" if (path / COMPLETE_NAME).exists() else "INCOMPLETE (no COMPLETE.json)"
        return f"{path}: release, {complete}\n" + json.dumps(read_json(stats, FormatError), indent=2)
    if kind == "llmc-folder":
        m = llmc.TokensManifest.read(manifest)
        lines = [f"{path}: llm.c tokens, tokenizer {m.tokenizer_id} (vocab {m.vocab_size}), dataset {m.dataset}"]
        for f in m.files:
            lines.append(f"  {f.name:<18} {f.n_tokens:>14,} tokens {f.n_docs:>10,} docs")
        return "\n".join(lines)
    raise FormatError(path, "not a release or token folder", expected="stats.json or _MANIFEST.json inside")
