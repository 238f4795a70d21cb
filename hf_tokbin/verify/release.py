"""``hf-tokbin verify DIR``: re-check a whole release, every byte the seeds promise.

The checks run in this order and stop at the first broken promise; the error
names the file (in a JSON file, the field) and the rule.

1. **Files.** ``COMPLETE.json`` exists, and the files it lists are exactly the
   release's files on disk, each with its size and SHA-256. A path with a
   component starting with "." (``.work/``, ``.cache/``, ``.NAME.tmp``) is no
   part of a release (:func:`hf_tokbin.formats.release.is_release_path`): ignored on
   disk, never listed. Every listed path is one of the release layout
   (:func:`hf_tokbin.formats.release.is_layout_path`, the rule a pull applies
   too): nothing else at the top, no name holding a newline or escape.
2. **run_config.json.** Every field used below is present and well formed,
   read in one place (:class:`RunConfig`): ``dataset``, ``version``,
   ``formats``, ``corpus.manifest_sha256``, each input shard of
   ``corpus.shards`` (path, split, rows, size, SHA-256; no non-empty shard
   twice, so the splits are disjoint), ``tokenizer`` (tokenizer_id, sha256,
   vocab_size), the boundary tokens ``doc_sep`` (never null with the megatron
   format) and ``bos``, ``special_tokens``, and ``llmc.layout`` and
   ``llmc.separator`` and ``llmc.max_tokens_per_file`` (1..2**31-1) with the
   llmc format, ``megatron.dtype_code`` (the code vocab_size needs) with the
   megatron format, and ``llmc``/``megatron`` null for a format not built
   (format 1's ``eod_id``, ``tokenizer.doc_sep_id`` and ``llmc.variant`` are
   read too). Every field a consumer reads to learn the layout is then
   checked against the files below.
3. **Receipts.** ``receipts/`` holds exactly ``part-NNNNNN.json`` for input
   shard N. Each receipt names its input shard as run_config.json pins it,
   agrees with ``COMPLETE.json`` about every file it names, counts only its
   shard's split, with documents equal to the shard's rows (so, per split,
   documents equal corpus rows: nothing lost) and one EOD token (and one BOS
   token, with ``bos``) per document with the megatron format (none without),
   and names its part's
   ``shards/<split>/part-NNNNNN.bin`` and ``.idx`` when it has Megatron
   documents, no file otherwise. A mixture's receipt (run_config.json ``mix``)
   counts its documents under one source, the one its shard's path begins
   with, and the receipts' sources are the mix's (:mod:`hf_tokbin.verify.mixture`).
4. **Layout.** ``shards/`` holds exactly the files the receipts name, and
   ``tokens/`` exactly the llm.c folder ``tokens/<tokenizer_id>/<dataset>/``
   (``_MANIFEST.json`` and the files it lists) with the llmc format, nothing
   without.
5. **Megatron pairs.** Each pair is valid (header, sizes, pointers inside the
   ``.bin``), its dtype code is run_config.json's ``megatron.dtype_code``, ids < vocab_size, one
   document per sequence, every sequence ends with the EOD (``doc_sep.id``)
   and, with ``bos``, begins with the BOS, and its sequence and token counts
   equal its receipt's.
6. **llm.c files.** The manifest's tokenizer_id, tokenizer_sha256,
   vocab_size, doc_sep_id, dataset, version and corpus_manifest_sha256 equal
   run_config.json's. Files are numbered from 00000 per split without gaps.
   Each file has the magic of the llm.c layout and, for gpt2 (the llm.c layout),
   header[3] = vocab_size; its header, size, ids < vocab_size, n_tokens and
   SHA-256 are as listed, and it starts (separator "before") or ends
   ("after") with the separator, when there is one; its n_tokens is at most
   ``llmc.max_tokens_per_file``; with a BOS, the BOS is its first document's
   (token 1 after a separator "before", else token 0) and it holds at least
   one per document. For both splits (a split
   absent from the receipts counts zero), documents and tokens equal the
   receipts' (text tokens + one separator and one BOS per document, as
   recorded), and a split without documents has no file. A mixture's train
   files hold its schedule's documents and tokens instead (recomputed from the
   pairs; without them, stats.json's per-source sums: the order cannot be
   recomputed without the pairs).
7. **Both formats agree.** Per split, the llm.c token stream is the Megatron
   documents in the llm.c order, document by document: the pairs in part
   order, or, with run_config.json's ``shuffle`` (scope: blocks interleaved),
   their blocks in the order :mod:`hf_tokbin.formats.llmc_order` recomputes
   from the seed and the receipts' counts, each block's bounds from the
   ``.idx`` pointers (so llm.c files reordered any other way fail); a mixture's
   train split, the ranges of its schedule (:func:`hf_tokbin.formats.mixture.mixture_ranges`,
   document ends from the ``.idx``), a document repeated or left out as it says. Megatron's
   ``[bos] + doc + [eod]`` is llm.c's ``[sep] + [bos] + doc`` (separator
   before) or the very same ``[bos] + doc + [sep]`` (after), with sep = eod.
   The streams are compared id by id in chunks of bounded size, one task per
   llm.c file against the Megatron ranges its position in the split gives
   (computed here from the records). Each llm.c file begins where a document
   begins, and its ``n_docs`` is the number of documents it holds (from the
   ``.idx`` pointers).
7b. **Boundary tokens inside documents.** A separator/EOD or BOS id anywhere
   but its own place in a Megatron document (or, without Megatron, more of
   them in an llm.c file than documents) is named with the file and document
   index. With ``special_tokens: "ordinary"`` and a token whose
   ``ordinary_text_can_encode`` is false, the text cannot have given it: an
   error. Otherwise the text may hold that id (a byte, a vocabulary entry, or
   special-token text parsed on request): a warning in the report.
7c. **The shipped tokenizer.** ``tokenizer/``, when present (releases from
   before it, and byte-tokenizer releases, have none), holds ``tokenizer.json``
   whose SHA-256 is run_config.json's ``tokenizer.sha256``, and at most the
   config files read beside it: exactly those ``tokenizer.config_files`` pins,
   each with its SHA-256 (releases before the pin record none). When the
   separator was read from a config file, the shipped files name it by the
   build's own rule (:mod:`hf_tokbin.formats.tokenizer_configs`).
8. **stats.json** equals what the receipts give
   (:func:`hf_tokbin.formats.release.stats_record`): dataset, tokenizer_id, and the
   counts per split, per source and per part. With a source column, every receipt
   counts its sources and they add up to its split counts (a receipt that does not
   is refused as it is read, naming it), and so do their sums in ``stats.json``.
   A mixture's ``mixture`` section is recomputed with the build's functions
   (:func:`~hf_tokbin.formats.mixture.mixture_targets`,
   :func:`~hf_tokbin.formats.release.mixture_record`); any field that differs is named.
9. **Preview** (:mod:`hf_tokbin.verify.preview`). Each ``preview/<split>.parquet``
   listed holds the split's first documents, one row each, numbered from 0,
   each naming the part its receipts put it in, and per format a
   ``FORMAT_tokens`` = its id count and ``FORMAT_input_ids`` that are the files':
   the Megatron sequence, the llm.c document (the rows, one after another, are
   the split's first llm.c ids). The card's pictures (``pictures/*.svg``) are
   checked as the card is: by their size and SHA-256 in ``COMPLETE.json``.

Who reads what: this process (the *driver*) reads the records and binary-searches
the ``.idx`` pointers; every token file is read by a task on ``engine`` (its
SHA-256, its ids, its boundary tokens, its comparison with the other format, the
previews' first documents). COMPLETE.json's digests of the records are checked here.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .._io import counted, read_json
from ..errors import FormatError, VerificationError, shown
from ..formats import llmc, megatron
from ..formats.llmc_order import Blocks, llmc_order
from ..formats.records import FileEntry
from ..formats.release import (
    COMPLETE_NAME,
    CONFIG_MAX_BYTES,
    LAYOUT_DESCRIPTION,
    LLMC_SPLIT,
    PARTIAL_NAME,
    RECEIPTS_DIR,
    RUN_CONFIG_NAME,
    SHARDS_DIR,
    SPLITS,
    STATS_NAME,
    TOKENIZER_DIR,
    TOKENIZER_FILE,
    TOKENIZER_MAX_BYTES,
    TOKENS_DIR,
    Complete,
    Receipt,
    SplitCounts,
    is_layout_path,
    is_release_path,
    list_release_paths,
    megabytes,
    pair_path,
    part_name,
    read_partial,
    receipt_path,
    split_totals,
    stats_record,
)
from ..formats.run_config import BoundaryToken, RunConfig
from ..formats.sniff import file_magic
from ..formats.tokenizer_configs import FROM_CONFIG_FILE, named_separator, read_config_file
from ..readers.views import open_llmc_file
from .checks import check_digest, check_files, check_receipts
from .mixture import Mixture, check_receipt_sources, recompute_mixture
from .preview import check_previews

# run_config.json's llmc.layout -> the magic of its token files
LLMC_MAGIC = {family: next(x.magic for x in llmc.LAYOUTS if x.family == family) for family in llmc.FAMILIES}
_COMPARE_CHUNK = 1 << 22  # ids compared per step when matching llm.c against Megatron: memory stays flat
MAX_WARNINGS = 20  # boundary tokens inside documents named in a report; the rest are counted
MIXTURE_ORDER = "the mixture's schedule (run_config.json's mix, formats/mixture.py)"


@dataclass
class ReleaseReport:
    path: Path
    files: int = 0
    bytes: int = 0
    splits: dict[str, SplitCounts] = field(default_factory=dict)
    formats: tuple[str, ...] = ()
    # what holds but deserves a look (a boundary id inside a document)
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        lines = [f"{self.path}: OK: {self.files} files, {megabytes(self.bytes)}, formats {', '.join(self.formats)}"]
        for split, c in self.splits.items():
            bos = f" {c.bos_tokens:>12,} BOS" if c.bos_tokens else ""
            lines.append(f"  {split:<11}{c.documents:>12,} documents {c.text_tokens:>15,} text tokens "
                         f"{c.eod_tokens:>12,} EOD{bos}")
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def record(self) -> dict:
        """The summary as a record (``verify --json``): the same counts, ``total_tokens`` included."""
        splits = {split: c.stats_dict() for split, c in self.splits.items()}
        return {
            "path": str(self.path),
            "ok": True,
            "kind": "release",
            "files": self.files,
            "bytes": self.bytes,
            "formats": list(self.formats),
            "splits": splits,
            "warnings": list(self.warnings),
        }


# ---------------------------------------------------------------- the release


def verify_release(
    root: str | os.PathLike,
    engine: str = "local",
    num_proc: int = 1,
    ray_address: str | None = None,
    progress: bool = False,
) -> ReleaseReport:
    """Every rule of the module docstring. The per-file checks (each Megatron pair, each llm.c file) run as tasks on
    ``engine`` (``local``: ``num_proc`` threads; ``ray``: one Ray task each, on nodes that see ``root`` at the same
    path); the checks across files run here, from the records and the files."""
    root = Path(root)
    if not (root / COMPLETE_NAME).exists() and (root / PARTIAL_NAME).is_file():
        return verify_partial_copy(root)
    complete, others = _check_complete(root)
    config, receipts, manifest = _check_records(root, complete)
    totals = split_totals(receipts)
    tasks = _Tasks(FileChecks(os.fspath(root), config, manifest, num_proc), engine, ray_address, progress)
    found = _run_file_checks(tasks, receipts)
    # After the pairs' tasks: the schedule reads their .idx pointers.
    mixture = recompute_mixture(root, config, receipts, True) if config.options.mix is not None else None
    if manifest is not None:
        _check_llmc_records(root, config, manifest, totals, mixture)
        if "megatron" in config.formats:
            _check_llmc_is_megatron(tasks, receipts, mixture=mixture)
    _check_stats(root, config, receipts, mixture)
    warnings = _boundary_warnings(config, found) + ([outside_the_layout(others, "in the folder")] if others else [])
    # Last: derived from the files checked above. One task: it reads the first documents of the token files.
    listed = sorted(f.path for f in complete.files)
    runs = mixture.first_runs() if mixture is not None and mixture.ranges is not None else None
    (not_run,) = tasks.run([("preview", receipts, listed, listed, runs)], ["preview/"], "previews checked")
    return ReleaseReport(
        root, len(complete.files) + 1, sum(f.size for f in complete.files), totals, config.formats, warnings + not_run
    )


def verify_release_records(root: str | os.PathLike, complete: Complete, held: Iterable[str] = ()) -> ReleaseReport:
    """The rules of :func:`verify_release` that ``COMPLETE.json``'s listing and the small records decide.

    For a copy holding the records (``run_config.json``, ``stats.json``, every
    receipt, the llm.c ``_MANIFEST.json``) but maybe not the token files: a
    partial pull, a remote verify. Checks 2-4 and 8 of the module docstring
    against ``complete``; token files whose paths are in ``held`` (already
    checked against ``COMPLETE.json``) are checked as in 5 and 6, one by one;
    7 for each split whose token files are all held, and 9 as far as the held
    files allow. The report's warnings name each rule that could not run.
    Sizes and digests of the records themselves are the caller's to check.
    """
    root, held = Path(root), set(held)
    config, receipts, manifest = _check_records(root, complete)
    totals = split_totals(receipts)
    for entry in manifest.files if manifest is not None else ():
        path = root / config.llmc_dir / entry.name
        if f"{config.llmc_dir}/{entry.name}" in held:
            llmc.verify_token_file(path, entry, manifest.vocab_size, manifest.doc_sep_id, config.llmc_separator)
            _check_llmc_file_layout(path, entry, config)
    if "megatron" in config.formats:
        for receipt, shard in zip(receipts, config.shards):
            if {pair_path(shard.split, receipt.part, suffix) for suffix in ("bin", "idx")} <= held:
                _check_pair(root, receipt, shard.split, config)
    mixture = None
    if config.options.mix is not None:
        train_pairs = {f.path for r in receipts if "train" in r.splits for f in r.files}
        mixture = recompute_mixture(root, config, receipts, train_pairs <= held)
    _check_stats(root, config, receipts, mixture)
    not_run = []
    tasks = _Tasks(FileChecks(os.fspath(root), config, manifest), "local", None, False)
    if manifest is not None:
        _check_llmc_records(root, config, manifest, totals, mixture)
        if "megatron" in config.formats:
            not_run += _check_llmc_is_megatron_where_held(
                tasks, receipts, {f.path for f in complete.files}, held, mixture
            )
    runs = mixture.first_runs() if mixture is not None and mixture.ranges is not None else None
    not_run += check_previews(root, config, receipts, {f.path for f in complete.files}, held, runs)
    absent_configs = sorted(
        p
        for p in {f.path for f in complete.files} - held
        if p.startswith(f"{TOKENIZER_DIR}/") and p != f"{TOKENIZER_DIR}/{TOKENIZER_FILE}"
    )
    if absent_configs:
        not_run.append(
            f"{TOKENIZER_DIR}/: the separator its config files name not checked ({absent_configs[0]} absent here)"
        )
    return ReleaseReport(
        root, len(complete.files) + 1, sum(f.size for f in complete.files), totals, config.formats, not_run
    )


def _check_llmc_is_megatron_where_held(
    tasks: _Tasks, receipts: list[Receipt], listed: set[str], held: set[str], mixture: Mixture | None = None
) -> list[str]:
    """Check 7 for each split whose llm.c files and Megatron pairs are all held; a line for each split that is not."""
    config = tasks.checks.config
    complete_splits, not_run = [], []
    for split in SPLITS:
        llmc_files = {p for p in listed if p.startswith(f"{config.llmc_dir}/{LLMC_SPLIT[split]}-")}
        pairs = {f.path for r in receipts if split in r.splits for f in r.files}
        absent = sorted((llmc_files | pairs) - held)
        if absent:
            not_run.append(f"{split}: the llm.c files not checked against the Megatron pairs ({absent[0]} absent here)")
        else:
            complete_splits.append(split)
    _check_llmc_is_megatron(tasks, receipts, tuple(complete_splits), mixture)
    return not_run


def verify_partial_copy(root: str | os.PathLike) -> ReleaseReport:
    """A copy from ``pull --include``: every file it holds checked against ``COMPLETE.json``'s entries (kept in
    ``PARTIAL.json``), the records' rules as for a whole release, and a warning naming what is absent."""
    root = Path(root)
    complete, held = read_partial(root)
    held_paths = {f.path for f in held}
    others = unlisted_files(root, held_paths | {PARTIAL_NAME}, PARTIAL_NAME)
    check_files(root, held, PARTIAL_NAME, progress=False)
    report = verify_release_records(root, complete, held_paths)
    absent = [f.path for f in complete.files if f.path not in held_paths]
    if absent:
        report.warnings.append(
            f"partial copy: {len(absent)} of {len(complete.files)} files of COMPLETE.json are absent, "
            f"e.g. {', '.join(absent[:3])}"
        )
    if others:
        report.warnings.append(outside_the_layout(others, "in the folder"))
    report.files, report.bytes = len(held), sum(f.size for f in held)
    return report


