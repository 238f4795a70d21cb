"""A tokenized release folder: layout, receipts and ``COMPLETE.json`` (the Megatron release layout).

::

    DIR/shards/{train,validation}/part-NNNNNN.bin|.idx   Megatron pairs, one per input shard and split
    DIR/receipts/part-NNNNNN.json                        one per input shard, written after its outputs
    DIR/tokens/<tokenizer_id>/<dataset>/...              llm.c token files and _MANIFEST.json
    DIR/tokenizer/tokenizer.json (+ its config files)    the tokenizer the build read, byte for byte
    DIR/run_config.json                                  pinned inputs, tokenizer, split rule, options
    DIR/stats.json                                       exact counts by source and split
    DIR/preview/{train,validation}.parquet               the first documents, for the Hub's viewer (formats/preview.py)
    DIR/pictures/{lengths,sources}-<split>.svg           the card's charts (cards/pictures.py)
    DIR/README.md                                        dataset card
    DIR/COMPLETE.json                                    written last: every other file, size, SHA-256

A receipt (``receipts/part-000000.json``)::

    {"part": "part-000000",
     "input_shard": {"path": "data/train-00000.parquet", "size": N, "sha256": "<hex>"},
     "splits": {"train": {"documents": N, "text_tokens": N, "eod_tokens": N, "text_bytes": N}},
     "sources": {"web": {"train": {"documents": N, ...}}, ...},   only when the corpus has a source column
     "files": [{"path": "shards/train/part-000000.bin", "size": N, "sha256": "<hex>"}, ...]}

``sources`` holds the same counts per source name (sorted; at most
``MAX_SOURCES``; each under the splits it has documents in), and they add up,
count by count, to ``splits``: a receipt whose sources do not, or that counts a
source with no document, is refused when it is made and when it is read.

``COMPLETE.json``::

    {"format": "hf_tokbin.release/1", "files": [{"path": ..., "size": N, "sha256": ...}, ...]}

with files sorted by path. The release is complete only when ``COMPLETE.json``
is present. A path with a component starting with "." (``.work/``,
``.NAME.tmp``, ``.cache/``) is no part of a release (:func:`is_release_path`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from .._io import canonical_json, read_json, write_text_atomic
from ..errors import FormatError, VerificationError
from .records import FileEntry, check_keys, is_count, naming, require
from .rules import FOLDER_NAME_RULE, MAX_SOURCES, SOURCE_NAME_RULE, is_folder_name, is_source_name

FORMAT = "hf_tokbin.release/1"
COMPLETE_NAME = "COMPLETE.json"
RUN_CONFIG_NAME = "run_config.json"
STATS_NAME = "stats.json"
CARD_NAME = "README.md"
SHARDS_DIR = "shards"
RECEIPTS_DIR = "receipts"
TOKENS_DIR = "tokens"
WORK_DIR = ".work"  # a build's unpublished work under the output; never part of the release
TOKENIZER_DIR = "tokenizer"  # the release's own tokenizer: the files the build read, byte for byte
TOKENIZER_FILE = "tokenizer.json"
# What tokenizer/ may hold: tokenizer.json and the config files a build reads beside it (tokenizer.resolve).
TOKENIZER_FILES = (TOKENIZER_FILE, "generation_config.json", "tokenizer_config.json", "special_tokens_map.json")
# The most bytes a tokenizer's files may be before any is read (a Hub listing, a shipped tokenizer/): the largest
# public tokenizer.json files are tens of MB; a config file is a small record.
TOKENIZER_MAX_BYTES = 512 * 1024 * 1024
CONFIG_MAX_BYTES = 16 * 1024 * 1024
SPLITS = ("train", "validation")
FORMATS = ("llmc", "megatron")  # the output formats, in their canonical order
STATS_FORMAT = "hf_tokbin.stats/1"
PREVIEW_DIR = "preview"  # the Parquet preview (formats/preview.py)
PICTURES_DIR = "pictures"  # the card's SVG charts (cards/pictures.py)
LLMC_SPLIT = {"train": "train", "validation": "val"}  # the llm.c layout names the validation split "val"


def part_name(index: int) -> str:
    return f"part-{index:06d}"


def pair_path(split: str, part: str, suffix: str) -> str:
    """``shards/<split>/<part>.<suffix>``, relative to the release root."""
    return f"{SHARDS_DIR}/{split}/{part}.{suffix}"


def receipt_path(part: str) -> str:
    return f"{RECEIPTS_DIR}/{part}.json"


@dataclass(frozen=True)
class SplitCounts:
    documents: int
    text_tokens: int
    eod_tokens: int
    text_bytes: int = 0  # UTF-8 bytes of the documents' text, for bytes/token
    bos_tokens: int = 0  # one per Megatron document with --bos; recorded only when there are any

    def __post_init__(self):
        for name in ("documents", "text_tokens", "eod_tokens", "text_bytes", "bos_tokens"):
            require(is_count(getattr(self, name)), None, f"{name} must be a non-negative integer", getattr(self, name))

    @property
    def total_tokens(self) -> int:
        return self.text_tokens + self.eod_tokens + self.bos_tokens

    def to_dict(self) -> dict:
        counts = {
            "documents": self.documents,
            "text_tokens": self.text_tokens,
            "eod_tokens": self.eod_tokens,
            "text_bytes": self.text_bytes,
        }
        if self.bos_tokens:  # a release without BOS keeps the Megatron release layout's keys exactly
            counts = {
                "documents": self.documents,
                "text_tokens": self.text_tokens,
                "bos_tokens": self.bos_tokens,
                "eod_tokens": self.eod_tokens,
                "text_bytes": self.text_bytes,
            }
        return counts

    def stats_dict(self) -> dict:
        """The counts as ``stats.json`` shows them: :meth:`to_dict` plus ``total_tokens``."""
        return {**self.to_dict(), "total_tokens": self.total_tokens}


def counts_table(counts: dict[str, SplitCounts], label: str = "split") -> list[str]:
    """The lines of a table of counts by split, as the build's summary and ``hf-tokbin info`` both show it.

    ``text tokens`` are the documents' own ids; ``EOD`` and ``BOS`` the
    Megatron boundary tokens counted in ``stats.json`` (``total`` is their sum).
    Each row is labelled by its key (``info`` labels rows "source  split", heading them ``label``).
    """
    bos = any(c.bos_tokens for c in counts.values())
    width = max([11, len(label) + 1, *(len(key) + 1 for key in counts)])
    head = (
        f"{label:<{width}}{'documents':>12}{'text tokens':>15}{'EOD':>12}"
        + (f"{'BOS':>12}" if bos else "")
        + f"{'total tokens':>15}{'bytes/token':>13}"
    )
    lines = [head]
    for key, c in counts.items():
        per_token = c.text_bytes / c.text_tokens if c.text_tokens else 0.0
        lines.append(
            f"{key:<{width}}{c.documents:>12,}{c.text_tokens:>15,}{c.eod_tokens:>12,}"
            + (f"{c.bos_tokens:>12,}" if bos else "")
            + f"{c.total_tokens:>15,}{per_token:>13.3f}"
        )
    return lines


def megabytes(size: int) -> str:
    """A size for people: ``12,345 bytes`` below a megabyte (never ``0.0 MB``), else ``12.3 MB``."""
    return f"{size:,} bytes" if size < 1_000_000 else f"{size / 1e6:,.1f} MB"


def summed(counts: Iterable[SplitCounts]) -> SplitCounts:
    """Every :class:`SplitCounts` field summed."""
    counts = list(counts)
    return SplitCounts(**{f.name: sum(getattr(c, f.name) for c in counts) for f in fields(SplitCounts)})


def split_totals(receipts: Iterable[Receipt]) -> dict[str, SplitCounts]:
    """Every :class:`SplitCounts` field summed over the receipts, per split (in ``SPLITS`` order, only splits present).
    """
    receipts = list(receipts)
    totals = {}
    for split in SPLITS:
        parts = [r.splits[split] for r in receipts if split in r.splits]
        if parts:
            totals[split] = summed(parts)
    return totals


def check_sources_add_up(splits: dict[str, SplitCounts], sources, where) -> None:
    """Counts per source (``{SOURCE: {SPLIT: SplitCounts}}``) must name
    valid sources and add up to ``splits``, count by count (nothing lost).
    """
    require(
        isinstance(sources, dict) and len(sources) <= MAX_SOURCES,
        where,
        f"sources must map at most {MAX_SOURCES:,} source names to counts by split",
        type(sources).__name__ if not isinstance(sources, dict) else f"{len(sources):,} sources",
    )
    for name, by_split in sources.items():
        require(is_source_name(name), where, f"a source name must be {SOURCE_NAME_RULE}", name)
        require(
            isinstance(by_split, dict)
            and bool(by_split)
            and all(s in splits and isinstance(c, SplitCounts) for s, c in by_split.items()),
            where,
            f"sources.{name} must count documents of the splits present",
            list(by_split) if isinstance(by_split, dict) else by_split,
        )
        # a source is counted where it has documents, never as zeros
        empty = [s for s, c in by_split.items() if not c.documents]
        require(not empty, where, f"sources.{name} must count at least one document in each split it names", empty)
    for split, total in splits.items():
        added = summed(by_split[split] for by_split in sources.values() if split in by_split)
        if added != total:
            field = next(f.name for f in fields(SplitCounts) if getattr(added, f.name) != getattr(total, f.name))
            raise FormatError(
                where,
                f"the sources' {split} {field} must add up to the split's (nothing lost)",
                expected=getattr(total, field),
                got=getattr(added, field),
            )


def source_totals(receipts: Sequence[Receipt], where=None) -> dict[str, dict[str, SplitCounts]] | None:
    """The receipts' counts per source, summed: ``{SOURCE: {SPLIT:
    SplitCounts}}`` sorted by name; None if no receipt counts sources.

    Every receipt must count its sources once one does, and the sums must add up to :func:`split_totals`.
    """
    if all(r.sources is None for r in receipts):
        return None
    missing = [r.part for r in receipts if r.sources is None]
    require(
        not missing,
        where,
        "every receipt counts its documents by source, or none does",
        f"no sources in {', '.join(missing[:3])}",
    )
    # one pass over the receipts: O(their entries), not sources x parts
    gathered: dict[str, dict[str, list[SplitCounts]]] = {}
    for r in receipts:
        for name, by_split in r.sources.items():
            for split, counts in by_split.items():
                gathered.setdefault(name, {}).setdefault(split, []).append(counts)
    totals = {
        name: {split: summed(gathered[name][split]) for split in SPLITS if split in gathered[name]}
        for name in sorted(gathered)
    }
    check_sources_add_up(split_totals(receipts), totals, where)
    return totals


def stats_record(
    dataset: str, tokenizer_id: str, receipts: Sequence[Receipt], where=None, mixture: dict | None = None
) -> dict:
    """``stats.json``: the receipts' exact counts per split, per source and per part.

    ::

        {"format": "hf_tokbin.stats/1", "dataset": NAME, "tokenizer_id": ID,
         "splits":  {SPLIT: COUNTS, ...},
         "sources": {SOURCE: {SPLIT: COUNTS, ...}},
         "parts":   {"part-NNNNNN": {SPLIT: COUNTS}, ...},
         "mixture": MIXTURE}                 only for a mixture (:func:`mixture_record`)

    where COUNTS is :meth:`SplitCounts.stats_dict`. ``sources`` counts each
    source name of the corpus's source column, summed over the receipts and
    checked to add up to ``splits`` (:func:`source_totals`; ``where`` names
    the place in that error); a corpus without one is one source, the
    dataset. The build writes it and ``hf-tokbin verify`` recomputes it from
    the receipts.
    """
    splits = {split: c.stats_dict() for split, c in split_totals(receipts).items()}
    by_source = source_totals(receipts, where)
    sources = (
        {dataset: splits}
        if by_source is None
        else {name: {s: c.stats_dict() for s, c in by_split.items()} for name, by_split in by_source.items()}
    )
    return {
        "format": STATS_FORMAT,
        "dataset": dataset,
        "tokenizer_id": tokenizer_id,
        "splits": splits,
        "sources": sources,
        "parts": {r.part: {split: c.stats_dict() for split, c in r.splits.items()} for r in receipts},
        **({"mixture": mixture} if mixture is not None else {}),
    }


def mixture_record(spec, total: int, targets: Sequence[int], available: dict, taken: dict | None) -> dict:
    """``stats.json``'s ``mixture`` (:mod:`hf_tokbin.formats.mixture`): the train total ``T`` and, per source in
    ``--mix`` order, its share and target, what its train parts hold and what the llm.c train files took::

        {"split": "train", "tokens": T, "max_epochs": E,
         "sources": {NAME: {"target_share": S, "target_tokens": N,
                            "available": {"documents": N, "tokens": N},
                            "llmc": null | {"documents": N, "tokens": N, "share": S, "epochs": X}}}}

    Tokens are the llm.c stream's (text, separator and BOS); ``share`` is the source's part of the llm.c train
    files' tokens, ``epochs`` its tokens there over its ``available`` tokens. ``llmc`` is null without llm.c files.
    """
    whole = sum(t for _, t in taken.values()) if taken is not None else 0
    sources = {}
    for name, share, target in zip(spec.names, spec.shares, targets):
        (documents, tokens), held = available[name], taken[name] if taken is not None else None
        sources[name] = {
            "target_share": float(share),
            "target_tokens": target,
            "available": {"documents": documents, "tokens": tokens},
            "llmc": None
            if held is None
            else {
                "documents": held[0],
                "tokens": held[1],
                "share": held[1] / whole if whole else 0.0,
                "epochs": held[1] / tokens if tokens else 0.0,
            },
        }
    return {"split": "train", "tokens": total, "max_epochs": spec.max_epochs, "sources": sources}


@dataclass(frozen=True)
class Stats:
    """What ``stats.json`` (:func:`stats_record`) says: the counts
    per split and per source, read back as :class:`SplitCounts`.

    ``dataset`` and ``tokenizer_id`` are None in a record that has only counts (hand-made ones; the build writes both).
    """

    splits: dict[str, SplitCounts]
    sources: dict[str, dict[str, SplitCounts]]
    dataset: str | None = None
    tokenizer_id: str | None = None

    def __post_init__(self):
        for name in ("dataset", "tokenizer_id"):  # printed by info and the card: no control characters
            value = getattr(self, name)
            require(value is None or is_folder_name(value), None, f"{name} must be {FOLDER_NAME_RULE}", value)

    @classmethod
    def read(cls, path: str | os.PathLike) -> Stats:
        obj = read_json(path, FormatError)
        require(
            isinstance(obj, dict) and isinstance(obj.get("splits"), dict),
            path,
            "splits must be an object of counts by split",
        )
        sources = obj.get("sources", {})
        require(
            isinstance(sources, dict) and all(isinstance(v, dict) for v in sources.values()),
            path,
            "sources must be an object of counts by split, per source",
        )
        with naming(path):
            return cls(
                _stats_counts(path, obj["splits"], "splits"),
                {name: _stats_counts(path, v, f"sources.{name}") for name, v in sources.items()},
                obj.get("dataset"),
                obj.get("tokenizer_id"),
            )


def _stats_counts(path, obj: dict, where: str) -> dict[str, SplitCounts]:
    """``{SPLIT: COUNTS}`` of stats.json, each COUNTS :meth:`SplitCounts.stats_dict`'s keys, its total their sum."""
    counts = {}
    for split, c in obj.items():
        keys = ["documents", "text_tokens", "eod_tokens", "text_bytes", "total_tokens"]
        check_keys(
            c, keys + ["bos_tokens"] if isinstance(c, dict) and "bos_tokens" in c else keys, path, f"{where}.{split}"
        )
        with naming(path, f"{where}.{split}: "):
            counts[split] = SplitCounts(**{k: v for k, v in c.items() if k != "total_tokens"})
        require(
            counts[split].total_tokens == c["total_tokens"],
            path,
            f"{where}.{split}.total_tokens must be the sum of the tokens",
            c["total_tokens"],
        )
    return counts


