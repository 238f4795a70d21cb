"""``hf-tokbin verify CORPUS``: a corpus folder holds exactly the shards its ``_MANIFEST.json`` lists."""

from __future__ import annotations

import os
from pathlib import Path

from .._io import sha256_file
from ..errors import VerificationError
from ..formats.corpus_manifest import MANIFEST_NAME, CorpusManifest
from ..formats.corpus_shard import iter_shard_texts

_VERIFY_BATCH_ROWS = 4096  # rows read at a time: memory bounded by the batch, not the shard


def verify_corpus(root: str | os.PathLike) -> str:
    """Check every shard's size, SHA-256, row count and text column (strings, no null, valid UTF-8); a one-line report."""
    root = Path(root)
    manifest = CorpusManifest.read(root)
    for shard in manifest.shards:
        path = root / shard.path
        if not path.is_file() or path.is_symlink():
            raise VerificationError(path, f"corpus shard listed in {MANIFEST_NAME} is missing or not a regular file")
        size = path.stat().st_size
        if size != shard.size or sha256_file(path) != shard.sha256:
            raise VerificationError(path, f"corpus shard differs from its {MANIFEST_NAME} entry (size or SHA-256)", expected=shard.sha256, got=f"{size} bytes")
        rows = 0
        for _, texts in iter_shard_texts(path, path, _VERIFY_BATCH_ROWS):  # a string text column, no null, valid UTF-8
            rows += len(texts)
        if rows != shard.rows:
            raise VerificationError(path, f"rows must equal the {MANIFEST_NAME} entry", expected=shard.rows, got=rows)
    counts = ", ".join(f"{split} {manifest.rows(split):,}" for split in ("train", "validation"))
    return f"{root}: OK: corpus {manifest.name}, {len(manifest.shards)} shards, documents: {counts}"