def _check_records(root: Path, complete: Complete) -> tuple[RunConfig, list[Receipt], llmc.TokensManifest | None]:
    """run_config.json, one receipt per input shard and the llm.c manifest, each agreeing with the files COMPLETE.json
    lists."""
    listed = {f.path for f in complete.files}
    config = RunConfig.read(root / RUN_CONFIG_NAME)
    parts = {receipt_path(part_name(i)) for i in range(len(config.shards))}
    _check_area(root, listed, RECEIPTS_DIR, parts, "the receipts of the input shards of run_config.json")
    receipts = _check_receipts(root, complete, config)
    _check_area(root, listed, SHARDS_DIR, {f.path for r in receipts for f in r.files}, "the files the receipts name")
    manifest, llmc_files = None, set()
    if "llmc" in config.formats:
        manifest = _read_llmc_manifest(root, listed, config)
        _check_manifest_digests(root, complete, config, manifest)
        llmc_files = {f"{config.llmc_dir}/{name}" for name in [llmc.MANIFEST_NAME, *(f.name for f in manifest.files)]}
    _check_area(
        root, listed, TOKENS_DIR, llmc_files, f"the llm.c folder {config.llmc_dir}/ and the files its manifest lists"
    )
    _check_shipped_tokenizer(root, complete, config)
    return config, receipts, manifest


