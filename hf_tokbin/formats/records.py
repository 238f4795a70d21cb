"""Frozen, validated records shared by the JSON files of corpora and releases.

Each record checks its fields on construction (``__post_init__``) and on
load (``from_dict``), so a hand-edited or truncated JSON file is rejected
with the file and field named. JSON is written with :func:`canonical_json`:
equal records give byte-identical files.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

from ..errors import FormatError, VerificationError

_SHA256 = re.compile(r"[0-9a-f]{64}")


def require(condition: bool, path, rule: str, got=None) -> None:
    """Raise a :class:`FormatError` naming ``path`` and ``rule`` unless ``condition``."""
    if not condition:
        raise FormatError(path, rule, got=got)


@contextmanager
def naming(path, where: str = ""):
    """A record's own check, raised on construction without a path,
    re-raised naming the file it was read from (and ``where``).
    """
    try:
        yield
    except FormatError as e:
        if e.path is not None:
            raise
        raise FormatError(path, where + e.rule, expected=e.expected, got=e.got) from None


def is_sha256(value) -> bool:
    # fullmatch: "$" would let a final newline through
    return isinstance(value, str) and bool(_SHA256.fullmatch(value))


def is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def checked_field(path, obj, name: str, ok: Callable, rule: str, prefix: str = ""):
    """The field ``name`` of ``obj`` ("a.b" is ``obj["a"]["b"]``),
    which must satisfy ``ok``; errors say ``prefix + name``.
    """
    value = obj
    for key in name.split("."):
        if not isinstance(value, dict) or key not in value:
            raise VerificationError(path, f"{prefix}{name} is missing")
        value = value[key]
    if not ok(value):
        raise VerificationError(path, f"{prefix}{name} must be {rule}", got=value)
    return value


def check_keys(obj, keys: list[str], path, where: str) -> None:
    if not isinstance(obj, dict):
        raise FormatError(path, f"{where} must be a JSON object", got=type(obj).__name__)
    if sorted(obj) != sorted(keys):
        raise FormatError(path, f"{where} keys", expected=keys, got=list(obj))


@dataclass(frozen=True)
class FileEntry:
    """A file of a release or corpus: its path relative to the root, size and SHA-256."""

    path: str
    size: int
    sha256: str

    def __post_init__(self):
        require(
            isinstance(self.path, str)
            and self.path
            and not os.path.isabs(self.path)
            and ".." not in self.path.split("/"),
            None,
            "file path must be relative, inside the folder",
            self.path,
        )
        require(is_count(self.size), None, "file size must be a non-negative integer", self.size)
        require(is_sha256(self.sha256), None, "sha256 must be 64 lowercase hex digits", self.sha256)

    def to_dict(self) -> dict:
        return {"path": self.path, "size": self.size, "sha256": self.sha256}

    @classmethod
    def from_dict(cls, obj, path=None, where: str = "file") -> "FileEntry":
        check_keys(obj, ["path", "size", "sha256"], path, where)
        try:
            return cls(**obj)
        except FormatError as e:
            raise FormatError(path, f"{where}: {e.rule}", got=e.got) from None