@dataclass(frozen=True)
class Receipt:
    part: str
    input_shard: FileEntry
    splits: dict[str, SplitCounts]
    files: tuple[FileEntry, ...]
    # per source name and split: a corpus with a source column
    sources: dict[str, dict[str, SplitCounts]] | None = None

    def __post_init__(self):
        require(
            isinstance(self.part, str) and re.fullmatch(r"part-[0-9]{6}", self.part) is not None,
            None,
            "part must be part-NNNNNN",
            self.part,
        )
        require(
            isinstance(self.splits, dict) and len(self.splits) > 0,
            None,
            "splits must name the split of the input shard",
            self.splits,
        )
        require(all(s in SPLITS for s in self.splits), None, f"splits must be among {SPLITS}", list(self.splits))
        if self.sources is not None:
            check_sources_add_up(self.splits, self.sources, None)

    def to_json(self) -> str:
        record = {
            "part": self.part,
            "input_shard": self.input_shard.to_dict(),
            "splits": {s: self.splits[s].to_dict() for s in SPLITS if s in self.splits},
        }
        if self.sources is not None:  # only with a source column: receipts of other builds keep their bytes
            record["sources"] = {
                name: {s: by_split[s].to_dict() for s in SPLITS if s in by_split}
                for name, by_split in sorted(self.sources.items())
            }
        return canonical_json({**record, "files": [f.to_dict() for f in self.files]})

    def write(self, root: str | os.PathLike) -> Path:
        path = Path(root) / receipt_path(self.part)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, self.to_json())
        return path

    @classmethod
    def read(cls, path: str | os.PathLike) -> Receipt:
        obj = read_json(path, FormatError)
        check_keys(
            obj,
            [
                "part",
                "input_shard",
                "splits",
                *(["sources"] if isinstance(obj, dict) and "sources" in obj else []),
                "files",
            ],
            path,
            "receipt",
        )
        # an empty {} must not pass for an empty list
        for key, kind in (("splits", dict), ("sources", dict), ("files", list)):
            if key in obj and not isinstance(obj[key], kind):
                raise FormatError(
                    path,
                    f"receipt {key} must be a {'JSON object' if kind is dict else 'list'}",
                    got=type(obj[key]).__name__,
                )
        try:
            with naming(path):
                splits = _receipt_counts(obj["splits"], path, "splits")
                sources = (
                    {
                        name: _receipt_counts(by_split, path, f"sources.{name}")
                        for name, by_split in obj["sources"].items()
                    }
                    if "sources" in obj
                    else None
                )
                files = tuple(FileEntry.from_dict(f, path, f"files[{i}]") for i, f in enumerate(obj["files"]))
                receipt = cls(
                    obj["part"], FileEntry.from_dict(obj["input_shard"], path, "input_shard"), splits, files, sources
                )
        except (AttributeError, TypeError) as e:
            raise FormatError(path, "receipt fields have the wrong types", got=str(e)) from None
        if Path(path).name != f"{receipt.part}.json":
            raise FormatError(
                path, "receipt file name must match its part", expected=f"{receipt.part}.json", got=Path(path).name
            )
        return receipt