def _check_manifest_digests(root: Path, complete: Complete, config: RunConfig, manifest: llmc.TokensManifest) -> None:
    """Each llm.c file's SHA-256 in the manifest is COMPLETE.json's: the file's task checks the bytes against the
    manifest."""
    listed = {f.path: f.sha256 for f in complete.files}
    for entry in manifest.files:
        rel = f"{config.llmc_dir}/{entry.name}"
        if rel in listed and listed[rel] != entry.sha256:
            raise VerificationError(
                root / rel,
                f"SHA-256 in {llmc.MANIFEST_NAME} differs from {COMPLETE_NAME}",
                expected=listed[rel],
                got=entry.sha256,
            )


def _check_shipped_tokenizer(root: Path, complete: Complete, config: RunConfig) -> None:
    """``tokenizer/``, when the release ships it: a tokenizer.json whose SHA-256 (as COMPLETE.json lists it) is
    run_config.json's, config files that are the ones pinned in ``tokenizer.config_files`` and, where present here,
    name the separator run_config.json records as read from them."""
    shipped = {f.path: f for f in complete.files if f.path.startswith(f"{TOKENIZER_DIR}/")}
    if not shipped:
        return  # releases built before tokenizer/ was shipped, and the byte tokenizer's
    entry = shipped.get(f"{TOKENIZER_DIR}/{TOKENIZER_FILE}")
    if entry is None:
        raise VerificationError(root / TOKENIZER_DIR, f"tokenizer/ holds config files but no {TOKENIZER_FILE}")
    for path, listed in shipped.items():  # verify loads tokenizer.json whole (the preview's texts): bounded first
        limit = TOKENIZER_MAX_BYTES if path == entry.path else CONFIG_MAX_BYTES
        if listed.size > limit:
            raise VerificationError(
                root / path, f"a shipped tokenizer file may be at most {limit:,} bytes", got=f"{listed.size:,} bytes"
            )
    if entry.sha256 != config.tokenizer_sha256:
        raise VerificationError(
            root / entry.path,
            "the shipped tokenizer is not the one the release was built with: "
            "its SHA-256 must be run_config.json's tokenizer.sha256",
            expected=config.tokenizer_sha256,
            got=entry.sha256,
        )
    configs = {path.rpartition("/")[2]: listed for path, listed in shipped.items() if path != entry.path}
    _check_pinned_configs(root, configs, config)
    _check_configs_name_the_separator(root, [root / TOKENIZER_DIR / name for name in configs], config)


