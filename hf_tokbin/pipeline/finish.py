"""The finish of a build, after every part has its receipt: llm.c packing, stats, card, COMPLETE.json last.

The process that runs it (the *driver*) handles records only, never token
bytes: it reads the receipts and the parts' llm.c segment records, cuts the
llm.c files from their counts and runs one pack task per file on the build's
engine (:mod:`hf_tokbin.pipeline.pack`), writes ``_MANIFEST.json`` from what
the tasks return, ``stats.json`` and the dataset card, checks that documents
and tokens add up everywhere (token conservation) and publishes
``COMPLETE.json`` last.
"""

from __future__ import annotations

import shutil

from .._io import atomic_open, sha256_file, write_json_atomic, write_text_atomic
from ..errors import BuildError
from ..formats import llmc
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
    receipt_path,
    source_totals,
    split_totals,
    stats_record,
)
from ..output import Output
from .pack import pack_file, plan_llmc_files
from .plan import BuildPlan
from .preview import write_previews
from .sources import check_distinct_sources


def finish_build(plan: BuildPlan, receipts: list[Receipt], engine: str = "local", ray_address: str | None = None, progress: bool = True) -> tuple[dict[str, SplitCounts], int]:
    """Pack llm.c files (tasks on ``engine``), write stats.json, the card and, last, COMPLETE.json. Returns the counts and the number of files."""
    output = plan.output
    work = output.work
    _fetch_records(output, receipts)
    counts = check_split_totals(plan, receipts)
    # Digests computed as the big files were written; COMPLETE.json need not hash them again.
    parts_files = {f.path: f for r in receipts for f in r.files}
    packed = _write_llmc(plan, receipts, counts, engine, ray_address, progress) if "llmc" in plan.options.formats else []
    write_json_atomic(work / STATS_NAME, stats_record(plan.corpus.name, plan.tokenizer.tokenizer_id, receipts, where=output.location(RECEIPTS_DIR)))
    _ship_tokenizer(plan)
    write_previews(plan, receipts)  # before the card, which declares them
    _write_card(plan)
    written = {f.path: f for f in _list_release_files(plan, {**parts_files, **{f.path: f for f in packed}})}
    # Files written by tasks (pairs, llm.c files) need not be in this machine's work folder; their tasks named them.
    files = sorted({**written, **parts_files, **{f.path: f for f in packed}}.values(), key=lambda f: f.path)
    complete = Complete(tuple(files))
    # Published already: run_config.json (at the start), every part's files (receipt last) and the llm.c files.
    published = {RUN_CONFIG_NAME} | {receipt_path(r.part) for r in receipts} | set(parts_files) | {f.path for f in packed}
    output.publish([path for path in written if path not in published])
    output.write_text(COMPLETE_NAME, complete.to_json())
    output.remove_tree(WORK_DIR)
    output.discard_work()
    return counts, len(complete.files) + 1


def _fetch_records(output: Output, receipts: list[Receipt]) -> None:
    """Make the work folder hold what the card reads: every receipt, and the Megatron ``.idx`` files (metadata only)."""
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
            raise BuildError(plan.out, f"{split}: documents out must equal corpus rows (nothing lost)", expected=rows, got=documents)
    check_source_totals(plan, receipts)
    return totals


def check_source_totals(plan: BuildPlan, receipts: list[Receipt]) -> None:
    """The receipts' documents per source, checked against the corpus manifest's ``documents_by_source`` (counted at import).

    Each part bounds its own sources; their union (stats.json's) is first seen here, before the llm.c files are packed.
    """
    check_distinct_sources(plan.out, len({name for r in receipts for name in r.sources or {}}), "over all parts")
    if not plan.corpus.documents_by_source:
        return
    totals = source_totals(receipts, plan.output.location(RECEIPTS_DIR)) or {}
    counted = {split: {name: c[split].documents for name, c in totals.items() if split in c} for split in SPLITS}
    expected = {split: dict(sorted(plan.corpus.documents_by_source.get(split, {}).items())) for split in SPLITS}
    if counted != expected:
        raise BuildError(plan.out, "documents out per source must equal the corpus manifest's documents_by_source (nothing lost)", expected=expected, got=counted)


def _write_llmc(plan: BuildPlan, receipts: list[Receipt], counts: dict[str, SplitCounts], engine: str, ray_address: str | None, progress: bool) -> list[FileEntry]:
    """Pack the llm.c token files (one task each) and write their manifest; return the token files as release entries."""
    from ..engines import run_tasks

    directory = plan.output.work / plan.llmc_dir
    if directory.exists():
        shutil.rmtree(directory)  # a killed finish: pack again from the segments
    files = plan_llmc_files(plan, receipts, counts)
    packed = run_tasks(engine, pack_file, plan, files, [f"{plan.llmc_dir}/{f.name}" for f in files], ray_address, progress, "llm.c files")
    entries = [p.entry for p in packed]
    sep = plan.llmc_added_tokens  # tokens added to each document
    for split, name in LLMC_SPLIT.items():
        c = counts.get(split, SplitCounts(0, 0, 0, 0, 0))
        mine = [e for e in entries if e.split == name]
        written, documents = sum(e.n_tokens for e in mine), sum(e.n_docs for e in mine)
        if documents != c.documents or written != c.text_tokens + sep * c.documents:
            raise BuildError(directory, f"{split}: llm.c tokens must equal tokens encoded (token conservation)", expected=c.text_tokens + sep * c.documents, got=written)
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
    """``tokenizer/``: the tokenizer.json the build encoded with and the config files beside it, so a release decodes on its own.

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
        raise BuildError(plan.tokenizer.path, "the tokenizer changed during the build: its SHA-256 is not run_config.json's", expected=plan.tokenizer.sha256)
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
        entries.append(entry if entry is not None and entry.size == size else FileEntry(rel, size, sha256_file(work / rel)))
    return entries
