"""``hf-tokbin verify CORPUS``: a corpus folder holds exactly the shards its ``_MANIFEST.json`` lists."""

from __future__ import annotations

import os
from pathlib import Path

from .._io import sha256_file
from ..errors import VerificationError
from ..formats.corpus_manifest import MANIFEST_NAME, CorpusManifest
from ..formats.corpus_shard import SOURCE_COLUMN, iter_shard_batches
from ..formats.rules import MAX_SOURCES

_VERIFY_BATCH_ROWS = 4096  # rows read at a time: memory bounded by the batch, not the shard


def verify_corpus(root: str | os.PathLike) -> str:
    """Check every shard's size, SHA-256, row count and text column (strings, no null, valid UTF-8); a one-line report.

    A corpus with a source column: every value a source name, counted per split as ``documents_by_source`` says.
    """
    root = Path(root)
    manifest = CorpusManifest.read(root)
    counted: dict[str, dict[str, int]] = {}  # split -> source -> documents, as the shards' source column gives them
    for shard in manifest.shards:
        path = root / shard.path
        if not path.is_file() or path.is_symlink():
            raise VerificationError(path, f"corpus shard listed in {MANIFEST_NAME} is missing or not a regular file")
        size = path.stat().st_size
        if size != shard.size or sha256_file(path) != shard.sha256:
            raise VerificationError(
                path,
                f"corpus shard differs from its {MANIFEST_NAME} entry (size or SHA-256)",
                expected=shard.sha256,
                got=f"{size} bytes",
            )
        rows = 0
        column = SOURCE_COLUMN if manifest.documents_by_source else None
        # strings, no null, valid UTF-8 (and source names)
        for _, texts, sources in iter_shard_batches(path, path, _VERIFY_BATCH_ROWS, column):
            rows += len(texts)
            if sources is not None:
                _count(counted.setdefault(shard.split, {}), sources)
                _check_distinct_sources(path, counted)
        if rows != shard.rows:
            raise VerificationError(path, f"rows must equal the {MANIFEST_NAME} entry", expected=shard.rows, got=rows)
    if counted != manifest.documents_by_source:
        raise VerificationError(
            root / MANIFEST_NAME,
            "documents_by_source must count the shards' source column",
            expected=manifest.documents_by_source,
            got=counted,
        )
    counts = ", ".join(f"{split} {manifest.rows(split):,}" for split in ("train", "validation"))
    return f"{root}: OK: corpus {manifest.name}, {len(manifest.shards)} shards, documents: {counts}"


def _check_distinct_sources(path: Path, counted: dict[str, dict[str, int]]) -> None:
    """The build's bound: at most ``MAX_SOURCES`` distinct sources (both splits together), checked while counting."""
    distinct = len(set().union(*counted.values()))
    if distinct > MAX_SOURCES:
        raise VerificationError(
            path,
            f"a corpus holds at most {MAX_SOURCES:,} distinct sources, as a build counts them",
            got=f"more than {MAX_SOURCES:,}",
        )


def _count(counts: dict[str, int], sources) -> None:
    """Add one batch of source names to ``counts``."""
    for item in sources.value_counts().to_pylist():
        counts[item["values"]] = counts.get(item["values"], 0) + item["counts"]
