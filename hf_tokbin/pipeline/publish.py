"""Step 2 of a build, "publish": after every part has its receipt, the llm.c files packed from the segments,
``stats.json``, the preview, the card and ``COMPLETE.json`` last.

The process that runs it (the *driver*) handles records only, never token bytes:

1. it reads the receipts and the parts' segment records (O(parts) small reads; with a seed each holds
   ``BLOCKS_PER_PART`` numbers) and checks them against the receipts (documents, and tokens plus the separator
   and BOS of each);
2. orders each split's documents (:mod:`~hf_tokbin.formats.llmc_order`: whole segments in part order, or with
   ``--shuffle-seed`` the segments' blocks interleaved, each block's token range from the part's record) and cuts
   that stream into files (:func:`~hf_tokbin.formats.llmc_segments.plan_files`: a few ranged reads of a
   segment's ``.ends`` where a file ends inside a range, never a token);
3. maps :func:`pack_file` over the files on the build's engine (a local pool of threads, or Ray tasks): each
   writes the header and copies the byte ranges of the segments it is made of (``os.copy_file_range`` for a
   folder, ranged reads of the output URL otherwise), hashes the file and publishes it;
4. writes ``_MANIFEST.json`` from what the pack tasks return, ``stats.json``, the tokenizer's files, the preview
   (:mod:`.preview`) and the dataset card, checks that documents and tokens add up everywhere (token
   conservation) and publishes ``COMPLETE.json`` last.

The files are the bytes one sequential writer would write. A pack task is idempotent (it writes to a temporary
name and renames), so Ray may re-run it after a worker died, and a killed publish step packs again on re-run.

Where the bytes of a range of a part's llm.c stream come from: its Megatron ``.bin``, or its own segment.

A part's llm.c stream (its documents as the llm.c files hold them,
:mod:`hf_tokbin.formats.llmc_segments`) and its Megatron ``.bin`` are the same
documents in the same order, and where llm.c's separator is the EOD (one id). Per
document, with ``[bos]`` only when given (docs/layouts.md)::

    Megatron               [bos] + ids + [eod]
    llm.c, separator after [bos] + ids + [sep]     the very same ids
    llm.c, before          [sep] + [bos] + ids     the same ids shifted by one:
                                                   stream = [sep] + bin[:-1]

So where both formats are built and their ids have the same width (uint16
and uint16; uint32 and int32, the same bytes for ids < 2**31), the llm.c
stream is the ``.bin`` itself (after), or the ``.bin`` one id later plus one
separator at the very start of the part (before). The part then writes no
``.tokens`` (its ids are written once, into the ``.bin``) and only the
``.ends`` that the cut planner reads; a pack task copies from the ``.bin``.
Elsewhere (llm.c alone, or an llm.c width other than the Megatron one, e.g.
``--llmc-layout llama3`` with a vocabulary <= 65,536) the part writes its
segment's ``.tokens`` and the pack copies from it.

:func:`copy_llmc_range` is the one place that maps a range of a part's stream
(part, first id, ids) to its source file, byte offset and boundary token.
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .._io import atomic_open, sha256_file, write_all, write_json_atomic, write_text_atomic
from ..errors import BuildError
from ..formats import llmc
from ..formats.llmc_order import llmc_order
from ..formats.llmc_segments import (
    ENDS_DTYPE,
    ENDS_SUFFIX,
    DocumentRange,
    FilePlan,
    TokenRange,
    check_block_ends,
    ends_of,
    plan_files,
    ranges_in_order,
    write_packed_file,
)
from ..formats.preview import PREVIEW_DOCUMENTS
from ..formats.records import FileEntry
from ..formats.release import (
    CARD_NAME,
    COMPLETE_NAME,
    LLMC_SPLIT,
    RECEIPTS_DIR,
    RUN_CONFIG_NAME,
    SPLITS,
    STATS_NAME,
    TOKENIZER_DIR,
    TOKENIZER_FILE,
    WORK_DIR,
    Complete,
    Receipt,
    SplitCounts,
    list_release_paths,
    mixture_record,
    part_name,
    receipt_path,
    source_totals,
    split_totals,
    stats_record,
)
from ..output import Output
from .encode import check_distinct_sources, segment_record
from .plan import BuildPlan, staging_rel, stream_file
from .preview import write_previews


def publish_release(
    plan: BuildPlan,
    receipts: list[Receipt],
    engine: str = "local",
    ray_address: str | None = None,
    progress: bool = True,
) -> tuple[dict[str, SplitCounts], int]:
    """Step 2: pack the llm.c files (a map on ``engine``), write stats.json, the preview, the card and, last,
    COMPLETE.json. Returns the counts and the number of files."""
    output = plan.output
    work = output.work
    _fetch_records(output, receipts)
    counts = check_split_totals(plan, receipts)
    mixed = MixedStream(plan, receipts) if plan.options.mix is not None else None  # an unmet mix stops here
    # Digests computed as the big files were written; COMPLETE.json need not hash them again.
    parts_files = {f.path: f for r in receipts for f in r.files}
    packed = (
        _write_llmc(plan, receipts, counts, engine, ray_address, progress, mixed)
        if "llmc" in plan.options.formats
        else []
    )
    stats = stats_record(
        plan.corpus.name,
        plan.tokenizer.tokenizer_id,
        receipts,
        where=output.location(RECEIPTS_DIR),
        mixture=mixed.record() if mixed is not None else None,
    )
    write_json_atomic(work / STATS_NAME, stats)
    _ship_tokenizer(plan)
    write_previews(plan, receipts, mixed.first_runs if mixed is not None else None)  # before the card
    _write_card(plan)
    written = {f.path: f for f in _list_release_files(plan, {**parts_files, **{f.path: f for f in packed}})}
    # Files written by tasks (pairs, llm.c files) need not be in this machine's work folder; their tasks named them.
    files = sorted({**written, **parts_files, **{f.path: f for f in packed}}.values(), key=lambda f: f.path)
    complete = Complete(tuple(files))
    # Published already: run_config.json (at the start), every part's files (receipt last) and the llm.c files.
    published = (
        {RUN_CONFIG_NAME} | {receipt_path(r.part) for r in receipts} | set(parts_files) | {f.path for f in packed}
    )
    output.publish([path for path in written if path not in published])
    output.write_text(COMPLETE_NAME, complete.to_json())
    output.remove_tree(WORK_DIR)
    output.discard_work()
    return counts, len(complete.files) + 1


def _fetch_records(output: Output, receipts: list[Receipt]) -> None:
    """Make the work folder hold what the card reads: every receipt, and the Megatron ``.idx`` files (metadata
    only)."""
    work = output.work
    for receipt in receipts:
        if not (work / receipt_path(receipt.part)).is_file():
            receipt.write(work)  # canonical JSON: the same bytes as the published receipt
    # The card's recipes read every .idx (metadata: 12 bytes a document, no token).
    for entry in (f for r in receipts for f in r.files if f.path.endswith(".idx")):
        output.fetch(entry)


def check_split_totals(plan: BuildPlan, receipts: list[Receipt]) -> dict[str, SplitCounts]:
    """The receipts' counts per split, checked against the corpus rows (nothing lost)."""
    totals = split_totals(receipts)
    for split in SPLITS:
        rows, documents = plan.corpus.rows(split), totals[split].documents if split in totals else 0
        if documents != rows:
            raise BuildError(
                plan.out, f"{split}: documents out must equal corpus rows (nothing lost)", expected=rows, got=documents
            )
    check_source_totals(plan, receipts)
    return totals