def _check_pinned_configs(root: Path, configs: dict[str, FileEntry], config: RunConfig) -> None:
    """The shipped config files are exactly run_config.json's ``tokenizer.config_files``, each with its SHA-256."""
    pinned = config.tokenizer_config_files
    if pinned is None:
        return  # releases built before the config files were pinned: their separator is still checked below
    for name in sorted(set(pinned) | set(configs)):
        got = configs[name].sha256 if name in configs else "absent"
        if pinned.get(name, "absent") != got:
            raise VerificationError(
                root / TOKENIZER_DIR / name,
                "a shipped config file must be the one the build read: "
                "its SHA-256 must be run_config.json's tokenizer.config_files",
                expected=pinned.get(name, "absent"),
                got=got,
            )


def _check_configs_name_the_separator(root: Path, paths: list[Path], config: RunConfig) -> None:
    """With a separator read from a config file, the shipped config files name it, by the build's own rule."""
    recorded = config.doc_sep
    if recorded is None or recorded.source not in FROM_CONFIG_FILE.values():
        return  # --doc-sep, or no separator: the config files did not decide it
    if not all(path.is_file() for path in paths):
        return  # a partial copy without them: verify_release_records names the rule not run
    named = named_separator(tuple(read_config_file(path, VerificationError) for path in paths), VerificationError)
    got = (named.source, named.value) if named is not None else None
    if got not in ((recorded.source, recorded.id), (recorded.source, recorded.token)):
        raise VerificationError(
            named.path if named is not None else root / TOKENIZER_DIR,
            "the shipped config files must name the separator run_config.json records (doc_sep, as read from them)",
            expected=f"{recorded.id} {recorded.token!r} from {recorded.source}",
            got=f"{named.value!r} from {named.source}" if named is not None else "no separator",
        )


def outside_the_layout(paths, where: str) -> str:
    """The one line naming the files beside a release, outside its layout: no part of it (verify reports them, push
    leaves them out)."""
    named = ", ".join(map(shown, paths[:10])) + (f", ... ({len(paths)} in all)" if len(paths) > 10 else "")
    files = counted(len(paths), "other file")
    return f"{files} {where}, outside the release layout and not part of the release: {named}"


def unlisted_files(root: Path, listed: set[str], record: str) -> list[str]:
    """The files of the folder ``record`` does not list, all outside the release layout (those are returned);
    an unlisted file inside the layout breaks the release."""
    others = []
    for rel in list_release_paths(root):
        if rel in listed:
            continue
        if is_layout_path(rel):
            raise VerificationError(root / rel, f"file is not listed in {record}")
        others.append(rel)
    return others


def _check_complete(root: Path) -> tuple[Complete, list[str]]:
    """``COMPLETE.json`` lists exactly the release's files, each with its size and SHA-256; the files beside the
    release, outside its layout, are returned."""
    if not (root / COMPLETE_NAME).exists():
        raise VerificationError(
            root,
            "release is incomplete: no COMPLETE.json",
            hint="a release is complete only when COMPLETE.json is present",
        )
    complete = Complete.read(root)
    listed = {f.path for f in complete.files}
    hidden = sorted(p for p in listed if not is_release_path(p))
    if hidden:
        raise VerificationError(
            root / COMPLETE_NAME,
            "lists a hidden path (a component starting with '.'), which is no part of a release",
            got=repr(hidden[0]),
        )
    outside = sorted(p for p in listed if not is_layout_path(p))
    if outside:  # repr: a name may hold a newline or an escape sequence
        raise VerificationError(
            root / COMPLETE_NAME,
            "lists a path outside the release layout",
            got=repr(outside[0]),
            hint=f"a release holds only {LAYOUT_DESCRIPTION}",
        )
    others = unlisted_files(root, listed, COMPLETE_NAME)
    # A token file's digest is checked by the task that reads it (every one is named by a record: _check_records).
    check_files(root, complete.files, COMPLETE_NAME, progress=False, hash_here=lambda rel: not _read_by_a_task(rel))
    return complete, others


def _read_by_a_task(rel: str) -> bool:
    """Whether a listed path is a token file (a pair's half, an llm.c file), whose SHA-256 its task checks."""
    return rel.startswith(f"{SHARDS_DIR}/") or (rel.startswith(f"{TOKENS_DIR}/") and not rel.endswith(".json"))


def _check_area(root: Path, listed: set[str], area: str, expected: set[str], named_by: str) -> None:
    """The files listed under ``area/`` must be exactly ``expected``."""
    present = {p for p in listed if p.startswith(f"{area}/")}
    extra, missing = sorted(present - expected), sorted(expected - present)
    if extra:
        raise VerificationError(root / extra[0], f"file under {area}/ is not one of {named_by}")
    if missing:
        raise VerificationError(root / missing[0], f"file is missing from COMPLETE.json: it is one of {named_by}")


def _check_receipts(root: Path, complete: Complete, config: RunConfig) -> list[Receipt]:
    """One receipt per input shard, in shard order, each agreeing with its shard and its formats."""
    by_part = {r.part: r for r in check_receipts(root, complete)}
    megatron_format = "megatron" in config.formats
    receipts = []
    for i, shard in enumerate(config.shards):
        part = part_name(i)
        path = root / receipt_path(part)
        receipt = by_part[part]  # _check_area made sure every shard's receipt is listed, and check_receipts read it
        if receipt.input_shard != shard.file:
            raise VerificationError(
                path, "receipt names a different input shard than run_config.json",
                expected=shard.file.to_dict(), got=receipt.input_shard.to_dict(),
            )
        if list(receipt.splits) != [shard.split]:
            raise VerificationError(
                path, "a part counts its input shard's split only (splits are disjoint)",
                expected=[shard.split], got=list(receipt.splits),
            )
        counts = receipt.splits[shard.split]
        if counts.documents != shard.rows:
            raise VerificationError(
                path, f"documents must equal the rows of {shard.file.path} in run_config.json (nothing lost)",
                expected=shard.rows, got=counts.documents,
            )
        eod_tokens = counts.documents if megatron_format else 0
        if counts.eod_tokens != eod_tokens:
            raise VerificationError(
                path, "eod_tokens must be one per document with the megatron format, 0 without",
                expected=eod_tokens, got=counts.eod_tokens,
            )
        bos_tokens = counts.documents if megatron_format and config.bos is not None else 0
        if counts.bos_tokens != bos_tokens:
            raise VerificationError(
                path,
                "bos_tokens must be one per document with the megatron format and a BOS (run_config.json bos), "
                "0 otherwise",
                expected=bos_tokens,
                got=counts.bos_tokens,
            )
        files = ([pair_path(shard.split, part, "bin"), pair_path(shard.split, part, "idx")]
                 if megatron_format and counts.documents else [])
        if sorted(f.path for f in receipt.files) != files:
            raise VerificationError(
                path, "receipt must name its part's .bin and .idx (none without Megatron documents)",
                expected=files, got=[f.path for f in receipt.files],
            )
        receipts.append(receipt)
    if config.options.mix is not None:
        check_receipt_sources(root, config, receipts)
    return receipts


