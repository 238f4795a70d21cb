"""Small corpora and releases for the build, verify and Hub tests.

``write_corpus`` lays out a corpus folder exactly as ``hf-tokbin corpus``
does (``_MANIFEST.json`` + ``data/<split>-NNNNN.parquet``) from lists of
texts, so build tests can choose shard boundaries precisely.
"""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from hf_tokbin._io import sha256_file
from hf_tokbin.formats.corpus_manifest import CorpusManifest, CorpusShard

WORDS = (
    "the a cat dog Lily Tom Ben Mia park ball tree sun happy sad big small little red blue went saw "
    "played ran jumped said wanted to with and but then one day was were is are 0 1 2 42 1999 "
    "café naïve über 日本 語 😀 ,  . ! ? ' \" \n"
).split(" ")


def story(rng: random.Random, max_words: int = 80) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, max_words))).strip() or "x"


def stories(n: int, seed: int = 0, max_words: int = 80) -> list[str]:
    rng = random.Random(seed)
    return [story(rng, max_words) for _ in range(n)]


def write_corpus(
    root: Path, shards: list[tuple[str, list[str]]], name: str = "toy", split_rule: str = "files"
) -> Path:
    """A corpus folder whose shard i holds ``shards[i] = (split, texts)``."""
    root = Path(root)
    (root / "data").mkdir(parents=True, exist_ok=True)
    entries = []
    counters = {"train": 0, "validation": 0}
    for split, texts in shards:
        rel = f"data/{split}-{counters[split]:05d}.parquet"
        counters[split] += 1
        path = root / rel
        table = pa.table({"text": pa.array(texts, pa.string()), "split": pa.array([split] * len(texts), pa.string())})
        pq.write_table(table, path)
        entries.append(CorpusShard(rel, split, len(texts), path.stat().st_size, sha256_file(path)))
    CorpusManifest(name, split_rule, (), tuple(entries)).write(root)
    return root


SOURCES = ("web", "books", "wiki/fa")


def source_rows(n: int, seed: int = 0) -> list[dict]:
    """JSONL-ready rows with ``text``, ``src`` (a source name)
    and ``split``; ``books`` never in validation, one empty text.
    """
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        split = "validation" if i % 7 == 3 else "train"
        source = rng.choice(SOURCES[::2] if split == "validation" else SOURCES)
        rows.append({"text": "" if i == 5 else story(rng, 40), "src": source, "split": split})
    return rows


def counts_by_source(rows: list[dict], tokenizer_json: Path | None, source_key: str = "src") -> dict:
    """stats.json's ``sources`` computed from the input rows alone:
    ``tokenizers``' ids (or UTF-8 bytes with None), one EOD each.

    Empty texts are no documents (both importers drop them).
    """
    encode = (lambda text: len(text.encode("utf-8"))) if tokenizer_json is None else _token_counter(tokenizer_json)
    sources: dict = {}
    for row in rows:
        if not row["text"]:
            continue
        counts = sources.setdefault(row[source_key], {}).setdefault(
            row["split"], dict.fromkeys(("documents", "text_tokens", "eod_tokens", "text_bytes", "total_tokens"), 0)
        )
        tokens = encode(row["text"])
        counts["documents"] += 1
        counts["text_tokens"] += tokens
        counts["eod_tokens"] += 1
        counts["text_bytes"] += len(row["text"].encode("utf-8"))
        counts["total_tokens"] += tokens + 1
    return sources


def _token_counter(tokenizer_json: Path):
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_json))
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)


def build_with_sources(root: Path, rows: list[dict]) -> Path:
    """A release (byte tokenizer, EOD 0) of JSONL ``rows`` built with ``build --corpus FILE --source-column src``."""
    import json

    from hf_tokbin.cli import main

    root.mkdir(parents=True, exist_ok=True)
    jsonl = root / "rows.jsonl"
    jsonl.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    out = root / "release"
    assert (
        main(
            [
                "build",
                "--corpus",
                str(jsonl),
                "--source-column",
                "src",
                "--tokenizer",
                "byte",
                "--doc-sep",
                "0",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    return out


def build_release(root: Path, name: str = "toy", tokenizer_id: str | None = None) -> Path:
    """A small real release (llm.c + Megatron, 3 parts: two train, one validation) that ``hf-tokbin verify`` accepts.
    """
    from hf_tokbin.cli import main

    root = Path(root)
    corpus = write_corpus(
        root / "corpus",
        [("train", stories(30, 1)), ("train", stories(30, 2)), ("validation", stories(10, 3))],
        name=name,
    )
    out = root / "release"
    ids = ["--tokenizer-id", tokenizer_id] if tokenizer_id else []
    if (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                "byte",
                *ids,
                "--doc-sep-id",
                "0",
                "--out",
                str(out),
                "--num-proc",
                "1",
                "--quiet",
            ]
        )
        != 0
    ):
        raise RuntimeError("fixture build failed")
    return out
