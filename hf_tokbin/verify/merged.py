"""``hf-tokbin verify DIR`` of a merge folder: each pair as ``MERGED.json`` lists it, every byte read."""

from __future__ import annotations

import os
from pathlib import Path

from .._io import counted
from ..errors import VerificationError
from ..formats.megatron import MegatronPair
from ..formats.merged import MERGED_NAME, MergedSplit, read_merged
from .checks import check_files


def verify_merged(folder: str | os.PathLike) -> tuple[str, list[MergedSplit]]:
    """Check every pair of a merge folder (size and SHA-256 as listed, a readable pair, its counts); a summary line."""
    folder = Path(folder)
    splits = read_merged(folder)
    check_files(folder, [file for split in splits for file in split.files], MERGED_NAME, progress=False)
    for split in splits:
        pair = MegatronPair(folder / split.files[1].path)
        pair.check_ids()
        if (len(pair), pair.n_tokens) != (split.documents, split.tokens):
            got = f"{counted(len(pair), 'document')}, {pair.n_tokens:,} tokens"
            rule = f"counts differ from {MERGED_NAME}"
            raise VerificationError(pair.idx_path, rule, expected=_counts(split), got=got)
    held = "; ".join(f"{split.name}: {_counts(split)}" for split in splits)
    return f"{folder}: OK: merged Megatron pairs, one per split ({held})", splits


def _counts(split: MergedSplit) -> str:
    return f"{counted(split.documents, 'document')}, {split.tokens:,} tokens"