def _receipt_counts(obj, path, where: str) -> dict[str, SplitCounts]:
    """``{SPLIT: COUNTS}`` of a receipt, each COUNTS :meth:`SplitCounts.to_dict`'s keys."""
    if not isinstance(obj, dict):
        raise FormatError(path, f"{where} must be a JSON object of counts by split", got=type(obj).__name__)
    counts = {}
    for name, c in obj.items():
        keys = ["documents", "text_tokens", "eod_tokens", "text_bytes"]
        check_keys(
            c, keys + ["bos_tokens"] if isinstance(c, dict) and "bos_tokens" in c else keys, path, f"{where}.{name}"
        )
        counts[name] = SplitCounts(**c)
    return counts


@dataclass(frozen=True)
class Complete:
    """``COMPLETE.json``: every file of the release but itself, sorted by path."""

    files: tuple[FileEntry, ...]

    def __post_init__(self):
        paths = [f.path for f in self.files]
        require(paths == sorted(set(paths)), None, "files must be sorted by path, each once", paths[:5])
        require(COMPLETE_NAME not in paths, None, "COMPLETE.json cannot list itself")

    def to_json(self) -> str:
        return canonical_json({"format": FORMAT, "files": [f.to_dict() for f in self.files]})

    def write(self, root: str | os.PathLike) -> Path:
        path = Path(root) / COMPLETE_NAME
        write_text_atomic(path, self.to_json())
        return path

    @classmethod
    def read(cls, path: str | os.PathLike) -> Complete:
        path = Path(path)
        if path.is_dir():
            path = path / COMPLETE_NAME
        obj = read_json(path, FormatError)
        check_keys(obj, ["format", "files"], path, "COMPLETE.json")
        if obj["format"] != FORMAT:
            raise FormatError(path, "unknown release format", expected=FORMAT, got=obj["format"])
        if not isinstance(obj["files"], list):
            raise FormatError(path, "files must be a list", got=type(obj["files"]).__name__)
        files = tuple(FileEntry.from_dict(f, path, f"files[{i}]") for i, f in enumerate(obj["files"]))
        try:
            return cls(files)
        except FormatError as e:
            raise FormatError(path, e.rule, got=e.got) from None


