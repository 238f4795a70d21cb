"""What a path holds, by its bytes: a token file's magic, a JSON record's ``format`` key.

Two formats share the file name ``_MANIFEST.json`` (a corpus's and an llm.c
token folder's), so nothing here dispatches on a name alone.

====================  =====================================================
kind                  recognised by
====================  =====================================================
``llmc-file``         a ``.bin`` whose header[0] is an llm.c magic (:data:`llmc.MAGICS`)
``megatron-pair``     an ``.idx``, or a ``.bin`` with an ``.idx`` beside it, or a prefix ``P`` with a ``P.idx``
``release``           a folder holding ``run_config.json``, ``COMPLETE.json`` or ``stats.json``
``corpus``            a folder whose ``_MANIFEST.json`` has ``"format": "hf_tokbin.corpus/1"``
``llmc-folder``       a folder whose ``_MANIFEST.json`` is an llm.c tokens manifest (no ``format`` key)
``merge``             a folder whose ``MERGED.json`` has ``"format": "hf_tokbin.megatron_merge/1"``
====================  =====================================================
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ..errors import FormatError
from . import corpus_manifest, llmc, megatron, merged
from .release import COMPLETE_NAME, RUN_CONFIG_NAME, STATS_NAME

KINDS = ("llmc-file", "megatron-pair", "release", "corpus", "llmc-folder", "merge")
_MAX_MANIFEST_SNIFF = 1 << 26  # bytes: a manifest larger than this is read by its own reader, not sniffed


def file_magic(path: str | os.PathLike) -> int | None:
    """header[0] of a token file as a little-endian int32, or None for a file under 4 bytes."""
    with open(path, "rb") as file:
        head = file.read(4)
    return int(np.frombuffer(head, "<i4")[0]) if len(head) == 4 else None


def json_format(path: str | os.PathLike) -> str | None:
    """The ``format`` key of a JSON object file, or None (no such key, not an object, or not JSON)."""
    path = Path(path)
    if path.stat().st_size > _MAX_MANIFEST_SNIFF:
        return None
    try:
        obj = json.loads(path.read_bytes())
    except (ValueError, RecursionError):
        return None
    value = obj.get("format") if isinstance(obj, dict) else None
    return value if isinstance(value, str) else None


def sniff(path: str | os.PathLike) -> str:
    """The kind of ``path`` (one of :data:`KINDS`), or a :class:`FormatError` saying what it is not."""
    path = Path(path)
    if not path.exists():
        if megatron.idx_path_for_prefix(path).is_file():  # a pair named by its prefix, as Megatron's own paths are
            return "megatron-pair"
        raise FormatError(path, "no such file or folder")
    if path.is_dir():
        if any((path / name).exists() for name in (RUN_CONFIG_NAME, COMPLETE_NAME, STATS_NAME)):
            return "release"
        if (path / merged.MERGED_NAME).is_file() and json_format(path / merged.MERGED_NAME) == merged.MERGE_FORMAT:
            return "merge"
        manifest = path / llmc.MANIFEST_NAME
        if manifest.is_file():
            return "corpus" if json_format(manifest) == corpus_manifest.FORMAT else "llmc-folder"
        raise FormatError(
            path,
            "not a release, corpus or token folder",
            expected=f"{RUN_CONFIG_NAME}, {COMPLETE_NAME}, {STATS_NAME} or {llmc.MANIFEST_NAME} inside",
        )
    if path.suffix not in (".idx", ".bin"):
        raise FormatError(
            path,
            "not a token file",
            expected="an llm.c .bin, a Megatron .idx/.bin, or a folder",
            got=path.suffix or "no suffix",
        )
    # Opening a named pipe or a device would block or read forever: a token file is a regular file.
    for half in (path, megatron.idx_path_for(path), megatron.bin_path_for(path)):
        if half.exists() and not half.is_file():
            raise FormatError(
                half, "not a regular file", expected="a token file (a named pipe, device or folder is not read)"
            )
    if path.suffix == ".idx":
        return "megatron-pair"
    if file_magic(path) in llmc.MAGICS:
        return "llmc-file"
    if megatron.idx_path_for(path).exists():
        return "megatron-pair"
    # Neither an llm.c header nor a pair: the llm.c reader reports its wrong magic.
    return "llmc-file"