def check_source_totals(plan: BuildPlan, receipts: list[Receipt]) -> None:
    """The receipts' documents per source, checked against the corpus manifest's ``documents_by_source`` (counted at
    import).

    Each part bounds its own sources; their union (stats.json's) is first seen here, before the llm.c files are packed.
    """
    check_distinct_sources(plan.out, len({name for r in receipts for name in r.sources or {}}), "over all parts")
    if not plan.corpus.documents_by_source:
        return
    totals = source_totals(receipts, plan.output.location(RECEIPTS_DIR)) or {}
    counted = {split: {name: c[split].documents for name, c in totals.items() if split in c} for split in SPLITS}
    expected = {split: dict(sorted(plan.corpus.documents_by_source.get(split, {}).items())) for split in SPLITS}
    if counted != expected:
        raise BuildError(
            plan.out,
            "documents out per source must equal the corpus manifest's documents_by_source (nothing lost)",
            expected=expected,
            got=counted,
        )


def _write_llmc(
    plan: BuildPlan,
    receipts: list[Receipt],
    counts: dict[str, SplitCounts],
    engine: str,
    ray_address: str | None,
    progress: bool,
    mixed: MixedStream | None = None,
) -> list[FileEntry]:
    """Pack the llm.c token files (one task each) and write their manifest; return the token files as release
    entries. A mixture's train files hold ``mixed``'s stream."""
    from ..engines import run_tasks
    from ..engines.local import usable_cores

    directory = plan.output.work / plan.llmc_dir
    if directory.exists():
        shutil.rmtree(directory)  # a killed finish: pack again from the segments
    files = plan_llmc_files(plan, receipts, counts, mixed)
    # One thread per core this process may use, at least --num-proc: the tasks copy and hash files, and the kernel
    # and hashlib work without the GIL (a build's --num-proc counts worker processes).
    threads = max(plan.options.num_proc, usable_cores())
    labels = [f"{plan.llmc_dir}/{f.name}" for f in files]
    packed = run_tasks(engine, pack_file, plan, files, labels, ray_address, progress, "llm.c files", threads=threads)
    entries = [p.entry for p in packed]
    sep = plan.llmc_added_tokens  # tokens added to each document
    for split, name in LLMC_SPLIT.items():
        c = counts.get(split, SplitCounts(0, 0, 0, 0, 0))
        mine = [e for e in entries if e.split == name]
        written, documents = sum(e.n_tokens for e in mine), sum(e.n_docs for e in mine)
        # a mixture's train files: the stream its schedule drew (counted as it was cut), else every document encoded
        expected = mixed.stream() if mixed is not None and split == "train" else (
            c.documents, c.text_tokens + sep * c.documents
        )
        if (documents, written) != expected:
            raise BuildError(
                directory,
                f"{split}: llm.c tokens must equal tokens encoded (token conservation)",
                expected=f"{expected[0]} documents, {expected[1]} tokens",
                got=f"{documents} documents, {written} tokens",
            )
    manifest = llmc.TokensManifest(
        tokenizer_id=plan.tokenizer.tokenizer_id,
        tokenizer_sha256=plan.tokenizer.sha256,
        vocab_size=plan.tokenizer.vocab_size,
        doc_sep_id=plan.llmc_sep_id,
        dataset=plan.corpus.name,
        version=plan.release_version,
        corpus_manifest_sha256=plan.corpus_manifest_sha256,
        files=tuple(entries),
    )
    manifest.write(directory)
    return [p.file for p in packed]


