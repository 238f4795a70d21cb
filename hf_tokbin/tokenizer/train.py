"""Training a byte-level BPE on the first characters of a corpus: deterministic, special tokens first, then the 256
bytes.

The TinyStories rules train it this way (``<|bos|>,<|eos|>`` as the special tokens).

The output folder holds what a build (and ``transformers``) reads to name the
boundary tokens: ``tokenizer.json``, ``tokenizer_config.json`` (``bos_token``,
``eos_token``) and ``generation_config.json`` (``bos_token_id``,
``eos_token_id``).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Iterable, Iterator

from .._io import canonical_json, write_text_atomic
from ..errors import TokenizerError
from ..formats.tokenizer_configs import GENERATION_CONFIG_FILE, TOKENIZER_CONFIG_FILE
from .resolve import EOS_TOKEN, TOKENIZER_FILE

# The largest --vocab-size trained: tokenizers' BpeTrainer reserves ~66 bytes per entry up front and aborts the
# process (SIGABRT, no exception) when that fails (2**31 - 1 asks for 141 GB). 2**24 (~1.1 GB) is 64 times the
# largest published vocabulary (262,144) and fits every output format (llm.c uint32, Megatron int32).
MAX_TRAIN_VOCAB = 2**24


def check_training_options(
    out, vocab_size: int, special_tokens: tuple[str, ...], sample_chars: int | None = None
) -> None:
    """``--vocab-size`` in [256 bytes + the special tokens, MAX_TRAIN_VOCAB], ``--sample-chars`` positive: checked
    before any work."""
    minimum = len(special_tokens) + 256
    if not isinstance(vocab_size, int) or not minimum <= vocab_size <= MAX_TRAIN_VOCAB:
        raise TokenizerError(
            out,
            "--vocab-size must hold the 256 bytes and the special tokens, "
            "and be at most the bound tokenizers can allocate",
            expected=f"{minimum:,}..{MAX_TRAIN_VOCAB:,}",
            got=vocab_size,
        )
    if sample_chars is not None and (not isinstance(sample_chars, int) or sample_chars <= 0):
        raise TokenizerError(
            out,
            "--sample-chars must be a positive number of characters (0 or less trains on nothing)",
            got=sample_chars,
        )


def sample_texts(texts: Iterable[str], max_chars: int) -> Iterable[str]:
    """The first ``max_chars`` characters of ``texts``, document by document (the last one cut)."""
    remaining = max_chars
    for text in texts:
        if remaining <= 0:
            return
        yield text[:remaining]
        remaining -= min(len(text), remaining)


def corpus_texts(corpus, split: str, batch_rows: int = 1024) -> Iterator[str]:
    """The texts of ``corpus``'s ``split`` (a resolved corpus, :class:`~hf_tokbin.corpus.source.CorpusSource`), in
    corpus order, shard by shard: each shard's size and SHA-256 checked against the corpus manifest first (a Hub
    shard is fetched when reached; a shard past the last text taken is never read)."""
    from ..corpus.source import check_shard_file
    from ..formats.corpus_manifest import CorpusManifest
    from ..formats.corpus_shard import iter_shard_texts

    manifest = CorpusManifest.read(corpus.root)
    with tempfile.TemporaryDirectory(prefix="hf_tokbin-train-", ignore_cleanup_errors=True) as scratch:
        for shard in (s for s in manifest.shards if s.split == split):
            with corpus.shards.local_path(shard, Path(scratch)) as path:
                check_shard_file(shard, path)
                where = corpus.shards.location(shard)
                for _, texts in iter_shard_texts(path, where, batch_rows):  # checked: strings, no null, UTF-8
                    yield from texts.to_pylist()


def check_special_tokens(
    out, special_tokens: tuple[str, ...], bos_token: str | None, eos_token: str | None
) -> tuple[str, str]:
    """The (bos, eos) tokens: by default the first and the last special token (both ``<|endoftext|>`` for GPT-2's
    one)."""
    if (
        not special_tokens
        or any(not isinstance(t, str) or not t for t in special_tokens)
        or len(set(special_tokens)) != len(special_tokens)
    ):
        raise TokenizerError(out, "special tokens must be distinct non-empty strings", got=list(special_tokens))
    bos_token = special_tokens[0] if bos_token is None else bos_token
    eos_token = special_tokens[-1] if eos_token is None else eos_token
    for name, token in (("bos token", bos_token), ("eos token", eos_token)):
        if token not in special_tokens:
            raise TokenizerError(
                out, f"the {name} must be one of the special tokens", expected=list(special_tokens), got=token
            )
    return bos_token, eos_token


def check_output_folder(out, overwrite: bool) -> None:
    """Refuse to write into an existing folder that holds anything, unless ``overwrite``."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise TokenizerError(out, "--out must be a folder", got="a file")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise TokenizerError(
            out, "output folder is not empty", hint="use a new --out, or --overwrite to replace its tokenizer files"
        )


def train_bpe(
    texts: Iterable[str],
    vocab_size: int,
    out: str | os.PathLike,
    special_tokens: tuple[str, ...] = (EOS_TOKEN,),
    *,
    bos_token: str | None = None,
    eos_token: str | None = None,
    overwrite: bool = False,
    progress: bool = True,
) -> Path:
    """Train a byte-level BPE with ``tokenizers``; write ``tokenizer.json``, ``tokenizer_config.json`` and
    ``generation_config.json``.

    Special tokens take the first ids, in order, then the 256 byte symbols, then
    the merges. ``eos_token`` (default: the last special token) is the
    document separator a build finds; ``bos_token`` (default: the first) is
    recorded for ``--bos``, which a build uses only when asked.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    special_tokens = tuple(special_tokens)
    bos_token, eos_token = check_special_tokens(out, special_tokens, bos_token, eos_token)
    check_output_folder(out, overwrite)
    check_training_options(out, vocab_size, special_tokens)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=progress,
    )
    with _stdout_to_stderr() if progress else contextlib.nullcontext():
        tokenizer.train_from_iterator(texts, trainer=trainer)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / TOKENIZER_FILE, tokenizer.to_str(pretty=True))
    write_text_atomic(
        out / TOKENIZER_CONFIG_FILE,
        canonical_json({"bos_token": bos_token, "eos_token": eos_token, "tokenizer_class": "PreTrainedTokenizerFast"}),
    )
    ids = {"bos_token_id": tokenizer.token_to_id(bos_token), "eos_token_id": tokenizer.token_to_id(eos_token)}
    write_text_atomic(out / GENERATION_CONFIG_FILE, canonical_json(ids))
    return out / TOKENIZER_FILE


@contextlib.contextmanager
def _stdout_to_stderr():
    """Send this process's stdout (file descriptor 1) to stderr for a while.

    ``tokenizers``' trainer ends each of its progress bars with a newline written
    to the process's stdout: three blank lines before the command's one line.
    They go to stderr, with the bars. A process without a stdout is left as it is.
    """
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
