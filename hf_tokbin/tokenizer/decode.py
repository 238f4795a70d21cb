"""The decoder of a release's own tokenizer, for ``hf-tokbin show``: the one ``run_config.json`` pins."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import TokenizerError
from ..formats.release import RUN_CONFIG_NAME
from ..formats.run_config import RunConfig
from .resolve import BYTE, resolve_tokenizer


def _byte_decode(ids) -> str:
    return bytes(ids).decode("utf-8", errors="replace")


def release_decoder(root: Path, config: RunConfig, tokenizer=None):
    """``decode(ids) -> str`` with the tokenizer the release pins; ``tokenizer`` (a path) must be that one (SHA-256)."""
    record = config.tokenizer or {}
    if tokenizer is None and record.get("source") == BYTE:
        return _byte_decode
    held = root / "tokenizer" / "tokenizer.json"  # the copy a release holds (built since the tokenizer/ folder)
    if tokenizer is None and held.is_file():
        tokenizer = held
    if tokenizer is None:
        if record.get("source") in (None, "local"):
            raise TokenizerError(
                root / RUN_CONFIG_NAME,
                "this release was built with a local tokenizer.json, which it does not hold",
                hint=f"give --tokenizer PATH (its SHA-256 is {config.tokenizer_sha256})",
            )
        info = resolve_tokenizer(record["source"], revision=record.get("revision"), subfolder=record.get("subfolder"))
    else:
        info = resolve_tokenizer(os.fspath(tokenizer))
    if info.sha256 != config.tokenizer_sha256:
        raise TokenizerError(
            info.path or info.source,
            "not the tokenizer this release was built with (SHA-256)",
            expected=config.tokenizer_sha256,
            got=info.sha256,
        )
    if info.path is None:
        return _byte_decode
    from tokenizers import Tokenizer

    engine = Tokenizer.from_file(info.path)
    return lambda ids: engine.decode(list(ids), skip_special_tokens=False)
