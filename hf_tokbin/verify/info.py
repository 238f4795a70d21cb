"""``hf-tokbin info``: what a token file or release holds, at a glance."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .._io import read_json
from ..errors import FormatError
from ..formats import llmc, megatron
from ..formats.corpus_manifest import CorpusManifest
from ..formats.lengths import LengthSummary, length_summaries
from ..formats.merged import MERGED_NAME, read_merged
from ..formats.release import (
    COMPLETE_NAME,
    RECEIPTS_DIR,
    RUN_CONFIG_NAME,
    STATS_NAME,
    Receipt,
    Stats,
    counts_table,
    mixture_line,
)
from ..formats.run_config import RunConfig
from ..formats.sniff import sniff

_PREVIEW = 8
MAX_SOURCES_SHOWN = 20  # info is a glance: the largest sources; stats.json and info --json hold every one
HISTOGRAM_WIDTH = 40  # characters of the longest bar of info's length histogram
HISTOGRAM_BAR = "#"
_LLMC_LAYOUTS = {"gpt2": "llm.c token file", "llama3": "upstream llm.c Llama 3 token file"}


def describe(path: str | os.PathLike) -> str:
    path = Path(path)
    kind = sniff(path)  # a missing path is "no such file or folder"
    if kind in ("release", "llmc-folder", "corpus"):
        return describe_folder(path, kind)
    if kind == "llmc-file":
        return describe_llmc_file(path)
    if kind == "merge":
        return describe_merged(path)
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
    """An llm.c file of the llm.c layout or upstream's Llama 3 one; the reader picks the layout by its magic."""
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


def describe_merged(path: Path) -> str:
    """A merge folder (``hf-tokbin merge``): one Megatron pair per split, as ``MERGED.json`` lists them."""
    lines = [f"{path}: merged Megatron pairs, one per split ({MERGED_NAME})"]
    for split in read_merged(path):
        lines.append(f"  {split.name:<11} {split.documents:>12,} documents {split.tokens:>14,} tokens")
    return "\n".join(lines)


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
        return ReleaseInfo.read(path).text()
    if kind == "llmc-folder":
        m = llmc.TokensManifest.read(manifest)
        lines = [f"{path}: llm.c tokens, tokenizer {m.tokenizer_id} (vocab {m.vocab_size}), dataset {m.dataset}"]
        for f in m.files:
            lines.append(f"  {f.name:<18} {f.n_tokens:>14,} tokens {f.n_docs:>10,} docs")
        return "\n".join(lines)
    raise FormatError(path, "not a release or token folder", expected="stats.json or _MANIFEST.json inside")


def describe_record(path: str | os.PathLike) -> tuple[str, dict]:
    """:func:`describe`'s text and the same as a record (``info --json``).

    The record of a release holds its counts by split; of anything else, the text."""
    path = Path(path)
    if path.exists() and sniff(path) == "release" and (path / STATS_NAME).exists():
        release = ReleaseInfo.read(path)
        return release.text(), release.record()
    text = describe(path)  # first: its checks name what is wrong with ``path``
    kind = sniff(path)
    return text, {"path": str(path), "kind": kind, **fields_of(path, kind)}


def fields_of(path: Path, kind: str) -> dict:
    """What a token file, pair, corpus, merge or llm.c folder holds (``kind``, as :func:`sniff` names it), as fields:
    the facts :func:`describe` prints, for ``info --json`` and ``verify --json``."""
    return _FIELDS[kind](Path(path))


def _megatron_pair_fields(path: Path) -> dict:
    pair = megatron.MegatronPair(path)
    lengths = pair.lengths
    return {
        "idx": str(pair.idx_path),
        "dtype": pair.dtype.name,
        "dtype_code": pair.header.code,
        "sequences": len(pair),
        "documents": pair.header.document_count - 1,
        "tokens": pair.n_tokens,
        "mean_length": round(float(lengths.mean()), 3) if len(pair) else 0.0,
        "first_ids": pair[0][:_PREVIEW].tolist() if len(pair) else [],
    }


def _llmc_file_fields(path: Path) -> dict:
    header = llmc.read_header(path)
    tokens = llmc.open_tokens(path)
    return {
        "layout": header.layout.family,
        "magic": header.magic,
        "version": header.version,
        "dtype": tokens.dtype.name,
        "tokens": header.n_tokens,
        "vocab_size": header.vocab_size or None,  # None: the header does not say (upstream's Llama 3 files)
        "bytes": path.stat().st_size,
        "first_ids": tokens[:_PREVIEW].tolist(),
    }


def _merged_fields(path: Path) -> dict:
    splits = read_merged(path)
    return {"splits": {split.name: {"documents": split.documents, "tokens": split.tokens} for split in splits}}


def _corpus_fields(path: Path) -> dict:
    corpus = CorpusManifest.read(path)
    shards = [{"path": s.path, "split": s.split, "documents": s.rows, "bytes": s.size} for s in corpus.shards]
    return {"name": corpus.name, "license": corpus.license, "split_rule": corpus.split_rule, "shards": shards}


def _llmc_folder_fields(path: Path) -> dict:
    m = llmc.TokensManifest.read(path / llmc.MANIFEST_NAME)
    files = [{"name": f.name, "tokens": f.n_tokens, "documents": f.n_docs} for f in m.files]
    return {"tokenizer_id": m.tokenizer_id, "vocab_size": m.vocab_size, "dataset": m.dataset, "files": files}


# ``info --json`` of what is not a release: the same facts as the text, as fields (by sniff's kind)
_FIELDS = {
    "llmc-file": _llmc_file_fields,
    "merge": _merged_fields,
    "corpus": _corpus_fields,
    "llmc-folder": _llmc_folder_fields,
    "megatron-pair": _megatron_pair_fields,
}


