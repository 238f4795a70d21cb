"""The corpus stage: raw text in, Parquet corpus shards + ``_MANIFEST.json`` + dataset card out.

Modules by direction (each imports only those listed after it; ``tests/test_architecture.py`` checks no cycle):

- :mod:`.subset`: ``build --limit``, the first N documents of a corpus, read checked;
- :mod:`.write`: :class:`CorpusWriter` (the one writer), :func:`write_tinystories_corpus`, :func:`import_corpus`;
- :mod:`.builders`: ``datasets`` builders (TinyStories text files; JSONL/Parquet shards);
- :mod:`.inputs`: raw inputs, which files a list of paths names and their rows through ``datasets``' readers;
- :mod:`.source`: :class:`ShardSource`, :func:`resolve_corpus_source`, a corpus folder or a Hub dataset repo;
- :mod:`.hub_source`: a Hub dataset repo as a corpus (listing, records and shards through the checked download);
- :mod:`.private_apis`: the private ``datasets``/``huggingface_hub`` APIs used, pinned by a test.
"""

# Loaded on first use: the build's part workers import corpus.source, which must not load datasets.
_LAZY = {
    "ShardSource": "source",
    "iter_texts": "source",
    "resolve_corpus": "source",
    "resolve_corpus_source": "source",
    "CorpusWriter": "write",
    "import_corpus": "write",
    "write_tinystories_corpus": "write",
}


def __getattr__(name: str):
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_LAZY)
