"""The one way a build runs: its output's lock, its plan, then its two steps over an engine.

:func:`run_build` is what ``build_release`` and ``hf-tokbin build`` both run (``hf_tokbin.api``); :func:`build`
runs a plan made already. The output's lock is taken here and nowhere else: a local folder's before the inputs
are loaded (a concurrent build refuses at once), a URL's scratch folder once the plan names it. Then:

1. :func:`plan_build` checks every input and option before any work (a format that needs a separator and has
   none fails here) and makes the :class:`~.plan.BuildPlan`; ``--dry-run`` describes it (:func:`describe_plan`)
   and writes nothing;
2. :func:`~.plan.start_release` writes ``run_config.json``, or checks that the output holds the same build;
3. step "encode" (:func:`~.encode.encode_parts`): every part, skipping finished ones;
4. step "publish" (:func:`~.publish.publish_release`): the llm.c files, ``stats.json``, the preview, the card,
   ``COMPLETE.json`` last.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._io import canonical_json, counted, sha256_file
from ..errors import BuildError, FormatError
from ..formats import llmc, megatron
from ..formats.build_options import BuildOptions
from ..formats.corpus_manifest import MANIFEST_NAME as CORPUS_MANIFEST_NAME
from ..formats.corpus_manifest import SPLITS as CORPUS_SPLITS
from ..formats.corpus_manifest import CorpusManifest
from ..formats.corpus_shard import SOURCE_COLUMN, check_source_field
from ..formats.release import (
    COMPLETE_NAME,
    STATS_NAME,
    WORK_DIR,
    Complete,
    Receipt,
    SplitCounts,
    counts_table,
    megabytes,
    mixture_line,
    pair_path,
    part_name,
    receipt_path,
)
from ..formats.rules import FOLDER_NAME_RULE, is_folder_name
from ..formats.run_config import BoundaryToken
from ..output import check_url, is_url, scratch_key
from ..tokenizer.info import BYTE, FROM_DOC_SEP_OPTION, TokenizerInfo
from ..tokenizer.resolve import llama3_begin_of_text
from .encode import EncodeBatch, encode_parts, note, prepare_encoder, sample_documents
from .plan import MAX_STAGED_VOCAB, BuildPlan, start_release
from .publish import check_split_totals, publish_release

ENGINES = ("local", "ray")


@dataclass(frozen=True)
class BuildSummary:
    out: str
    counts: dict[str, SplitCounts]
    files: int
    total_bytes: int
    seconds: float
    parts_built: int
    parts_skipped: int
    encoder: str
    documents_by_engine: dict[str, int] = field(default_factory=dict)  # this run's, by engine name
    workers: str = ""  # where the encoding ran: processes and threads
    mixture: dict | None = None  # a mixture: stats.json's "mixture" (formats.release.mixture_record)

    def table(self) -> str:
        lines = counts_table(self.counts)
        lines.append(
            f"{self.files} files, {megabytes(self.total_bytes)} in {self.out}; "
            f"{self.parts_built} parts built, {self.parts_skipped} skipped; {self.seconds:.1f} s; "
            f"encoder {self.encoder}"
        )
        if self.documents_by_engine:
            total = sum(self.documents_by_engine.values())
            shares = ", ".join(
                f"{name} {count:,} ({100 * count / total:.1f}%)" for name, count in self.documents_by_engine.items()
            )
            lines.append(f"documents encoded by {shares}" + (f"; {self.workers}" if self.workers else ""))
        if self.mixture is not None:
            lines.append(mixture_line(self.mixture))
        return "\n".join(lines)

    def record(self) -> dict:
        """The summary as a record (``build --json``)."""
        return {
            "out": self.out,
            "splits": {split: c.stats_dict() for split, c in self.counts.items()},
            "files": self.files,
            "bytes": self.total_bytes,
            "seconds": round(self.seconds, 3),
            "parts_built": self.parts_built,
            "parts_skipped": self.parts_skipped,
            "encoder": self.encoder,
            "documents_by_engine": self.documents_by_engine,
            "workers": self.workers,
            **({"mixture": self.mixture} if self.mixture is not None else {}),
        }



def build(
    plan: BuildPlan, engine: str = "local", ray_address: str | None = None, progress: bool = True
) -> BuildSummary:
    """Run every part of a planned build (skipping finished ones), then the finish, under the output's lock."""
    planned = contextlib.nullcontext(plan)
    return run_build(plan.out, lambda: planned, engine=engine, ray_address=ray_address, progress=progress)[1]


