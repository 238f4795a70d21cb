"""Where a build's corpus comes from: a corpus folder on disk, or a Hub dataset repo fetched at a pinned revision."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import FormatError
from ..formats.corpus_manifest import MANIFEST_NAME, CorpusManifest


def iter_texts(root: str | os.PathLike, manifest: CorpusManifest, split: str, batch_rows: int = 1024):
    """The texts of one split, in corpus order, streamed shard by shard."""
    import pyarrow.parquet as pq

    for shard in manifest.shards:
        if shard.split != split:
            continue
        with pq.ParquetFile(Path(root) / shard.path) as file:
            for batch in file.iter_batches(batch_size=batch_rows, columns=["text"]):
                yield from batch.column(0).to_pylist()


def resolve_corpus(name: str, revision: str | None = None) -> tuple[Path, str, str | None]:
    """A corpus folder, or a Hub dataset repo fetched at a pinned revision.

    Returns (local root, source, revision): source is "local" or the repo id,
    revision the resolved commit of a Hub corpus.
    """
    path = Path(name)
    if path.exists():
        if not (path / MANIFEST_NAME).is_file():
            raise FormatError(path, f"not a corpus folder: no {MANIFEST_NAME}", hint="write one with hf-tokbin corpus")
        return path, "local", None
    parts = name.split("/")
    if len(parts) != 2 or not all(parts):
        raise FormatError(name, "corpus not found", expected="a corpus folder or a Hub dataset repo NS/NAME")
    from huggingface_hub import HfApi, constants, snapshot_download
    from huggingface_hub.file_download import _cache_commit_hash_for_specific_revision

    from ..errors import HubError, TokbinError
    from ..hub.retry import fetch_error
    from ..hub.revision import escaped, is_commit_id, resolve_commit, shown

    where = f"{name}@{shown(revision or 'main')}"
    try:
        # The server's commit id names a folder in the cache: check it first, and fetch at that id only.
        # Offline, the cache's own ref (written below, by an earlier online run) gives it.
        commit = revision if constants.HF_HUB_OFFLINE else resolve_commit(HfApi(), name, revision, "dataset")
        root = Path(snapshot_download(name, repo_type="dataset", revision=commit))
        if not is_commit_id(revision) and not constants.HF_HUB_OFFLINE:
            # Fetching at a commit id records no ref; record it, so an offline build of the branch finds this snapshot.
            _cache_commit_hash_for_specific_revision(str(root.parent.parent), revision or "main", commit)
    except TokbinError:
        raise
    except Exception as e:
        raise escaped(fetch_error(where, "corpus", e)) from e
    if not is_commit_id(root.name):
        raise HubError(where, "the cached corpus snapshot is not named by a commit id", got=shown(root.name))
    if not (root / MANIFEST_NAME).is_file():
        raise FormatError(name, f"Hub repo holds no corpus {MANIFEST_NAME}", hint="publish the corpus folder with hf-tokbin push")
    return root, name, root.name