@dataclass(frozen=True)
class FileChecks:
    """What a per-file check task needs (plain values: it pickles to Ray workers)."""

    root: str
    config: RunConfig
    manifest: llmc.TokensManifest | None
    num_proc: int = 1


def check_one_file(checks: FileChecks, item: tuple) -> list:
    """One task of :func:`verify_release`; returns the boundary ids it found inside documents (see
    :func:`_boundary_warnings`).

    ``("pair", receipt, split)``: a Megatron pair, its digests, its boundary ids. ``("llmc", entry)``: an llm.c
    file (and, without Megatron, its boundary ids). ``("same", entry, spans, order)``: an llm.c file equals its
    pieces of the Megatron spans. ``("preview", receipts, listed, held, runs)``: the previews (returns the rules
    not run; ``runs``: a mixture's first train documents, :meth:`Mixture.first_runs`).
    """
    root, config = Path(checks.root), checks.config
    kind = item[0]
    if kind == "pair":
        return _check_pair_task(root, item[1], item[2], config)
    if kind == "same":
        _check_same_ids(root, config, item[1], item[2], item[3])
        return []
    if kind == "preview":
        return check_previews(root, config, item[1], set(item[2]), set(item[3]), item[4])
    entry, manifest = item[1], checks.manifest
    path = root / config.llmc_dir / entry.name
    _check_llmc_header(path, config)
    llmc.verify_token_file(path, entry, manifest.vocab_size, manifest.doc_sep_id, config.llmc_separator)
    _check_llmc_file_layout(path, entry, config)
    return [] if "megatron" in config.formats else _inside_llmc_file(path, entry, config.boundary_tokens())


@dataclass(frozen=True)
class _Tasks:
    """Where verify's tasks run: the engine, and what each task is given."""

    checks: FileChecks
    engine: str
    ray_address: str | None
    progress: bool

    def run(self, items: list[tuple], labels: list[str], desc: str) -> list:
        from ..engines import run_tasks

        # Exactly --num-proc threads: the files checked at once, as its help promises (a user may lower it to spare
        # a shared disk or memory).
        threads = self.checks.num_proc
        engine, where, progress = self.engine, self.ray_address, self.progress
        return run_tasks(engine, check_one_file, self.checks, items, labels, where, progress, desc, threads=threads)


def _run_file_checks(tasks: _Tasks, receipts: list[Receipt]) -> list:
    """Every pair and llm.c file checked by a task; the boundary ids found inside documents, in file order."""
    config, manifest = tasks.checks.config, tasks.checks.manifest
    items: list[tuple] = []
    if "megatron" in config.formats:
        items += [("pair", receipt, shard.split) for receipt, shard in zip(receipts, config.shards)]
    if manifest is not None:
        items += [("llmc", entry) for entry in manifest.files]
    labels = [
        f"{pair_path(i[2], i[1].part, 'bin')}" if i[0] == "pair" else f"{config.llmc_dir}/{i[1].name}" for i in items
    ]
    return [found for one in tasks.run(items, labels, "files checked") for found in one]


def _check_pair_task(root: Path, receipt: Receipt, split: str, config: RunConfig) -> list:
    """A pair's digests (the receipt's entries are COMPLETE.json's), its rules, and the boundary ids inside its
    documents."""
    for entry in receipt.files:
        check_digest(root, entry, COMPLETE_NAME)
    _check_pair(root, receipt, split, config)
    tokens = config.boundary_tokens()
    if not tokens or not receipt.splits[split].documents:
        return []
    return _inside_pair(root / pair_path(split, receipt.part, "bin"), tokens)


def _check_pair(root: Path, receipt: Receipt, split: str, config: RunConfig) -> None:
    counts = receipt.splits[split]
    if not counts.documents:
        return
    pair = megatron.MegatronPair(root / pair_path(split, receipt.part, "bin"), vocab_size=config.vocab_size)
    code = config.megatron_dtype_code  # RunConfig.read made sure it is the code vocab_size needs
    if pair.header.code != code:
        raise FormatError(
            pair.idx_path,
            "dtype code must be run_config.json's megatron.dtype_code (the code of vocab_size)",
            expected=code,
            got=pair.header.code,
        )
    pair.check_one_document_per_sequence(config.eod_id, config.bos_id)
    if len(pair) != counts.documents or pair.n_tokens != counts.total_tokens:
        raise VerificationError(
            pair.bin_path,
            "pair counts differ from the receipt (token conservation)",
            expected=(counts.documents, counts.total_tokens),
            got=(len(pair), pair.n_tokens),
        )


# ---------------------------------------------------------------- llm.c


def verify_llmc_folder(directory: Path) -> llmc.TokensManifest:
    """An llm.c token folder: the files on disk are the manifest's, numbered without gaps, each intact.

    The manifest does not say where the separator stands (the llm.c layout's keys), so
    either layout is accepted here; a release's run_config.json says which.
    """
    manifest = llmc.TokensManifest.read(directory / llmc.MANIFEST_NAME)
    names = {f.name for f in manifest.files}
    on_disk = {p.name for p in directory.glob("*.bin") if is_release_path(p.name)}
    if names != on_disk:
        raise VerificationError(
            directory, "token files on disk differ from the manifest", expected=sorted(names), got=sorted(on_disk)
        )
    _check_llmc_files(directory, manifest, None)
    return manifest


def _check_llmc_files(directory: Path, manifest: llmc.TokensManifest, separator: str | None) -> None:
    """Each split's files numbered from 00000 without gaps; each file intact and as its manifest entry says."""
    for split in llmc.SPLITS:
        files = sorted((f for f in manifest.files if f.split == split), key=lambda f: f.name)
        if [f.name for f in files] != [llmc.file_name(split, i) for i in range(len(files))]:
            raise VerificationError(
                directory / llmc.MANIFEST_NAME,
                f"{split}: token files must be numbered from 00000 without gaps",
                got=[f.name for f in files],
            )
        for entry in files:
            path = directory / entry.name
            llmc.verify_token_file(path, entry, manifest.vocab_size, manifest.doc_sep_id, separator)


def _read_llmc_manifest(root: Path, listed: set[str], config: RunConfig) -> llmc.TokensManifest:
    """The llm.c manifest of the release, naming the tokenizer and corpus run_config.json pins."""
    path = root / config.llmc_dir / llmc.MANIFEST_NAME
    if f"{config.llmc_dir}/{llmc.MANIFEST_NAME}" not in listed:
        raise VerificationError(
            path,
            "llm.c manifest is missing",
            hint=f"run_config.json has the llmc format, so {config.llmc_dir}/ holds the token files",
        )
    manifest = llmc.TokensManifest.read(path)
    for name, expected in config.llmc_identity().items():
        got = getattr(manifest, name)
        if got != expected:
            raise VerificationError(path, f"{name} differs from run_config.json", expected=expected, got=got)
    return manifest


