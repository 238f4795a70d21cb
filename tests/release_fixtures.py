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


def write_corpus(root: Path, shards: list[tuple[str, list[str]]], name: str = "toy", split_rule: str = "files") -> Path:
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
