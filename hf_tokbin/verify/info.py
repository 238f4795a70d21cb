"""``hf-tokbin info``: what a token file or release holds, at a glance."""

from __future__ import annotations

import os
from pathlib import Path

from .._io import read_json
from ..errors import FormatError
from ..formats import llmc, megatron
from ..formats.corpus_manifest import CorpusManifest
from ..formats.release import COMPLETE_NAME, RUN_CONFIG_NAME, STATS_NAME, SplitCounts, counts_table
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
        return describe_release(path)
    if kind == "llmc-folder":
        m = llmc.TokensManifest.read(manifest)
        lines = [f"{path}: llm.c tokens, tokenizer {m.tokenizer_id} (vocab {m.vocab_size}), dataset {m.dataset}"]
        for f in m.files:
            lines.append(f"  {f.name:<18} {f.n_tokens:>14,} tokens {f.n_docs:>10,} docs")
        return "\n".join(lines)
    raise FormatError(path, "not a release or token folder", expected="stats.json or _MANIFEST.json inside")


def describe_record(path: str | os.PathLike) -> tuple[str, dict]:
    """:func:`describe`'s text and the same as a record (``info --json``): a release's counts by split, else the text."""
    path = Path(path)
    if path.exists() and sniff(path) == "release" and (path / STATS_NAME).exists():
        counts = _release_counts(path)
        record = release_record(path, counts)
        return _release_text(path, record, counts), record
    text = describe(path)
    return text, {"path": str(path), "kind": sniff(path), "summary": text}


def _release_counts(path: Path) -> dict[str, SplitCounts]:
    stats = read_json(path / STATS_NAME, FormatError)
    splits = stats.get("splits") if isinstance(stats, dict) else None
    if not isinstance(splits, dict):
        raise FormatError(path / STATS_NAME, "splits must be an object of counts by split", got=type(splits).__name__)
    counts = {}
    for split, c in splits.items():
        try:
            counts[split] = SplitCounts(c["documents"], c["text_tokens"], c["eod_tokens"], c.get("text_bytes", 0), c.get("bos_tokens", 0))
        except (KeyError, TypeError, AttributeError, FormatError) as e:
            raise FormatError(path / STATS_NAME, f"splits.{split} is not a record of counts", got=str(e)) from None
    return counts


def release_record(path: Path, counts: dict[str, SplitCounts] | None = None) -> dict:
    """What ``info RELEASE`` says, as a record: the release's identity and its counts by split (``total_tokens`` included)."""
    counts = _release_counts(path) if counts is None else counts
    stats = read_json(path / STATS_NAME, FormatError)
    config = read_json(path / RUN_CONFIG_NAME, FormatError) if (path / RUN_CONFIG_NAME).is_file() else {}
    tokenizer = config.get("tokenizer") if isinstance(config, dict) and isinstance(config.get("tokenizer"), dict) else {}
    return {
        "path": str(path),
        "kind": "release",
        "complete": (path / COMPLETE_NAME).exists(),
        "dataset": stats.get("dataset"),
        "tokenizer_id": stats.get("tokenizer_id"),
        "vocab_size": tokenizer.get("vocab_size"),
        "formats": config.get("formats") if isinstance(config, dict) else None,
        "splits": {split: c.stats_dict() for split, c in counts.items()},
    }


def describe_release(path: Path) -> str:
    """``info RELEASE``: a summary (identity, then the build's split table), not the raw ``stats.json``."""
    counts = _release_counts(path)
    return _release_text(path, release_record(path, counts), counts)


def _release_text(path: Path, record: dict, counts: dict[str, SplitCounts]) -> str:
    complete = "complete" if record["complete"] else "INCOMPLETE (no COMPLETE.json)"
    formats = ", ".join(record["formats"] or ()) or "unknown"
    head = f"{path}: release {record['dataset']}, {complete}; tokenizer {record['tokenizer_id']} (vocab {record['vocab_size']}); formats {formats}"
    return "\n".join([head, *counts_table(counts)])
