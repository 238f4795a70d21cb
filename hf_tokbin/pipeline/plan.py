"""``hf-tokbin build``: planning. A corpus and a tokenizer in, a verified release out.

A build is a set of independent per-input-shard tasks plus a cheap,
sequential finish:

1. :func:`plan_build` reads the corpus manifest and the tokenizer and checks
   every option (a format that needs a separator and has none fails here,
   before any work); :func:`start_release` writes ``run_config.json``, and a
   re-run must pin the same inputs.
2. :func:`build_part` encodes one corpus shard once, in bounded batches
   (one pool of ``num_proc`` worker processes for the whole build), checks
   the ids once, and writes from them its Megatron pair (``[bos] + ids +
   [eod]`` per document) and its llm.c segment (its documents as they will
   stand in the llm.c files: ``[sep] + [bos] + ids`` or ``[bos] + ids +
   [sep]``, the files' dtype, under ``.work/llmc/``), then its receipt, last:
   the receipt marks the part done, so a killed build skips it on re-run.
3. :func:`finish_build` cuts the llm.c files from the segments' counts
   (roll-over before the per-file limit) and packs each one in a task from
   byte ranges of the segments (:mod:`.pack`), writes ``_MANIFEST.json``,
   ``stats.json``, the dataset card and, last, ``COMPLETE.json``, after
   checking that documents and tokens add up everywhere (token conservation).
   It reads records only, never token bytes.

Same inputs and options give byte-identical files whatever ``num_proc``,
batch size or engine.

``--out`` may be an fsspec URL: every step writes into ``plan.output.work``
and publishes through :mod:`hf_tokbin.output`, which for a URL is a local
scratch folder uploaded in the same completion order; the build never asks.

The stages: :mod:`.plan` (this planning and ``run_config.json``),
:mod:`.encode` (bounded batches), :mod:`.part` (one input shard's outputs and
receipt), :mod:`.finish` (llm.c packing, stats, card, ``COMPLETE.json``) and
:mod:`.job` (all parts on an engine, then the finish).
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from .._io import canonical_json, sha256_file
from ..errors import BuildError
from ..formats import llmc, megatron
from ..formats.build_options import BuildOptions
from ..formats.corpus_manifest import MANIFEST_NAME as CORPUS_MANIFEST_NAME
from ..formats.corpus_manifest import SPLIT_RULE_TEXT, CorpusManifest, CorpusSubset
from ..formats.corpus_shard import SOURCE_COLUMN, check_source_field
from ..formats.release import RUN_CONFIG_NAME, TOKENS_DIR, WORK_DIR, pair_path, part_name, receipt_path
from ..formats.rules import FOLDER_NAME_RULE, is_folder_name
from ..formats.run_config import BoundaryToken, run_config_record
from ..output import Output, check_url, is_url, open_output, scratch_key
from ..tokenizer.resolve import BYTE, FROM_DOC_SEP_OPTION, TokenizerInfo, llama3_begin_of_text

MAX_STAGED_VOCAB = 2**31  # ids 0..2**31-1: what Megatron's int32 files (and the shuffle's scratch pairs) hold


@dataclass(frozen=True)
class BuildPlan:
    """Everything a part task needs: plain values only, so it pickles to Ray workers."""

    corpus_root: str
    corpus: CorpusManifest
    corpus_manifest_sha256: str
    corpus_source: str  # "local" or the Hub repo id
    corpus_revision: str | None
    tokenizer: TokenizerInfo
    out: str  # an absolute local folder, or an fsspec URL (see hf_tokbin.output)
    options: BuildOptions = BuildOptions()
    release_version: str = "v1"
    scratch_key: str | None = None  # out is a URL: the name of this machine's scratch folder (output.scratch_root)
    corpus_subset: CorpusSubset | None = None  # options.limit: what the corpus was cut from (run_config.json corpus.subset)
    # A dataset's input_ids, kept beside the corpus (given_ids.GivenIds): written after the check instead of encoding.
    given_ids: object = None
    # llm.c's separator when it is not the tokenizer's: --llmc-layout llama3's <|begin_of_text|> (see _llmc_boundary).
    llmc_doc_sep: BoundaryToken | None = None
    # The encoder after its fast-path check (prepare_encoder); not part of run_config.json.
    encoder: object = dataclasses.field(default=None, compare=False, repr=False)
    # Where input shard i is read (hf_tokbin.corpus.source: a corpus folder, or Hub files fetched per part).
    shards: object = dataclasses.field(default=None, compare=False, repr=False)

    def warnings(self) -> list[str]:
        """What the build prints before it starts: an empty validation split, and an llm.c layout no upstream trainer reads."""
        # A --limit that ended in train says which limit reaches validation; else the corpus says why it has none.
        subset = self.corpus_subset
        empty = (subset and subset.empty_validation_warning()) or self.corpus.empty_validation_warning()
        lines = [empty] if empty else []
        if "llmc" in self.options.formats and self.options.llmc_layout == "gpt2" and self.tokenizer.vocab_size > llmc.UINT16_VOCAB_LIMIT:
            lines.append(
                f"warning: a vocabulary of {self.tokenizer.vocab_size:,} gives llm.c files of magic {llmc.MAGIC} version 2 (uint32), "
                "which no upstream llm.c trainer reads: build with --llmc-layout llama3 for train_llama3.py"
            )
        return lines

    @property
    def shard_source(self):
        from ..corpus.source import LocalShards

        return self.shards if self.shards is not None else LocalShards(self.corpus_root)

    @property
    def source_column(self) -> str | None:
        """The shards' column of source names, counted per source and split; None: not counted.

        ``source`` in a corpus folder imported with ``--source-column`` (its manifest counts its sources), else the
        ``--source-column`` given (a plain Hub repo's own column).
        """
        return SOURCE_COLUMN if self.corpus.documents_by_source else self.options.source_column

    @property
    def eod_id(self) -> int | None:
        return self.tokenizer.doc_sep_id

    @property
    def bos_id(self) -> int | None:
        return self.tokenizer.bos.id if self.tokenizer.bos is not None else None

    @property
    def llmc_sep(self) -> BoundaryToken | None:
        """The token llm.c's files put at each document (before or after it, ``options.llmc_separator``)."""
        return self.llmc_doc_sep if self.llmc_doc_sep is not None else self.tokenizer.doc_sep

    @property
    def llmc_sep_id(self) -> int | None:
        return self.llmc_sep.id if self.llmc_sep is not None else None

    @property
    def llmc_layout(self) -> llmc.Layout:
        """The llm.c files' header layout and id width (``options.llmc_layout`` for this vocabulary)."""
        return llmc.layout_for(self.tokenizer.vocab_size, self.options.llmc_layout)

    @property
    def llmc_added_tokens(self) -> int:
        """Tokens llm.c's files add to each document: its separator and BOS."""
        return (self.llmc_sep_id is not None) + (self.bos_id is not None)

    def boundary_line(self) -> str:
        """One line naming the boundary tokens, where they came from, and the special-token policy (printed before the work)."""
        sep = self.tokenizer.doc_sep
        parts = [f"separator/EOD {sep.describe() if sep is not None else 'none'}"]
        parts.append(f"BOS {self.tokenizer.bos.describe()}" if self.tokenizer.bos is not None else "no BOS")
        if "llmc" in self.options.formats and self.llmc_sep is not None:
            own = f" {self.llmc_doc_sep.describe()}" if self.llmc_doc_sep is not None else ""
            parts.append(f"llm.c separator{own} {self.options.llmc_separator} each document")
        parts.append("special-token text " + ("parsed as tokens" if self.options.parse_special else "encoded as ordinary text"))
        return "; ".join(parts)

    @property
    def llmc_dir(self) -> str:
        return f"{TOKENS_DIR}/{self.tokenizer.tokenizer_id}/{self.corpus.name}"

    @property
    def output(self) -> Output:
        """Where the release goes (a local folder, or a URL with this machine's scratch folder)."""
        return open_output(self.out, self.scratch_key)

    def run_config(self) -> dict:
        """``run_config.json``: pinned inputs and options. Nothing here depends on num_proc, batch size or engine."""
        return run_config_record(
            dataset=self.corpus.name,
            version=self.release_version,
            corpus={
                "name": self.corpus.name,
                "license": self.corpus.license,
                "language": list(self.corpus.language),
                "source": self.corpus_source,
                "revision": self.corpus_revision,
                "manifest_sha256": self.corpus_manifest_sha256,
                "shards": [s.to_dict() for s in self.corpus.shards],
                # Only for a --limit build, so every other build writes the bytes it always did.
                **({"subset": self.corpus_subset.to_record()} if self.corpus_subset is not None else {}),
                # Only when sources are counted: a re-run counting otherwise is another build, and verify knows to expect them.
                **({"source_column": self.source_column} if self.source_column is not None else {}),
            },
            tokenizer=self.tokenizer.to_record(),
            doc_sep=self.tokenizer.doc_sep,
            bos=self.tokenizer.bos,
            llmc_doc_sep=self.llmc_doc_sep,
            split_rule={"name": self.corpus.split_rule, "text": SPLIT_RULE_TEXT[self.corpus.split_rule]},
            options=self.options,
            versions={"hf_tokbin": __version__, "tokenizers": _version("tokenizers")},
            ids=self.given_ids.check.record() if self.given_ids is not None else None,
        )


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
    corpus_root, shards, subset = _corpus(Path(corpus_root), corpus_source, corpus_revision, shards, options.limit, options.source_column)
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
            raise BuildError(manifest_path, "--source-column: this corpus folder counts its documents by source already", expected=f"no --source-column, or its own column {SOURCE_COLUMN!r}", got=column, hint="corpus import --source-column counted them; the build reads its 'source' column")
        return
    first = next((s for s in manifest.shards if s.rows), None)
    if first is None:
        return
    with shards.open_for_sample(first) as handle, pq.ParquetFile(handle) as parquet:
        check_source_field(parquet.schema_arrow, column, shards.location(first))


def _corpus(root: Path, source: str, revision: str | None, shards, limit: int | None, source_column: str | None = None):
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

    Without ``--llmc-sep``: before each document (seed 000). With ``--llmc-layout
    llama3`` and no ``--doc-sep``/``--bos``, llm.c's own Llama 3 data, which
    the trainer's files hold (``dev/data/fineweb.py`` ``tokenize_llama``:
    ``[<|begin_of_text|>] + ids``, no EOS), when the tokenizer has that token.
    Megatron keeps the tokenizer's EOD.
    """
    if options.llmc_separator is not None:
        return options, None
    options = dataclasses.replace(options, llmc_separator="before")
    explicit = tokenizer.bos is not None or (tokenizer.doc_sep is not None and tokenizer.doc_sep.source == FROM_DOC_SEP_OPTION)
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
            else "give --doc-sep TOKEN_OR_ID, or put beside tokenizer.json a generation_config.json with eos_token_id or a tokenizer_config.json with eos_token"
        )
        raise BuildError(_tokenizer_place(tokenizer), "the megatron format appends an EOD token to every document and this tokenizer has none", hint=hint)
    separator = options.llmc_separator
    if separator != "before" and "llmc" in options.formats and tokenizer.doc_sep_id is None:
        raise BuildError(_tokenizer_place(tokenizer), f"--llmc-sep {separator} needs a separator and this tokenizer has none", hint="give --doc-sep TOKEN_OR_ID")


def _check_fits_the_hub(manifest: CorpusManifest, formats: tuple[str, ...], out) -> None:
    """A release the Hub could not hold (more than 10,000 entries in one folder) is refused now, before any work."""
    from ..errors import HubError
    from ..hub.files import HUB_MAX_ENTRIES_PER_FOLDER, check_hub_limits

    paths = [receipt_path(part_name(i)) for i in range(len(manifest.shards))]
    if "megatron" in formats:
        paths += [pair_path(s.split, part_name(i), suffix) for i, s in enumerate(manifest.shards) if s.rows for suffix in ("bin", "idx")]
    try:
        check_hub_limits(paths)
    except HubError as e:
        per_split = max(len([s for s in manifest.shards if s.split == split]) for split in ("train", "validation"))
        factor = max(-(-len(manifest.shards) // HUB_MAX_ENTRIES_PER_FOLDER), -(-per_split // (HUB_MAX_ENTRIES_PER_FOLDER // 2)) if "megatron" in formats else 1)
        hint = f"write the corpus again with shards about {factor}x larger (--shard-bytes): receipts/ holds one file per part, shards/<split>/ two"
        raise BuildError(out, f"the release could not be published: {e.rule}", hint=hint) from None


def _check_tokenizer(tokenizer: TokenizerInfo, formats: tuple[str, ...]) -> None:
    """The tokenizer names one folder and its ids fit every output and the int32 staging pairs."""
    if not is_folder_name(tokenizer.tokenizer_id):
        raise BuildError(tokenizer.path or tokenizer.source, "--tokenizer-id names the folder tokens/<tokenizer_id>/", expected=FOLDER_NAME_RULE, got=repr(tokenizer.tokenizer_id))
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


def start_release(plan: BuildPlan) -> None:
    """Write ``run_config.json``, or check that the output holds the same build; drop a killed run's temporaries."""
    output = plan.output
    text = canonical_json(plan.run_config())
    existing = output.read_bytes(RUN_CONFIG_NAME)
    if existing is None:
        if any(name != WORK_DIR for name in output.names()):
            raise BuildError(output.root, "output is not empty and holds no run_config.json", hint="use a new --out")
        output.write_text(RUN_CONFIG_NAME, text)
    elif existing != text.encode("utf-8"):
        raise BuildError(
            output.location(RUN_CONFIG_NAME),
            f"this output holds a different build ({', '.join(_differing_fields(existing, text)) or 'its run_config.json bytes'} differ)",
            hint="use a new --out, or delete this one",
        )
    scratch = output.scratch()
    if scratch is not None:
        # The scratch key pins this very build, so whatever the scratch folder holds is this build's.
        scratch.write_text(RUN_CONFIG_NAME, text)  # the card reads it at the finish
    output.remove_temporaries()


def _differing_fields(existing: bytes, wanted: str) -> list[str]:
    """The run_config.json fields (dotted: ``llmc.max_tokens_per_file``) whose values differ between an output's and this build's."""
    try:
        old = _flat_fields(json.loads(existing))
    except ValueError:
        return []  # not JSON: nothing to name but the file
    new = _flat_fields(json.loads(wanted))
    return [name for name in [*new, *(n for n in old if n not in new)] if old.get(name) != new.get(name)]


def _flat_fields(value, prefix: str = "") -> dict:
    """A JSON object's leaves by dotted name (a list is one leaf)."""
    if not isinstance(value, dict) or not value:
        return {prefix.rstrip("."): value}
    return {name: leaf for key, inner in value.items() for name, leaf in _flat_fields(inner, f"{prefix}{key}.").items()}


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)
