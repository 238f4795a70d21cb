"""The finish of a build: cheap and sequential, after every part has its receipt.

It packs the llm.c token files in corpus order from the parts' staging pairs
(the separator before or after every document, the BOS first, roll-over
before the per-file limit),
writes ``_MANIFEST.json``, ``stats.json`` and the dataset card, checks that
documents and tokens add up everywhere (token conservation) and publishes
``COMPLETE.json`` last.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from .._io import sha256_file, write_json_atomic, write_text_atomic
from ..errors import BuildError
from ..formats import llmc, megatron
from ..formats.records import FileEntry
from ..formats.release import (
    CARD_NAME,
    COMPLETE_NAME,
    LLMC_SPLIT,
    RUN_CONFIG_NAME,
    SPLITS,
    STATS_NAME,
    TOKENIZER_DIR,
    TOKENIZER_FILE,
    Complete,
    Receipt,
    SplitCounts,
    list_release_paths,
    part_name,
    receipt_path,
    split_totals,
    stats_record,
)
from ..output import Output
from .part import staging_entries, staging_rel
from .plan import WORK_DIR, BuildPlan
from .preview import write_previews

_FEED_DOCS = 1 << 16  # documents handed to the llm.c writer per step


def finish_build(plan: BuildPlan, receipts: list[Receipt]) -> tuple[dict[str, SplitCounts], int]:
    """Pack llm.c files, write stats.json, the card and, last, COMPLETE.json. Returns the counts and the number of files."""
    output = plan.output
    work = output.work
    _fetch_parts(plan, output, receipts)
    counts = check_split_totals(plan, receipts)
    # Digests computed as the big files were written; COMPLETE.json need not hash them again.
    known = {f.path: f for r in receipts for f in r.files}
    if "llmc" in plan.options.formats:
        known.update((f.path, f) for f in _write_llmc(plan, counts))
    write_previews(plan, receipts)  # before the card, which declares them
    write_json_atomic(work / STATS_NAME, stats_record(plan.corpus.name, plan.tokenizer.tokenizer_id, receipts))
    _ship_tokenizer(plan)
    _write_card(plan)
    written = {f.path: f for f in _list_release_files(plan, known)}
    # Pairs built on other machines need not be in this machine's work folder; their receipts name them.
    files = sorted({**written, **{f.path: f for r in receipts for f in r.files}}.values(), key=lambda f: f.path)
    complete = Complete(tuple(files))
    # Published already: run_config.json (at the start) and every part's files (receipt last).
    published = {RUN_CONFIG_NAME} | {receipt_path(r.part) for r in receipts} | {f.path for r in receipts for f in r.files}
    output.publish([path for path in written if path not in published])
    output.write_text(COMPLETE_NAME, complete.to_json())
    output.remove_tree(WORK_DIR)
    output.discard_work()
    return counts, len(complete.files) + 1


def _fetch_parts(plan: BuildPlan, output: Output, receipts: list[Receipt]) -> None:
    """Make the work folder hold what the finish reads: every receipt and staging pair, and the Megatron ``.idx`` files (the card reads one's header)."""
    work = output.work
    for receipt in receipts:
        if not (work / receipt_path(receipt.part)).is_file():
            receipt.write(work)  # canonical JSON: the same bytes as the published receipt
        needed = [f for f in receipt.files if f.path.endswith(".idx")]
        if "llmc" in plan.options.formats:
            needed.extend(staging_entries(output, receipt.part))
        for entry in needed:
            output.fetch(entry)


def check_split_totals(plan: BuildPlan, receipts: list[Receipt]) -> dict[str, SplitCounts]:
    """The receipts' counts per split, checked against the corpus rows (nothing lost)."""
    totals = split_totals(receipts)
    for split in SPLITS:
        rows, documents = plan.corpus.rows(split), totals[split].documents if split in totals else 0
        if documents != rows:
            raise BuildError(plan.out, f"{split}: documents out must equal corpus rows (nothing lost)", expected=rows, got=documents)
    return totals


def _write_llmc(plan: BuildPlan, counts: dict[str, SplitCounts]) -> list[FileEntry]:
    """Pack the llm.c token files and their manifest; return the token files as release entries."""
    work = plan.output.work
    directory = work / plan.llmc_dir
    if directory.exists():
        shutil.rmtree(directory)  # a killed finish: pack again from the staging pairs
    entries = []
    for split in SPLITS:
        shards = [i for i, s in enumerate(plan.corpus.shards) if s.split == split and s.rows]
        if not shards:
            continue
        writer = llmc.LlmcWriter(
            directory,
            LLMC_SPLIT[split],
            plan.tokenizer.vocab_size,
            plan.tokenizer.doc_sep_id,
            plan.options.max_tokens_per_file,
            family=plan.options.llmc_layout,
            bos_id=plan.bos_id,
            separator=plan.options.llmc_separator,
        )
        with writer:
            for i in shards:
                _feed_staging(writer, megatron.MegatronPair(work / staging_rel(part_name(i), "bin")))
        files = writer.close()
        sep = (plan.tokenizer.doc_sep_id is not None) + (plan.bos_id is not None)  # tokens added to each document
        c = counts[split]
        written = sum(f.n_tokens for f in files)
        if sum(f.n_docs for f in files) != c.documents or written != c.text_tokens + sep * c.documents:
            raise BuildError(directory, f"{split}: llm.c tokens must equal tokens encoded (token conservation)", expected=c.text_tokens + sep * c.documents, got=written)
        entries.extend(files)
    manifest = llmc.TokensManifest(
        tokenizer_id=plan.tokenizer.tokenizer_id,
        tokenizer_sha256=plan.tokenizer.sha256,
        vocab_size=plan.tokenizer.vocab_size,
        doc_sep_id=plan.tokenizer.doc_sep_id,
        dataset=plan.corpus.name,
        version=plan.release_version,
        corpus_manifest_sha256=plan.corpus_manifest_sha256,
        files=tuple(entries),
    )
    manifest.write(directory)
    return [FileEntry(f"{plan.llmc_dir}/{f.name}", (directory / f.name).stat().st_size, f.sha256) for f in entries]


def _feed_staging(writer: llmc.LlmcWriter, staging: megatron.MegatronPair) -> None:
    # Read, not sliced from the memory map: mapped pages stay in the process's memory until the map closes.
    lengths = staging.lengths
    starts = staging.pointers
    with open(staging.bin_path, "rb") as file:
        for first in range(0, len(staging), _FEED_DOCS):
            chunk = np.asarray(lengths[first : first + _FEED_DOCS], dtype=np.int64)
            file.seek(int(starts[first]))
            tokens = np.fromfile(file, dtype=staging.dtype, count=int(chunk.sum()))
            writer.add_documents(tokens, chunk)


def _ship_tokenizer(plan: BuildPlan) -> None:
    """``tokenizer/``: the tokenizer.json the build encoded with and the config files beside it, so a release decodes on its own.

    Its SHA-256 must still be run_config.json's (the file could have changed since the plan); the byte tokenizer has no file.
    """
    if plan.tokenizer.path is None:
        return
    folder = plan.output.work / TOKENIZER_DIR
    folder.mkdir(exist_ok=True)
    target = folder / TOKENIZER_FILE
    shutil.copyfile(plan.tokenizer.path, target)
    if sha256_file(target) != plan.tokenizer.sha256:
        target.unlink()
        raise BuildError(plan.tokenizer.path, "the tokenizer changed during the build: its SHA-256 is not run_config.json's", expected=plan.tokenizer.sha256)
    for source in plan.tokenizer.config_files:
        shutil.copyfile(source, folder / Path(source).name)


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
        entries.append(entry if entry is not None and entry.size == size else FileEntry(rel, size, sha256_file(work / rel)))
    return entries