def _ship_tokenizer(plan: BuildPlan) -> None:
    """``tokenizer/``: the tokenizer.json the build encoded with and the config files beside it, so a release decodes
    on its own.

    tokenizer.json's SHA-256 must still be run_config.json's (the file could have changed since the plan); the config
    files are the bytes the plan read them as (run_config.json pins their digests). The byte tokenizer has no file.
    """
    if plan.tokenizer.path is None:
        return
    folder = plan.output.work / TOKENIZER_DIR
    folder.mkdir(exist_ok=True)
    target = folder / TOKENIZER_FILE
    shutil.copyfile(plan.tokenizer.path, target)
    if sha256_file(target) != plan.tokenizer.sha256:
        target.unlink()
        raise BuildError(
            plan.tokenizer.path,
            "the tokenizer changed during the build: its SHA-256 is not run_config.json's",
            expected=plan.tokenizer.sha256,
        )
    for config_file in plan.tokenizer.config_files:
        with atomic_open(folder / config_file.name) as file:
            file.write(config_file.data)


def _write_card(plan: BuildPlan) -> None:
    """The dataset card README.md, from dataset_card/ via the cards package."""
    from ..cards.release import render_release_card

    work = plan.output.work
    write_text_atomic(work / CARD_NAME, render_release_card(work))


