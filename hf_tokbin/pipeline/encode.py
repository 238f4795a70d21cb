"""Encoding one input shard in bounded batches; one pool of worker processes serves the whole build.

:func:`encode_shard` reads the shard's Parquet file ``plan.options.batch_size`` rows
at a time (pyarrow, streaming: never the whole shard), cuts each batch to at
most :data:`MAX_BATCH_TEXT_BYTES` of text, encodes it with
:class:`EncodeBatch` (the encoder of :mod:`hf_tokbin.tokenizer.encoder`:
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

import dataclasses
from pathlib import Path

import numpy as np

from ..errors import BuildError, FormatError, TokenizerError
from ..formats.corpus_shard import iter_shard_texts
from ..formats.ids import checked_ids
from ..formats.release import part_name
from ..formats.rules import id_dtype
from ..tokenizer.long_documents import bounded_prefixes, encode_in_bounded_pieces
from ..tokenizer.panics import engine_output_held, is_engine_panic, panic_message
from .plan import BuildPlan

MAX_BATCH_TEXT_BYTES = 16 << 20  # a batch of documents is cut to this much text (a longer document goes alone)
_READ_BUFFER = 1 << 20  # pyarrow reads the shard through a buffer of this size, not whole column chunks at once


class EncodeBatch:
    """One batch of texts to ids, checked and narrowed to the release's width (``uint16``, or ``uint32`` above 65,536 ids).

    Made per batch in the process that encodes it; the encoder reaches worker
    processes once, when the build's pool starts (inherited by fork, or
    unpickled once per spawned worker), and each process loads its engines
    once. Called on a table (``{"text": ...}``) it returns a table of id
    lists.
    """

    def __init__(self, encoder, vocab_size: int, source: str | None = None, first_row: int = 0):
        self.encoder = encoder
        self.vocab_size = vocab_size
        self.source = source  # the shard, for the error message
        self.first_row = first_row  # the shard's row of the batch's first text, for the error message
        self.dtype = id_dtype(vocab_size)

    def encode(self, texts) -> tuple[np.ndarray, np.ndarray]:
        """(flat ids in the release's width, ``int64`` lengths) of ``texts`` (a pyarrow string array or a list)."""
        if not isinstance(texts, list):
            texts = texts.to_pylist()
        try:
            with engine_output_held():  # a Rust panic's report is dropped: the error names the document instead
                # Long documents in bounded pieces, same ids (tokenizer/long_documents.py).
                flat, lengths = encode_in_bounded_pieces(self.encoder, texts)
        except BaseException as error:
            if not is_engine_panic(error):
                raise
            raise self._panic_error(texts, error) from None
        # Before the narrowing cast: an id the width cannot hold would wrap silently.
        try:
            flat = checked_ids(flat, self.vocab_size, self.source)
        except FormatError as e:
            raise BuildError(self.source, "the encoder produced an id outside the tokenizer's vocabulary", expected=f"ids < {self.vocab_size}", got=e.got) from None
        return np.asarray(flat, dtype=self.dtype), lengths

    def _panic_error(self, texts: list[str], error: BaseException) -> TokenizerError:
        """The error naming the first document of the batch on which an engine panics on its own (else the batch)."""
        for i, text in enumerate(texts):
            try:
                with engine_output_held():
                    encode_in_bounded_pieces(self.encoder, [text])
            except BaseException as own:
                if not is_engine_panic(own):
                    raise
                return TokenizerError(self.source, f"row {self.first_row + i}: the tokenizer's engine cannot encode this document (it panicked)", got=panic_message(own), hint=_panic_hint(own))
        last = self.first_row + len(texts) - 1
        return TokenizerError(self.source, f"rows {self.first_row}-{last}: the tokenizer's engine panicked on this batch", got=panic_message(error), hint=_panic_hint(error))

    def __call__(self, table):
        import pyarrow as pa

        flat, lengths = self.encode(table.column("text"))
        offsets = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return pa.table({"ids": pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(flat))})


def _panic_hint(error: BaseException) -> str:
    if "retry-limit" in str(error):
        return "the pre-tokenizer's regex backtracks past Oniguruma's retry limit on this text: simplify the pattern, or leave the document out"
    return "leave the document out, or report it to the engine named in the message"


