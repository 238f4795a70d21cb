"""A tokenizer's config files beside its ``tokenizer.json``, and the document separator they name.

The files, in the order they are read for the separator:

- ``generation_config.json``: ``eos_token_id``, an id (or a list of one id, repeated);
- ``tokenizer_config.json``: ``eos_token``, a token string or ``{"content": TOKEN}``
  (``transformers`` writes an ``AddedToken`` so);
- ``special_tokens_map.json``: ``eos_token``, the same.

The first file that names one gives the separator. A build reads each file
once (:func:`read_config_files`): the bytes it reads the separator from are
the bytes its release ships in ``tokenizer/``, with their SHA-256 in
``run_config.json``'s ``tokenizer.config_files``. ``verify`` reads the shipped
files by the same rule (:func:`named_separator`) and checks that they name the
separator ``run_config.json`` records.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from .._io import parse_json, read_record_bytes
from .release import CONFIG_MAX_BYTES

GENERATION_CONFIG_FILE = "generation_config.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
SPECIAL_TOKENS_MAP_FILE = "special_tokens_map.json"
CONFIG_FILES = (
    GENERATION_CONFIG_FILE,
    TOKENIZER_CONFIG_FILE,
    SPECIAL_TOKENS_MAP_FILE,
)  # read for the separator, in order
# Where a separator came from (BoundaryToken.source), as run_config.json records it.
FROM_GENERATION_CONFIG = f"{GENERATION_CONFIG_FILE} eos_token_id"
FROM_TOKENIZER_CONFIG = f"{TOKENIZER_CONFIG_FILE} eos_token"
FROM_SPECIAL_TOKENS_MAP = f"{SPECIAL_TOKENS_MAP_FILE} eos_token"
FROM_CONFIG_FILE = {GENERATION_CONFIG_FILE: FROM_GENERATION_CONFIG, TOKENIZER_CONFIG_FILE: FROM_TOKENIZER_CONFIG,
                    SPECIAL_TOKENS_MAP_FILE: FROM_SPECIAL_TOKENS_MAP}


@dataclass(frozen=True)
class ConfigFile:
    """One config file as it was read: its name beside tokenizer.json and its bytes."""

    path: Path  # where it was read (named in errors; never recorded)
    data: bytes = field(repr=False)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


@dataclass(frozen=True)
class NamedSeparator:
    """The separator a config file names: an id (``eos_token_id``) or a token string (``eos_token``)."""

    value: int | str
    source: str  # FROM_GENERATION_CONFIG, ...
    path: Path


def read_config_files(folder: Path, error_type) -> tuple[ConfigFile, ...]:
    """The config files present in ``folder``, each read once (a regular file of at most CONFIG_MAX_BYTES)."""
    return tuple(read_config_file(folder / name, error_type) for name in CONFIG_FILES if (folder / name).is_file())


def read_config_file(path: Path, error_type) -> ConfigFile:
    return ConfigFile(Path(path), read_record_bytes(path, error_type, CONFIG_MAX_BYTES))


def named_separator(files: tuple[ConfigFile, ...], error_type) -> NamedSeparator | None:
    """The separator the first of ``files`` (by CONFIG_FILES' order) that names one names; None if none does."""
    by_name = {f.name: f for f in files}
    for name in CONFIG_FILES:
        if name not in by_name:
            continue
        file = by_name[name]
        read = eos_token_id if name == GENERATION_CONFIG_FILE else eos_token
        value = read(file, error_type)
        if value is not None:
            return NamedSeparator(value, FROM_CONFIG_FILE[name], file.path)
    return None


def eos_token_id(file: ConfigFile, error_type) -> int | None:
    """``eos_token_id`` of a ``generation_config.json``, or None when it has no such key."""
    path, eos = file.path, parse_json(file.data, file.path, error_type, free_text=True).get("eos_token_id")
    if isinstance(eos, list):
        if not eos:
            raise error_type(
                path, "eos_token_id is an empty list; give the separator with --doc-sep TOKEN_OR_ID", got=eos
            )
        if len(set(map(repr, eos))) != 1:
            raise error_type(
                path, "eos_token_id lists several ids; choose the separator with --doc-sep TOKEN_OR_ID", got=eos
            )
        eos = eos[0]
    if eos is not None and (not isinstance(eos, int) or isinstance(eos, bool)):
        raise error_type(path, "eos_token_id must be an integer", got=eos)
    return eos


def eos_token(file: ConfigFile, error_type) -> str | None:
    """``eos_token`` of a ``tokenizer_config.json`` or ``special_tokens_map.json``; None when it has no such key."""
    config = parse_json(file.data, file.path, error_type, free_text=True)
    eos = config.get("eos_token")
    if isinstance(eos, dict):  # transformers writes an AddedToken as {"__type": "AddedToken", "content": ...}
        eos = eos.get("content")
    if eos is not None and (not isinstance(eos, str) or not eos):
        raise error_type(
            file.path, 'eos_token must be a token string or {"content": TOKEN}', got=config.get("eos_token")
        )
    return eos