def _list_release_files(plan: BuildPlan, known: dict[str, FileEntry]) -> list[FileEntry]:
    """Every release file in the work folder but COMPLETE.json; ``known`` digests are reused when the size agrees."""
    work = plan.output.work
    entries = []
    for rel in list_release_paths(work):
        size = (work / rel).stat().st_size
        entry = known.get(rel)
        entries.append(
            entry if entry is not None and entry.size == size else FileEntry(rel, size, sha256_file(work / rel))
        )
    return entries


# -- the llm.c files, packed from the segments


@dataclass(frozen=True)
class PackedFile:
    """What a pack task returns: the file's manifest entry and its release entry."""

    entry: llmc.LlmcFileEntry
    file: FileEntry


def ranges_of(
    plan: BuildPlan, receipts: list[Receipt], split: str, counts: SplitCounts, read_ends=None, mixed=None
) -> Iterator[DocumentRange]:
    """The document ranges of ``split``'s llm.c stream in its order (:mod:`~hf_tokbin.formats.llmc_order`), from the
    parts' records; a mixture's train stream is :func:`~hf_tokbin.formats.mixture.mixture_ranges`' (``read_ends``
    reads a segment's ends, ``mixed`` a :class:`MixedStream` that counts it as it passes).

    Each segment is checked against its receipt's counts, and its block ends (with a seed) against its token count.
    """
    output = plan.output
    width = plan.llmc_layout.dtype.itemsize
    added = plan.llmc_added_tokens
    seed = plan.options.shuffle_seed
    indices, names, documents, block_ends = [], [], [], []
    for i, shard in enumerate(plan.corpus.shards):
        if shard.split != split or not shard.rows:
            continue
        record = segment_record(plan, part_name(i))
        ends = record.files[-1]
        tokens = next(f for f in (*record.files, *receipts[i].files) if f.path == stream_file(plan, part_name(i))[0])
        n_documents = receipts[i].splits[split].documents
        expected = receipts[i].splits[split].text_tokens + added * n_documents
        if ends.size != n_documents * ENDS_DTYPE.itemsize or tokens.size != expected * width:
            raise BuildError(
                output.location(tokens.path),
                "an llm.c segment must hold its receipt's documents and tokens (token conservation)",
                expected=f"{n_documents} documents, {expected} tokens",
                got=f"{ends.size} + {tokens.size} bytes",
            )
        indices.append(i)
        names.append(part_name(i))
        documents.append(n_documents)
        block_ends.append(
            check_block_ends(
                output.location(staging_rel(part_name(i), "json")), record.block_ends, n_documents, expected
            )
            if seed is not None
            else [expected]
        )
    if sum(documents) != counts.documents:
        raise BuildError(
            plan.out,
            f"{split}: llm.c segments must hold every document",
            expected=counts.documents,
            got=sum(documents),
        )
    if mixed is not None and split == "train":
        return mixed.ranges(plan, indices, documents, block_ends, read_ends)
    return ranges_in_order(llmc_order(seed, split, documents), names, block_ends)


