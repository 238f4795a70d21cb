"""One part of a release: one input shard encoded once, its outputs written, its receipt last.

From the same ids (range-checked once) a part writes its Megatron pair
(``[bos] + ids + [eod]`` per document, BOS only when given) and its llm.c
segment: its documents exactly as they will stand in the llm.c files, in
their dtype (``.work/llmc/part-NNNNNN.tokens`` and ``.ends``,
:mod:`hf_tokbin.formats.llmc_segments`), with their sizes and digests in
``.work/llmc/part-NNNNNN.json`` (with ``--shuffle-seed``, also where each of its blocks ends:
:mod:`hf_tokbin.formats.llmc_order`); then its receipt. Where the Megatron ``.bin`` already holds the llm.c
ids' bytes (:mod:`hf_tokbin.pipeline.llmc_source`), the segment is its ``.ends`` alone: every id is written
once. The llm.c files are later
cut from the segments by byte ranges (:mod:`hf_tokbin.pipeline.pack`). The receipt is published last: it marks the part done, so a
killed build skips the part on re-run, after checking every file it names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._io import canonical_json, write_text_atomic
from ..corpus.source import check_shard_file
from ..errors import BuildError, FormatError
from ..formats import megatron
from ..formats.ids import checked_documents
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
from ..output import Output
from .encode import encode_shard, prepare_encoder
from .llmc_source import segment_stem, segment_suffixes, staging_rel
from .plan import BuildPlan
from .shuffle import shuffled_documents
from .sources import SourceCounter

__all__ = ["build_part", "finished_receipt", "segment_record", "segment_stem", "staging_rel"]
BLOCK_ENDS_KEY = "block_ends"  # the segment record's key, with a shuffle seed


def build_part(plan: BuildPlan, index: int, progress: bool = True, close_on=None):
    """Encode input shard ``index`` and write its outputs and receipt; skip it if already done.

    Returns the receipt and whether the part was built (False: skipped).
    ``close_on``: where the part's closing (each file fsynced and hashed, the
    ``.idx`` written, the receipt published) is handed to, so the next part is
    encoded meanwhile (the local engine's
    :class:`~hf_tokbin.engines.local.ClosingInTurn`); the part then returns
    that closing's future, which gives the same tuple.
    """
    part = part_name(index)
    done = finished_receipt(plan, index)
    if done is not None:
        return done, False, (0, 0)
    if plan.encoder is None:
        plan = prepare_encoder(plan)
    shard = plan.corpus.shards[index]
    # The shard's bytes, wherever they are (a corpus folder, or a Hub file fetched for this part only).
    with plan.shard_source.local_path(shard, plan.output.work / WORK_DIR / "shards" / part) as shard_path:
        written = _write_part(plan, index, shard_path, progress)
    return written.close() if close_on is None else close_on(written.close, written.abort)


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

    def close(self) -> tuple[Receipt, bool, tuple[int, int]]:
        try:
            receipt, staging = self._recorded()
        except BaseException:
            self._remove()  # failed after the pair was renamed, say: no file of the part is left under a final name
            raise
        _publish_part(self.plan.output, receipt, staging)
        return receipt, True, self.by_engine

    def _recorded(self) -> tuple[Receipt, list[FileEntry]]:
        """Close the writers (files fsynced, renamed), check and record them, write the receipt; the files to publish with it."""
        plan, writers = self.plan, self.writers
        closed = {name: writer.close() for name, writer in writers.items()}
        _check_conserved_on_disk(writers, closed, self.text_tokens, self.documents)
        split, part = plan.corpus.shards[self.index].split, part_name(self.index)
        files = _pair_entries(split, part, closed["megatron"], self.documents) if "megatron" in closed else []
        staging = _record_segment(plan, part, closed["llmc"], self.documents) if "llmc" in closed else []
        counter = self.counter
        sources = {name: {split: _receipt_counts(plan, *counts)} for name, counts in counter.totals().items()} if counter is not None else None
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
    counter = SourceCounter(plan.shard_source.location(shard)) if plan.source_column is not None else None
    try:
        by_engine = [0, 0]
        documents, text_tokens, text_bytes = _write_documents(plan, index, shard_path, progress, writers, counter, by_engine)
        # Before close() renames anything: a part that lost documents leaves no file under a final name.
        if documents != shard.rows:
            raise BuildError(shard_path, "documents out must equal rows in (nothing lost)", expected=shard.rows, got=documents)
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
        paths += [writer.tokens_path, writer.ends_path] if isinstance(writer, SegmentWriter) else [writer.bin_path, writer.idx_path]
    return [path for path in paths if path is not None]


def _pair_entries(split: str, part: str, pair: megatron.PairFiles, documents: int) -> list[FileEntry]:
    """The receipt's entries of the part's Megatron pair (a split with no documents has no pair: its files are removed)."""
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
    written = {TOKENS_SUFFIX: (segment.tokens_size, segment.tokens_sha256), ENDS_SUFFIX: (segment.ends_size, segment.ends_sha256)}
    staging = [FileEntry(staging_rel(part, suffix), *written[suffix]) for suffix in segment_suffixes(plan)]
    # The segment's digests, so a resumed build (here or at a URL) checks the segment as it checks the receipt's files;
    # with a seed, where its blocks end, so the finish interleaves them without reading any .ends (formats/llmc_order.py).
    record = {"files": [e.to_dict() for e in staging]}
    if plan.options.shuffle_seed is not None:
        record[BLOCK_ENDS_KEY] = block_token_ends(segment.ends_path, documents, interleaved=True)
    write_text_atomic(plan.output.work / staging_rel(part, "json"), canonical_json(record))
    return staging


def _receipt_counts(plan: BuildPlan, documents: int, text_tokens: int, text_bytes: int) -> SplitCounts:
    """The receipt's counts of documents (of a split, or of one source): the Megatron pair's tokens, one EOD (and one BOS, if given) per document."""
    eod_tokens = documents if "megatron" in plan.options.formats else 0
    bos_tokens = documents if "megatron" in plan.options.formats and plan.bos_id is not None else 0
    return SplitCounts(documents, text_tokens, eod_tokens, text_bytes, bos_tokens)


def _write_documents(
    plan: BuildPlan, index: int, shard_path: Path, progress: bool, writers: dict, counter: SourceCounter | None = None,
    by_engine: list[int] | None = None,
) -> tuple[int, int, int]:
    """Encode the shard and hand every batch, its ids checked once, to every writer. Returns (documents, text tokens, text bytes).

    ``counter`` counts the documents per source as they are encoded (before any shuffle: the counts do not depend on order).
    """
    documents = text_tokens = text_bytes = 0
    encoded = encode_shard(plan, index, progress, shard_path, counter, by_engine)
    for flat, lengths, n_bytes in shuffled_documents(plan, index, encoded):
        flat, lengths = checked_documents(flat, lengths, plan.tokenizer.vocab_size, shard_path)  # once, for every format
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
            writers["megatron"] = megatron.MegatronWriter(work / pair_path(split, part, "bin"), plan.tokenizer.vocab_size, plan.eod_id, plan.bos_id)
        if "llmc" in plan.options.formats:
            layout = plan.llmc_layout
            writers["llmc"] = SegmentWriter(work / segment_stem(part), layout, plan.llmc_sep_id, plan.bos_id, plan.options.llmc_separator, write_tokens=TOKENS_SUFFIX in segment_suffixes(plan))
    except BaseException:
        _abort_writers(writers)  # those opened before the one that failed: their temporaries and hashing threads
        raise
    return writers


def _publish_part(output: Output, receipt: Receipt, staging: list[FileEntry]) -> None:
    """The part's files in completion order: its pair, the llm.c segment and its digests, the receipt last."""
    digests = [staging_rel(receipt.part, "json")] if staging else []
    output.publish([*(e.path for e in receipt.files), *(e.path for e in staging), *digests, receipt_path(receipt.part)])


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
    """Each token file on disk must hold the tokens encoded, plus the boundary tokens (BOS, EOD, separator) per document its writer adds.

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
            raise BuildError(path, "tokens on disk must equal tokens encoded (token conservation)", expected=expected, got=on_disk)


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
    """The part's receipt at ``output`` if it pins this shard and every file it names (and the staging pair) matches its size and SHA-256."""
    part = part_name(index)
    try:
        receipt = output.read_record(receipt_path(part), Receipt.read)
        record = _segment_record(output, part, segment_suffixes(plan)) if receipt is not None and "llmc" in plan.options.formats else SegmentRecord([], None)
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
    """Whether the segment record is of this build's order: its blocks' ends with a seed (and they fit the segment), none without."""
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
    """``.work/llmc/<part>.json``: the segment's two files, and with a shuffle seed where its blocks end in its stream."""

    files: list[FileEntry]
    block_ends: list[int] | None


def _segment_record(output: Output, part: str, suffixes: tuple[str, ...]) -> SegmentRecord | None:
    """The segment record at ``output`` naming the segment's files ``suffixes`` (:func:`segment_suffixes`), or None if it is missing."""
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
        raise FormatError(output.location(rel), "staging record must name the part's llm.c segment", expected=expected, got=[e.path for e in entries])
    return SegmentRecord(entries, block_ends)


def segment_record(plan: BuildPlan, part: str) -> SegmentRecord:
    """The segment record of a finished part at the output, for the finish; an error if it is missing."""
    output = plan.output
    record = _segment_record(output, part, segment_suffixes(plan))
    if record is None:
        raise BuildError(output.location(staging_rel(part, "json")), "staging record of a finished part is missing", hint="run the build again")
    return record
