"""Step 1 of a build, "encode": one part is one corpus shard encoded into its Megatron pair, its llm.c segment
and its receipt, written last.

:func:`encode_parts` maps :func:`encode_part` over the parts on an engine: Ray tasks (each part whole), or
locally the parts in order in this process, each part's closing (its files fsynced and hashed, the ``.idx``
written, the receipt published: mostly waiting on the disk) on a thread while the next part is encoded
(:func:`hf_tokbin.engines.local.map_one_behind`). A part whose receipt is present and checked is skipped.

A part reads its shard's Parquet file ``batch_size`` rows at a time (pyarrow, streaming: never the whole shard),
cuts each batch to at most :data:`MAX_BATCH_TEXT_BYTES` of text and encodes it (:class:`EncodeBatch`:
``tokenizers``' ids, a faster engine only where it reproduces them). With ``num_proc`` > 1 the batches go to one
pool of worker processes for the whole build (:class:`hf_tokbin.engines.local.WorkerPool`), at most ``2 *
num_proc`` in flight: memory is bounded by the batch, not by the shard. Each document's ids are the same whatever
the batch it is in, so the bytes do not depend on ``num_proc`` or batch size. The encoder is built once per
process (:func:`encoder_of`: the tokenizer loaded and its fast path proven on a sample of the corpus); the plan
carries no encoder.

From the same ids (range-checked once) a part writes its Megatron pair (``[bos] + ids + [eod]`` per document, BOS
only when given) and its llm.c segment: its documents exactly as they will stand in the llm.c files, in their
dtype (``.work/llmc/part-NNNNNN.tokens`` and ``.ends``, :mod:`hf_tokbin.formats.llmc_segments`), with their sizes
and digests in ``.work/llmc/part-NNNNNN.json`` (with ``--shuffle-seed``, also where each of its blocks ends:
:mod:`hf_tokbin.formats.llmc_order`); then its receipt. Where the Megatron ``.bin`` already holds the llm.c ids'
bytes (:func:`hf_tokbin.pipeline.plan.from_megatron`), the segment is its ``.ends`` alone: every id is written
once. With a source column, each part counts its documents, tokens and bytes per source (:class:`SourceCounter`).
A dataset's own ids (:mod:`hf_tokbin.formats.given_ids`) are checked (:func:`check_given`) and written instead of
encoding the text.

The receipt is published last: it marks the part done, so a killed build skips the part on re-run, after checking
every file it names.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._io import canonical_json, write_text_atomic
from ..engines.panics import engine_output_held, is_engine_panic, panic_message
from ..errors import BuildError, FormatError, TokenizerError
from ..formats import megatron
from ..formats.corpus_manifest import check_shard_file
from ..formats.corpus_shard import iter_shard_batches, text_lengths, utf8_buffer
from ..formats.given_ids import ID_COLUMN
from ..formats.ids import checked_documents, checked_ids, first_out_of_range
from ..formats.llmc_segments import (
    ENDS_SUFFIX,
    TOKENS_SUFFIX,
    SegmentFiles,
    SegmentWriter,
    block_token_ends,
    check_block_ends,
)
from ..formats.records import FileEntry, is_count
from ..formats.release import WORK_DIR, Receipt, SplitCounts, pair_path, part_name, receipt_path
from ..formats.rules import MAX_SOURCES, id_dtype
from ..output import Output
from ..tokenizer.long_documents import bounded_prefixes, encode_in_bounded_pieces
from .plan import BuildPlan, segment_stem, segment_suffixes, staging_rel
from .shuffle import shuffled_documents

MAX_BATCH_TEXT_BYTES = 16 << 20  # a batch of documents is cut to this much text (a longer document goes alone)
_READ_BUFFER = 1 << 20  # pyarrow reads the shard through a buffer of this size, not whole column chunks at once
BLOCK_ENDS_KEY = "block_ends"  # the segment record's key, with a shuffle seed
SAMPLE_DOCS_PER_SHARD = 64
SAMPLE_DOCS = 2048


# -- the step: every part on an engine


@dataclass(frozen=True)
class PartDone:
    """What step 1 gives for a part: its receipt, whether this run built it (False: skipped, finished before), and
    the documents each engine encoded ([fast engine, tokenizers])."""

    receipt: Receipt
    built: bool
    by_engine: tuple[int, int] = (0, 0)


def encode_parts(
    plan: BuildPlan, engine: str = "local", ray_address: str | None = None, progress: bool = True
) -> list:
    """Step 1: :func:`encode_part` mapped over every part on ``engine``; the :class:`PartDone` of each, in order.

    Locally the parts run in order in this process (their batches on the build's one worker pool), each part's
    closing on a thread of its own while the next part is encoded; after a closing fails no further part is
    finished, and every closing has ended when this returns or raises. On Ray each part is a task (its batches
    in that task's process), retried where a worker died.
    """
    from .._io import progress_bar
    from ..engines import run_tasks
    from ..engines.local import close_shared_pool, map_one_behind

    indices = list(range(len(plan.corpus.shards)))
    if engine == "ray":
        one = dataclasses.replace(plan, options=dataclasses.replace(plan.options, num_proc=1))
        labels = [f"input shard {i}" for i in indices]
        return run_tasks(engine, encode_part, one, indices, labels, ray_address, progress, "parts", unit="part")
    bar = progress_bar(indices, desc="parts", unit="part", disable=not progress or len(indices) < 2)
    try:
        with contextlib.closing(_written_parts(plan, bar, progress)) as written:
            return list(map_one_behind(_closed, written, thread_name="hf_tokbin-close"))
    finally:
        close_shared_pool()


def encode_part(plan: BuildPlan, index: int, progress: bool = False) -> PartDone:
    """Part ``index`` whole: encoded, its files written, its receipt last; or skipped if it is finished already."""
    return _closed(write_part(plan, index, progress))


def write_part(plan: BuildPlan, index: int, progress: bool = False):
    """Part ``index`` encoded and its documents written (a :class:`_WrittenPart`, to be closed); or its
    :class:`PartDone` if it is finished already."""
    done = finished_receipt(plan, index)
    if done is not None:
        return PartDone(done, False)
    shard = plan.corpus.shards[index]
    # The shard's bytes, wherever they are (a corpus folder, or a Hub file fetched for this part only).
    with plan.shard_source.local_path(shard, plan.output.work / WORK_DIR / "shards" / part_name(index)) as shard_path:
        return _write_part(plan, index, shard_path, progress)


def _written_parts(plan: BuildPlan, indices, progress: bool):
    """Each part written, in order; a written part that no one took to close (the build stopped) is aborted."""
    for index in indices:
        written = write_part(plan, index, progress)
        try:
            yield written
        except GeneratorExit:
            if isinstance(written, _WrittenPart):
                written.abort()  # the closing before it failed: this part is never closed, its files are removed
            raise


def _closed(written) -> PartDone:
    return written.close() if isinstance(written, _WrittenPart) else written


# -- the encoder: built once per process


_encoders: dict = {}  # this process's encoder, by what decides it (encoder_key): one at a time


def encoder_key(plan: BuildPlan) -> tuple:
    """What decides a build's encoder: the tokenizer, the options that change its engines, the corpus it is proven
    on."""
    return plan.tokenizer, plan.options.fast, plan.options.parse_special, plan.corpus_manifest_sha256


def prepare_encoder(plan: BuildPlan):
    """Load the build's encoder and check its fast path on a sample of the corpus; kept for this process.

    The build's process runs it once per build, before step 1: nothing is kept between builds, and worker
    processes forked from it inherit the encoder. The proof covers each code point when a document first holds
    it (:mod:`hf_tokbin.tokenizer.encoder`), so no state outside the release's inputs can decide an id.
    """
    encoder, fallback = _proven_encoder(plan)
    if fallback is not None:
        note(fallback)
    _encoders.clear()
    _encoders[encoder_key(plan)] = encoder
    return encoder


def encoder_of(plan: BuildPlan):
    """The plan's encoder in this process: the one :func:`prepare_encoder` made (here, or in the process this one
    was forked from), else built and proven here, once (a Ray worker)."""
    key = encoder_key(plan)
    if key not in _encoders:
        _encoders.clear()
        _encoders[key] = _proven_encoder(plan)[0]
    return _encoders[key]


def _proven_encoder(plan: BuildPlan) -> tuple:
    """(the encoder, a note for the user or None): loaded, its fast path checked on the corpus's sample."""
    from ..tokenizer.encoder import GIGATOKEN_UNAVAILABLE, encoder_for

    options = plan.options
    encoder = encoder_for(
        plan.tokenizer.path, options.fast, parse_special=options.parse_special, sha256=plan.tokenizer.sha256
    )
    sample = bounded_prefixes(sample_documents(plan))  # the check encodes texts whole: a long document's start only
    with engine_output_held():  # an engine's panic report is dropped: the check turns it into its fallback reason
        check = encoder.check_fast_path(sample)
    if check.reason.startswith(GIGATOKEN_UNAVAILABLE):  # --fast auto on a machine without a usable gigatoken
        return encoder, f"note: {check.reason}: encoding with {check.engine} only (the same ids, slower)"
    return encoder, None


def note(line: str) -> None:
    """One line on stderr, above any progress bar."""
    import sys

    from tqdm.auto import tqdm

    tqdm.write(line, file=sys.stderr)


# -- one shard's batches


def _encode_task(plan: BuildPlan, task: tuple) -> tuple[np.ndarray, np.ndarray, int, tuple[int, int]]:
    """One batch of one shard, in this process or a worker's (:meth:`WorkerPool.map_ordered`): (flat ids, lengths, text
    bytes, documents by engine: the fast one, tokenizers)."""
    vocab_size, source, texts, n_bytes, first_row = task
    batch = EncodeBatch(encoder_of(plan), vocab_size, source, first_row)
    return (*batch.encode(texts), n_bytes, batch.by_engine)


def _given_tasks(plan: BuildPlan, index: int, tasks):
    """The encoding tasks of shard ``index`` with the kept ids of their documents and which of them to check."""
    shards = plan.corpus.shards
    split = shards[index].split
    take = plan.given_ids.reader(split, sum(s.rows for s in shards[:index] if s.split == split))
    first = sum(s.rows for s in shards[:index])  # in corpus order: what --check-ids sample:K spreads over
    total = sum(s.rows for s in shards)
    for vocab_size, source, texts, n_bytes, _row in tasks:
        yield (
            vocab_size,
            source,
            texts,
            n_bytes,
            *take(len(texts)),
            plan.given_ids.check.mask(first, len(texts), total),
        )
        first += len(texts)


def text_batches(source, batch_size: int, where=None, source_column: str | None = None):
    """The shard's texts in order, ``batch_size`` rows at a time, each batch cut to at most MAX_BATCH_TEXT_BYTES of
    text.

    ``source``: the shard's path, or an open binary file; ``where`` names it in errors (default: the path).
    Yields (texts, text bytes, first row, source names or None); every batch is checked first
    (:mod:`hf_tokbin.formats.corpus_shard`: a string column, no null, valid UTF-8; each source a source name).
    ``source_column``: the column of source names read beside the texts (None: none).
    """
    where = source if where is None else where
    # pre_buffer=False: pyarrow's default reads ahead and keeps up to the whole file's column chunks (the peak grew
    # with the shard).
    for row, texts, sources in iter_shard_batches(
        source, where, batch_size, source_column, buffer_size=_READ_BUFFER, pre_buffer=False
    ):
        ends = np.cumsum(text_lengths(texts), dtype=np.int64)
        first = 0
        while first < len(texts):
            done = int(ends[first - 1]) if first else 0
            last = max(first + 1, int(np.searchsorted(ends, done + MAX_BATCH_TEXT_BYTES, side="right")))
            names = sources.slice(first, last - first) if sources is not None else None
            yield texts.slice(first, last - first), int(ends[last - 1]) - done, row + first, names
            first = last


def sample_documents(plan: BuildPlan, shards=None, limit: int = SAMPLE_DOCS) -> list[str]:
    """The first documents of every shard (or of ``shards``), ``limit`` at most: what the fast path must reproduce
    before it is used, and what the plan's estimates are made from."""
    sample = []
    for shard in plan.corpus.shards if shards is None else shards:
        if not shard.rows or len(sample) >= limit:
            continue
        with plan.shard_source.open_for_sample(shard) as handle:
            for texts, _, _, _ in text_batches(handle, SAMPLE_DOCS_PER_SHARD, where=plan.shard_source.location(shard)):
                sample.extend(texts.to_pylist())
                break
    return sample[:limit]


def _check_given_task(plan: BuildPlan, task: tuple) -> tuple[np.ndarray, np.ndarray, int]:
    """One batch of given ids, in this process or a worker's: :func:`check_given` with the plan's encoder."""
    return check_given(encoder_of(plan), task)


def encode_shard(
    plan: BuildPlan,
    index: int,
    progress: bool = True,
    shard_path: Path | None = None,
    counter: SourceCounter | None = None,
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
    held: collections.deque = collections.deque()  # each batch in flight: its source names and document bytes
    columns = plan.source_column if counter is not None else None
    batches = text_batches(shard_path, plan.options.batch_size, source, columns)
    batches = _held_sources(batches, held, counter, plan.part_source(index))
    tasks = ((plan.tokenizer.vocab_size, source, texts, n_bytes, row) for texts, n_bytes, row in batches)
    work = _encode_task
    if plan.given_ids is not None:  # a dataset's input_ids column: written after the check
        tasks, work = _given_tasks(plan, index, tasks), _check_given_task
    if plan.options.num_proc > 1:
        results = shared_pool(plan, plan.options.num_proc).map_ordered(work, tasks)
    else:
        # Read and encode on a thread of their own, a batch or two ahead of the writers on this one: gigatoken
        # releases the GIL, so the part's writing no longer waits for the encoder, nor the encoder for it.
        results = prefetched(work(plan, task) for task in tasks)
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
            raise BuildError(
                source,
                "an encoding worker process died (killed, or out of memory)",
                hint="lower --num-proc or --batch-size, or give the machine more memory",
            ) from None


def _held_sources(batches, held: collections.deque, counter: SourceCounter | None, part_source: str | None = None):
    """``(texts, text bytes, first row)`` of each batch; with a counter, its source names (read, or the mixture
    part's ``part_source`` for every document) and document bytes kept in ``held``."""
    import pyarrow as pa

    for texts, n_bytes, row, sources in batches:
        if counter is not None:
            if part_source is not None:
                codes = pa.array(np.zeros(len(texts), dtype=np.int32))
                sources = pa.DictionaryArray.from_arrays(codes, pa.array([part_source]))
            held.append((sources, text_lengths(texts)))
        yield texts, n_bytes, row


# -- one batch of documents to the release's ids


class EncodeBatch:
    """One batch of texts to ids, checked and narrowed to the release's width (``uint16``, or ``uint32`` above 65,536
    ids).

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
        self.by_engine = (0, 0)  # after encode: this batch's documents the fast engine, and tokenizers, encoded

    def encode(self, texts) -> tuple[np.ndarray, np.ndarray]:
        """(flat ids in the release's width, ``int64`` lengths) of ``texts`` (a pyarrow string array or a list)."""
        before = tuple(getattr(self.encoder, "documents_by_engine", (0, 0)))
        try:
            with engine_output_held():  # a Rust panic's report is dropped: the error names the document instead
                # A pyarrow array: its UTF-8 buffer to the encoder whole where it takes it (encode_utf8), else its
                # texts.
                buffer = None if isinstance(texts, list) else utf8_buffer(texts)
                encoded = None if buffer is None else self.encoder.encode_utf8(*buffer)
                if encoded is None:
                    texts = texts if isinstance(texts, list) else texts.to_pylist()
                    # Long documents in bounded pieces, same ids (tokenizer/long_documents.py).
                    encoded = encode_in_bounded_pieces(self.encoder, texts)
                flat, lengths = encoded
        except BaseException as error:
            if not is_engine_panic(error):
                raise
            raise self._panic_error(texts if isinstance(texts, list) else texts.to_pylist(), error) from None
        after = getattr(self.encoder, "documents_by_engine", (0, 0))
        self.by_engine = (after[0] - before[0], after[1] - before[1])  # a long document counts once, not per piece
        # Before the narrowing cast: an id the width cannot hold would wrap silently.
        try:
            flat = checked_ids(flat, self.vocab_size, self.source)
        except FormatError as e:
            raise BuildError(
                self.source,
                "the encoder produced an id outside the tokenizer's vocabulary",
                expected=f"ids < {self.vocab_size}",
                got=e.got,
            ) from None
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
                return TokenizerError(
                    self.source,
                    f"row {self.first_row + i}: the tokenizer's engine cannot encode this document (it panicked)",
                    got=panic_message(own),
                    hint=_panic_hint(own),
                )
        last = self.first_row + len(texts) - 1
        return TokenizerError(
            self.source,
            f"rows {self.first_row}-{last}: the tokenizer's engine panicked on this batch",
            got=panic_message(error),
            hint=_panic_hint(error),
        )

    def __call__(self, table):
        import pyarrow as pa

        flat, lengths = self.encode(table.column("text"))
        offsets = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return pa.table({"ids": pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(flat))})


def _panic_hint(error: BaseException) -> str:
    if "retry-limit" in str(error):
        return (
            "the pre-tokenizer's regex backtracks past Oniguruma's retry limit on this text: simplify the pattern, "
            "or leave the document out"
        )
    return "leave the document out, or report it to the engine named in the message"


# -- a dataset's own ids, checked


def check_given(encoder, task: tuple) -> tuple[np.ndarray, np.ndarray, int]:
    """One batch of given ids, in this process or a worker's: the checked documents encoded again and compared.

    ``task``: (vocab size, shard, texts, text bytes, given flat ids, given lengths, row names, check mask).
    Returns what an encoding task returns: (flat ids in the release's width, lengths, text bytes).
    """
    vocab_size, source, texts, n_bytes, flat, lengths, rows, mask = task
    batch = EncodeBatch(encoder, vocab_size, source)
    bad = first_out_of_range(flat, vocab_size)
    if bad is not None:
        where = rows[int(np.searchsorted(np.cumsum(lengths), bad, side="right"))]
        raise BuildError(
            where,
            f"{ID_COLUMN} holds an id outside the tokenizer's vocabulary",
            expected=f"ids < {vocab_size}",
            got=int(flat[bad]),
        )
    if mask.any():
        texts = texts if isinstance(texts, list) else texts.to_pylist()
        checked = np.flatnonzero(mask)
        want, want_lengths = batch.encode([texts[i] for i in checked.tolist()])
        _compare(flat, lengths, checked, want, want_lengths, rows)
    return np.asarray(flat, dtype=batch.dtype), lengths, n_bytes


def _compare(flat, lengths, checked, want, want_lengths, rows) -> None:
    """The first checked document whose given ids are not the tokenizer's is refused, naming its row."""
    starts = np.concatenate(([0], np.cumsum(lengths)))
    want_starts = np.concatenate(([0], np.cumsum(want_lengths)))
    for k, i in enumerate(checked.tolist()):
        have, expected = flat[starts[i] : starts[i + 1]], want[want_starts[k] : want_starts[k + 1]]
        if have.size != expected.size or not np.array_equal(have, expected):
            n = min(have.size, expected.size)
            differ = np.flatnonzero(have[:n] != expected[:n])
            at = int(differ[0]) if differ.size else n
            raise BuildError(
                rows[i],
                f"{ID_COLUMN} differ from the tokenizer's ids for this row's text (first difference at id {at})",
                expected=expected[at : at + 8].tolist(),
                got=have[at : at + 8].tolist(),
                hint="map with hf_tokbin.tokenize(tokenizer) and the build's tokenizer and --parse-special-tokens, "
                "or drop the column to encode the text",
            )


# -- counts per source


class SourceCounter:
    """``{source: [documents, text tokens, text bytes]}`` of one part, added batch by batch."""

    def __init__(self, where):
        self.where = where  # the shard, in errors
        self.counts: dict[str, np.ndarray] = {}

    def add(self, sources, text_bytes: np.ndarray, lengths: np.ndarray) -> None:
        """One batch: its documents' source names (a pyarrow string array), UTF-8 bytes and token counts, in the same
        order."""
        import pyarrow as pa

        if len(sources) != lengths.size or text_bytes.size != lengths.size:
            raise BuildError(
                self.where,
                "every encoded document must have its source name",
                expected=len(sources),
                got=int(lengths.size),
            )
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
    """At most ``MAX_SOURCES`` distinct sources (``count`` of them ``scope``: in a shard, or over all parts at the
    finish)."""
    if count > MAX_SOURCES:
        raise BuildError(
            where,
            f"a build counts at most {MAX_SOURCES:,} distinct sources",
            got=f"{count:,} {scope}",
            hint="a source names a part of the corpus (a dataset, a site), not a document",
        )


# -- one part: its files, then its receipt


@dataclass
class _WrittenPart:
    """A part whose documents are all written and counted; :meth:`close` finishes it (its files, then its receipt)."""

    plan: BuildPlan
    index: int
    writers: dict
    counter: SourceCounter | None
    documents: int
    text_tokens: int
    text_bytes: int
    by_engine: tuple[int, int]  # documents the fast engine, and tokenizers, encoded

    def close(self) -> PartDone:
        try:
            receipt, staging = self._recorded()
        except BaseException:
            self._remove()  # failed after the pair was renamed, say: no file of the part is left under a final name
            raise
        _publish_part(self.plan.output, receipt, staging)
        return PartDone(receipt, True, self.by_engine)

    def _recorded(self) -> tuple[Receipt, list[FileEntry]]:
        """Close the writers (files fsynced, renamed), check and record them, write the receipt; the files to publish
        with it."""
        plan, writers = self.plan, self.writers
        closed = {name: writer.close() for name, writer in writers.items()}
        _check_conserved_on_disk(writers, closed, self.text_tokens, self.documents)
        split, part = plan.corpus.shards[self.index].split, part_name(self.index)
        files = _pair_entries(split, part, closed["megatron"], self.documents) if "megatron" in closed else []
        staging = _record_segment(plan, part, closed["llmc"], self.documents) if "llmc" in closed else []
        counter = self.counter
        sources = (
            {name: {split: _receipt_counts(plan, *counts)} for name, counts in counter.totals().items()}
            if counter is not None
            else None
        )
        shard = plan.corpus.shards[self.index]
        receipt = Receipt(
            part=part,
            input_shard=FileEntry(shard.path, shard.size, shard.sha256),
            splits={split: _receipt_counts(plan, self.documents, self.text_tokens, self.text_bytes)},
            files=tuple(files),
            sources=sources,  # checked to add up to the split's counts as the receipt is made
        )
        receipt.write(plan.output.work)
        return receipt, staging

    def abort(self) -> None:
        """Remove the part's temporary files (the part before it failed to close: this one is never closed)."""
        _abort_writers(self.writers)

    def _remove(self) -> None:
        """Remove what a failed closing left: temporaries, the files it renamed, the segment record it wrote.

        Never a receipt: written last and atomically, so a failed closing wrote none.
        """
        _abort_writers(self.writers)
        for path in (self.plan.output.work / staging_rel(part_name(self.index), "json"), *_final_paths(self.writers)):
            path.unlink(missing_ok=True)


def _write_part(plan: BuildPlan, index: int, shard_path: Path, progress: bool) -> _WrittenPart:
    """Check the shard, encode it and write every document; on any failure the part's files are removed."""
    part = part_name(index)
    shard = plan.corpus.shards[index]
    check_shard_file(shard, shard_path)
    writers = _open_writers(plan, plan.output.work, shard.split, part)
    counter = SourceCounter(plan.shard_source.location(shard)) if plan.counts_sources else None
    try:
        by_engine = [0, 0]
        documents, text_tokens, text_bytes = _write_documents(
            plan, index, shard_path, progress, writers, counter, by_engine
        )
        # Before close() renames anything: a part that lost documents leaves no file under a final name.
        if documents != shard.rows:
            raise BuildError(
                shard_path, "documents out must equal rows in (nothing lost)", expected=shard.rows, got=documents
            )
    except BaseException:
        _abort_writers(writers)
        raise
    return _WrittenPart(plan, index, writers, counter, documents, text_tokens, text_bytes, tuple(by_engine))


def _abort_writers(writers: dict) -> None:
    for writer in writers.values():
        writer.abort()


def _final_paths(writers: dict) -> list[Path]:
    """Where the part's writers put their files once closed (a segment of ``.ends`` alone has no ``.tokens``)."""
    paths = []
    for writer in writers.values():
        paths += (
            [writer.tokens_path, writer.ends_path]
            if isinstance(writer, SegmentWriter)
            else [writer.bin_path, writer.idx_path]
        )
    return [path for path in paths if path is not None]


def _pair_entries(split: str, part: str, pair: megatron.PairFiles, documents: int) -> list[FileEntry]:
    """The receipt's entries of the part's Megatron pair (a split with no documents has no pair: its files are
    removed)."""
    if documents == 0:
        pair.bin_path.unlink()
        pair.idx_path.unlink()
        return []
    return [
        FileEntry(pair_path(split, part, "bin"), pair.bin_size, pair.bin_sha256),
        FileEntry(pair_path(split, part, "idx"), pair.idx_size, pair.idx_sha256),
    ]


def _record_segment(plan: BuildPlan, part: str, segment: SegmentFiles, documents: int) -> list[FileEntry]:
    """The llm.c segment's entries, recorded in its ``.json`` beside it; returned for publishing."""
    written = {
        TOKENS_SUFFIX: (segment.tokens_size, segment.tokens_sha256),
        ENDS_SUFFIX: (segment.ends_size, segment.ends_sha256),
    }
    staging = [FileEntry(staging_rel(part, suffix), *written[suffix]) for suffix in segment_suffixes(plan)]
    # The segment's digests, so a resumed build (here or at a URL) checks the segment as it checks the receipt's files;
    # with a seed, where its blocks end, so the finish interleaves them without reading any .ends
    # (formats/llmc_order.py).
    record = {"files": [e.to_dict() for e in staging]}
    if plan.options.shuffle_seed is not None:
        record[BLOCK_ENDS_KEY] = block_token_ends(segment.ends_path, documents, interleaved=True)
    write_text_atomic(plan.output.work / staging_rel(part, "json"), canonical_json(record))
    return staging


def _receipt_counts(plan: BuildPlan, documents: int, text_tokens: int, text_bytes: int) -> SplitCounts:
    """The receipt's counts of documents (of a split, or of one source): the Megatron pair's tokens, one EOD (and one
    BOS, if given) per document."""
    eod_tokens = documents if "megatron" in plan.options.formats else 0
    bos_tokens = documents if "megatron" in plan.options.formats and plan.bos_id is not None else 0
    return SplitCounts(documents, text_tokens, eod_tokens, text_bytes, bos_tokens)


def _write_documents(
    plan: BuildPlan,
    index: int,
    shard_path: Path,
    progress: bool,
    writers: dict,
    counter: SourceCounter | None = None,
    by_engine: list[int] | None = None,
) -> tuple[int, int, int]:
    """Encode the shard and hand every batch, its ids checked once, to every writer. Returns (documents, text tokens,
    text bytes).

    ``counter`` counts the documents per source as they are encoded (before any shuffle: the counts do not depend
    on order).
    """
    documents = text_tokens = text_bytes = 0
    encoded = encode_shard(plan, index, progress, shard_path, counter, by_engine)
    for flat, lengths, n_bytes in shuffled_documents(plan, index, encoded):
        flat, lengths = checked_documents(
            flat, lengths, plan.tokenizer.vocab_size, shard_path
        )  # once, for every format
        if "llmc" in plan.options.formats:
            _check_fits_llmc_file(plan, shard_path, lengths, documents)
        for writer in writers.values():
            writer.add_checked_documents(flat, lengths)
        documents += int(lengths.size)
        text_tokens += int(flat.size)
        text_bytes += n_bytes
    return documents, text_tokens, text_bytes


def _open_writers(plan: BuildPlan, work: Path, split: str, part: str) -> dict:
    """The part's writers by format: its Megatron pair, its llm.c segment."""
    writers: dict = {}
    try:
        if "megatron" in plan.options.formats:
            writers["megatron"] = megatron.MegatronWriter(
                work / pair_path(split, part, "bin"), plan.tokenizer.vocab_size, plan.eod_id, plan.bos_id
            )
        if "llmc" in plan.options.formats:
            layout = plan.llmc_layout
            writers["llmc"] = SegmentWriter(
                work / segment_stem(part),
                layout,
                plan.llmc_sep_id,
                plan.bos_id,
                plan.options.llmc_separator,
                write_tokens=TOKENS_SUFFIX in segment_suffixes(plan),
            )
    except BaseException:
        _abort_writers(writers)  # those opened before the one that failed: their temporaries and hashing threads
        raise
    return writers


def _publish_part(output: Output, receipt: Receipt, staging: list[FileEntry]) -> None:
    """The part's files in completion order: its pair, the llm.c segment and its digests, the receipt last."""
    digests = [staging_rel(receipt.part, "json")] if staging else []
    output.publish(
        [*(e.path for e in receipt.files), *(e.path for e in staging), *digests, receipt_path(receipt.part)]
    )


def _check_fits_llmc_file(plan: BuildPlan, shard_path: Path, lengths: np.ndarray, first_document: int) -> None:
    """A document that no llm.c file can hold (with its separator and BOS) fails its part now, not the finish."""
    sep = plan.llmc_added_tokens
    if not lengths.size or int(lengths.max()) + sep <= plan.options.max_tokens_per_file:
        return
    i = int(np.argmax(lengths + sep > plan.options.max_tokens_per_file))
    raise BuildError(
        shard_path,
        f"document {first_document + i} of this shard is longer than one llm.c file may hold",
        expected=f"<= {plan.options.max_tokens_per_file} tokens with its separator and BOS",
        got=int(lengths[i]) + sep,
        hint="files hold whole documents; raise --max-tokens-per-file",
    )


def _check_conserved_on_disk(writers: dict, closed: dict, text_tokens: int, documents: int) -> None:
    """Each token file on disk must hold the tokens encoded, plus the boundary tokens (BOS, EOD, separator) per
    document its writer adds.

    The sizes are the files' own (not the writers' counters), so a short write
    is caught; on failure the part's files are removed, leaving no file under a final name.
    """
    for name, writer in writers.items():
        path = _paths_of(closed[name])[0]
        if path is None:  # no .tokens: its ids are the Megatron .bin's, checked in this loop
            continue
        expected = text_tokens + documents * writer.boundary_tokens
        on_disk = path.stat().st_size // writer.dtype.itemsize
        if on_disk != expected:
            for files in closed.values():
                for written in _paths_of(files):
                    if written is not None:
                        written.unlink(missing_ok=True)
            raise BuildError(
                path, "tokens on disk must equal tokens encoded (token conservation)", expected=expected, got=on_disk
            )


def _paths_of(files: megatron.PairFiles | SegmentFiles) -> tuple[Path | None, Path]:
    """A closed writer's two files, the token file first."""
    if isinstance(files, SegmentFiles):
        return files.tokens_path, files.ends_path
    return files.bin_path, files.idx_path


def finished_receipt(plan: BuildPlan, index: int) -> Receipt | None:
    """The part's receipt if the part is finished and intact, else None (build it again).

    A part is finished if its receipt and every file it names (and the llm.c
    staging pair) are intact at the output; or intact in this machine's
    unpublished work (a task killed while publishing), which is then published.
    """
    output = plan.output
    receipt = _intact_receipt(plan, output, index)
    scratch = output.scratch()
    if receipt is None and scratch is not None:
        receipt = _intact_receipt(plan, scratch, index)
        if receipt is not None:
            record = _segment_record(scratch, receipt.part, segment_suffixes(plan))
            _publish_part(output, receipt, record.files if record is not None else [])
    return receipt


def _intact_receipt(plan: BuildPlan, output: Output, index: int) -> Receipt | None:
    """The part's receipt at ``output`` if it pins this shard and every file it names (and the staging pair) matches
    its size and SHA-256."""
    part = part_name(index)
    try:
        receipt = output.read_record(receipt_path(part), Receipt.read)
        record = (
            _segment_record(output, part, segment_suffixes(plan))
            if receipt is not None and "llmc" in plan.options.formats
            else SegmentRecord([], None)
        )
    except FormatError:
        return None
    shard = plan.corpus.shards[index]
    if receipt is None or record is None or receipt.input_shard != FileEntry(shard.path, shard.size, shard.sha256):
        return None
    if not _record_fits(plan, receipt, record):
        return None  # a segment recorded for another order: build the part again
    if not all(output.matches(entry) for entry in (*receipt.files, *record.files)):
        return None
    return receipt


def _record_fits(plan: BuildPlan, receipt: Receipt, record: SegmentRecord) -> bool:
    """Whether the segment record is of this build's order: its blocks' ends with a seed (and they fit the segment),
    none without."""
    if "llmc" not in plan.options.formats or plan.options.shuffle_seed is None:
        return record.block_ends is None
    added = plan.llmc_added_tokens
    documents = sum(counts.documents for counts in receipt.splits.values())
    tokens = sum(counts.text_tokens for counts in receipt.splits.values()) + added * documents  # the segment's stream
    try:
        check_block_ends(receipt.part, record.block_ends, documents, tokens)
    except FormatError:
        return False
    return True


@dataclass(frozen=True)
class SegmentRecord:
    """``.work/llmc/<part>.json``: the segment's two files, and with a shuffle seed where its blocks end in its
    stream."""

    files: list[FileEntry]
    block_ends: list[int] | None


def _segment_record(output: Output, part: str, suffixes: tuple[str, ...]) -> SegmentRecord | None:
    """The segment record at ``output`` naming the segment's files ``suffixes`` (:func:`segment_suffixes`), or None if
    it is missing."""
    rel = staging_rel(part, "json")
    data = output.read_bytes(rel)
    if data is None:
        return None
    try:
        obj = json.loads(data.decode("utf-8"))
        entries = [FileEntry.from_dict(f, output.location(rel), f"files[{i}]") for i, f in enumerate(obj["files"])]
        block_ends = obj.get(BLOCK_ENDS_KEY)
        if block_ends is not None and not (isinstance(block_ends, list) and all(is_count(x) for x in block_ends)):
            raise ValueError(f"{BLOCK_ENDS_KEY} must be a list of token counts")
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise FormatError(output.location(rel), "staging record is not valid", got=str(e)) from None
    expected = [staging_rel(part, suffix) for suffix in suffixes]
    if [e.path for e in entries] != expected:
        raise FormatError(
            output.location(rel),
            "staging record must name the part's llm.c segment",
            expected=expected,
            got=[e.path for e in entries],
        )
    return SegmentRecord(entries, block_ends)


def segment_record(plan: BuildPlan, part: str) -> SegmentRecord:
    """The segment record of a finished part at the output, for the finish; an error if it is missing."""
    output = plan.output
    record = _segment_record(output, part, segment_suffixes(plan))
    if record is None:
        raise BuildError(
            output.location(staging_rel(part, "json")),
            "staging record of a finished part is missing",
            hint="run the build again",
        )
    return record