def run_build(
    out: str | os.PathLike,
    planning: Callable[[], contextlib.AbstractContextManager[BuildPlan]],
    *,
    engine: str = "local",
    ray_address: str | None = None,
    progress: bool = True,
    dry_run: bool = False,
    on_plan: Callable[[BuildPlan], None] | None = None,
) -> tuple[BuildPlan, BuildSummary | tuple[str, dict]]:
    """``(plan, summary)``: the build ``planning()`` plans (a context manager: its inputs last while it lasts).

    Two builds into the same output would delete each other's temporary files: the second one refuses at once
    (:meth:`hf_tokbin.output.Output.lock`), before it loads its inputs. ``on_plan(plan)`` runs before any work
    (the command line prints the boundary tokens and warnings). ``dry_run``: no lock, nothing written; the
    summary is the plan described, as text and as a record (:func:`describe_plan_record`).
    """
    from ..output import lock_before_planning

    if engine not in ENGINES:
        raise BuildError(None, "engine must be local or ray", got=engine)
    with contextlib.ExitStack() as held:
        local = not dry_run and not is_url(os.fspath(out))
        if local:  # the lock's one place, for a local folder: before the inputs are loaded
            held.enter_context(lock_before_planning(out))
        plan = held.enter_context(planning())
        if on_plan is not None:
            on_plan(plan)
        if dry_run:
            return plan, describe_plan_record(plan)
        started = time.perf_counter()
        complete = plan.output.read_bytes(COMPLETE_NAME) is not None
        _check_engine(plan, engine, ray_address, complete)
        if not local:  # and for a URL: its scratch folder, named by the plan
            held.enter_context(plan.output.lock())
        if complete:
            return plan, _summarize_complete(plan, started)
        return plan, _build(plan, engine, ray_address, progress, started)


def _check_engine(plan: BuildPlan, engine: str, ray_address: str | None, complete: bool) -> None:
    if engine == "ray" and plan.out.startswith("memory://"):
        raise BuildError(
            plan.out,
            "--engine ray needs an --out every node can write",
            expected="a shared folder or a URL such as s3://, gs://, file://",
            got="memory:// (one process's memory)",
        )
    if engine == "ray" and not complete:
        from ..engines.ray import check_reachable, import_ray

        import_ray()  # before the first byte of the release is written
        check_reachable(ray_address)


def _summarize_complete(plan: BuildPlan, started: float) -> BuildSummary:
    """A build run again on its complete release: nothing is built; the summary is read back."""
    output = plan.output
    start_release(plan)  # same build? (raises if not); removes stale temporaries
    # A build killed after COMPLETE.json, before its own clean-up, left its work folder: verify would reject it.
    output.remove_tree(WORK_DIR)
    output.discard_work()
    receipts = [_read_record(output, receipt_path(part_name(i)), Receipt.read) for i in range(len(plan.corpus.shards))]
    counts = check_split_totals(plan, receipts)
    return _summary(plan, counts, started, 0, len(receipts))


def _build(plan: BuildPlan, engine: str, ray_address: str | None, progress: bool, started: float) -> BuildSummary:
    from ..engines import connected

    start_release(plan)
    encoder = prepare_encoder(plan)  # once per build, here: worker processes forked from this one inherit it
    if plan.options.mix is not None:
        for line in mixture_estimate(plan, encoder)[0][1:]:  # a mix that looks out of reach: said before any work
            note(line)
    with connected(engine, ray_address):  # one Ray connection for both steps
        done = encode_parts(plan, engine, ray_address, progress)
        counts, _ = publish_release(plan, [part.receipt for part in done], engine, ray_address, progress)
    built = sum(1 for part in done if part.built)
    by_engine = (sum(part.by_engine[0] for part in done), sum(part.by_engine[1] for part in done))
    return _summary(plan, counts, started, built, len(done) - built, by_engine, engine, encoder)


