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

``empty_documents_dropped`` (present only when not 0): how many empty input
documents were left out (both importers drop them, as the TinyStories rules do).
``documents_by_source`` (present only with ``--source-column``):
``{split: {source: documents}}``, adding up to each split's rows; each
source a source name (:func:`hf_tokbin.formats.rules.is_source_name`), at
most ``MAX_SOURCES`` in all (both splits together: ``stats.json`` lists them
together). It also says that the shards hold a
``source`` column, which a build counts by (receipts' and ``stats.json``'s
``sources``).
``split_rule`` ``sha256-per-mille-N``: the SHA-256 rule with N in 1000 in validation.

``license`` (a Hub license id, ``unknown`` when not given) and ``language``
(ISO codes) are carried into the dataset cards of the corpus and of every
release built from it. ``sources`` names the raw inputs by base name only (no absolute paths, so the
manifest is reproducible on another machine).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .._io import canonical_json, read_json, sha256_file, write_text_atomic
from ..errors import BuildError, FormatError
from .records import FileEntry, check_keys, is_count, is_sha256, naming, require
from .rules import FOLDER_NAME_RULE, MAX_SOURCES, SOURCE_NAME_RULE, is_folder_name, is_source_name

MANIFEST_NAME = "_MANIFEST.json"
FORMAT = "hf_tokbin.corpus/1"
SPLITS = ("train", "validation")
PER_SOURCE_RULE = "per-source"  # a mixture of corpora split by different rules (hf_tokbin.corpus.mixture)
# and sha256-per-mille-N (N of 1000 in validation, 2..999)
SPLIT_RULES = ("files", "column", "sha256", "all-train", PER_SOURCE_RULE)
LICENSE_ID = re.compile(r"[a-z0-9][a-z0-9.+-]{0,63}")
LANGUAGE_CODE = re.compile(r"[a-z]{2,3}(-[A-Za-z0-9]{2,8})*")
_PER_MILLE_RULE = re.compile(r"sha256-per-mille-([1-9][0-9]{0,2})")


def sha256_rule_name(val_per_mille: int) -> str:
    """The split rule's name at a rate: ``sha256`` at the Megatron release layout's 1 in 1000, else
    ``sha256-per-mille-N``.
    """
    return "sha256" if val_per_mille == 1 else f"sha256-per-mille-{val_per_mille}"


def is_split_rule(name) -> bool:
    if name in SPLIT_RULES:
        return True
    match = isinstance(name, str) and _PER_MILLE_RULE.fullmatch(name)
    return bool(match) and 1 < int(match.group(1)) < 1000


class _SplitRuleText(dict):
    """The rule texts; ``sha256-per-mille-N`` is worded from its rate (so every reader of the table knows it)."""

    def __missing__(self, name: str) -> str:
        match = isinstance(name, str) and _PER_MILLE_RULE.fullmatch(name)
        if not match:
            raise KeyError(name)
        return (
            "A document is validation when the first eight bytes of the SHA-256 of its exact UTF-8 text, "
            f"read big-endian, are below {int(match.group(1))} modulo 1000; "
            "otherwise train. Identical texts share a split; repeats are all kept."
        )


