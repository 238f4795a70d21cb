"""Token-level release fixtures for the reader and compatibility tests.

They lay out what a build writes (``tokens/<tokenizer_id>/<dataset>/`` with a
``_MANIFEST.json``, ``shards/<split>/part-NNNNNN.{bin,idx}``, ``run_config.json``)
straight from lists of documents, with the real writers, so a test chooses
file boundaries and ids exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from hf_tokbin.formats import llmc, megatron

SHA = "0" * 64


def flat(docs: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    ids = np.array([t for d in docs for t in d], dtype=np.int64)
    return ids, np.array([len(d) for d in docs], dtype=np.int64)


def write_llmc_folder(
    folder: Path,
    splits: dict[str, list[list[int]]],
    vocab_size: int,
    doc_sep_id: int | None,
    max_tokens: int = llmc.DEFAULT_MAX_TOKENS,
    writer=llmc.LlmcWriter,
) -> Path:
    """An llm.c token folder: each split's documents through ``writer``, then ``_MANIFEST.json``."""
    entries = []
    for split, docs in splits.items():
        w = writer(folder, split, vocab_size, doc_sep_id, max_tokens)
        w.add_documents(*flat(docs))
        entries += w.close()
    llmc.TokensManifest("tok", SHA, vocab_size, doc_sep_id, "toy", "v1", SHA, tuple(entries)).write(folder)
    return folder


def write_pairs(folder: Path, parts: list[list[list[int]]], vocab_size: int, eod_id: int | None) -> list[Path]:
    """One Megatron pair per entry of ``parts`` (its documents), named ``part-NNNNNN``."""
    paths = []
    for i, docs in enumerate(parts):
        with megatron.MegatronWriter(folder / f"part-{i:06d}.bin", vocab_size, eod_id) as w:
            w.add_documents(*flat(docs))
            paths.append(w.close().idx_path)
    return paths


def write_release(
    root: Path,
    train: list[list[list[int]]],
    validation: list[list[list[int]]],
    vocab_size: int,
    sep: int | None,
    max_tokens: int = llmc.DEFAULT_MAX_TOKENS,
    llmc_writer=llmc.LlmcWriter,
) -> Path:
    """A release: train/validation parts as Megatron pairs and llm.c files, and run_config.json's ids."""
    all_train = [d for part in train for d in part]
    all_val = [d for part in validation for d in part]
    splits = {"train": all_train, "val": all_val} if all_val else {"train": all_train}
    write_llmc_folder(root / "tokens" / "tok" / "toy", splits, vocab_size, sep, max_tokens, llmc_writer)
    for split, parts in (("train", train), ("validation", validation)):
        if parts:
            folder = root / "shards" / split
            folder.mkdir(parents=True)
            write_pairs(folder, parts, vocab_size, sep)
    (root / "run_config.json").write_text(json.dumps(release_run_config(vocab_size, sep)))
    return root


def release_run_config(vocab_size: int, sep: int | None) -> dict:
    """A valid run_config.json for these files (no corpus shards: the consumer checks read the ids only)."""
    from hf_tokbin.formats.build_options import BuildOptions
    from hf_tokbin.formats.run_config import BoundaryToken, run_config_record

    formats = ("llmc", "megatron") if sep is not None else ("llmc",)
    return run_config_record(
        dataset="toy",
        version="v1",
        corpus={"manifest_sha256": SHA, "shards": []},
        tokenizer={"tokenizer_id": "tok", "sha256": SHA, "vocab_size": vocab_size},
        doc_sep=BoundaryToken(sep, None, "--doc-sep", True) if sep is not None else None,
        bos=None,
        split_rule={"name": "files", "text": ""},
        options=BuildOptions(formats=formats),
        versions={},
    )


def docs_of(
    rng: np.random.Generator, n: int, vocab_size: int, low: int = 1, high: int = 20, avoid: int | None = None
) -> list[list[int]]:
    """``n`` random documents of ``low..high-1`` ids, none equal to ``avoid`` (the separator)."""
    docs = []
    for _ in range(n):
        ids = rng.integers(0, vocab_size, int(rng.integers(low, high)))
        if avoid is not None:
            ids[ids == avoid] = (avoid + 1) % vocab_size
        docs.append(ids.tolist())
    return docs
