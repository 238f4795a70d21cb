"""``hf-tokbin build``."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..pipeline.plan import DEFAULT_BATCH_SIZE
from ..errors import BuildError
from ..formats.llmc import DEFAULT_MAX_TOKENS
from ..formats.run_config import LLMC_LAYOUTS, LLMC_VARIANTS, SEPARATOR_POSITIONS
from .output import add_json_flag, emit, say
from .progress import show_progress


def add_arguments(parser) -> None:
    parser.add_argument("--corpus", required=True, help="a corpus folder (hf-tokbin corpus) or a Hub dataset repo NS/NAME")
    parser.add_argument("--corpus-revision", default=None, help="pinned revision of a Hub corpus (resolved to its commit id)")
    # -- corpus choice and planning (docs/corpus.md)
    parser.add_argument("--corpus-config", default=None, help="config of a plain Hub dataset repo (default: its default config)")
    parser.add_argument("--corpus-split", action="append", default=None, metavar="SPLIT", help="split of a plain Hub dataset repo to build (repeatable; default: train and validation)")
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="build only the first N documents in corpus order (train first, then validation)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan (shards, documents, estimated tokens and bytes, encoder, paths) and write nothing")
    parser.add_argument("--tokenizer", required=True, help="byte, a tokenizer.json, a folder holding one, or a Hub repo NS/NAME")
    parser.add_argument("--tokenizer-revision", default=None, help="pinned revision of a Hub tokenizer")
    parser.add_argument("--tokenizer-subfolder", default=None, help="subfolder of a Hub tokenizer repo")
    parser.add_argument("--tokenizer-id", default=None, help="name used in paths and records (default: the folder's name)")
    parser.add_argument(
        "--doc-sep",
        default=None,
        metavar="TOKEN_OR_ID",
        help="document separator (llm.c) and EOD (Megatron): a token string or an id (default: generation_config.json eos_token_id, "
        "else tokenizer_config.json or special_tokens_map.json eos_token)",
    )
    parser.add_argument("--doc-sep-id", dest="doc_sep", default=None, metavar="ID", help=argparse.SUPPRESS)  # the older name of --doc-sep
    parser.add_argument("--bos", default=None, metavar="TOKEN_OR_ID", help="a token put before every document, in both formats (default none)")
    parser.add_argument("--llmc-sep", choices=SEPARATOR_POSITIONS, default="before", help="llm.c: the separator before each document (seed 000, default) or after it (seed 002)")
    parser.add_argument(
        "--parse-special-tokens",
        action="store_true",
        help="encode special-token text inside documents (<|endoftext|>) as the special token (default: as ordinary text)",
    )
    parser.add_argument("--format", default="llmc,megatron", help="comma-separated: llmc, megatron (default both)")
    parser.add_argument("--out", required=True, help="release folder, or an fsspec URL (s3://..., gs://..., hf://buckets/...; see docs/ray.md)")
    parser.add_argument("--num-proc", type=int, default=1, help="worker processes encoding batches, one pool for the whole build (default 1: in this process, the fast engine's own threads)")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help=f"documents per encoded batch, at most 16 MiB of text (default {DEFAULT_BATCH_SIZE:,}); no byte depends on it")
    parser.add_argument("--max-tokens-per-file", type=int, default=DEFAULT_MAX_TOKENS, help="llm.c roll-over limit")
    parser.add_argument("--llmc-layout", choices=LLMC_LAYOUTS, default=None, help="llm.c header: gpt2 (magic 20240520, seed 000, default) or llama3 (upstream's magic 20240801, version 7, uint32)")
    parser.add_argument("--llmc-variant", choices=tuple(LLMC_VARIANTS), default=None, help=argparse.SUPPRESS)  # deprecated: seed000 = gpt2
    parser.add_argument("--fast", choices=("auto", "never", "require"), default="auto", help="use gigatoken for the documents it is proven to encode exactly as tokenizers (per code point, see docs/speed.md; default auto)")
    parser.add_argument("--shuffle-seed", type=int, default=None, help="write each part's documents in a seeded order (default: corpus order)")
    parser.add_argument("--engine", choices=("local", "ray"), default="local")
    parser.add_argument("--ray-address", default=None, help="address of an existing Ray cluster (default: start one locally)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    from ..pipeline import build, plan_build
    from ..corpus.source import first_documents, resolve_corpus_source
    from ..tokenizer.resolve import resolve_tokenizer, token_or_id

    if args.llmc_layout is not None and args.llmc_variant is not None:
        raise BuildError(args.out, "give the llm.c layout once: --llmc-layout (--llmc-variant is its deprecated name)")
    layout = args.llmc_layout or LLMC_VARIANTS[args.llmc_variant or "seed000"]
    if args.corpus_revision is not None and Path(args.corpus).exists():  # it would be recorded without having applied
        raise BuildError(args.corpus, "--corpus-revision applies to a Hub corpus only, not to a local folder", got=args.corpus_revision)
    tokenizer = resolve_tokenizer(
        args.tokenizer,
        args.tokenizer_id,
        revision=args.tokenizer_revision,
        subfolder=args.tokenizer_subfolder,
        doc_sep=token_or_id(args.doc_sep),
        bos=token_or_id(args.bos),
    )
    corpus = resolve_corpus_source(args.corpus, args.corpus_revision, args.corpus_config, args.corpus_split)
    if args.limit is not None:
        if args.limit < 1:
            raise BuildError(None, "--limit must be a positive number of documents", got=args.limit)
        corpus = first_documents(corpus, args.limit)
    root, source, revision = corpus.root, corpus.source, corpus.revision
    plan = plan_build(
        root,
        tokenizer,
        args.out,
        formats=tuple(f.strip() for f in args.format.split(",") if f.strip()),
        num_proc=args.num_proc,
        batch_size=args.batch_size,
        max_tokens_per_file=args.max_tokens_per_file,
        corpus_source=source,
        corpus_revision=revision,
        llmc_layout=layout,
        llmc_separator=args.llmc_sep,
        parse_special=args.parse_special_tokens,
        fast=args.fast,
        shuffle_seed=args.shuffle_seed,
        shards=corpus.shards,
    )
    say(args, plan.boundary_line())
    if args.dry_run:
        from ..pipeline.dry_run import describe_plan

        text = describe_plan(plan)
        emit(args, text, {"dry_run": True, "out": plan.out, "boundary_tokens": plan.boundary_line(), "plan": text})
        return 0
    summary = build(plan, engine=args.engine, ray_address=args.ray_address, progress=show_progress(args.quiet))
    emit(args, summary.table(), {**summary.record(), "boundary_tokens": plan.boundary_line()})
    return 0