def _check_llmc_header(path: Path, config: RunConfig) -> None:
    """The header's magic is run_config.json's layout's; a GPT-2-family header[3] is the release's vocab_size."""
    magic = LLMC_MAGIC[config.llmc_layout]
    # The llm.c layout's writer fills header[3] (0 only for a vocabulary beyond int32, as llmc.encode_header does).
    header_vocab = config.vocab_size if config.vocab_size <= np.iinfo(np.int32).max else 0
    if file_magic(path) != magic:
        raise FormatError(
            path,
            f"magic in header[0] must be that of llm.c layout {config.llmc_layout} (run_config.json)",
            expected=magic,
            got=file_magic(path),
        )
    if config.llmc_layout == "gpt2":  # upstream's Llama 3 header has no vocab_size field
        header = llmc.read_header(path)
        if header.vocab_size != header_vocab:
            raise FormatError(
                path, "header[3] must be the release's vocab_size", expected=header_vocab, got=header.vocab_size
            )


def _check_llmc_records(
    root: Path,
    config: RunConfig,
    manifest: llmc.TokensManifest,
    totals: dict[str, SplitCounts],
    mixture: Mixture | None = None,
) -> None:
    """The llm.c rules the manifest decides: files numbered without gaps, counts equal to the receipts' (a mixture's
    train files: its schedule's, or without the pairs, stats.json's sums)."""
    directory = root / config.llmc_dir
    manifest_path = directory / llmc.MANIFEST_NAME
    for split in llmc.SPLITS:
        files = sorted((f for f in manifest.files if f.split == split), key=lambda f: f.name)
        if [f.name for f in files] != [llmc.file_name(split, i) for i in range(len(files))]:
            raise VerificationError(
                manifest_path,
                f"{split}: token files must be numbered from 00000 without gaps",
                got=[f.name for f in files],
            )
    sep = (config.llmc_sep is not None) + (config.bos is not None)  # tokens added to each document
    for split in SPLITS:
        counts = totals.get(split, SplitCounts(0, 0, 0))
        files = [f for f in manifest.files if f.split == LLMC_SPLIT[split]]
        if not counts.documents and files:
            raise VerificationError(
                manifest_path,
                f"{split}: a split without documents has no llm.c files",
                expected=[],
                got=[f.name for f in files],
            )
        expected = (counts.documents, counts.text_tokens + sep * counts.documents)
        got = (sum(f.n_docs for f in files), sum(f.n_tokens for f in files))
        if mixture is not None and split == "train":
            if got != mixture.stream():
                drawn = (
                    "the schedule run_config.json's mix and the pairs give (formats/mixture.py)"
                    if mixture.ranges is not None
                    else f"the sums of {STATS_NAME}'s mixture.sources.*.llmc (no pairs here to recompute them)"
                )
                raise VerificationError(
                    manifest_path,
                    f"train: a mixture's llm.c (documents, tokens) must be {drawn}",
                    expected=mixture.stream(),
                    got=got,
                )
            continue
        if got != expected:
            raise VerificationError(
                manifest_path,
                f"{split}: llm.c (documents, tokens) must equal the receipts' "
                "(token conservation: text tokens + separator and BOS per document)",
                expected=expected,
                got=got,
            )


def _check_llmc_file_layout(path: Path, entry: llmc.LlmcFileEntry, config: RunConfig) -> None:
    """What run_config.json's llmc record tells a reader about one file (its header and separators are checked by
    :func:`llmc.verify_token_file`): no more than ``max_tokens_per_file`` tokens, and with a BOS, the BOS where the
    layout puts it (after the first separator "before", first otherwise) and at least one per document.

    With Megatron pairs the whole stream is compared id by id later; without, this is what holds the BOS to account.
    """
    if entry.n_tokens > config.max_tokens_per_file:
        raise VerificationError(
            path.parent / llmc.MANIFEST_NAME,
            f"{entry.name}: n_tokens exceeds run_config.json's llmc.max_tokens_per_file (a build never writes more)",
            expected=f"<= {config.max_tokens_per_file}",
            got=entry.n_tokens,
        )
    if config.bos is None or not entry.n_docs:
        return
    ids = open_llmc_file(path, check_ids=False)
    place = 1 if config.llmc_separator == "before" else 0
    first = int(ids[place]) if ids.size > place else None
    if first != config.bos_id:
        raise VerificationError(
            path,
            f"token {place} must be the BOS (run_config.json bos, llm.c separator {config.llmc_separator})",
            expected=config.bos_id,
            got=first,
        )
    count = llmc.count_id(ids, config.bos_id)
    if count < entry.n_docs:  # text may itself encode to the BOS id, so this is a lower bound
        raise VerificationError(
            path,
            "every document must begin with the BOS (run_config.json bos)",
            expected=f">= {entry.n_docs} BOS ids {config.bos_id}",
            got=count,
        )


# ---------------------------------------------------------------- llm.c = Megatron


def _check_llmc_is_megatron(
    tasks: _Tasks, receipts: list[Receipt], splits: tuple[str, ...] = SPLITS, mixture: Mixture | None = None
) -> None:
    """Per split, the llm.c files hold the Megatron documents in the llm.c order, whole, in run_config.json's layout.

    The order (:mod:`hf_tokbin.formats.llmc_order`) is recomputed from run_config.json's shuffle seed and
    scope and the receipts' counts: the pairs in part order, or their blocks in the seeded order; a mixture's
    train split, the ranges of its schedule (:mod:`hf_tokbin.verify.mixture`; a document may be in several, or
    none). Here, from
    the records and the ``.idx`` pointers, each block's token span and each llm.c file's share of them; a task
    per llm.c file compares its ids with its spans' (:func:`_check_same_ids`). Runs after the counts agree, so
    both streams of a split hold the same number of ids.
    """
    root, config, manifest = Path(tasks.checks.root), tasks.checks.config, tasks.checks.manifest
    order = (
        "part order"
        if config.llmc_interleave_seed is None
        else "run_config.json's seeded block order (formats/llmc_order.py)"
    )
    items, documents = [], []
    for split in splits:
        entries = [f for f in manifest.files if f.split == LLMC_SPLIT[split]]
        parts = [r for r in receipts if split in r.splits and r.splits[split].documents]
        mixed = mixture is not None and mixture.ranges is not None and split == "train"
        blocks = (
            mixture.blocks(parts)
            if mixed
            else llmc_order(config.llmc_interleave_seed, split, [r.splits[split].documents for r in parts])
        )
        spans = _megatron_spans(root, split, parts, blocks)
        starts = itertools.accumulate((e.n_tokens for e in entries), initial=0)
        ends = np.cumsum([s.length for s in spans], dtype=np.int64)  # once per split: each file then bisects its spans
        items += [
            ("same", e, file_spans(spans, ends, start, e.n_tokens, config.llmc_separator), MIXTURE_ORDER if mixed
             else order)
            for e, start in zip(entries, starts)
        ]
        documents.append((entries, spans))
    tasks.run(items, [f"{config.llmc_dir}/{i[1].name}" for i in items], "llm.c files compared")
    for entries, spans in documents:
        _check_documents_per_file(root / config.llmc_dir, entries, spans)