# How each rule assigns documents to splits, in words: for dataset cards and run_config.json.
SPLIT_RULE_TEXT = _SplitRuleText({
    "files": "Each input file is one split: the training file gives train, the validation file gives validation.",
    "column": "Each input row's split column gives its split (`train`; `validation` or `val`).",
    "sha256": (
        "A document is validation when the first eight bytes of the SHA-256 of its exact UTF-8 text, "
        "read big-endian, are 0 modulo 1000; otherwise train. Identical texts share a split; repeats are all kept."
    ),
    "all-train": "Every document is train; there is no validation split.",
    PER_SOURCE_RULE: "Each source of the mixture keeps its own corpus's split (run_config.json mix.sources).",
})


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
    empty_documents_dropped: int = 0  # empty input documents left out (both importers drop them)
    documents_by_source: dict = field(default_factory=dict)  # split -> source -> documents (a source column was kept)

    def __post_init__(self):
        # The shapes of ids (what cards and YAML can carry safely);
        # the Hub's own list is checked where a corpus is written.
        require(
            isinstance(self.license, str) and bool(LICENSE_ID.fullmatch(self.license)),
            None,
            "license must be a Hub license id such as apache-2.0",
            self.license,
        )
        require(
            isinstance(self.language, tuple)
            and all(isinstance(x, str) and LANGUAGE_CODE.fullmatch(x) for x in self.language),
            None,
            "language must be a list of ISO codes such as en",
            self.language,
        )
        require(is_folder_name(self.name), None, f"corpus name must be {FOLDER_NAME_RULE}", self.name)
        require(
            is_split_rule(self.split_rule),
            None,
            f"split_rule must be one of {SPLIT_RULES} or sha256-per-mille-N",
            self.split_rule,
        )
        require(
            is_count(self.empty_documents_dropped),
            None,
            "empty_documents_dropped must be a non-negative integer",
            self.empty_documents_dropped,
        )
        by_source = self.documents_by_source
        require(
            isinstance(by_source, dict)
            and all(
                split in SPLITS
                and isinstance(counts, dict)
                and len(counts) <= MAX_SOURCES
                and all(is_source_name(k) and is_count(v) for k, v in counts.items())
                for split, counts in by_source.items()
            )
            and all(sum(counts.values()) == self.rows(split) for split, counts in by_source.items())
            # stats.json counts both splits' sources together
            and len(set().union(*by_source.values())) <= MAX_SOURCES,
            None,
            f"documents_by_source must map train/validation to {{source: documents}} (at most "
            f"{MAX_SOURCES:,} source names in all: {SOURCE_NAME_RULE}) adding up to the split's rows",
            by_source,
        )
        paths = [s.path for s in self.shards]
        require(len(set(paths)) == len(paths), None, "a shard is listed twice", paths)

    def rows(self, split: str) -> int:
        return sum(s.rows for s in self.shards if s.split == split)

    def empty_validation_warning(self) -> str | None:
        """One line when the corpus has no validation document, naming the split rule that gave none; else None.

        ``corpus import`` and ``build`` print it: every trainer recipe then
        validates on nothing (or says what it reads instead).
        """
        if self.rows("validation"):
            return None
        return (
            f"warning: no validation documents (split rule {self.split_rule}: {SPLIT_RULE_TEXT[self.split_rule]}); "
            "trainers will validate on nothing: hf-tokbin recipe says what each does without one "
            "(give --split-column, or --split-rule sha256 on a larger corpus)"
        )

    def to_json(self) -> str:
        record = {
            "name": self.name,
            "format": FORMAT,
            "split_rule": self.split_rule,
            "license": self.license,
            "language": list(self.language),
            "sources": [s.to_dict() for s in self.sources],
            "shards": [s.to_dict() for s in self.shards],
        }
        # written only when some were: manifests of corpora without any keep their bytes
        if self.empty_documents_dropped:
            record["empty_documents_dropped"] = self.empty_documents_dropped
        if self.documents_by_source:
            record["documents_by_source"] = self.documents_by_source
        return canonical_json(record)

    def write(self, directory: str | os.PathLike) -> Path:
        path = Path(directory) / MANIFEST_NAME
        write_text_atomic(path, self.to_json())
        return path

    @classmethod
    def read(cls, directory_or_file: str | os.PathLike) -> "CorpusManifest":
        path = Path(directory_or_file)
        if path.is_dir():
            path = path / MANIFEST_NAME
        elif path.is_file() and path.name != MANIFEST_NAME:
            hint = "write one with hf-tokbin corpus import or hf-tokbin corpus tinystories"
            raise FormatError(path, f"not a corpus folder: a file, not a folder holding {MANIFEST_NAME}", hint=hint)
        obj = read_json(path, FormatError)
        keys = ["name", "format", "split_rule", "license", "language", "sources", "shards"]
        optional = [
            k for k in ("empty_documents_dropped", "documents_by_source") if isinstance(obj, dict) and k in obj
        ]
        check_keys(obj, keys + optional, path, "corpus manifest")
        if obj["format"] != FORMAT:
            raise FormatError(path, "unknown corpus manifest format", expected=FORMAT, got=obj["format"])
        try:
            with naming(path):
                sources = tuple(FileEntry.from_dict(s, path, f"sources[{i}]") for i, s in enumerate(obj["sources"]))
                shards = []
                for i, s in enumerate(obj["shards"]):
                    check_keys(s, ["path", "split", "rows", "size", "sha256"], path, f"shards[{i}]")
                    shards.append(CorpusShard(**s))
                language = tuple(obj["language"]) if isinstance(obj["language"], list) else obj["language"]
                return cls(
                    obj["name"],
                    obj["split_rule"],
                    sources,
                    tuple(shards),
                    obj["license"],
                    language,
                    obj.get("empty_documents_dropped", 0),
                    obj.get("documents_by_source", {}),
                )
        except TypeError as e:
            raise FormatError(path, "sources and shards must be lists of objects", got=str(e)) from None


