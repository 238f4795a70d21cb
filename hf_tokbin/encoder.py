"""Encoding documents to ids: ``tokenizers`` defines them.

:class:`DocumentEncoder` turns a batch of texts into one flat id array and
the length of each document, without special tokens; boundary tokens are
each format's business.
"""

from __future__ import annotations

import numpy as np


class DocumentEncoder:
    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def encode_batch(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Ids of every text, concatenated, and each text's id count."""
        encodings = self.tokenizer.encode_batch(texts, add_special_tokens=False)
        ids = [e.ids for e in encodings]
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
        flat = np.fromiter((i for x in ids for i in x), dtype=np.int64, count=int(lengths.sum()))
        return flat, lengths
