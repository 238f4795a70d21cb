"""The value rules that several records and stages share, each one function (or table) written once.

A record calls them from ``__post_init__``, a stage before it acts; each
caller raises its own error (the file and flag it knows). The one id range
check of every writer, reader and the encoder is :mod:`hf_tokbin.formats.ids`.
``tests/test_architecture.py`` fails when one of these rules is written again
elsewhere.
"""

from __future__ import annotations

import re
import unicodedata

# A split as given (a split column, a Hub repo's split, a file's name) -> the Megatron release layout's name;
# the llm.c layout says "val".
SPLIT_NAMES = {"train": "train", "validation": "validation", "val": "validation"}
FOLDER_NAME_RULE = (
    "one folder name: not empty, printable, no '/' or '\\', not starting with '.', no white space at either end"
)
UINT16_VOCAB_LIMIT = 65_536  # ids 0..65,535 fit 16 bits; a larger vocabulary needs 32-bit ids


def split_name(value) -> str | None:
    """The Megatron release layout's name (``train`` or ``validation``) of a split
    given as ``train``, ``validation`` or ``val``; else None.
    """
    return SPLIT_NAMES.get(value) if isinstance(value, str) else None


def is_repo_id(value) -> bool:
    """A Hub repo id ``NAMESPACE/NAME``: two non-empty parts, neither hidden (so neither "." nor "..")."""
    if not isinstance(value, str) or _REPO_ID_CHARACTERS.fullmatch(value) is None:
        return False
    parts = value.split("/")
    return len(parts) == 2 and all(part and not part.startswith(".") for part in parts)


# The Hub's characters for a repo id (huggingface_hub's
# validate_repo_id: word characters, "-" and ".", at most 96 a part),
# ASCII only: a repo id is printed in cards, commands and recipe lines.
_REPO_ID_CHARACTERS = re.compile(r"[A-Za-z0-9_.-]{1,96}/[A-Za-z0-9_.-]{1,96}")


def is_folder_name(value) -> bool:
    """One folder (or file) name: not empty, not hidden (so not "." or ".."), printable (no newline,
    NUL, escape or bidi control), no '/' or '\\', no white space at either end."""
    return (
        isinstance(value, str)
        and value != ""
        and value.strip() == value
        and not value.startswith(".")
        and value.isprintable()
        and "/" not in value
        and "\\" not in value
    )


def fits_uint16(vocab_size: int) -> bool:
    """Whether every id of ``vocab_size`` fits 16 bits (llm.c version 1, Megatron dtype code 8)."""
    return vocab_size <= UINT16_VOCAB_LIMIT


def id_dtype(vocab_size: int) -> str:
    """The narrowest unsigned width (a numpy dtype name) holding
    every id of ``vocab_size``: uint16, or uint32 above 65,536.
    """
    return "uint16" if fits_uint16(vocab_size) else "uint32"


# A source name (a corpus's source column): it becomes a key of receipts and stats.json and a cell of the card's table.
MAX_SOURCE_NAME_CHARS = 200
MAX_SOURCES = 10_000  # distinct sources a build counts: its counters, receipts and stats.json grow with them
_SOURCE_NAME_EXCLUDED = "`|\\<>"  # they would break the card's code spans, table cells or HTML
SOURCE_NAME_RULE = (
    f"a printable name of 1 to {MAX_SOURCE_NAME_CHARS} characters in Unicode NFC (é "
    "one code point, not e + U+0301), no white space at either end, none of ` | \\ < >"
)


def is_source_name(value) -> bool:
    """A source name: printable (no newline, NUL, escape or bidi
    control), 1..200 characters, trimmed, no markup characters.

    In NFC: names counted apart must not read the same (an NFD ``café`` from a file name beside a typed one).
    """
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_SOURCE_NAME_CHARS
        and value.strip() == value
        and value.isprintable()
        and not any(c in _SOURCE_NAME_EXCLUDED for c in value)
        and unicodedata.is_normalized("NFC", value)
    )


COMMIT_ID = re.compile(r"[0-9a-f]{40}")


def is_commit_id(value) -> bool:
    """A git commit id as the Hub gives it: exactly 40 lowercase hex digits (the only revision recorded as pinned)."""
    return isinstance(value, str) and COMMIT_ID.fullmatch(value) is not None  # fullmatch: "$" would let "\n" through
