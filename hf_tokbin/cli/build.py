"""``hf-tokbin build``."""

from __future__ import annotations

import argparse
import sys

from ..errors import BuildError
from ..formats.build_options import (
    DEFAULT_BATCH_SIZE,
    FAST_MODES,
    LLMC_LAYOUTS,
    SEPARATOR_POSITIONS,
    BuildOptions,
    option_names,
)
from ..formats.llmc import DEFAULT_MAX_TOKENS
from ..formats.mixture import MIX_BY, MixtureSpec
from ..formats.run_config import LLMC_VARIANTS
from .corpus import positive_int
from .output import add_json_flag, emit, say
from .progress import show_progress

LIMIT_HELP = "build only the first N documents in corpus order (train first, then validation)"
TOKENIZER_ID_HELP = (
    "name used in paths and records (default: the model name the folder's config.json or tokenizer_config.json "
    "gives, else the folder's name)"
)
ENGINE_HELP = (
    "where the parts are encoded: local (this machine, --num-proc workers) or ray (a Ray cluster, --ray-address; "
    "every node must see --out). Same bytes either way (default: %(default)s)"
)
LLMC_SEP_HELP = (
    "llm.c: the separator before each document (the llm.c layout, the default) or after it (the TinyStories "
    "rules); without it, --llmc-layout llama3 writes llm.c's own Llama 3 layout, <|begin_of_text|> before each "
    "document"
)
NUM_PROC_HELP = (
    "worker processes encoding batches, one pool for the whole build, each running its engine on one thread "
    "(default 1: this process, the engine's own threads on every core); the summary says which it was"
)
CHECK_IDS_HELP = (
    "a --corpus with an input_ids column (a save_to_disk folder of Dataset.map(hf_tokbin.tokenize(...))): "
    "check every document's ids against the tokenizer (default all), or K spread over the corpus (recorded in "
    "run_config.json)"
)


def add_arguments(parser) -> None:
    parser.add_argument("--corpus", required=True, action="append", help="a corpus folder (hf-tokbin corpus), a Hub "
        "dataset repo NS/NAME, or input files, folders, globs or hf:// paths (written as a temporary corpus, as corpus "
        "import does); with --mix, once per source")
    _add_mixture_arguments(parser)
    parser.add_argument("--corpus-revision", default=None,
        help="pinned revision of a Hub corpus (resolved to its commit id)")
    # -- corpus choice and planning (docs/corpus.md)
    parser.add_argument("--corpus-config", default=None,
        help="config of a plain Hub dataset repo (default: its default config)")
    parser.add_argument("--corpus-split", action="append", default=None, metavar="SPLIT",
        help="split of a plain Hub dataset repo to build (repeatable; default: train and validation)")
    parser.add_argument("--limit", type=positive_int, default=None, metavar="N", help=LIMIT_HELP)
    parser.add_argument("--source-column", default=None, metavar="COL", help="the input's column of source names: "
        "documents and tokens counted per source and split in the receipts and stats.json")
    parser.add_argument("--dry-run", action="store_true",
        help="print the plan (shards, documents, estimated tokens and bytes, encoder, paths) and write nothing")
    parser.add_argument("--tokenizer", required=True,
        help="byte, a tokenizer.json, a folder holding one, or a Hub repo NS/NAME")
    parser.add_argument("--tokenizer-revision", default=None, help="pinned revision of a Hub tokenizer")
    parser.add_argument("--tokenizer-subfolder", default=None, help="subfolder of a Hub tokenizer repo")
    parser.add_argument("--tokenizer-id", default=None, help=TOKENIZER_ID_HELP)
    parser.add_argument("--doc-sep", default=None, metavar="TOKEN_OR_ID", help="document separator (llm.c) and EOD "
        "(Megatron): a token string or an id (default: generation_config.json eos_token_id, else "
        "tokenizer_config.json or special_tokens_map.json eos_token)")
    # the older name of --doc-sep
    parser.add_argument("--doc-sep-id", dest="doc_sep", default=None, metavar="ID", help=argparse.SUPPRESS)
    parser.add_argument("--bos", default=None, metavar="TOKEN_OR_ID",
        help="a token put before every document, in both formats (default none)")
    parser.add_argument("--llmc-sep", dest="llmc_separator", choices=SEPARATOR_POSITIONS, default=None,
        help=LLMC_SEP_HELP)
    parser.add_argument("--parse-special-tokens", dest="parse_special", action="store_true",
        help="encode special-token text inside documents (<|endoftext|>) as the special token (default: as ordinary "
        "text)")
    parser.add_argument("--format", dest="formats", type=_format_list, default="llmc,megatron",
        help="comma-separated: llmc, megatron (default both)")
    parser.add_argument("--out", required=True,
        help="release folder, or an fsspec URL (s3://..., gs://..., hf://buckets/...; see docs/ray.md)")
    parser.add_argument("--num-proc", type=int, default=1, help=NUM_PROC_HELP)
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE,
        help=f"documents per encoded batch, at most 16 MiB of text (default {DEFAULT_BATCH_SIZE:,}); no byte depends "
        "on it")
    parser.add_argument("--max-tokens-per-file", type=int, default=DEFAULT_MAX_TOKENS, help="llm.c roll-over limit")
    parser.add_argument("--llmc-layout", choices=LLMC_LAYOUTS, default=None,
        help="llm.c header: gpt2 (magic 20240520, the llm.c layout, default) or llama3 (upstream's magic 20240801, "
        "version 7, uint32)")
    # deprecated: seed000 = gpt2
    parser.add_argument("--llmc-variant", choices=tuple(LLMC_VARIANTS), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--fast", choices=FAST_MODES, default="auto", help="use gigatoken for the documents it is "
        "proven to encode exactly as tokenizers (per code point, see docs/speed.md; default auto)")
    parser.add_argument("--shuffle-seed", type=int, default=None, help="write each part's documents in a seeded order "
        "and interleave blocks of every part in the llm.c files (default: corpus order)")
    parser.add_argument("--engine", choices=("local", "ray"), default="local", help=ENGINE_HELP)
    parser.add_argument("--ray-address", default=None,
        help="address of an existing Ray cluster (default: start one locally)")
    parser.add_argument("--check-ids", default="all", metavar="all|sample:K", help=CHECK_IDS_HELP)
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_json_flag(parser)
    parser.set_defaults(run=run)


