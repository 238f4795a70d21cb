"""Bytes on disk, and nothing else: each module is one format, its layout in its docstring.

- :mod:`.llmc`: llm.c ``.bin`` token files (one table of layouts) and their ``_MANIFEST.json``.
- :mod:`.megatron`: Megatron IndexedDataset ``.bin``/``.idx`` pairs.
- :mod:`.release`: a release folder's layout, receipts, ``COMPLETE.json``, ``stats.json``.
- :mod:`.run_config`: ``run_config.json``.
- :mod:`.corpus_manifest`: a corpus folder's ``_MANIFEST.json``.
- :mod:`.records`, :mod:`.ids`: the validated records and the id check they share.
- :mod:`.sniff`: what a path holds, by magic and by a JSON ``format`` key.

Nothing here imports the Hub, ``datasets``, fsspec or tqdm (a test checks it).
"""
