"""Tokenizers: resolving ``--tokenizer`` (:mod:`.resolve`), training a BPE (:mod:`.train`), encoding (:mod:`.encoder`)."""

from ..formats.tokenizer_configs import GENERATION_CONFIG_FILE, TOKENIZER_CONFIG_FILE
from .resolve import (
    BYTE,
    BYTE_VOCAB_SIZE,
    EOS_TOKEN,
    TOKENIZER_FILE,
    BoundaryToken,
    TokenizerInfo,
    load_tokenizer_json,
    read_eos_token_id,
    resolve_tokenizer,
    token_or_id,
)
from .train import sample_texts, train_bpe

__all__ = [
    "BYTE",
    "BYTE_VOCAB_SIZE",
    "EOS_TOKEN",
    "GENERATION_CONFIG_FILE",
    "TOKENIZER_CONFIG_FILE",
    "TOKENIZER_FILE",
    "BoundaryToken",
    "TokenizerInfo",
    "load_tokenizer_json",
    "read_eos_token_id",
    "resolve_tokenizer",
    "token_or_id",
    "sample_texts",
    "train_bpe",
]
