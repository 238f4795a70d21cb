"""Tokenizers: resolving ``--tokenizer`` (:mod:`.resolve`), training a BPE (:mod:`.train`), encoding (:mod:`.encoder`).

The names below load their module on first use: a build's worker imports :mod:`.encoder` and :mod:`.info`
without the Hub code that :mod:`.resolve` fetches with.
"""

_LAZY = {
    "BYTE": "info",
    "BYTE_VOCAB_SIZE": "resolve",
    "EOS_TOKEN": "info",
    "GENERATION_CONFIG_FILE": "_configs",
    "TOKENIZER_CONFIG_FILE": "_configs",
    "TOKENIZER_FILE": "info",
    "BoundaryToken": "resolve",
    "TokenizerInfo": "info",
    "load_tokenizer_json": "info",
    "read_eos_token_id": "resolve",
    "resolve_tokenizer": "resolve",
    "token_or_id": "resolve",
    "sample_texts": "train",
    "train_bpe": "train",
}


def __getattr__(name: str):
    import importlib

    if name in _LAZY:
        module = _LAZY[name]
        if module == "_configs":  # the config files' names, defined with their rules in formats
            return getattr(importlib.import_module("..formats.tokenizer_configs", __name__), name)
        return getattr(importlib.import_module(f".{module}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(_LAZY)