PARTIAL_NAME = "PARTIAL.json"  # a partial copy's record (hf-tokbin pull --include), in place of COMPLETE.json
PARTIAL_FORMAT = "hf_tokbin.partial/1"


def read_partial(root: str | os.PathLike) -> tuple[Complete, tuple[FileEntry, ...]]:
    """A partial copy's ``PARTIAL.json``: the release's whole ``COMPLETE.json`` listing and the entries the copy holds.

    ::

        {"format": "hf_tokbin.partial/1", "repo", "commit", "path_in_repo", "record": "COMPLETE.json",
         "include": [SPEC, ...], "files": [ENTRY, ...],     the files the copy holds, as COMPLETE.json lists them
         "complete": [ENTRY, ...]}                          every file COMPLETE.json lists
    """
    path = Path(root) / PARTIAL_NAME
    obj = read_json(path, FormatError)
    check_keys(
        obj,
        ["format", "repo", "commit", "path_in_repo", "record", "include", "files", "complete"],
        path,
        "PARTIAL.json",
    )
    if obj["format"] != PARTIAL_FORMAT:
        raise FormatError(path, "format must be " + PARTIAL_FORMAT, got=obj["format"])
    for key in ("files", "complete"):
        if not isinstance(obj[key], list):
            raise FormatError(path, f"{key} must be a list", got=type(obj[key]).__name__)
    complete = Complete(tuple(FileEntry.from_dict(f, path, f"complete[{i}]") for i, f in enumerate(obj["complete"])))
    listed = {f.path: f for f in complete.files}
    held = tuple(FileEntry.from_dict(f, path, f"files[{i}]") for i, f in enumerate(obj["files"]))
    for entry in held:
        if listed.get(entry.path) != entry:
            raise FormatError(
                path, "a held file must be listed, with the same size and SHA-256, in complete", got=entry.path
            )
    return complete, held


