"""``hf-tokbin corpus``: raw text in, Parquet corpus shards out.

::

    hf-tokbin corpus tinystories TRAIN.txt [VALID.txt] --out DIR [--name NAME] [--license ID] [--language CODES]
              [--shard-rows N | --shard-bytes N] [--overwrite]
    hf-tokbin corpus import FILE_OR_DIR... --out DIR [--name NAME] [--license ID] [--language CODES] [--text-column text]
              [--split-column split | --split-rule sha256] [--shard-rows N | --shard-bytes N] [--overwrite]
"""

from __future__ import annotations

import argparse
import sys
import time

from ..formats.corpus_manifest import SPLITS


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="corpus_command", required=True, metavar="SOURCE")

    tinystories = sub.add_parser("tinystories", help="TinyStories text files (stories separated by <|endoftext|> lines)")
    tinystories.add_argument("train", help="training text file")
    tinystories.add_argument("valid", nargs="?", help="validation text file (optional)")
    tinystories.add_argument("--name", default="tinystories", help="corpus name (default: tinystories)")
    _add_card_arguments(tinystories, "cdla-sharing-1.0", "en")
    _add_output_arguments(tinystories)
    tinystories.set_defaults(run=run_tinystories)

    imports = sub.add_parser("import", help="JSONL and Parquet files, or folders of them, with a text column")
    imports.add_argument("paths", nargs="+", metavar="FILE_OR_DIR", help="input files or folders (searched recursively, sorted by name)")
    imports.add_argument("--name", help="corpus name (default: the name of --out)")
    imports.add_argument("--text-column", default="text", help="column holding the text (default: text)")
    split = imports.add_mutually_exclusive_group()
    split.add_argument("--split-column", help="column giving each row's split: train, validation or val")
    split.add_argument("--split-rule", choices=["sha256"], help="validation by SHA-256 of the text (first 8 bytes big-endian mod 1000 == 0)")
    _add_card_arguments(imports, "unknown", "")
    _add_output_arguments(imports)
    imports.set_defaults(run=run_import)


def _add_card_arguments(parser, license: str, language: str) -> None:
    parser.add_argument("--license", default=license, help=f"Hub license id for the dataset cards (default: {license})")
    parser.add_argument("--language", default=language, help=f"comma-separated ISO codes for the dataset cards (default: {language or 'none'})")


def _languages(text: str) -> tuple[str, ...]:
    return tuple(code.strip() for code in text.split(",") if code.strip())


def _add_output_arguments(parser) -> None:
    parser.add_argument("--out", required=True, help="corpus folder to write (must be missing or empty)")
    limit = parser.add_mutually_exclusive_group()
    limit.add_argument("--shard-bytes", type=_positive_int, help="UTF-8 text bytes per shard (default: 268435456, 256 MiB)")
    limit.add_argument("--shard-rows", type=_positive_int, help="documents per shard, instead of --shard-bytes")
    parser.add_argument("--overwrite", action="store_true", help="replace --out if it is an existing corpus folder")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def run_tinystories(args) -> int:
    from ..corpus.write import write_tinystories_corpus

    started = time.perf_counter()
    manifest = write_tinystories_corpus(
        args.train, args.valid, args.out, name=args.name, license=args.license, language=_languages(args.language), shard_rows=args.shard_rows, shard_bytes=args.shard_bytes, overwrite=args.overwrite, progress=True
    )
    _print_summary(manifest, args.out, time.perf_counter() - started, "stories")
    return 0


def run_import(args) -> int:
    from ..corpus.write import import_corpus

    started = time.perf_counter()
    manifest = import_corpus(
        args.paths,
        args.out,
        name=args.name,
        text_column=args.text_column,
        split_column=args.split_column,
        split_rule=args.split_rule,
        license=args.license,
        language=_languages(args.language),
        shard_rows=args.shard_rows,
        shard_bytes=args.shard_bytes,
        overwrite=args.overwrite,
        progress=True,
    )
    _print_summary(manifest, args.out, time.perf_counter() - started, "documents")
    return 0


def _print_summary(manifest, out, seconds: float, unit: str) -> None:
    read_mb = sum(s.size for s in manifest.sources) / 1e6
    for split in SPLITS:
        shards = [s for s in manifest.shards if s.split == split]
        written_mb = sum(s.size for s in shards) / 1e6
        print(f"{split}: {manifest.rows(split):,} {unit} in {len(shards)} shards ({written_mb:,.1f} MB)", file=sys.stderr)
    rate = read_mb / seconds if seconds > 0 else float("inf")
    print(f"read {read_mb:,.1f} MB in {seconds:,.1f} s ({rate:,.1f} MB/s) -> {out}", file=sys.stderr)
