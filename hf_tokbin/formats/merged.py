"""A merge folder's record, ``MERGED.json`` (``hf-tokbin merge``): what each merged Megatron pair holds.

The folder holds one pair per split, ``<split>.bin``/``<split>.idx``, and
``MERGED.json``, written last::

    {"format": "hf_tokbin.megatron_merge/1",
     "release": {"complete_sha256": "<hex>", "eod_id": N},
     "splits": {"<split>": {"files": [<split>.bin entry, <split>.idx entry], "documents": N, "tokens": N,
                            "parts": [...]}}}

Each file entry is ``{"path", "size", "sha256"}``. The ``parts`` tie each
document back to its input shard (:mod:`hf_tokbin.pipeline.merge`); this
reader checks the counts and files a verify needs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .._io import read_json
from ..errors import FormatError
from .records import FileEntry, checked_field, is_count

MERGE_FORMAT = "hf_tokbin.megatron_merge/1"
MERGED_NAME = "MERGED.json"


@dataclass(frozen=True)
class MergedSplit:
    """One merged pair: its split name, its two files (``.bin`` then ``.idx``), its documents and tokens."""

    name: str
    files: tuple[FileEntry, FileEntry]
    documents: int
    tokens: int


def read_merged(folder: str | os.PathLike) -> list[MergedSplit]:
    """The splits ``folder/MERGED.json`` lists, each checked for its shape: two files named after the split, counts."""
    path = Path(folder) / MERGED_NAME
    record = read_json(path, FormatError)
    if record.get("format") != MERGE_FORMAT:
        raise FormatError(path, "not a merge record", expected=f'"format": "{MERGE_FORMAT}"', got=record.get("format"))
    splits = checked_field(path, record, "splits", lambda v: isinstance(v, dict) and bool(v), "an object of splits")
    return [_merged_split(path, name, entry) for name, entry in splits.items()]


def _merged_split(path: Path, name: str, entry) -> MergedSplit:
    where = f"splits.{name}."
    expected_paths = [f"{name}.bin", f"{name}.idx"]
    files = checked_field(path, entry, "files", lambda v: isinstance(v, list) and len(v) == 2, "two entries", where)
    entries = tuple(FileEntry.from_dict(obj, path, f"{where}files") for obj in files)
    if [e.path for e in entries] != expected_paths:
        got = [e.path for e in entries]
        raise FormatError(path, f"{where}files must be the split's pair", expected=expected_paths, got=got)
    documents = checked_field(path, entry, "documents", is_count, "a non-negative integer", where)
    tokens = checked_field(path, entry, "tokens", is_count, "a non-negative integer", where)
    return MergedSplit(name, entries, documents, tokens)