# The release layout: the only paths COMPLETE.json may list (verify) and a pull may write (hub.layout).
_LAYOUT_PATH = re.compile(
    rf"{SHARDS_DIR}/(?:{'|'.join(SPLITS)})/part-[0-9]{{6,}}\.(?:bin|idx)"
    rf"|{RECEIPTS_DIR}/part-[0-9]{{6,}}\.json"
    # tokens/<tokenizer_id>/<dataset>/<file>: verify checks the folder's exact files
    rf"|{TOKENS_DIR}/[^/]+/[^/]+/[^/]+"
    rf"|{TOKENIZER_DIR}/(?:{'|'.join(map(re.escape, TOKENIZER_FILES))})"
    rf"|{PREVIEW_DIR}/(?:{'|'.join(SPLITS)})\.parquet"
    rf"|{PICTURES_DIR}/(?:lengths|sources)-(?:{'|'.join(SPLITS)})\.svg"
    rf"|{re.escape(RUN_CONFIG_NAME)}|{re.escape(STATS_NAME)}|{re.escape(CARD_NAME)}"
)
LAYOUT_DESCRIPTION = (
    "shards/{train,validation}/part-N.{bin,idx}, receipts/part-N.json, tokens/<tokenizer_id>/<dataset>/<file>, "
    "tokenizer/{tokenizer.json,generation_config.json,tokenizer_config.json,special_tokens_map.json}, "
    "preview/{train,validation}.parquet, pictures/{lengths,sources}-{train,validation}.svg, run_config.json, "
    "stats.json, README.md"
)