class MixedStream:
    """A mixture's llm.c train stream (:mod:`hf_tokbin.formats.mixture`): its total and targets, from the receipts'
    counts per source before any file is written, then counted per source as the stream is cut into files (what
    ``stats.json``'s ``mixture`` says, and the preview's first documents)."""

    def __init__(self, plan: BuildPlan, receipts: list[Receipt]):
        from ..formats.mixture import mixture_targets

        self.spec = plan.options.mix
        added = plan.llmc_added_tokens  # the stream's tokens per document besides its text
        self.available = {name: [0, 0] for name in self.spec.names}  # documents, tokens of each source's train parts
        for i, receipt in enumerate(receipts):
            counts = receipt.splits.get("train")
            if counts is not None and counts.documents:
                self.available[plan.part_source(i)][0] += counts.documents
                self.available[plan.part_source(i)][1] += counts.text_tokens + added * counts.documents
        tokens = [self.available[name][1] for name in self.spec.names]
        # An unmet mix stops here, before the publish step writes anything; the encoded parts stay for a re-run.
        try:
            self.total, self.targets = mixture_targets(
                self.spec.names, self.spec.shares, tokens, self.spec.tokens, self.spec.max_epochs
            )
        except BuildError as e:
            kept = "the encoded parts are kept: the same build with another --tokens or --max-epochs reuses them"
            raise BuildError(plan.out, e.rule, e.expected, e.got, f"{e.hint}; {kept}" if e.hint else kept) from None
        self.taken: dict[str, list[int]] | None = None  # documents, tokens in the llm.c train files, once packed
        self.first_runs: list[tuple[int, int, int]] = []  # (part index, first document, documents): the preview's

    def ranges(self, plan: BuildPlan, indices, documents, block_ends, read_ends) -> Iterator[DocumentRange]:
        from ..formats.mixture import MixturePart, mixture_ranges

        names = self.spec.names
        parts = [[] for _ in names]
        index_of = {part_name(index): index for index in indices}
        for index, n, ends in zip(indices, documents, block_ends):
            parts[names.index(plan.part_source(index))].append(
                MixturePart(part_name(index), n, tuple(int(e) for e in ends))
            )
        self.taken, self.first_runs = {name: [0, 0] for name in names}, []
        preview = 0
        for source, r in mixture_ranges(plan.options.shuffle_seed, parts, self.targets, read_ends):
            counted = self.taken[names[source]]
            counted[0] += r.n_documents
            counted[1] += r.n_tokens
            if preview < PREVIEW_DOCUMENTS:
                self.first_runs.append((index_of[r.segment], r.first_document, r.n_documents))
                preview += r.n_documents
            yield r

    def stream(self) -> tuple[int, int]:
        """The llm.c train files' documents and tokens (the stream's: text, separators and BOS)."""
        return sum(d for d, _ in self.taken.values()), sum(t for _, t in self.taken.values())

    def record(self) -> dict:
        """``stats.json``'s ``mixture``: the spec resolved, and per source what was asked and what the llm.c train files
        hold."""
        return mixture_record(self.spec, self.total, self.targets, self.available, self.taken)


def plan_llmc_files(
    plan: BuildPlan, receipts: list[Receipt], counts: dict[str, SplitCounts], mixed: MixedStream | None = None
) -> list[FilePlan]:
    """Every llm.c file of the release, train first, each as the ranges of the segments it is made of."""
    output = plan.output

    def read_ends(segment: str, first: int, count: int):
        rel = staging_rel(segment, ENDS_SUFFIX)
        return ends_of(
            output.read_range(rel, first * ENDS_DTYPE.itemsize, count * ENDS_DTYPE.itemsize), output.location(rel)
        )

    files = []
    for split in SPLITS:
        if split in counts and counts[split].documents:
            files.extend(
                plan_files(
                    LLMC_SPLIT[split],
                    ranges_of(plan, receipts, split, counts[split], read_ends, mixed),
                    plan.options.max_tokens_per_file,
                    read_ends,
                )
            )
    return files


def pack_file(plan: BuildPlan, file: FilePlan, progress: bool = False) -> PackedFile:
    """One pack task: write llm.c file ``file`` from its segments' byte ranges, hash it, publish it."""
    output = plan.output
    layout = plan.llmc_layout
    rel = f"{plan.llmc_dir}/{file.name}"
    # Each range from its part's segment or Megatron .bin (plan.stream_file).
    size = write_packed_file(
        output.work / rel, file, layout, plan.tokenizer.vocab_size, functools.partial(copy_llmc_range, plan)
    )
    digest = sha256_file(output.work / rel)
    output.publish([rel])
    split = file.name.split("-", 1)[0]
    return PackedFile(
        llmc.LlmcFileEntry(file.name, split, file.n_tokens, file.n_docs, digest), FileEntry(rel, size, digest)
    )


def copy_llmc_range(plan: BuildPlan, token_range: TokenRange, fd: int) -> None:
    """Append ids ``[start, start + length)`` of a part's llm.c stream (``token_range.segment`` names the part) to
    ``fd``: bytes of its :func:`stream_file`, and the separator itself for the stream's first id where the file
    lacks it."""
    width = plan.llmc_layout.dtype.itemsize
    rel, shift = stream_file(plan, token_range.segment)
    start, length = token_range.start, token_range.length
    if start < shift and length:
        write_all(fd, np.array([plan.llmc_sep_id], dtype=f"<u{width}").tobytes())
        start, length = start + 1, length - 1
    if length:
        plan.output.copy_range_into(rel, (start - shift) * width, length * width, fd)
