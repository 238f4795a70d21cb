"""Encoding one input shard in bounded batches; one pool of worker processes serves the whole build.

:func:`encode_shard` reads the shard's Parquet file ``plan.options.batch_size`` rows
at a time (pyarrow, streaming: never the whole shard), cuts each batch to at
most :data:`MAX_BATCH_TEXT_BYTES` of text, encodes it with
:class:`~.encode_batch.EncodeBatch` (the encoder of :mod:`hf_tokbin.tokenizer.encoder`:
``tokenizers``' ids, a faster engine only where it reproduces them) and
yields (flat ids, lengths, text bytes) in corpus order, batch by batch, for
the part writer. With ``num_proc`` > 1 the batches are encoded by a pool of
``num_proc`` worker processes (:class:`hf_tokbin.engines.local.WorkerPool`)
started once per build, at most ``2 * num_proc`` batches in flight: memory is
bounded by the batch, not by the shard. Each document's ids are the same
whatever the batch it is in, so the bytes do not depend on ``num_proc`` or
batch size.

This replaces ``Dataset.map(batched=True, num_proc=N)``, which converted the
whole shard to an Arrow file and mapped it to another one (both memory-mapped
and read through, so the peak grew with the shard) and started a new pool for
every shard; docs/speed.md has the measurements.

:func:`prepare_encoder` runs the fast-path check once per build (nothing
cached: every build proves what it encodes).
"""

from __future__ import annotations

import collections
import dataclasses
from pathlib import Path

import numpy as np

from ..engines.panics import engine_output_held
from ..errors import BuildError
from ..formats.corpus_shard import iter_shard_batches, text_lengths
from ..formats.release import part_name
from ..tokenizer.long_documents import bounded_prefixes
from .encode_batch import EncodeBatch
from .given_ids import check_given
from .plan import BuildPlan
from .sources import SourceCounter

MAX_BATCH_TEXT_BYTES = 16 << 20  # a batch of documents is cut to this much text (a longer document goes alone)
_READ_BUFFER = 1 << 20  # pyarrow reads the shard through a buffer of this size, not whole column chunks at once


def _encode_task(encoder, task: tuple) -> tuple[np.ndarray, np.ndarray, int, tuple[int, int]]:
    """One batch of one shard, in this process or a worker's (:meth:`WorkerPool.map_ordered`): (flat ids, lengths, text
    bytes, documents by engine: the fast one, tokenizers)."""
    vocab_size, source, texts, n_bytes, first_row = task
    batch = EncodeBatch(encoder, vocab_size, source, first_row)
    return (*batch.encode(texts), n_bytes, batch.by_engine)


def _given_tasks(plan: BuildPlan, index: int, tasks):
    """The encoding tasks of shard ``index`` with the kept ids of their documents and which of them to check."""
    shards = plan.corpus.shards
    split = shards[index].split
    take = plan.given_ids.reader(split, sum(s.rows for s in shards[:index] if s.split == split))
    first = sum(s.rows for s in shards[:index])  # in corpus order: what --check-ids sample:K spreads over
    total = sum(s.rows for s in shards)
    for vocab_size, source, texts, n_bytes, _row in tasks:
        yield (vocab_size, source, texts, n_bytes, *take(len(texts)), plan.given_ids.check.mask(first, len(texts), total))
        first += len(texts)


SAMPLE_DOCS_PER_SHARD = 64
SAMPLE_DOCS = 2048


def text_batches(source, batch_size: int, where=None, source_column: str | None = None):
    """The shard's texts in order, ``batch_size`` rows at a time, each batch cut to at most MAX_BATCH_TEXT_BYTES of text.

    ``source``: the shard's path, or an open binary file; ``where`` names it in errors (default: the path).
    Yields (texts, text bytes, first row, source names or None); every batch is checked first
    (:mod:`hf_tokbin.formats.corpus_shard`: a string column, no null, valid UTF-8; each source a source name).
    ``source_column``: the column of source names read beside the texts (None: none).
    """
    where = source if where is None else where
    # pre_buffer=False: pyarrow's default reads ahead and keeps up to the whole file's column chunks (the peak grew with the shard).
    for row, texts, sources in iter_shard_batches(source, where, batch_size, source_column, buffer_size=_READ_BUFFER, pre_buffer=False):
        ends = np.cumsum(text_lengths(texts), dtype=np.int64)
        first = 0
        while first < len(texts):
            done = int(ends[first - 1]) if first else 0
            last = max(first + 1, int(np.searchsorted(ends, done + MAX_BATCH_TEXT_BYTES, side="right")))
            names = sources.slice(first, last - first) if sources is not None else None
            yield texts.slice(first, last - first), int(ends[last - 1]) - done, row + first, names
            first = last


