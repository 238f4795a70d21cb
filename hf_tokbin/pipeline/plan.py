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
import os
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from .._io import canonical_json, sha256_file
from ..errors import BuildError
from ..formats import llmc, megatron
from ..formats.corpus_manifest import MANIFEST_NAME as CORPUS_MANIFEST_NAME
from ..formats.corpus_manifest import SPLIT_RULE_TEXT, CorpusManifest
from ..formats.release import FORMATS, RUN_CONFIG_NAME, TOKENS_DIR, pair_path, part_name, receipt_path
from ..formats.run_config import LLMC_LAYOUTS, SEPARATOR_POSITIONS, run_config_record
from ..output import Output, check_url, is_url, open_output, scratch_key
from ..tokenizer.encoder import FAST_MODES
from ..tokenizer.resolve import BYTE, TokenizerInfo
from .shuffle import check_seed

WORK_DIR = ".work"
MAX_STAGED_VOCAB = 2**31  # ids 0..2**31-1: what Megatron's int32 files (and the shuffle's scratch pairs) hold
DEFAULT_BATCH_SIZE = 10_000  # documents per encoded batch: larger batches amortize per-call costs (scripts/bench_build.py)


@dataclass(frozen=True)
class BuildPlan:
    """Everything a part task needs: plain values only, so it pickles to Ray workers."""

    corpus_root: str
    corpus: CorpusManifest
    corpus_manifest_sha256: str
    corpus_source: str  # "local" or the Hub repo id
    corpus_revision: str | None
    tokenizer: TokenizerInfo
    formats: tuple[str, ...]
    out: str  # an absolute local folder, or an fsspec URL (see hf_tokbin.output)
    num_proc: int = 1
    batch_size: int = DEFAULT_BATCH_SIZE
    max_tokens_per_file: int = llmc.DEFAULT_MAX_TOKENS
    llmc_layout: str = "gpt2"  # or "llama3": upstream llm.c's uint32 header for train_llama3.py (formats.llmc.LAYOUTS)
    llmc_separator: str = "before"  # llm.c: the separator before each document (seed 000) or after it (seed 002)
    parse_special: bool = False  # special-token text inside documents: ordinary text (default) or parsed as the token
    release_version: str = "v1"
    fast: str = "auto"  # the fast-path mode of encoder.DocumentEncoder; never changes an id
    scratch_key: str | None = None  # out is a URL: the name of this machine's scratch folder (output.scratch_root)
    shuffle_seed: int | None = None  # build --shuffle-seed: documents of each part in a seeded order (.shuffle); None: corpus order
    # The encoder after its fast-path check (prepare_encoder); not part of run_config.json.
    encoder: object = dataclasses.field(default=None, compare=False, repr=False)
    # Where input shard i is read (hf_tokbin.corpus.source: a corpus folder, or Hub files fetched per part).
    shards: object = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def shard_source(self):
        from ..corpus.source import LocalShards

        return self.shards if self.shards is not None else LocalShards(self.corpus_root)

    @property
    def eod_id(self) -> int | None:
        return self.tokenizer.doc_sep_id

    @property
    def bos_id(self) -> int | None:
        return self.tokenizer.bos.id if self.tokenizer.bos is not None else None

    @property
    def special_tokens(self) -> str:
        """``run_config.json``'s policy for special-token text inside documents."""
        return "parsed" if self.parse_special else "ordinary"

    def boundary_line(self) -> str:
        """One line naming the boundary tokens, where they came from, and the special-token policy (printed before the work)."""
        sep = self.tokenizer.doc_sep
        parts = [f"separator/EOD {sep.describe() if sep is not None else 'none'}"]
        parts.append(f"BOS {self.tokenizer.bos.describe()}" if self.tokenizer.bos is not None else "no BOS")
        if "llmc" in self.formats and sep is not None:
            parts.append(f"llm.c separator {self.llmc_separator} each document")
        parts.append("special-token text " + ("parsed as tokens" if self.parse_special else "encoded as ordinary text"))
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
            },
            tokenizer=self.tokenizer.to_record(),
            special_tokens=self.special_tokens,
            doc_sep=self.tokenizer.doc_sep,
            bos=self.tokenizer.bos,
            split_rule={"name": self.corpus.split_rule, "text": SPLIT_RULE_TEXT[self.corpus.split_rule]},
            formats=self.formats,
            llmc_layout=self.llmc_layout,
            llmc_separator=self.llmc_separator,
            max_tokens_per_file=self.max_tokens_per_file,
            versions={"hf_tokbin": __version__, "tokenizers": _version("tokenizers")},
            shuffle_seed=self.shuffle_seed,
        )


