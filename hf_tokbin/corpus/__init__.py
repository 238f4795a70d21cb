"""The corpus stage: raw text in, Parquet corpus shards + ``_MANIFEST.json`` + dataset card out.

- :mod:`.builders`: ``datasets`` builders (TinyStories text files; JSONL/Parquet shards).
- :mod:`.write`: :func:`write_tinystories_corpus`, :func:`import_corpus` (size-bounded shards, one split each).
- :mod:`.source`: :func:`resolve_corpus`, a corpus folder or a Hub dataset repo at a pinned revision.
"""

from .source import iter_texts, resolve_corpus
from .write import import_corpus, write_tinystories_corpus

__all__ = ["import_corpus", "iter_texts", "resolve_corpus", "write_tinystories_corpus"]