def _read_record(output, rel: str, reader):
    record = output.read_record(rel, reader)
    if record is None:
        raise FormatError(output.location(rel), "file is missing")
    return record


def _summary(
    plan: BuildPlan,
    counts,
    started: float,
    built: int,
    skipped: int,
    by_engine=(0, 0),
    engine_name="local",
    encoder=None,
) -> BuildSummary:
    complete = _read_record(plan.output, COMPLETE_NAME, Complete.read)
    total = sum(f.size for f in complete.files)
    engine = encoder.engine if encoder is not None else "none (nothing to encode)"
    documents = _documents_by_engine(encoder, by_engine)
    mixture = None
    if plan.options.mix is not None:
        mixture = json.loads(plan.output.read_bytes(STATS_NAME)).get("mixture")
    seconds = time.perf_counter() - started
    return BuildSummary(
        plan.out,
        counts,
        len(complete.files) + 1,
        total,
        seconds,
        built,
        skipped,
        engine,
        documents,
        _workers(plan, engine_name),
        mixture,
    )


def _workers(plan: BuildPlan, engine: str) -> str:
    """Where the documents were encoded, processes and threads: what --num-proc chose."""
    if engine == "ray":
        return "each part a Ray task, its engine's own threads"
    if plan.options.num_proc > 1:
        # gigatoken runs on the calling thread in a worker, and the workers turn tokenizers' threads off
        # (engines.local).
        return f"{plan.options.num_proc} worker processes, one engine thread each"
    return f"this process, the engine's own threads ({os.cpu_count()} cores)"


def _documents_by_engine(encoder, by_engine: tuple[int, int]) -> dict[str, int]:
    """The documents this run encoded, by engine name ("gigatoken", "tokenizers"); none counted: empty."""
    if encoder is None or not sum(by_engine) or not hasattr(encoder, "documents_by_engine"):
        return {}
    names = ("gigatoken", "tokenizers")
    return {name: count for name, count in zip(names, by_engine) if count}


# -- planning: every input and option checked before any work


def plan_build(
    corpus_root: str | os.PathLike,
    tokenizer: TokenizerInfo,
    out: str | os.PathLike,
    options: BuildOptions | None = None,
    *,
    corpus_source: str = "local",
    corpus_revision: str | None = None,
    shards=None,
    given_ids=None,
    mix_corpora: tuple[dict, ...] | list[dict] = (),
    mix_origin: dict | None = None,
    **option_fields,
) -> BuildPlan:
    """Check every input and option before any work starts.

    ``options`` are the build's :class:`BuildOptions`; ``option_fields`` its
    fields one by one (``formats=("llmc",)``), over ``options`` or the
    defaults. ``shards`` says where input shard i is read (default: the corpus
    folder; :func:`hf_tokbin.corpus.source.resolve_corpus_source` gives Hub
    files). With ``options.limit``, the corpus's first documents are first
    written as a corpus of their own, which the release then pins.
    """
    url = is_url(out)
    if url:
        check_url(out)  # first: an output no build can write needs no other check
    options, llmc_doc_sep = _llmc_boundary(tokenizer, BuildOptions.of(options, **option_fields))
    _check_boundaries(tokenizer, options)
    _check_tokenizer(tokenizer, options.formats)
    corpus_root, shards, subset = _corpus(
        Path(corpus_root), corpus_source, corpus_revision, shards, options.limit, options.source_column
    )
    manifest = CorpusManifest.read(corpus_root)
    shards.check(manifest)
    _check_fits_the_hub(manifest, options.formats, out)
    if options.source_column is not None:
        _check_source_column(shards, manifest, options.source_column, corpus_root / CORPUS_MANIFEST_NAME)
    plan = BuildPlan(
        # Absolute: Ray workers run in other folders. Never written to reproducible files.
        corpus_root=os.fspath(corpus_root.resolve()),
        corpus=manifest,
        corpus_manifest_sha256=sha256_file(corpus_root / CORPUS_MANIFEST_NAME),
        corpus_source=corpus_source,
        corpus_revision=corpus_revision,
        tokenizer=tokenizer,
        out=out.rstrip("/") if url else os.fspath(Path(out).resolve()),
        options=options,
        shards=shards,
        corpus_subset=subset,
        given_ids=given_ids,
        llmc_doc_sep=llmc_doc_sep,
        mix_corpora=tuple(mix_corpora),
        mix_origin=mix_origin,
    )
    if url:
        plan = dataclasses.replace(plan, scratch_key=scratch_key(plan.out, canonical_json(plan.run_config())))
    return plan