def plan_build(
    corpus_root: str | os.PathLike,
    tokenizer: TokenizerInfo,
    out: str | os.PathLike,
    formats: tuple[str, ...] = FORMATS,
    num_proc: int = 1,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_tokens_per_file: int = llmc.DEFAULT_MAX_TOKENS,
    corpus_source: str = "local",
    corpus_revision: str | None = None,
    llmc_layout: str = "gpt2",
    fast: str = "auto",
    llmc_separator: str = "before",
    parse_special: bool = False,
    shuffle_seed: int | None = None,
    shards=None,
) -> BuildPlan:
    """Check every input and option before any work starts.

    ``shards`` says where input shard i is read (default: the corpus folder;
    :func:`hf_tokbin.corpus.source.resolve_corpus_source` gives Hub files).
    """
    url = is_url(out)
    if url:
        check_url(out)
    if not formats or set(formats) - set(FORMATS):
        raise BuildError(out, "formats must be among llmc, megatron", got=",".join(formats) or "none")
    formats = tuple(f for f in FORMATS if f in formats)  # one canonical order
    if "megatron" in formats and tokenizer.doc_sep_id is None:
        hint = (
            "the byte tokenizer has none of its own: give --doc-sep N, a byte value 0..255"
            if tokenizer.source == BYTE
            else "give --doc-sep TOKEN_OR_ID, or put beside tokenizer.json a generation_config.json with eos_token_id or a tokenizer_config.json with eos_token"
        )
        raise BuildError(out, "the megatron format appends an EOD token to every document and this tokenizer has none", hint=hint)
    if fast not in FAST_MODES:
        raise BuildError(out, "fast-path mode must be auto, never or require", got=fast)
    if llmc_layout not in LLMC_LAYOUTS:
        raise BuildError(out, "llm.c layout must be gpt2 or llama3", got=llmc_layout)
    if llmc_separator not in SEPARATOR_POSITIONS:
        raise BuildError(out, "--llmc-sep must be before or after", got=llmc_separator)
    if llmc_separator != "before" and "llmc" in formats and tokenizer.doc_sep_id is None:
        raise BuildError(out, f"--llmc-sep {llmc_separator} needs a separator and this tokenizer has none", hint="give --doc-sep TOKEN_OR_ID")
    if num_proc < 1 or batch_size < 1:
        raise BuildError(out, "num_proc and batch_size must be at least 1", got=(num_proc, batch_size))
    if not 0 < max_tokens_per_file <= llmc.MAX_TOKENS_PER_FILE:
        raise BuildError(out, "--max-tokens-per-file out of range", expected=f"1..{llmc.MAX_TOKENS_PER_FILE}", got=max_tokens_per_file)
    _check_tokenizer(tokenizer, formats)
    corpus_root = Path(corpus_root)
    manifest = CorpusManifest.read(corpus_root)
    if shards is None:
        from ..corpus.source import LocalShards

        shards = LocalShards(os.fspath(corpus_root.resolve()))
    shards.check(manifest)
    _check_fits_the_hub(manifest, formats, out)
    plan = BuildPlan(
        # Absolute: Ray workers run in other folders. Never written to reproducible files.
        corpus_root=os.fspath(corpus_root.resolve()),
        corpus=manifest,
        corpus_manifest_sha256=sha256_file(corpus_root / CORPUS_MANIFEST_NAME),
        corpus_source=corpus_source,
        corpus_revision=corpus_revision,
        tokenizer=tokenizer,
        formats=formats,
        out=out.rstrip("/") if url else os.fspath(Path(out).resolve()),
        num_proc=num_proc,
        batch_size=batch_size,
        max_tokens_per_file=max_tokens_per_file,
        llmc_layout=llmc_layout,
        llmc_separator=llmc_separator,
        parse_special=bool(parse_special),
        fast=fast,
        shuffle_seed=check_seed(shuffle_seed, out),
        shards=shards,
    )
    if url:
        plan = dataclasses.replace(plan, scratch_key=scratch_key(plan.out, canonical_json(plan.run_config())))
    return plan


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
    """The tokenizer names one folder and its ids fit every output (and the shuffle's int32 scratch pairs)."""
    tokenizer_id = tokenizer.tokenizer_id
    if not tokenizer_id or tokenizer_id.strip() != tokenizer_id or "/" in tokenizer_id or "\\" in tokenizer_id or tokenizer_id.startswith(".") or not tokenizer_id.isprintable():
        raise BuildError(
            tokenizer.path or tokenizer.source,
            "--tokenizer-id names the folder tokens/<tokenizer_id>/",
            expected="one folder name: not empty, printable, no '/' or '\\', not starting with '.', no white space at either end",
            got=repr(tokenizer_id),
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
            "this output holds a different build (inputs, tokenizer or options differ)",
            hint="use a new --out, or delete this one",
        )
    scratch = output.scratch()
    if scratch is not None:
        # The scratch key pins this very build, so whatever the scratch folder holds is this build's.
        scratch.write_text(RUN_CONFIG_NAME, text)  # the card reads it at the finish
    output.remove_temporaries()


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)