def _add_mixture_arguments(parser) -> None:
    parser.add_argument("--mix", default=None, metavar="NAME=W,...", help="one release from several --corpus in "
        "these proportions of train tokens, each corpus named by its corpus name (weights are normalised): the llm.c "
        "files hold the mixture, Megatron/MaxText recipes blend the pairs")
    parser.add_argument("--tokens", default=None, metavar="N", help="--mix: train tokens in all, e.g. 500M or 2B "
        "(default: the most the shares allow without repeating any source)")
    parser.add_argument("--max-epochs", type=positive_int, default=None, metavar="E", help="--mix: the most times a "
        "source's documents may repeat to meet its share (default 1: never)")
    parser.add_argument("--mix-by", choices=MIX_BY, default=None, help="--mix: what names the sources: each --corpus "
        "by its corpus name (corpus, the default), or the source column of one --corpus (source: each source is first "
        "written as a corpus of its own, in a temporary folder)")


def _format_list(text: str) -> tuple[str, ...]:
    return tuple(f.strip() for f in text.split(",") if f.strip())


def build_options(args) -> BuildOptions:
    """The flags as a :class:`BuildOptions`: every flag whose ``dest`` is a field's name, and the llm.c layout under
    either of its names."""
    if args.llmc_layout is not None and args.llmc_variant is not None:
        raise BuildError(args.out, "give the llm.c layout once: --llmc-layout (--llmc-variant is its deprecated name)")
    given = {name: getattr(args, name) for name in option_names() if name != "mix"}
    given["mix"] = _mixture(args)
    given["llmc_layout"] = args.llmc_layout or LLMC_VARIANTS[args.llmc_variant or "seed000"]
    return BuildOptions(**given)


def _mixture(args) -> MixtureSpec | None:
    """``--mix``, ``--tokens`` and ``--max-epochs`` as one record; a mixture takes one --corpus per source."""
    if args.mix is None:
        if args.tokens is not None or args.max_epochs is not None or args.mix_by is not None:
            raise BuildError(args.out, "--tokens, --max-epochs and --mix-by apply to a mixture: give --mix")
        if len(args.corpus) > 1:
            raise BuildError(
                ", ".join(args.corpus), "several --corpus make a mixture: give --mix NAME=W,... naming each"
            )
        return None
    epochs = args.max_epochs if args.max_epochs is not None else 1
    return MixtureSpec.parse(args.mix, args.tokens, epochs, args.mix_by or "corpus")


def run(args) -> int:
    """The flags to :func:`hf_tokbin.api.build_release`'s arguments; its summary printed."""
    from ..api import build_release
    from ..tokenizer.resolve import token_or_id

    summary = build_release(
        args.corpus[0] if len(args.corpus) == 1 else args.corpus,
        args.tokenizer,
        args.out,
        progress=show_progress(args.quiet),
        revision=args.corpus_revision,
        config=args.corpus_config,
        splits=args.corpus_split,
        tokenizer_id=args.tokenizer_id,
        tokenizer_revision=args.tokenizer_revision,
        tokenizer_subfolder=args.tokenizer_subfolder,
        doc_sep=token_or_id(args.doc_sep),
        bos=token_or_id(args.bos),
        engine=args.engine,
        ray_address=args.ray_address,
        check_ids=args.check_ids,
        dry_run=args.dry_run,
        on_plan=lambda plan: _report_plan(args, plan),
        options=build_options(args),
    )
    boundary = summary.plan.boundary_line()
    if summary.dry_run is not None:
        record = {"dry_run": True, "out": summary.out, "boundary_tokens": boundary, **summary.dry_run_record}
        emit(args, summary.dry_run, record)
    else:
        emit(args, summary.build.table(), {**summary.build.record(), "boundary_tokens": boundary})
    return 0


def _report_plan(args, plan) -> None:
    """Before any work: the plan's boundary tokens, what each split got of a --limit, and its warnings."""
    say(args, plan.boundary_line())
    for line in plan.corpus_subset.lines() if plan.corpus_subset is not None else ():
        say(args, line)
    for line in plan.warnings():
        print(line, file=sys.stderr)
    note = plan.options.mix.normalised_note() if plan.options.mix is not None else None
    if note is not None:
        say(args, note)
    if not args.dry_run and args.tokenizer_id is None and plan.tokenizer.source != "byte":
        tokenizer_id = plan.tokenizer.tokenizer_id  # a default id: say where it shows, and its flag
        say(
            args,
            f"tokenizer id {tokenizer_id} (run_config.json, the card, tokens/{tokenizer_id}/; --tokenizer-id sets it)",
        )