def _check_source_column(shards, manifest: CorpusManifest, column: str, manifest_path: Path) -> None:
    """``--source-column``: on a corpus that counted no sources, the shards' own column, in the first shard's footer
    (a mistyped name stops the build before its output is written; each part checks its own shard). A corpus folder
    that counts its sources already is counted by its own column: naming another is refused, never ignored."""
    import pyarrow.parquet as pq

    if manifest.documents_by_source:
        if column != SOURCE_COLUMN:
            raise BuildError(
                manifest_path,
                "--source-column: this corpus folder counts its documents by source already",
                expected=f"no --source-column, or its own column {SOURCE_COLUMN!r}",
                got=column,
                hint="corpus import --source-column counted them; the build reads its 'source' column",
            )
        return
    first = next((s for s in manifest.shards if s.rows), None)
    if first is None:
        return
    with shards.open_for_sample(first) as handle, pq.ParquetFile(handle) as parquet:
        check_source_field(parquet.schema_arrow, column, shards.location(first))


def _corpus(
    root: Path, source: str, revision: str | None, shards, limit: int | None, source_column: str | None = None
):
    """(the corpus folder, where its shards are read, what it was cut from): as given, or with ``limit`` its first
    documents, read checked, as a corpus of their own (:func:`hf_tokbin.corpus.subset.first_documents`)."""
    from ..corpus.source import CorpusSource, LocalShards

    if shards is None:
        shards = LocalShards(os.fspath(root.resolve()))
    if limit is None:
        return root, shards, None
    from ..corpus.subset import first_documents  # only here: it reads through datasets' checks, a second to import

    subset = first_documents(CorpusSource(root, source, revision, shards), limit, source_column=source_column)
    return subset.root, subset.shards, subset.subset


def _tokenizer_place(tokenizer: TokenizerInfo) -> str:
    """The tokenizer as a message names it: a local tokenizer.json by its path, else its Hub repo id or ``byte``."""
    return tokenizer.path if tokenizer.source == "local" and tokenizer.path else tokenizer.source


def _llmc_boundary(tokenizer: TokenizerInfo, options: BuildOptions) -> tuple[BuildOptions, BoundaryToken | None]:
    """The options with the llm.c separator's place chosen, and llm.c's own separator when it is not the tokenizer's.

    Without ``--llmc-sep``: before each document (the llm.c layout). With ``--llmc-layout
    llama3`` and no ``--doc-sep``/``--bos``, llm.c's own Llama 3 data, which
    the trainer's files hold (``dev/data/fineweb.py`` ``tokenize_llama``:
    ``[<|begin_of_text|>] + ids``, no EOS), when the tokenizer has that token.
    Megatron keeps the tokenizer's EOD.
    """
    if options.llmc_separator is not None:
        return options, None
    options = dataclasses.replace(options, llmc_separator="before")
    explicit = tokenizer.bos is not None or (
        tokenizer.doc_sep is not None and tokenizer.doc_sep.source == FROM_DOC_SEP_OPTION
    )
    if "llmc" not in options.formats or options.llmc_layout != "llama3" or explicit:
        return options, None
    begin = llama3_begin_of_text(tokenizer)
    return options, (begin if begin is not None and begin != tokenizer.doc_sep else None)


