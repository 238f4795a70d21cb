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

from .source import ShardSource, iter_texts, resolve_corpus, resolve_corpus_source
from .write import CorpusWriter, import_corpus, write_tinystories_corpus

__all__ = ["CorpusWriter", "ShardSource", "import_corpus", "iter_texts", "resolve_corpus", "resolve_corpus_source", "write_tinystories_corpus"]
