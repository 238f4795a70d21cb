"""Training a byte-level BPE on the first characters of a corpus (seed 002): deterministic, special tokens first, then the 256 bytes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from .._io import canonical_json, write_text_atomic
from ..errors import TokenizerError
from .resolve import EOS_TOKEN, GENERATION_CONFIG_FILE, TOKENIZER_FILE


def sample_texts(texts: Iterable[str], max_chars: int) -> Iterable[str]:
    """The first ``max_chars`` characters of ``texts``, document by document (the last one cut)."""
    remaining = max_chars
    for text in texts:
        if remaining <= 0:
            return
        yield text[:remaining]
        remaining -= min(len(text), remaining)


def train_bpe(texts: Iterable[str], vocab_size: int, out: str | os.PathLike, special_tokens: tuple[str, ...] = (EOS_TOKEN,)) -> Path:
    """Train a byte-level BPE with ``tokenizers`` and write ``tokenizer.json`` + ``generation_config.json``.

    Special tokens take the first ids, then the 256 byte symbols, then the
    merges. The first special token is the document separator.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    minimum = len(special_tokens) + 256
    if vocab_size <= minimum:
        raise TokenizerError(out, "vocab_size too small for a byte-level BPE", expected=f"> {minimum}", got=vocab_size)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=True,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / TOKENIZER_FILE, tokenizer.to_str(pretty=True))
    eos_id = tokenizer.token_to_id(special_tokens[0])
    write_text_atomic(out / GENERATION_CONFIG_FILE, canonical_json({"eos_token_id": eos_id}))
    return out / TOKENIZER_FILE