def _check_boundaries(tokenizer: TokenizerInfo, options: BuildOptions) -> None:
    """A format (or llm.c layout) that puts a separator at every document needs the tokenizer to have one."""
    if "megatron" in options.formats and tokenizer.doc_sep_id is None:
        hint = (
            "the byte tokenizer has none of its own: give --doc-sep N, a byte value 0..255"
            if tokenizer.source == BYTE
            else "give --doc-sep TOKEN_OR_ID, or put beside tokenizer.json a generation_config.json with eos_token_id "
            "or a tokenizer_config.json with eos_token"
        )
        raise BuildError(
            _tokenizer_place(tokenizer),
            "the megatron format appends an EOD token to every document and this tokenizer has none",
            hint=hint,
        )
    separator = options.llmc_separator
    if separator != "before" and "llmc" in options.formats and tokenizer.doc_sep_id is None:
        raise BuildError(
            _tokenizer_place(tokenizer),
            f"--llmc-sep {separator} needs a separator and this tokenizer has none",
            hint="give --doc-sep TOKEN_OR_ID",
        )


def _check_fits_the_hub(manifest: CorpusManifest, formats: tuple[str, ...], out) -> None:
    """A release the Hub could not hold (more than 10,000 entries in one folder) is refused now, before any work."""
    from ..errors import HubError
    from ..hub.files import HUB_MAX_ENTRIES_PER_FOLDER, check_hub_limits

    paths = [receipt_path(part_name(i)) for i in range(len(manifest.shards))]
    if "megatron" in formats:
        paths += [
            pair_path(s.split, part_name(i), suffix)
            for i, s in enumerate(manifest.shards)
            if s.rows
            for suffix in ("bin", "idx")
        ]
    try:
        check_hub_limits(paths)
    except HubError as e:
        per_split = max(len([s for s in manifest.shards if s.split == split]) for split in ("train", "validation"))
        factor = max(
            -(-len(manifest.shards) // HUB_MAX_ENTRIES_PER_FOLDER),
            -(-per_split // (HUB_MAX_ENTRIES_PER_FOLDER // 2)) if "megatron" in formats else 1,
        )
        hint = (
            f"write the corpus again with shards about {factor}x larger (--shard-bytes): "
            "receipts/ holds one file per part, shards/<split>/ two"
        )
        raise BuildError(out, f"the release could not be published: {e.rule}", hint=hint) from None


def _check_tokenizer(tokenizer: TokenizerInfo, formats: tuple[str, ...]) -> None:
    """The tokenizer names one folder and its ids fit every output and the int32 staging pairs."""
    if not is_folder_name(tokenizer.tokenizer_id):
        raise BuildError(
            tokenizer.path or tokenizer.source,
            "--tokenizer-id names the folder tokens/<tokenizer_id>/",
            expected=FOLDER_NAME_RULE,
            got=repr(tokenizer.tokenizer_id),
        )
    llmc.version_for_vocab(tokenizer.vocab_size)
    if tokenizer.vocab_size > MAX_STAGED_VOCAB:
        # Megatron's widest dtype is int32, and --shuffle-seed stages a part's ids as an int32 pair (shuffle.py).
        raise BuildError(
            tokenizer.path or tokenizer.source,
            "ids up to 2**31 - 1 only: the build stages every document as int32",
            expected=f"vocab_size <= {MAX_STAGED_VOCAB:,}",
            got=tokenizer.vocab_size,
        )
    if "megatron" in formats:
        megatron.dtype_code_for_vocab(tokenizer.vocab_size)


# -- build --dry-run


_LLMC_NAMES = {"train": "train", "validation": "val"}


def describe_plan(plan: BuildPlan) -> str:
    """``build --dry-run``: what a build would do, estimated from a sample, with nothing written.

    The input shards per split (documents exact, from the corpus manifest), the encoder's decision (its fast-path
    check runs on the same sample the build uses), estimated tokens (mean tokens per document of the sample, times
    the documents) and the bytes each format would take, and where every file would go. Only reads happen: the
    corpus manifest, the first documents of the shards (a Hub shard's footer and first row group, by range
    requests) and the tokenizer. No folder is created, at ``--out`` or anywhere.
    """
    return describe_plan_record(plan)[0]


def describe_plan_record(plan: BuildPlan) -> tuple[str, dict]:
    """:func:`describe_plan`'s text, and the same facts as a record (``build --dry-run --json``)."""
    sample = sample_documents(plan)
    encoder = prepare_encoder(plan)
    if sample:
        # As the build encodes: long documents in bounded pieces, a panic as one line.
        where = "the sampled documents (the first of each shard)"
        _, lengths = EncodeBatch(encoder, plan.tokenizer.vocab_size, where).encode(sample)
        tokens_per_document = float(np.mean(lengths))
    else:
        tokens_per_document = 0.0
    corpus = plan.corpus
    origin = "local folder" if plan.corpus_source == "local" else f"Hub {plan.corpus_source}@{plan.corpus_revision}"
    lines = [f"corpus {corpus.name} ({origin}): {len(corpus.shards)} input shards, split rule {corpus.split_rule}"]
    if corpus.empty_documents_dropped:
        lines.append(f"  {corpus.empty_documents_dropped:,} empty documents were dropped when the corpus was written")
    lines += _sources_line(plan)
    estimate, estimated = mixture_estimate(plan, encoder) if plan.options.mix is not None else ([], None)
    lines += estimate
    splits = {}
    for split in CORPUS_SPLITS:
        split_lines, splits[split] = _split_estimate(plan, split, tokens_per_document)
        lines += split_lines
    tokenizer = plan.tokenizer
    lines.append(
        f"tokenizer {tokenizer.tokenizer_id} (--tokenizer-id sets it): vocab {tokenizer.vocab_size:,}, "
        f"separator/EOD {plan.eod_id}; encoder {encoder.engine}"
    )
    lines.append(
        f"estimate from {len(sample):,} sampled documents ({tokens_per_document:,.1f} tokens each on average)"
    )
    lines.append(f"out: {plan.out} (run_config.json, stats.json, README.md, COMPLETE.json last); nothing was written")
    record = {
        "corpus": {
            "name": corpus.name,
            "source": plan.corpus_source,
            "revision": plan.corpus_revision,
            "shards": len(corpus.shards),
            "split_rule": corpus.split_rule,
        },
        "splits": splits,
        "formats": list(plan.options.formats),
        "llmc_dir": plan.llmc_dir if "llmc" in plan.options.formats else None,
        "tokenizer_id": tokenizer.tokenizer_id,
        "vocab_size": tokenizer.vocab_size,
        "eod_id": plan.eod_id,
        "encoder": encoder.engine,
        "sampled_documents": len(sample),
        "tokens_per_document": round(tokens_per_document, 3),
        # a mixture: its spec as run_config.json will record it, and the estimate from sampled documents (the build
        # resolves the total exactly once the parts are encoded)
        **({"mix": plan.options.mix.to_record(list(plan.mix_corpora), plan.mix_origin)} if plan.options.mix else {}),
        **({"mix_estimate": estimated} if estimated is not None else {}),
    }
    return "\n".join(lines), record


def _split_estimate(plan: BuildPlan, split: str, tokens_per_document: float) -> tuple[list[str], dict]:
    """One split's lines of the plan (shards, documents, estimated tokens and bytes per format) and its record."""
    corpus = plan.corpus
    width = 2 if megatron.dtype_code_for_vocab(plan.tokenizer.vocab_size) == megatron.CODE_UINT16 else 4
    llmc_width = plan.llmc_layout.dtype.itemsize
    sep = 0 if plan.llmc_sep_id is None else 1  # llm.c's separator (Megatron's EOD is always there)
    bos = 0 if plan.bos_id is None else 1
    shards = [i for i, s in enumerate(corpus.shards) if s.split == split]
    documents = corpus.rows(split)
    tokens = int(round(tokens_per_document * documents))
    record = {"shards": len(shards), "documents": documents, "estimated_tokens": tokens}
    if not shards:
        return [f"{split}: no documents"], record
    record["parts"] = [part_name(i) for i in shards]
    parts = f"{part_name(shards[0])}..{part_name(shards[-1])}"
    held = f"{counted(len(shards), 'shard')} ({parts}), {counted(documents, 'document')}"
    lines = [f"{split}: {held}, ~{tokens:,} tokens"]
    if "megatron" in plan.options.formats:
        bin_bytes = (tokens + documents * (1 + bos)) * width
        idx_bytes = len(shards) * megatron.HEADER_BYTES + documents * 12 + (documents + len(shards)) * 8
        record["megatron_bytes"] = bin_bytes + idx_bytes
        lines.append(
            f"  megatron: ~{megabytes(bin_bytes + idx_bytes)} in shards/{split}/part-NNNNNN.bin/.idx, "
            "receipts/part-NNNNNN.json"
        )
    if "llmc" in plan.options.formats:
        stream = tokens + documents * (sep + bos)
        files = max(1, -(-stream // plan.options.max_tokens_per_file))
        record.update(llmc_bytes=stream * llmc_width + files * llmc.HEADER_BYTES, llmc_files=files)
        lines.append(
            f"  llmc: ~{megabytes(record['llmc_bytes'])} in ~{files} files "
            f"{plan.llmc_dir}/{_LLMC_NAMES[split]}-NNNNN.bin"
        )
    return lines, record


def mixture_estimate(plan: BuildPlan, encoder) -> tuple[list[str], dict]:
    """A mixture's train tokens per source estimated from the first documents of its train shards, and the total
    and targets they give: a line, then a warning where the mix looks out of reach; and the same as a record.

    An estimate only (the first documents of up to 8 shards a source): the build refuses an unmet mix exactly, once
    the parts are encoded, and a re-run with another --tokens or --max-epochs reuses them.
    """
    from ..formats.mixture import mixture_targets
    from .encode import SAMPLE_DOCS_PER_SHARD

    mix, estimates, sampled = plan.options.mix, [], 0
    for name in mix.names:
        shards = [s for s in plan.corpus.shards if s.split == "train" and plan.part_source_of(s) == name][:8]
        texts = sample_documents(plan, shards, limit=8 * SAMPLE_DOCS_PER_SHARD)
        _, lengths = EncodeBatch(encoder, plan.tokenizer.vocab_size, f"the sampled documents of {name}").encode(texts)
        per_document = float(np.mean(lengths)) + plan.llmc_added_tokens if lengths.size else 0.0
        estimates.append(round(per_document * plan.corpus.documents_by_source.get("train", {}).get(name, 0)))
        sampled += len(texts)
    record = {"sampled_documents": sampled, "tokens": dict(zip(mix.names, estimates)), "total": None, "refused": None}
    line = f"mixture estimate from {sampled:,} sampled train documents: " + ", ".join(
        f"{name} ~{tokens:,} tokens" for name, tokens in zip(mix.names, estimates)
    )
    try:
        record["total"] = mixture_targets(mix.names, mix.shares, estimates, mix.tokens, mix.max_epochs)[0]
    except BuildError as e:
        record["refused"] = str(e)
        warning = f"warning: estimated from sampled documents, {e}; the build checks exactly once the parts are encoded"
        return [line, warning], record
    return [f"{line}; a total of ~{record['total']:,}"], record


def _sources_line(plan: BuildPlan) -> list[str]:
    """What the build counts by source (receipts' and stats.json's ``sources``): the column, and the sources already
    known."""
    mix = plan.options.mix
    if mix is not None:
        shares = ", ".join(
            f"{name} {float(share):.1%} ({plan.corpus.documents_by_source.get('train', {}).get(name, 0):,} train "
            "documents)"
            for name, share in zip(mix.names, mix.shares)
        )
        total = f"{mix.tokens:,} train tokens" if mix.tokens is not None else "the most train tokens without repeats"
        return [
            f"mixture: {shares}; {total}, each source at most {mix.max_epochs} time(s) in the llm.c files "
            f"(seed {plan.options.shuffle_seed}); documents and tokens counted per source in the receipts and "
            "stats.json"
        ]
    if plan.source_column is None:
        return []
    known = {name for by_source in plan.corpus.documents_by_source.values() for name in by_source}
    count = f" ({len(known):,} sources in the corpus manifest)" if known else ""
    return [
        f"by source: the column {plan.source_column!r}{count}; "
        "documents and tokens counted per source and split in the receipts and stats.json"
    ]
