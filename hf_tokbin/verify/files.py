"""Verification of token files, Megatron pairs and whole releases.

:func:`verify_path` accepts what ``hf-tokbin verify`` accepts and returns a
one-paragraph report; any broken rule raises a :class:`~hf_tokbin.errors.TokbinError`
naming the file.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..formats import llmc, megatron
from ..formats.sniff import file_magic, sniff

__all__ = ["file_magic", "verify_path", "verify_path_record", "verify_token_file"]


def verify_token_file(path: str | os.PathLike) -> str:
    """Check one llm.c token file or Megatron pair completely; one line saying what it holds."""
    path = Path(path)
    if sniff(path) == "llmc-file":
        header = llmc.verify_token_file(path)
        layout = header.layout
        vocab = f"vocab_size {header.vocab_size}" if layout.vocab_in_header else "no vocab_size field"
        return (f"{path}: OK: llm.c {layout.family} layout (magic {layout.magic}, version {layout.version}, "
                f"{layout.dtype.name}), {header.n_tokens:,} tokens, {vocab}")
    pair = megatron.MegatronPair(path)
    pair.check_ids()  # a bare pair names no vocabulary: at least no id is negative
    return f"{path}: OK: Megatron pair, {len(pair):,} sequences, {pair.n_tokens:,} tokens, dtype {pair.dtype.name}"


def verify_path(
    path: str | os.PathLike, engine: str = "local", num_proc: int = 1, ray_address: str | None = None
) -> str:
    """``hf-tokbin verify PATH``: whatever ``path`` holds (:func:`hf_tokbin.formats.sniff.sniff`), checked completely.

    A release's per-file checks run on ``engine`` (see :func:`hf_tokbin.verify.release.verify_release`).
    """
    return verify_path_record(path, engine, num_proc, ray_address)[0]


def verify_path_record(
    path: str | os.PathLike, engine: str = "local", num_proc: int = 1, ray_address: str | None = None
) -> tuple[str, dict]:
    """:func:`verify_path`'s report, and the same as a record (``verify --json``)."""
    from .release import verify_release

    path = Path(path)
    kind = sniff(path)
    if kind == "release":
        if num_proc < 1:
            from ..errors import VerificationError

            raise VerificationError(path, "--num-proc must be at least 1", got=num_proc)
        report = verify_release(os.path.abspath(path) if engine == "ray" else path, engine, num_proc, ray_address)
        return report.summary(), report.record()
    from .info import fields_of

    text = _verify_other(path, kind)
    return text, {"path": str(path), "ok": True, "kind": kind, **fields_of(path, kind)}


def _verify_other(path: Path, kind: str) -> str:
    from .release import verify_llmc_folder

    if kind == "llmc-folder":
        manifest = verify_llmc_folder(path)
        tokens = sum(f.n_tokens for f in manifest.files)
        return (f"{path}: OK: llm.c token folder, {len(manifest.files)} files, {tokens:,} tokens, "
                f"vocab_size {manifest.vocab_size}")
    if kind == "corpus":
        from .corpus import verify_corpus

        return verify_corpus(path)
    if kind == "merge":
        from .merged import verify_merged

        return verify_merged(path)[0]
    return verify_token_file(path)
