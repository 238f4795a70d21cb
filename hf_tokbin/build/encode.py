"""Encoding one input shard with ``Dataset.map(batched=True, num_proc=N)``.

The texts of a corpus shard are read by ``datasets`` (``Dataset.from_parquet``)
and mapped in batches through :class:`EncodeBatch`, which calls the encoder
(:mod:`hf_tokbin.tokenizer.encoder`: ``tokenizers``' ids, a faster engine only
where it reproduces them). :func:`encode_shard` yields the ids in corpus order
as (flat ids, lengths, text bytes), batch by batch, for the part writer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import shutil
from pathlib import Path

import numpy as np

from ..errors import BuildError
from ..formats.release import part_name
from ..tokenizer.long_documents import encode_in_bounded_pieces
from .plan import WORK_DIR, BuildPlan


class EncodeBatch:
    """The ``Dataset.map`` function: a table of texts in, a table of id lists out.

    It pickles to worker processes as the encoder's state (the tokenizer's JSON
    and the fast-path decision); each process loads its engine once.
    """

    def __init__(self, encoder, vocab_size: int, source: str | None = None):
        self.encoder = encoder
        self.vocab_size = vocab_size
        self.source = source  # the shard, for the error message
        self.dtype = np.uint16 if vocab_size <= 65536 else np.uint32

    def __call__(self, table):
        import pyarrow as pa

        # Long documents in bounded pieces, same ids (tokenizer/long_documents.py).
        flat, lengths = encode_in_bounded_pieces(self.encoder, table.column("text").to_pylist())
        # Before the narrowing cast: an id the width cannot hold would wrap silently.
        if flat.size and int(flat.max()) >= self.vocab_size:
            raise BuildError(self.source, "the encoder produced an id outside the tokenizer's vocabulary", expected=f"ids < {self.vocab_size}", got=int(flat.max()))
        offsets = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        ids = pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(np.asarray(flat, dtype=self.dtype)))
        return pa.table({"ids": ids})


SAMPLE_DOCS_PER_SHARD = 64
SAMPLE_DOCS = 2048


def sample_documents(plan: BuildPlan) -> list[str]:
    """The first documents of every shard: what the fast path must reproduce before it is used."""
    import pyarrow.parquet as pq

    sample = []
    for shard in plan.corpus.shards:
        if not shard.rows or len(sample) >= SAMPLE_DOCS:
            continue
        path = plan.shard_source.location(shard)
        try:
            with plan.shard_source.open_for_sample(shard) as handle, pq.ParquetFile(handle) as file:
                batch = next(file.iter_batches(batch_size=SAMPLE_DOCS_PER_SHARD, columns=["text"]))
        except (OSError, ValueError, StopIteration) as e:  # pyarrow's errors derive from these
            raise BuildError(path, "corpus shard is not readable Parquet with a text column", got=str(e).splitlines()[0][:200]) from e
        sample.extend(batch.column(0).to_pylist())
    return sample[:SAMPLE_DOCS]


def prepare_encoder(plan: BuildPlan) -> BuildPlan:
    """Load the encoder once and check its fast path on a sample of the corpus."""
    from ..tokenizer.encoder import encoder_for

    encoder = encoder_for(plan.tokenizer.path, plan.fast, parse_special=plan.parse_special)
    encoder.check_fast_path(sample_documents(plan))
    return dataclasses.replace(plan, encoder=encoder)


@contextlib.contextmanager
def datasets_progress(enabled: bool):
    """Show or hide the progress bars of ``datasets`` for a while, then restore the setting."""
    import datasets

    before = datasets.is_progress_bar_enabled()
    (datasets.enable_progress_bars if enabled else datasets.disable_progress_bars)()
    try:
        yield
    finally:
        (datasets.enable_progress_bars if before else datasets.disable_progress_bars)()


def encode_shard(plan: BuildPlan, index: int, progress: bool = True, shard_path: Path | None = None):
    """Yield (flat ids, lengths, text bytes) for the documents of input shard ``index`` in order, encoded once with Dataset.map.

    ``shard_path``: where the shard's bytes are (default: in the corpus folder).
    """
    import datasets
    import pyarrow.compute as pc

    shard = plan.corpus.shards[index]
    if shard.rows == 0:
        return  # datasets cannot read an empty Parquet file (batch size 0); nothing to encode
    shard_path = Path(plan.corpus_root) / shard.path if shard_path is None else shard_path
    part = part_name(index)
    work = plan.output.work / WORK_DIR / "datasets" / part
    if work.exists():
        shutil.rmtree(work)  # leftovers of a killed run: this part starts over
    work.mkdir(parents=True)
    try:
        with datasets_progress(False):  # converting the shard is quick; the encoding bar is the one to watch
            texts = datasets.Dataset.from_parquet(os.fspath(shard_path), columns=["text"], cache_dir=os.fspath(work / "cache"))
        fingerprint = hashlib.sha256(f"{shard.sha256}:{plan.tokenizer.sha256}".encode()).hexdigest()[:32]
        with datasets_progress(progress):
            encoded = texts.with_format("arrow").map(
                EncodeBatch(plan.encoder, plan.tokenizer.vocab_size, os.fspath(shard_path)),
                batched=True,
                batch_size=plan.batch_size,
                num_proc=plan.num_proc if plan.num_proc > 1 and len(texts) > 1 else None,
                remove_columns=["text"],
                cache_file_name=os.fspath(work / "encoded.arrow"),
                load_from_cache_file=False,
                new_fingerprint=fingerprint,
                desc=f"encoding {part}",
            )
        text_column = texts.data.column("text")
        first = 0
        for batch in encoded.data.to_batches():
            ids = batch.column(0)
            offsets = ids.offsets.to_numpy()
            flat = ids.values.to_numpy()[offsets[0] : offsets[-1]]
            n_bytes = pc.sum(pc.binary_length(text_column.slice(first, len(ids)))).as_py() or 0
            first += len(ids)
            yield flat, np.diff(offsets), n_bytes
        del encoded, texts
    finally:
        shutil.rmtree(work, ignore_errors=True)
