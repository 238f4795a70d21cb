"""Tokenizers: loading one, its identity, and training a byte-level BPE (seed 002).

A tokenizer is named by ``--tokenizer``:

- ``byte``: 256 entries, id = byte value, no document separator;
- a ``tokenizer.json`` file or a folder holding one (``generation_config.json``
  beside it gives the separator, its ``eos_token_id``);
- a Hub repo id ``NS/NAME`` (optionally with ``subfolder`` and a pinned
  ``revision``), fetched with ``huggingface_hub`` (the local cache serves it
  under ``HF_HUB_OFFLINE=1``).

Its identity, recorded wherever ids are written, is a :class:`TokenizerInfo`:
``tokenizer_id``, the SHA-256 of ``tokenizer.json``, ``vocab_size``, the
separator id and, for the Hub, the resolved revision.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath

from .._io import canonical_json, sha256_bytes, sha256_file
from ..errors import TokenizerError

BYTE = "byte"
BYTE_VOCAB_SIZE = 256
# The byte tokenizer has no tokenizer.json; this canonical description stands in for it.
BYTE_DESCRIPTION = canonical_json({"model": "byte", "vocab_size": BYTE_VOCAB_SIZE})
TOKENIZER_FILE = "tokenizer.json"
GENERATION_CONFIG_FILE = "generation_config.json"
EOS_TOKEN = "<|endoftext|>"


@dataclass(frozen=True)
class TokenizerInfo:
    """Everything that pins a tokenizer. ``path`` is local and never written to reproducible files."""

    tokenizer_id: str
    sha256: str
    vocab_size: int
    doc_sep_id: int | None
    source: str  # "byte", "local" or the Hub repo id
    revision: str | None
    subfolder: str | None
    path: str | None  # the local tokenizer.json (None for byte)

    def to_record(self) -> dict:
        """The identity as run_config.json records it (no local path)."""
        record = asdict(self)
        del record["path"]
        return record


def resolve_tokenizer(
    name: str,
    tokenizer_id: str | None = None,
    doc_sep_id: int | None = None,
    revision: str | None = None,
    subfolder: str | None = None,
) -> TokenizerInfo:
    """Find the tokenizer ``name`` refers to and pin its identity."""
    if name == BYTE:
        if doc_sep_id is not None and not 0 <= doc_sep_id < BYTE_VOCAB_SIZE:
            raise TokenizerError(name, "doc_sep_id must be a valid id", expected=f"0 <= id < {BYTE_VOCAB_SIZE}", got=doc_sep_id)
        return TokenizerInfo(tokenizer_id or BYTE, sha256_bytes(BYTE_DESCRIPTION.encode()), BYTE_VOCAB_SIZE, doc_sep_id, BYTE, None, None, None)
    path = Path(name)
    if path.exists():
        json_path = path / TOKENIZER_FILE if path.is_dir() else path
        if not json_path.is_file():
            raise TokenizerError(path, f"no {TOKENIZER_FILE} in this folder")
        # Absolute ("." and "tokenizer.json" have no folder name of their own) but not resolved:
        # a symlink (as in a Hub cache snapshot) is named after the folder it sits in, not its target's.
        default_id = Path(os.path.abspath(json_path)).parent.name
        source, resolved_revision = "local", None
    elif _looks_like_repo_id(name):
        json_path, resolved_revision = _download_from_hub(name, revision, subfolder)
        default_id = name.split("/")[-1]
        source = name
    else:
        raise TokenizerError(name, "tokenizer not found", expected="'byte', a tokenizer.json, a folder holding one, or a Hub repo id NS/NAME")
    tokenizer = load_tokenizer_json(json_path)
    vocab_size = vocab_size_of(tokenizer)
    if doc_sep_id is None:
        doc_sep_id = read_eos_token_id(json_path.parent / GENERATION_CONFIG_FILE)
    if doc_sep_id is not None and not 0 <= doc_sep_id < vocab_size:
        raise TokenizerError(json_path, "document separator must be a valid id", expected=f"0 <= id < {vocab_size}", got=doc_sep_id)
    return TokenizerInfo(
        tokenizer_id or default_id,
        sha256_file(json_path),
        vocab_size,
        doc_sep_id,
        source,
        resolved_revision,
        subfolder,
        os.fspath(Path(json_path).resolve()),
    )


def load_tokenizer_json(path: str | os.PathLike):
    """A ``tokenizers.Tokenizer`` from ``path``, or a :class:`TokenizerError` naming the file."""
    from tokenizers import Tokenizer

    try:
        return Tokenizer.from_file(os.fspath(path))
    except Exception as e:  # tokenizers raises a bare Exception on malformed files
        raise TokenizerError(path, "cannot load tokenizer.json", got=str(e).splitlines()[0][:200]) from e


def vocab_size_of(tokenizer) -> int:
    """The size of the id space: largest id + 1, over the model's vocabulary and the added tokens.

    Not ``get_vocab_size()``, which counts entries: a vocabulary with a gap
    (50,257 entries whose largest id is 65,636) needs ids up to 65,636, and the
    id width of every output file follows from this number.
    """
    ids = tokenizer.get_vocab(with_added_tokens=True).values()
    return max(ids, default=-1) + 1


def read_eos_token_id(path: Path) -> int | None:
    """``eos_token_id`` of a ``generation_config.json``, or None when there is no such file or key."""
    if not path.is_file():
        return None
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise TokenizerError(path, "not valid JSON", got=str(e)) from e
    eos = config.get("eos_token_id") if isinstance(config, dict) else None
    if isinstance(eos, list):
        if not eos:
            raise TokenizerError(path, "eos_token_id is an empty list; give the separator with --doc-sep-id", got=eos)
        if len(set(eos)) != 1:
            raise TokenizerError(path, "eos_token_id lists several ids; choose the separator with --doc-sep-id", got=eos)
        eos = eos[0]
    if eos is not None and (not isinstance(eos, int) or isinstance(eos, bool)):
        raise TokenizerError(path, "eos_token_id must be an integer", got=eos)
    return eos


def _looks_like_repo_id(name: str) -> bool:
    parts = name.split("/")
    return len(parts) == 2 and all(parts) and not name.startswith((".", "/"))


def _download_from_hub(repo_id: str, revision: str | None, subfolder: str | None) -> tuple[Path, str]:
    """Fetch tokenizer.json (and generation_config.json if any) at a pinned revision.

    Returns the local tokenizer.json and the commit id it was read at.
    """
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    from ..hub.retry import fetch_error

    subfolder = subfolder.strip("/") if subfolder else None
    folder = f"{subfolder}/" if subfolder else ""
    try:
        json_path = Path(hf_hub_download(repo_id, TOKENIZER_FILE, subfolder=subfolder, revision=revision))
    except Exception as e:
        raise fetch_error(f"{repo_id}@{revision or 'main'}/{folder}{TOKENIZER_FILE}", "tokenizer", e) from e
    # The cache's snapshot folder is named after the commit: that is the pinned revision.
    commit = json_path.parents[len(PurePosixPath(folder + TOKENIZER_FILE).parts) - 1].name
    try:
        # At the same commit, so a branch that moves in between cannot mix two versions.
        hf_hub_download(repo_id, GENERATION_CONFIG_FILE, subfolder=subfolder, revision=commit)
    except EntryNotFoundError:
        pass  # no generation_config.json: the separator comes from --doc-sep-id, if any
    except Exception as e:
        # Never go on without the separator because of a failed fetch: that would build other ids.
        raise fetch_error(f"{repo_id}@{commit}/{folder}{GENERATION_CONFIG_FILE}", "generation config", e) from e
    return json_path, commit


# ---------------------------------------------------------------- training
