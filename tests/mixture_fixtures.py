"""Three small corpora for mixture builds: two languages and code, of uneven sizes, each with validation shards.

Every document starts with its source's letter (``E`` English, ``F`` French, ``C`` code), so a test reading
the byte tokenizer's llm.c files (ids = UTF-8 bytes, separator 0) knows each document's source from its first id.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
from release_fixtures import write_corpus

from hf_tokbin.formats import llmc

ENGLISH = "the cat sat on a mat and then ran away quickly to see the sun over the hill".split()
FRENCH = "le chat est assis sur le tapis puis il court vite voir le soleil sur la colline".split()
MARKERS = {"en": "E", "fr": "F", "code": "C"}
SIZES = {"en": 1200, "fr": 360, "code": 150}  # train documents; about one in ten more are validation
SEPARATOR = 0  # --doc-sep 0: no text holds a NUL


def document(rng: random.Random, source: str) -> str:
    if source == "code":
        lines = [f"def f{rng.randint(0, 99)}(x):\n    return x * {rng.randint(0, 9)}" for _ in range(rng.randint(1, 6))]
        return "C" + "\n".join(lines)
    words = ENGLISH if source == "en" else FRENCH
    return MARKERS[source] + " ".join(rng.choice(words) for _ in range(rng.randint(3, 60)))


def write_mixture_corpora(root: Path, sizes: dict[str, int] = SIZES, shard_documents: int = 250) -> list[Path]:
    """One corpus folder per source (named by it) under ``root``: train shards of ``shard_documents``, then one
    validation shard of a tenth as many documents."""
    folders = []
    for k, (source, n) in enumerate(sizes.items()):
        rng = random.Random(k)
        train = [document(rng, source) for _ in range(n)]
        shards = [("train", train[i : i + shard_documents]) for i in range(0, n, shard_documents)]
        shards.append(("validation", [document(rng, source) for _ in range(max(1, n // 10))]))
        folders.append(write_corpus(Path(root) / source, shards, name=source))
    return folders


def llmc_documents(folder: Path, split_prefix: str = "train") -> list[np.ndarray]:
    """The documents of a byte-tokenizer release's llm.c files of one split, in stream order (separator before)."""
    documents = []
    for path in sorted(folder.glob(f"{split_prefix}-*.bin")):
        ids = np.asarray(llmc.open_tokens(path))
        starts = np.flatnonzero(ids == SEPARATOR)
        documents += [ids[a + 1 : b] for a, b in zip(starts, [*starts[1:], ids.size])]
    return documents


def source_of(document: np.ndarray) -> str:
    letter = chr(int(document[0]))
    return next(name for name, marker in MARKERS.items() if marker == letter)


def write_sourced_corpus(root: Path, sizes: dict[str, int] = SIZES, shard_rows: int = 300) -> Path:
    """One corpus counting its sources (``corpus import --source-column src``): the same kinds of documents as
    :func:`write_mixture_corpora`, interleaved in one input, every tenth document of a source in validation."""
    import json

    import hf_tokbin

    rngs = {source: random.Random(k) for k, source in enumerate(sizes)}
    left = {source: n + n // 10 for source, n in sizes.items()}
    rows, i = [], 0
    while any(left.values()):
        source = list(sizes)[i % len(sizes)]
        i += 1
        if left[source]:
            left[source] -= 1
            split = "validation" if left[source] % 11 == 0 else "train"
            rows.append({"text": document(rngs[source], source), "src": source, "split": split})
    data = Path(root) / "input.jsonl"
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    out = Path(root) / "mixed"
    hf_tokbin.import_corpus([data], out, name="mixed", source_column="src", shard_rows=shard_rows)
    return out