def _encode_task(encoder, task: tuple) -> tuple[np.ndarray, np.ndarray, int]:
    """One batch of one shard, in this process or a worker's (:meth:`WorkerPool.map_ordered`): (flat ids, lengths, text bytes)."""
    vocab_size, source, texts, n_bytes, first_row = task
    return (*EncodeBatch(encoder, vocab_size, source, first_row).encode(texts), n_bytes)


SAMPLE_DOCS_PER_SHARD = 64
SAMPLE_DOCS = 2048


def text_batches(source, batch_size: int, where=None):
    """The shard's texts in order, ``batch_size`` rows at a time, each batch cut to at most MAX_BATCH_TEXT_BYTES of text.

    ``source``: the shard's path, or an open binary file; ``where`` names it in errors (default: the path).
    Yields (texts, text bytes, first row); every batch is checked first (:mod:`hf_tokbin.formats.corpus_shard`:
    a string column, no null, valid UTF-8).
    """
    import pyarrow.compute as pc

    where = source if where is None else where
    # pre_buffer=False: pyarrow's default reads ahead and keeps up to the whole file's column chunks (the peak grew with the shard).
    for row, texts in iter_shard_texts(source, where, batch_size, buffer_size=_READ_BUFFER, pre_buffer=False):
        ends = np.cumsum(pc.binary_length(texts).to_numpy(zero_copy_only=False), dtype=np.int64)
        first = 0
        while first < len(texts):
            done = int(ends[first - 1]) if first else 0
            last = max(first + 1, int(np.searchsorted(ends, done + MAX_BATCH_TEXT_BYTES, side="right")))
            yield texts.slice(first, last - first), int(ends[last - 1]) - done, row + first
            first = last


def sample_documents(plan: BuildPlan) -> list[str]:
    """The first documents of every shard: what the fast path must reproduce before it is used."""
    sample = []
    for shard in plan.corpus.shards:
        if not shard.rows or len(sample) >= SAMPLE_DOCS:
            continue
        with plan.shard_source.open_for_sample(shard) as handle:
            for texts, _, _ in text_batches(handle, SAMPLE_DOCS_PER_SHARD, where=plan.shard_source.location(shard)):
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

    encoder = encoder_for(plan.tokenizer.path, plan.options.fast, parse_special=plan.options.parse_special)
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


def encode_shard(plan: BuildPlan, index: int, progress: bool = True, shard_path: Path | None = None):
    """Yield (flat ids, lengths, text bytes) for the documents of input shard ``index`` in order, in bounded batches.

    ``shard_path``: where the shard's bytes are (default: in the corpus folder).
    With ``plan.options.num_proc`` > 1 the batches are encoded by the build's worker
    pool (:func:`hf_tokbin.engines.local.shared_pool`), else in this process
    (where gigatoken uses its own threads).
    """
    from concurrent.futures.process import BrokenProcessPool

    from tqdm.auto import tqdm

    from ..engines.local import close_shared_pool, shared_pool

    shard = plan.corpus.shards[index]
    if shard.rows == 0:
        return
    shard_path = Path(plan.corpus_root) / shard.path if shard_path is None else shard_path
    source = plan.shard_source.location(shard)  # the corpus file or Hub file, not a scratch copy, in messages
    tasks = ((plan.tokenizer.vocab_size, source, texts, n_bytes, row) for texts, n_bytes, row in text_batches(shard_path, plan.options.batch_size, where=source))
    if plan.options.num_proc > 1:
        results = shared_pool(plan.encoder, plan.options.num_proc).map_ordered(_encode_task, tasks)
    else:
        results = (_encode_task(plan.encoder, task) for task in tasks)
    with tqdm(total=shard.rows, desc=f"encoding {part_name(index)}", unit="doc", disable=not progress) as bar:
        try:
            for flat, lengths, n_bytes in results:
                bar.update(int(lengths.size))
                yield flat, lengths, n_bytes
        except BrokenProcessPool:
            close_shared_pool()
            raise BuildError(source, "an encoding worker process died (killed, or out of memory)", hint="lower --num-proc or --batch-size, or give the machine more memory") from None