class _Span(NamedTuple):
    """One block of the llm.c order in a Megatron pair: documents ``first`` on, ``count`` of them, tokens ``start``
    on, ``length`` of them; ``end``: where the block ends (its last id ends a document), which a piece of it
    (:func:`file_spans`) may stop short of."""

    bin_path: Path
    dtype: np.dtype
    first: int
    count: int
    start: int
    length: int
    end: int


def _megatron_spans(root: Path, split: str, parts: list[Receipt], blocks: Blocks) -> list[_Span]:
    """The token spans of ``blocks`` in the parts' pairs, in stream order: a document's start is its pointer (the
    ``.idx`` alone), the pair's end (its receipt's tokens, which the pair's task checked) ends the last."""
    spans: list = [None] * len(blocks)
    for p, ks in _grouped(blocks.part.tolist()):
        bin_path = root / pair_path(split, parts[p].part, "bin")
        idx_path = megatron.idx_path_for(bin_path)
        dtype, n_tokens = megatron.read_index_header(idx_path).dtype, parts[p].splits[split].total_tokens
        for k in ks:
            first, count = int(blocks.first[k]), int(blocks.count[k])
            bounds = (
                megatron.sequence_pointers(idx_path, first, min(count + 1, parts[p].splits[split].documents - first))
                // dtype.itemsize
            )
            start, end = int(bounds[0]), int(bounds[count]) if bounds.size > count else n_tokens
            spans[k] = _Span(bin_path, dtype, first, count, start, end - start, end)
    return spans


def file_spans(spans: list[_Span], ends: np.ndarray, start: int, count: int, separator: str) -> list[_Span | None]:
    """The pieces of ``spans`` that llm.c positions ``[start, start + count)`` of the split stand on (``None``: the
    separator before the first document). The streams are the same ids with the separator "after"; "before",
    llm.c position p is Megatron position p - 1, and position 0 that separator. ``ends``: the spans' cumulative
    lengths, so only the spans the file touches are visited (a shuffled split has 256 spans a part)."""
    shift = int(separator == "before")
    low, high = start - shift, start + count - shift
    pieces: list[_Span | None] = [None] if low < 0 else []
    for k in range(int(np.searchsorted(ends, max(low, 0), side="right")), len(spans)):
        s, offset = spans[k], int(ends[k]) - spans[k].length
        if offset >= high:
            break
        a, b = max(low, offset), min(high, int(ends[k]))
        if a < b:
            pieces.append(s._replace(start=s.start + a - offset, length=b - a))
    return pieces


def _grouped(keys: list) -> Iterator[tuple[object, list[int]]]:
    """``(key, positions)`` of each distinct key, in sorted key order, its positions in ``keys`` in order."""
    groups: dict = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    return iter(sorted(groups.items()))


def _check_documents_per_file(directory: Path, entries: list[llmc.LlmcFileEntry], spans: list[_Span]) -> None:
    """Each llm.c file begins where a Megatron document begins and holds ``n_docs`` documents.

    Document d starts at the same position in both streams (``[sep] + [bos] + doc``
    against ``[bos] + doc + [eod]``, or the same ids), so file k, spanning positions [b_k, b_k+1),
    holds the documents whose Megatron start lies in that span. ``rank(x)``,
    the number of documents starting before x, is the documents of the spans before x's
    plus a binary search in its span's pointers (the ``.idx`` alone, no ``.bin`` opened): no index is loaded whole.
    """
    bounds = np.concatenate(([0], np.cumsum([e.n_tokens for e in entries], dtype=np.int64)))
    points = np.concatenate((bounds, bounds[:-1] + 1))  # b_k starts a document iff rank(b_k + 1) - rank(b_k) == 1
    span_starts = np.concatenate(([0], np.cumsum([s.length for s in spans], dtype=np.int64)))
    documents_before = np.concatenate(([0], np.cumsum([s.count for s in spans], dtype=np.int64)))
    in_span = (np.searchsorted(span_starts, points, side="right") - 1).tolist()
    rank = documents_before[in_span].astype(np.int64)
    for i, k in enumerate(in_span):
        if k < len(spans):
            _, dtype, first, count, start, _, _ = spans[k]
            pointers = megatron.sequence_pointers(megatron.idx_path_for(spans[k].bin_path), first, count)
            rank[i] += np.searchsorted(pointers, (int(points[i]) - span_starts[k] + start) * dtype.itemsize)
    n = len(entries)
    documents = np.diff(rank[: n + 1])
    starts = rank[n + 1 :] - rank[:n]
    for k, entry in enumerate(entries):
        if starts[k] != 1:
            raise VerificationError(
                directory / entry.name,
                "an llm.c file must begin where a Megatron document begins (files hold whole documents)",
                got=f"position {int(bounds[k])} of the split",
            )
        if documents[k] != entry.n_docs:
            raise VerificationError(
                directory / llmc.MANIFEST_NAME,
                f"{entry.name}: n_docs must be the number of documents the file holds (by the Megatron pairs)",
                expected=int(documents[k]),
                got=entry.n_docs,
            )


def _check_same_ids(
    root: Path, config: RunConfig, entry: llmc.LlmcFileEntry, spans: list[_Span | None], order: str
) -> None:
    """One llm.c file's ids = its pieces of the Megatron spans (:func:`file_spans`), id by id in chunks of bounded
    size, each document's EOD read as llm.c's separator where that is another token (``llmc.doc_sep``)."""
    sep, separator = config.llmc_sep_id, config.llmc_separator
    path = root / config.llmc_dir / entry.name
    llmc_ids = _chunks([(path, 0, open_llmc_file(path, check_ids=False))])
    first = [("the separator before the first document", 0, np.array([sep]))] if spans and spans[0] is None else []
    megatron_ids = itertools.chain(first, _megatron_chunks([s for s in spans if s is not None], config.eod_id, sep))
    mismatch = _first_mismatch(llmc_ids, megatron_ids)
    if mismatch is not None:
        (path, position, got), (source, source_position, expected) = mismatch
        raise VerificationError(
            path,
            f"token {position}: llm.c ids must be the Megatron documents in {order}, each {separator} the separator",
            expected=f"{expected} (as {source} token {source_position})",
            got=got,
        )