@dataclass(frozen=True)
class CorpusSubset:
    """What a ``build --limit N`` corpus was cut from: ``run_config.json``'s ``corpus.subset``.

    ::

        {"limit": N, "cut_from_manifest_sha256": "<hex>", "checked": true,
         "documents": {"train": N, "validation": N}, "available": {"train": N, "validation": N}}

    ``cut_from_manifest_sha256`` is the SHA-256 of the corpus manifest the
    subset was cut from (the corpus named by ``corpus.source`` and
    ``corpus.revision``; ``corpus.manifest_sha256`` is the subset's own).
    ``checked``: every shard a document was taken from was read whole and its
    size and SHA-256 checked against that manifest first (always true: a
    subset of unchecked bytes is not built). ``documents``: what each split
    got; ``available``: what the corpus holds.
    """

    limit: int
    cut_from_manifest_sha256: str
    documents: dict
    available: dict
    checked: bool = True

    def __post_init__(self):
        require(
            is_count(self.limit) and self.limit > 0,
            None,
            "corpus.subset.limit must be a positive number of documents",
            self.limit,
        )
        require(
            is_sha256(self.cut_from_manifest_sha256),
            None,
            "corpus.subset.cut_from_manifest_sha256 must be 64 lowercase hex digits",
            self.cut_from_manifest_sha256,
        )
        require(
            self.checked is True,
            None,
            "corpus.subset.checked must be true: a subset is built only from checked bytes",
            self.checked,
        )
        for name in ("documents", "available"):
            counts = getattr(self, name)
            require(
                isinstance(counts, dict) and set(counts) == set(SPLITS) and all(is_count(v) for v in counts.values()),
                None,
                f"corpus.subset.{name} must count the documents of train and validation",
                counts,
            )
        require(
            sum(self.documents.values()) <= self.limit,
            None,
            "corpus.subset.documents add up to at most the limit",
            self.documents,
        )
        require(
            all(self.documents[s] <= self.available[s] for s in SPLITS),
            None,
            "corpus.subset.documents: a split got more documents than the corpus holds",
            self.documents,
        )

    def to_record(self) -> dict:
        return {
            "limit": self.limit,
            "cut_from_manifest_sha256": self.cut_from_manifest_sha256,
            "checked": self.checked,
            "documents": {s: self.documents[s] for s in SPLITS},
            "available": {s: self.available[s] for s in SPLITS},
        }

    @classmethod
    def from_record(cls, obj, path=None) -> "CorpusSubset":
        check_keys(
            obj, ["limit", "cut_from_manifest_sha256", "checked", "documents", "available"], path, "corpus.subset"
        )
        try:
            return cls(
                obj["limit"], obj["cut_from_manifest_sha256"], obj["documents"], obj["available"], obj["checked"]
            )
        except FormatError as e:
            raise FormatError(path, e.rule, got=e.got) from None

    def empty_validation_warning(self) -> str | None:
        """One line when the limit ended in train while the corpus holds validation documents: the limit that reaches
        them (documents are taken in corpus order, train first); else None."""
        if self.documents["validation"] or not self.available["validation"]:
            return None
        return (
            f"warning: no validation documents: --limit {self.limit} ended in train "
            f"({self.available['train']:,} documents in the corpus); --limit {self.available['train'] + 1} or more "
            f"also takes validation documents ({self.available['validation']:,} in the corpus)"
        )

    def lines(self) -> list[str]:
        """One line per split: what it got of what the corpus holds."""
        out = []
        for split in SPLITS:
            taken, held = self.documents[split], self.available[split]
            note = (
                ""
                if taken == held
                else " (none: the limit was reached before this split)"
                if taken == 0
                else " (cut by the limit)"
            )
            out.append(f"--limit {self.limit:,}: {split} {taken:,} of {held:,} documents{note}")
        return out


def check_shard_file(shard: CorpusShard, path: Path) -> None:
    """The shard's file must be the bytes the corpus manifest (and so run_config.json) pins: size and SHA-256."""
    size = path.stat().st_size
    if size != shard.size or sha256_file(path) != shard.sha256:
        rule = "corpus shard differs from its _MANIFEST.json entry (size or SHA-256)"
        raise BuildError(path, rule, expected=shard.sha256, got=f"{size} bytes")
