"""The corpus ``_MANIFEST.json``: which Parquet shards a raw corpus holds.

A corpus folder written by ``hf-tokbin corpus`` is::

    DIR/_MANIFEST.json            this record
    DIR/README.md                 dataset card (``configs:`` YAML, so load_dataset(DIR) works)
    DIR/data/train-NNNNN.parquet  columns ``text`` (string) and ``split`` (string)
    DIR/data/validation-NNNNN.parquet

Each shard holds one split (the ``split`` column repeats it, so a shard read
alone still says where it belongs). The shards, in manifest order, are the
input shards of a build: shard i becomes ``part-{i:06d}`` of the release.

``_MANIFEST.json``::

    {"name": "tinystories", "format": "hf_tokbin.corpus/1",
     "split_rule": "files" | "column" | "sha256" | "all-train",
     "license": "cdla-sharing-1.0", "language": ["en"],
     "sources": [{"path": "TinyStoriesV2-GPT4-train.txt", "size": N, "sha256": "<hex>"}],
     "shards": [{"path": "data/train-00000.parquet", "split": "train", "rows": N,
                 "size": N, "sha256": "<hex>"}]}

``license`` (a Hub license id, ``unknown`` when not given) and ``language``
(ISO codes) are carried into the dataset cards of the corpus and of every
release built from it. ``sources`` names the raw inputs by base name only (no absolute paths, so the
manifest is reproducible on another machine).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ._io import canonical_json, read_json, write_text_atomic
from .errors import FormatError
from .records import FileEntry, check_keys, is_count, require

MANIFEST_NAME = "_MANIFEST.json"
FORMAT = "hf_tokbin.corpus/1"
SPLITS = ("train", "validation")
SPLIT_RULES = ("files", "column", "sha256", "all-train")
# How each rule assigns documents to splits, in words: for dataset cards and run_config.json.
SPLIT_RULE_TEXT = {
    "files": "Each input file is one split: the training file gives train, the validation file gives validation.",
    "column": "Each input row's split column gives its split (`train`; `validation` or `val`).",
    "sha256": (
        "A document is validation when the first eight bytes of the SHA-256 of its exact UTF-8 text, "
        "read big-endian, are 0 modulo 1000; otherwise train. Identical texts share a split; repeats are all kept."
    ),
    "all-train": "Every document is train; there is no validation split.",
}


@dataclass(frozen=True)
class CorpusShard:
    path: str
    split: str
    rows: int
    size: int
    sha256: str

    def __post_init__(self):
        FileEntry(self.path, self.size, self.sha256)  # same path/size/sha256 rules
        require(self.split in SPLITS, None, "shard split must be train or validation", self.split)
        require(is_count(self.rows), None, "shard rows must be a non-negative integer", self.rows)

    def to_dict(self) -> dict:
        return {"path": self.path, "split": self.split, "rows": self.rows, "size": self.size, "sha256": self.sha256}


@dataclass(frozen=True)
class CorpusManifest:
    name: str
    split_rule: str
    sources: tuple[FileEntry, ...]
    shards: tuple[CorpusShard, ...]
    license: str = "unknown"
    language: tuple[str, ...] = ()

    def __post_init__(self):
        require(isinstance(self.license, str) and self.license and " " not in self.license, None, "license must be a Hub license id such as apache-2.0", self.license)
        require(isinstance(self.language, tuple) and all(isinstance(x, str) and x.isalnum() for x in self.language), None, "language must be a list of ISO codes such as en", self.language)
        require(isinstance(self.name, str) and self.name and "/" not in self.name, None, "corpus name must be a non-empty string without '/'", self.name)
        require(self.split_rule in SPLIT_RULES, None, f"split_rule must be one of {SPLIT_RULES}", self.split_rule)
        paths = [s.path for s in self.shards]
        require(len(set(paths)) == len(paths), None, "a shard is listed twice", paths)

    def rows(self, split: str) -> int:
        return sum(s.rows for s in self.shards if s.split == split)

    def to_json(self) -> str:
        return canonical_json(
            {
                "name": self.name,
                "format": FORMAT,
                "split_rule": self.split_rule,
                "license": self.license,
                "language": list(self.language),
                "sources": [s.to_dict() for s in self.sources],
                "shards": [s.to_dict() for s in self.shards],
            }
        )

    def write(self, directory: str | os.PathLike) -> Path:
        path = Path(directory) / MANIFEST_NAME
        write_text_atomic(path, self.to_json())
        return path

    @classmethod
    def read(cls, directory_or_file: str | os.PathLike) -> "CorpusManifest":
        path = Path(directory_or_file)
        if path.is_dir():
            path = path / MANIFEST_NAME
        obj = read_json(path, FormatError)
        check_keys(obj, ["name", "format", "split_rule", "license", "language", "sources", "shards"], path, "corpus manifest")
        if obj["format"] != FORMAT:
            raise FormatError(path, "unknown corpus manifest format", expected=FORMAT, got=obj["format"])
        try:
            sources = tuple(FileEntry.from_dict(s, path, f"sources[{i}]") for i, s in enumerate(obj["sources"]))
            shards = []
            for i, s in enumerate(obj["shards"]):
                check_keys(s, ["path", "split", "rows", "size", "sha256"], path, f"shards[{i}]")
                shards.append(CorpusShard(**s))
            language = tuple(obj["language"]) if isinstance(obj["language"], list) else obj["language"]
            return cls(obj["name"], obj["split_rule"], sources, tuple(shards), obj["license"], language)
        except FormatError as e:
            if e.path is not None:
                raise
            raise FormatError(path, e.rule, got=e.got) from None
        except TypeError as e:
            raise FormatError(path, "sources and shards must be lists of objects", got=str(e)) from None


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

    from .errors import HubError, TokbinError
    from .hub.retry import fetch_error
    from .hub.revision import escaped, is_commit_id, resolve_commit, shown

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