@dataclass(frozen=True)
class ReleaseInfo:
    """What ``info RELEASE`` shows, read through the releases' own readers (:class:`Stats`, :class:`RunConfig`)."""

    path: Path
    stats: Stats
    config: RunConfig | None  # None: no run_config.json
    complete: bool

    @classmethod
    def read(cls, path: Path) -> ReleaseInfo:
        stats = Stats.read(path / STATS_NAME)  # first: a release is sniffed by its stats.json here
        config = RunConfig.read(path / RUN_CONFIG_NAME) if (path / RUN_CONFIG_NAME).is_file() else None
        return cls(path, stats, config, (path / COMPLETE_NAME).exists())

    @property
    def dataset(self) -> str | None:
        return self.stats.dataset or (self.config.dataset if self.config else None)

    @property
    def tokenizer_id(self) -> str | None:
        return self.stats.tokenizer_id or (self.config.tokenizer_id if self.config else None)

    def record(self) -> dict:
        """The release's identity and its counts by split (``total_tokens`` included)."""
        config = self.config
        return {
            "path": str(self.path),
            "kind": "release",
            "complete": self.complete,
            "dataset": self.dataset,
            "tokenizer_id": self.tokenizer_id,
            "vocab_size": config.vocab_size if config else None,
            "formats": list(config.formats) if config else None,
            "splits": {split: c.stats_dict() for split, c in self.stats.splits.items()},
            "source_column": self.source_column,
            "sources": {
                name: {split: c.stats_dict() for split, c in by_split.items()}
                for name, by_split in self.stats.sources.items()
            },
            **({"mixture": self.mixture} if self.mixture is not None else {}),
        }

    @property
    def source_column(self) -> str | None:
        """The column the build counted by source (run_config.json).

        None: not counted (stats.json's one source is the dataset)."""
        return self.config.source_column if self.config else None

    def source_lines(self) -> list[str]:
        """The per-source table, largest sources first, at most :data:`MAX_SOURCES_SHOWN`.

        The largest source has the most tokens, summed over the splits."""
        sources = self.stats.sources
        mixed = self.config is not None and self.config.options.mix is not None  # its sources are its corpora
        if self.source_column is None and not mixed and (self.config is not None or set(sources) <= {self.dataset}):
            return []
        order = sorted(sources, key=lambda name: (-sum(c.total_tokens for c in sources[name].values()), name))
        shown = order[:MAX_SOURCES_SHOWN]
        width = max(len("source"), *map(len, shown))
        rows = {f"{name:<{width}}  {split}": c for name in shown for split, c in sources[name].items()}
        column = f" (column {self.source_column!r})" if self.source_column else ""
        more = (
            [f"... {len(order) - len(shown):,} more sources (stats.json and info --json list every one)"]
            if len(order) > len(shown)
            else []
        )
        return [
            f"by source{column}: {len(order):,} sources, largest first",
            *counts_table(rows, f"{'source':<{width}}  split"),
            *more,
        ]

    @property
    def mixture(self) -> dict | None:
        """stats.json's ``mixture`` (a mixture release), else None."""
        return read_json(self.path / STATS_NAME, FormatError).get("mixture")

    def mixture_lines(self) -> list[str]:
        """A mixture's line: each source's share of the llm.c train files against its target (stats.json)."""
        try:
            return [mixture_line(self.mixture)] if self.mixture is not None else []
        except (KeyError, TypeError, ValueError, AttributeError):
            return ["mixture: stats.json's mixture is not readable (hf-tokbin verify says why)"]

    def text(self) -> str:
        """A summary (identity, then the build's split table), not the raw ``stats.json``."""
        complete = "complete" if self.complete else "INCOMPLETE (no COMPLETE.json)"
        formats = ", ".join(self.config.formats) if self.config else "unknown"
        vocab = self.config.vocab_size if self.config else None
        tokenizer = f"tokenizer {self.tokenizer_id} (vocab {vocab})"
        head = f"{self.path}: release {self.dataset}, {complete}; {tokenizer}; formats {formats}"
        lines = [head, *counts_table(self.stats.splits), *self.source_lines(), *self.mixture_lines()]
        return "\n".join(lines + length_histogram(self.path))


def length_histogram(path: Path) -> list[str]:
    """Each split's document lengths as a text histogram: the buckets of the card's table and picture
    (:mod:`hf_tokbin.formats.lengths`, from the Megatron ``.idx`` files), one bar of ``#`` each; none without them."""
    receipts = [Receipt.read(p) for p in sorted((path / RECEIPTS_DIR).glob("part-*.json"))]
    summaries = length_summaries(path, receipts)
    if not summaries:
        return []
    lines = ["document lengths in tokens (Megatron .idx: EOD and BOS included), documents per bucket:"]
    for split, summary in summaries.items():
        lines += _histogram(split, summary)
    return lines


def _histogram(split: str, summary: LengthSummary) -> list[str]:
    largest = max(n for _, _, n in summary.buckets)
    labels = [f"{low:,}-{high:,}" for low, high, _ in summary.buckets]
    width = max(map(len, labels))
    lines = [
        f"  {split}: {summary.documents:,} documents, shortest {summary.shortest:,}, median {summary.median:,}, "
        f"longest {summary.longest:,}"
    ]
    for label, (_, _, n) in zip(labels, summary.buckets):
        bar = HISTOGRAM_BAR * (max(1, (HISTOGRAM_WIDTH * n + largest // 2) // largest) if n else 0)
        lines.append(f"    {label:>{width}} {bar:<{HISTOGRAM_WIDTH}} {n:>12,} {100 * n / summary.documents:5.1f}%")
    return lines