def sample_documents(plan: BuildPlan) -> list[str]:
    """The first documents of every shard: what the fast path must reproduce before it is used."""
    sample = []
    for shard in plan.corpus.shards:
        if not shard.rows or len(sample) >= SAMPLE_DOCS:
            continue
        with plan.shard_source.open_for_sample(shard) as handle:
            for texts, _, _, _ in text_batches(handle, SAMPLE_DOCS_PER_SHARD, where=plan.shard_source.location(shard)):
                sample.extend(texts.to_pylist())
                break
    return sample[:SAMPLE_DOCS]


def prepare_encoder(plan: BuildPlan) -> BuildPlan:
    """Load the encoder once and check its fast path on a sample of the corpus.

    Nothing is kept between builds: the proof covers each code point when a
    document first holds it (:mod:`hf_tokbin.tokenizer.encoder`), so no state
    outside the release's inputs can decide an id.
    """
    from ..tokenizer.encoder import GIGATOKEN_UNAVAILABLE, encoder_for

    encoder = encoder_for(plan.tokenizer.path, plan.options.fast, parse_special=plan.options.parse_special, sha256=plan.tokenizer.sha256)
    sample = bounded_prefixes(sample_documents(plan))  # the check encodes texts whole: a long document's start only
    with engine_output_held():  # an engine's panic report is dropped: the check turns it into its fallback reason
        check = encoder.check_fast_path(sample)
    if check.reason.startswith(GIGATOKEN_UNAVAILABLE):  # --fast auto on a machine without a usable gigatoken
        _note(f"note: {check.reason}: encoding with {check.engine} only (the same ids, slower)")
    return dataclasses.replace(plan, encoder=encoder)


def _note(line: str) -> None:
    """One line on stderr, above any progress bar."""
    import sys

    from tqdm.auto import tqdm

    tqdm.write(line, file=sys.stderr)


def encode_shard(
    plan: BuildPlan, index: int, progress: bool = True, shard_path: Path | None = None, counter: SourceCounter | None = None,
    by_engine: list[int] | None = None,
):
    """Yield (flat ids, lengths, text bytes) for the documents of input shard ``index`` in order, in bounded batches.

    ``shard_path``: where the shard's bytes are (default: in the corpus folder).
    With ``plan.options.num_proc`` > 1 the batches are encoded by the build's worker
    pool (:func:`hf_tokbin.engines.local.shared_pool`), else in this process on a thread
    ahead of the caller's (where gigatoken uses its own threads). ``counter``: counts every batch per
    source (``plan.source_column``), as its ids come back, before they are yielded. ``by_engine``: adds
    the documents each engine encoded ([fast engine, tokenizers]).
    """
    from concurrent.futures.process import BrokenProcessPool

    from .._io import progress_bar
    from ..engines.local import close_shared_pool, prefetched, shared_pool

    shard = plan.corpus.shards[index]
    if shard.rows == 0:
        return
    shard_path = Path(plan.corpus_root) / shard.path if shard_path is None else shard_path
    source = plan.shard_source.location(shard)  # the corpus file or Hub file, not a scratch copy, in messages
    held: collections.deque = collections.deque()  # each batch in flight: its source names and document bytes, in order
    batches = text_batches(shard_path, plan.options.batch_size, where=source, source_column=plan.source_column if counter is not None else None)
    tasks = ((plan.tokenizer.vocab_size, source, texts, n_bytes, row) for texts, n_bytes, row in _held_sources(batches, held, counter))
    work = _encode_task
    if plan.given_ids is not None:  # a dataset's input_ids column: written after the check (given_ids.py)
        tasks, work = _given_tasks(plan, index, tasks), check_given
    if plan.options.num_proc > 1:
        results = shared_pool(plan.encoder, plan.options.num_proc).map_ordered(work, tasks)
    else:
        # Read and encode on a thread of their own, a batch or two ahead of the writers on this one: gigatoken
        # releases the GIL, so the part's writing no longer waits for the encoder, nor the encoder for it.
        results = prefetched(work(plan.encoder, task) for task in tasks)
    with progress_bar(total=shard.rows, desc=f"encoding {part_name(index)}", unit="doc", disable=not progress) as bar:
        try:
            for flat, lengths, n_bytes, *engines in results:
                if by_engine is not None and engines:  # given ids are checked, not encoded: no engine to count
                    by_engine[0] += engines[0][0]
                    by_engine[1] += engines[0][1]
                if counter is not None:  # results come back in task order: the oldest held batch is this one
                    counter.add(*held.popleft(), lengths)
                bar.update(int(lengths.size))
                yield flat, lengths, n_bytes
        except BrokenProcessPool:
            close_shared_pool()
            raise BuildError(source, "an encoding worker process died (killed, or out of memory)", hint="lower --num-proc or --batch-size, or give the machine more memory") from None


def _held_sources(batches, held: collections.deque, counter: SourceCounter | None):
    """``(texts, text bytes, first row)`` of each batch; with a counter, its source names and document bytes kept in ``held``."""
    for texts, n_bytes, row, sources in batches:
        if counter is not None:
            held.append((sources, text_lengths(texts)))
        yield texts, n_bytes, row
