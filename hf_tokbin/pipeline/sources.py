"""A part's counts per source: documents, text tokens and text bytes of each source name in one input shard.

The build reads a shard's source column beside its texts
(:func:`hf_tokbin.pipeline.encode.encode_shard`) and adds each encoded
batch here; the part's receipt records the counts (``sources``), and
``stats.json`` sums them over the receipts. Memory is one small row per
distinct source, and the distinct sources are bounded
(:data:`~hf_tokbin.formats.rules.MAX_SOURCES`): a column of one name per
document is refused, not counted into an unbounded table.
"""

from __future__ import annotations

import numpy as np

from ..errors import BuildError
from ..formats.rules import MAX_SOURCES


class SourceCounter:
    """``{source: [documents, text tokens, text bytes]}`` of one part, added batch by batch."""

    def __init__(self, where):
        self.where = where  # the shard, in errors
        self.counts: dict[str, np.ndarray] = {}

    def add(self, sources, text_bytes: np.ndarray, lengths: np.ndarray) -> None:
        """One batch: its documents' source names (a pyarrow string array), UTF-8 bytes and token counts, in the same order."""
        import pyarrow as pa

        if len(sources) != lengths.size or text_bytes.size != lengths.size:
            raise BuildError(self.where, "every encoded document must have its source name", expected=len(sources), got=int(lengths.size))
        encoded = sources.dictionary_encode() if not pa.types.is_dictionary(sources.type) else sources
        names = encoded.dictionary.to_pylist()
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        width = len(names)
        table = np.stack(
            [
                np.bincount(codes, minlength=width),
                _summed(codes, lengths, width),
                _summed(codes, text_bytes, width),
            ],
            axis=1,
        )
        for name, row in zip(names, table):
            if name in self.counts:
                self.counts[name] += row
            else:
                self.counts[name] = row.astype(np.int64)
        check_distinct_sources(self.where, len(self.counts), "in this shard")

    def totals(self) -> dict[str, tuple[int, int, int]]:
        """``{source: (documents, text tokens, text bytes)}``, sorted by name."""
        return {name: tuple(int(x) for x in self.counts[name]) for name in sorted(self.counts)}


def _summed(codes: np.ndarray, values: np.ndarray, width: int) -> np.ndarray:
    """``values`` summed per code, in exact integers (``np.bincount``'s weights are floats)."""
    out = np.zeros(width, dtype=np.int64)
    np.add.at(out, codes, values.astype(np.int64, copy=False))
    return out


def check_distinct_sources(where, count: int, scope: str) -> None:
    """At most ``MAX_SOURCES`` distinct sources (``count`` of them ``scope``: in a shard, or over all parts at the finish)."""
    if count > MAX_SOURCES:
        raise BuildError(where, f"a build counts at most {MAX_SOURCES:,} distinct sources", got=f"{count:,} {scope}", hint="a source names a part of the corpus (a dataset, a site), not a document")