def is_layout_path(rel) -> bool:
    """Whether ``rel`` is a path of the release layout (:data:`LAYOUT_DESCRIPTION`), as plain relative names.

    The one rule for what a release holds: ``verify`` refuses a ``COMPLETE.json``
    listing anything else (``~/t.txt``, a name holding a newline, ``notes.txt``),
    and a pull writes nothing else.
    """
    return (
        isinstance(rel, str) and _LAYOUT_PATH.fullmatch(rel) is not None and all(map(is_folder_name, rel.split("/")))
    )


def is_release_path(rel: str) -> bool:
    """Whether the relative posix path ``rel`` names a file of a release.

    It does unless one of its components starts with ".": the build's
    ``.work/`` folder, temporary ``.NAME.tmp`` files and the ``.cache/`` that
    ``hf download --local-dir`` leaves are no part of a release.
    ``COMPLETE.json`` itself is the caller's to handle.
    """
    return not any(part.startswith(".") for part in rel.split("/"))


def list_release_paths(root: str | os.PathLike) -> list[str]:
    """The sorted relative posix paths of the files of the release at ``root``, ``COMPLETE.json`` excluded.

    A release holds regular files only: a symlink (to a file or a folder) or any
    other kind of file inside it is refused, never followed, so nothing outside
    the folder can be listed, verified or published as part of it.
    """
    root = Path(root)
    paths = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]  # never descend into .work/ or .cache/
        base = Path(folder).relative_to(root)
        for name in [*dirs, *files]:
            rel = (base / name).as_posix()
            if rel == COMPLETE_NAME or not is_release_path(rel):
                continue
            path = root / rel
            if path.is_symlink() or not (path.is_dir() if name in dirs else path.is_file()):
                raise VerificationError(
                    path,
                    "a release holds only regular files and folders",
                    got="a symlink" if path.is_symlink() else "another kind of file",
                )
            if name in files:
                paths.append(rel)
    return sorted(paths)


def mixture_line(mixture: dict) -> str:
    """One line: what each source got of a mixture's train tokens against its target (stats.json's ``mixture``)."""
    parts = []
    for name, source in mixture["sources"].items():
        held = source["llmc"]
        got = f"{held['share']:.1%} ({held['epochs']:.2f} epochs)" if held is not None else "blend only"
        parts.append(f"{name} {got}, target {source['target_share']:.1%}")
    return f"mixture of {mixture['tokens']:,} train tokens (llm.c files): " + "; ".join(parts)