def _megatron_chunks(spans: list[_Span], eod: int | None, sep: int | None) -> Iterator[tuple[object, int, np.ndarray]]:
    """The spans' ids in :func:`_chunks`' slices, every document's last id (its EOD) replaced by ``sep`` when that
    differs.

    Each span's ids (and, to find its documents' ends, its pointers) are mapped as it is compared and let go after.
    """
    for s in spans:
        tokens = megatron.token_range(s.bin_path, s.dtype, s.start, s.length)
        if sep is None or sep == eod:
            yield from _chunks([(s.bin_path, s.start, tokens)])
            continue
        item = s.dtype.itemsize
        # the span's documents' starts
        pointers = megatron.sequence_pointers(megatron.idx_path_for(s.bin_path), s.first, s.count)
        for name, start, ids in _chunks([(s.bin_path, s.start, tokens)]):
            # Document ends in [start, start + size): the position before each next document's start, and the block's
            # last id.
            following = pointers[
                np.searchsorted(pointers, (start + 1) * item) : np.searchsorted(
                    pointers, (start + ids.size + 1) * item
                )
            ]
            ends = np.append(np.asarray(following) // item - 1, [s.end - 1] if start + ids.size == s.end else [])
            ids = np.array(ids)
            ids[ends.astype(np.int64) - start] = sep
            yield name, start, ids


def _chunks(sources: Iterable[tuple[object, int, np.ndarray]]) -> Iterator[tuple[object, int, np.ndarray]]:
    """``(name, first position, ids)`` slices of at most ``_COMPARE_CHUNK`` ids of each ``(name, first, ids)`` source
    in turn."""
    for name, first, ids in sources:
        for start in range(0, ids.size, _COMPARE_CHUNK):
            yield name, first + start, ids[start : start + _COMPARE_CHUNK]


def _first_mismatch(left: Iterator, right: Iterator) -> tuple[tuple, tuple] | None:
    """Walk two chunk streams in step until either ends; ``(name, position, id)`` of each at the first differing id."""
    a = b = None
    while True:
        if a is None or not a[2].size:
            a = next(left, None)
        if b is None or not b[2].size:
            b = next(right, None)
        if a is None or b is None:
            return None
        n = min(a[2].size, b[2].size)
        bad = np.flatnonzero(a[2][:n] != b[2][:n])
        if bad.size:
            i = int(bad[0])
            return (a[0], a[1] + i, int(a[2][i])), (b[0], b[1] + i, int(b[2][i]))
        a, b = (a[0], a[1] + n, a[2][n:]), (b[0], b[1] + n, b[2][n:])


# ---------------------------------------------------------------- boundary tokens inside documents


def _boundary_warnings(config: RunConfig, found: list[tuple[Path, str, BoundaryToken, str]]) -> list[str]:
    """Each boundary id the file tasks found inside a document: an error when the text cannot have given it, else a
    warning (returned).

    Megatron pairs give every document's bounds, so each occurrence is named by
    file and document index; the llm.c stream equals them (checked before).
    Without Megatron, an llm.c file holding more of an id than it has documents
    is named with the count.
    """
    warnings = []
    for path, role, token, where in found:
        text = (f"the {role} id {token.id}{f' {token.token!r}' if token.token is not None else ''}"
                f" is inside a document: {where}")
        if config.special_tokens == "ordinary" and not token.ordinary_text_can_encode:
            raise VerificationError(
                path, f"{text}; text encoded as ordinary text cannot give this id (a false document boundary)"
            )
        if len(warnings) < MAX_WARNINGS:
            reason = (
                "special-token text was parsed as tokens"
                if config.special_tokens == "parsed"
                else "the text itself may encode to it"
            )
            warnings.append(f"{path}: {text} ({reason})")
    if len(found) > MAX_WARNINGS:
        warnings.append(f"... and {len(found) - MAX_WARNINGS} more boundary ids inside documents")
    return warnings


def _inside_llmc_file(
    path: Path, entry: llmc.LlmcFileEntry, tokens: dict[str, BoundaryToken]
) -> list[tuple[Path, str, BoundaryToken, str]]:
    """Without Megatron: each boundary id an llm.c file holds more often than it has documents, with the count."""
    if not tokens:
        return []
    ids = open_llmc_file(path, check_ids=False)
    found = []
    for role, token in tokens.items():
        extra = llmc.count_id(ids, token.id) - entry.n_docs
        if extra > 0:
            found.append((path, role, token, f"{extra} more than its {entry.n_docs} documents"))
    return found


def _inside_pair(bin_path: Path, tokens: dict[str, BoundaryToken]) -> list[tuple[Path, str, BoundaryToken, str]]:
    """Boundary ids of one Megatron pair anywhere but their own places: the EOD last in a sequence, the BOS first."""
    pair = megatron.MegatronPair(bin_path)
    starts = np.asarray(pair.pointers, dtype=np.int64) // pair.dtype.itemsize
    # llm.c's own separator (llmc.doc_sep) has no place in a Megatron pair.
    places = {
        "separator": starts + np.asarray(pair.lengths, dtype=np.int64) - 1,
        "BOS": starts,
        "llm.c separator": starts[:0],
    }
    found = []
    for token_id in sorted({t.id for t in tokens.values()}):
        roles = [role for role, t in tokens.items() if t.id == token_id]  # a BOS may also be the separator
        # repeats are harmless; np.unique took 100x longer
        own = np.sort(np.concatenate([places[role] for role in roles]))
        for start in range(0, pair.n_tokens, _COMPARE_CHUNK):
            positions = start + np.flatnonzero(pair.tokens[start : start + _COMPARE_CHUNK] == token_id)
            # ``own`` is sorted: a binary search per occurrence keeps this linear in the pair (np.isin per chunk was
            # not).
            at = np.minimum(np.searchsorted(own, positions), max(own.size - 1, 0))
            elsewhere = positions[own[at] != positions] if own.size else positions
            for position in elsewhere[: MAX_WARNINGS + 1].tolist():
                document = int(np.searchsorted(starts, position, side="right")) - 1
                found.append(
                    (
                        bin_path,
                        roles[0],
                        tokens[roles[0]],
                        f"document {document} of {bin_path.name}, token {position - int(starts[document])}",
                    )
                )
    return found


# ---------------------------------------------------------------- stats.json


def _check_stats(root: Path, config: RunConfig, receipts: list[Receipt], mixture: Mixture | None = None) -> None:
    """stats.json is what the receipts give, and a mixture's section what its schedule gives (``mixture``)."""
    counts_sources = config.source_column is not None or config.options.mix is not None
    uncounted = [r.part for r in receipts if (r.sources is None) == counts_sources]
    # a receipt without sources in a build that counted them (or the reverse) would hide documents from stats.json
    if uncounted:
        rule = (
            f"every receipt counts its sources: run_config.json's corpus.source_column is {config.source_column!r}"
            if config.source_column
            else "every receipt counts its sources: run_config.json has a mix"
            if config.options.mix is not None
            else "no receipt counts sources: run_config.json names no corpus.source_column"
        )
        raise VerificationError(root / receipt_path(uncounted[0]), rule)
    path = root / STATS_NAME
    stats = read_json(path, VerificationError)
    expected = stats_record(
        config.dataset,
        config.tokenizer_id,
        receipts,
        where=root / RECEIPTS_DIR,
        mixture=mixture.record() if mixture is not None else None,
    )
    difference = _first_difference(expected, stats)
    if difference is not None:
        name, expected, got = difference
        raise VerificationError(
            path, f"{name} differs from the receipts and run_config.json", expected=expected, got=got
        )


def _first_difference(expected, got, name: str = "") -> tuple[str, object, object] | None:
    """The first field (a dotted name) where ``got`` differs from ``expected``, looking inside objects."""
    if isinstance(expected, dict) and isinstance(got, dict):
        if sorted(expected) != sorted(got):
            return name or "top level", f"keys {sorted(expected)}", f"keys {sorted(got)}"
        for key in expected:
            difference = _first_difference(expected[key], got[key], f"{name}.{key}" if name else key)
            if difference is not None:
                return difference
        return None
    return None if expected == got else (name, expected, got)
