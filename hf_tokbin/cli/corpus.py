"""``hf-tokbin corpus``: raw text in, Parquet corpus shards out.

::

    hf-tokbin corpus tinystories TRAIN.txt [VALID.txt] --out DIR [--name NAME] [--license ID] [--language CODES]
              [--shard-rows N | --shard-bytes N] [--overwrite]
    hf-tokbin corpus import INPUT... --out DIR [--name NAME] [--license ID] [--language CODES]
              [--text-column text ...] [--text-join SEP] [--limit N] [--keep-columns A,B] [--source-column COL]
              [--split-column split | --split-rule sha256 [--val-per-mille 1] | --all-train]
              [--split-map test=validation ...]
              [--shard-rows N | --shard-bytes N] [--overwrite]
"""

from __future__ import annotations

import argparse
import sys
import time

from ..errors import CorpusInputError
from ..formats.corpus_manifest import SPLIT_RULE_TEXT, SPLITS
from ..formats.release import megabytes
from .output import add_json_flag, emit_record
from .progress import show_progress

IMPORT_HELP = (
    "JSONL, JSON, Parquet, Arrow or text files (optionally .gz/.zst/.bz2/.xz), folders, globs, hf:// paths, "
    "save_to_disk folders"
)
PATHS_HELP = "input files, folders (searched recursively, sorted by name), globs or hf:// paths; see docs/corpus.md"
SOURCE_COLUMN_HELP = (
    "a column of source names copied as 'source'; documents counted per source and split in the manifest, "
    "and by the build in stats.json"
)


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="corpus_command", required=True, metavar="SOURCE")

    tinystories_help = "TinyStories text files (stories separated by <|endoftext|> lines)"
    tinystories = sub.add_parser("tinystories", help=tinystories_help)
    tinystories.add_argument("train", help="training text file")
    tinystories.add_argument("valid", nargs="?", help="validation text file (optional)")
    tinystories.add_argument("--name", default="tinystories", help="corpus name (default: tinystories)")
    _add_card_arguments(tinystories, "cdla-sharing-1.0", "en")
    _add_output_arguments(tinystories)
    tinystories.set_defaults(run=run_tinystories)

    imports = sub.add_parser("import", help=IMPORT_HELP)
    imports.add_argument("paths", nargs="+", metavar="INPUT", help=PATHS_HELP)
    imports.add_argument("--name", help="corpus name (default: the name of --out)")
    imports.add_argument(
        "--text-column",
        action="append",
        help="column holding the text (default: text); repeat to join several columns",
    )
    imports.add_argument(
        "--text-join",
        default="\n\n",
        help="separator between several --text-column values of a row (default: a blank line)",
    )
    _add_split_arguments(imports)
    imports.add_argument("--limit", type=positive_int, help="keep only the first N documents, in input order")
    imports.add_argument(
        "--keep-columns",
        default="",
        metavar="A,B",
        help="comma-separated columns copied into the shards beside text and split",
    )
    imports.add_argument("--source-column", metavar="COL", help=SOURCE_COLUMN_HELP)
    _add_card_arguments(imports, "unknown", "")
    _add_output_arguments(imports)
    imports.set_defaults(run=run_import)


def _add_split_arguments(imports) -> None:
    """How ``corpus import`` gives each row its split."""
    split = imports.add_mutually_exclusive_group()
    split.add_argument(
        "--split-column", help="column giving each row's split (default: a 'split' column is used when present)"
    )
    split.add_argument(
        "--split-rule",
        choices=["sha256"],
        help="validation by SHA-256 of the text, as the Megatron release layout (rate --val-per-mille)",
    )
    split.add_argument("--all-train", action="store_true", help="every row is train, whatever a split column says")
    imports.add_argument(
        "--split-map",
        action="append",
        default=[],
        metavar="NAME=SPLIT",
        help="read split NAME as train or validation (e.g. test=validation); repeatable",
    )
    imports.add_argument(
        "--val-per-mille",
        type=positive_int,
        default=1,
        help="--split-rule sha256: documents in 1000 that go to validation "
        "(default 1, as the Megatron release layout)",
    )


def _split_map(pairs: list[str]) -> dict[str, str]:
    mapping = {}
    for pair in pairs:
        name, sep, target = pair.partition("=")
        if not sep or not name or target not in ("train", "validation"):
            raise CorpusInputError(None, "--split-map takes NAME=train or NAME=validation", got=repr(pair))
        mapping[name] = target
    return mapping


def _add_card_arguments(parser, license: str, language: str) -> None:
    parser.add_argument(
        "--license", default=license, help=f"Hub license id for the dataset cards (default: {license})"
    )
    parser.add_argument(
        "--language",
        default=language,
        help=f"comma-separated ISO 639 codes for the dataset cards (default: {language or 'none'})",
    )
    parser.add_argument(
        "--any-license",
        action="store_true",
        help="accept a --license id that is not in the Hub's list (still one id: a-z, 0-9, '.', '+', '-')",
    )


def _languages(text: str) -> tuple[str, ...]:
    return tuple(code.strip() for code in text.split(",") if code.strip())


def _add_output_arguments(parser) -> None:
    parser.add_argument("--out", required=True, help="corpus folder to write (must be missing or empty)")
    limit = parser.add_mutually_exclusive_group()
    limit.add_argument(
        "--shard-bytes", type=positive_int, help="UTF-8 text bytes per shard (default: 268435456, 256 MiB)"
    )
    limit.add_argument("--shard-rows", type=positive_int, help="documents per shard, instead of --shard-bytes")
    parser.add_argument("--overwrite", action="store_true", help="replace --out if it is an existing corpus folder")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_json_flag(parser)


def positive_int(text: str) -> int:
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
        args.train,
        args.valid,
        args.out,
        name=args.name,
        license=args.license,
        language=_languages(args.language),
        shard_rows=args.shard_rows,
        shard_bytes=args.shard_bytes,
        overwrite=args.overwrite,
        progress=show_progress(args.quiet),
        any_license=args.any_license,
    )
    _print_summary(args, manifest, time.perf_counter() - started, "stories")
    return 0


def run_import(args) -> int:
    from ..corpus.write import import_corpus

    started = time.perf_counter()
    manifest = import_corpus(
        args.paths,
        args.out,
        name=args.name,
        text_column=args.text_column or ["text"],
        text_join=args.text_join,
        split="all-train" if args.all_train else "sha256" if args.split_rule == "sha256" else "auto",
        split_column=args.split_column,
        split_map=_split_map(args.split_map),
        val_per_mille=args.val_per_mille,
        limit=args.limit,
        keep_columns=[c.strip() for c in args.keep_columns.split(",") if c.strip()],
        source_column=args.source_column,
        license=args.license,
        language=_languages(args.language),
        shard_rows=args.shard_rows,
        shard_bytes=args.shard_bytes,
        overwrite=args.overwrite,
        progress=show_progress(args.quiet),
        any_license=args.any_license,
    )
    _print_summary(args, manifest, time.perf_counter() - started, "documents")
    return 0


def _print_summary(args, manifest, seconds: float, unit: str) -> None:
    """The summary on stderr (the corpus is the output); under ``--json`` also as one JSON line on stdout."""
    for split in SPLITS:
        shards = [s for s in manifest.shards if s.split == split]
        written = sum(s.size for s in shards)
        shards_text = f"{len(shards)} shard{'' if len(shards) == 1 else 's'}"
        print(f"{split}: {manifest.rows(split):,} {unit} in {shards_text} ({megabytes(written)})", file=sys.stderr)
    print(f"split rule: {manifest.split_rule}: {SPLIT_RULE_TEXT[manifest.split_rule]}", file=sys.stderr)
    print(f"empty documents dropped: {manifest.empty_documents_dropped:,}", file=sys.stderr)
    warning = manifest.empty_validation_warning()
    if warning:
        print(warning, file=sys.stderr)
    read = sum(s.size for s in manifest.sources)
    print(f"{read_summary(read, seconds)} -> {args.out}", file=sys.stderr)
    emit_record(args, _summary_record(manifest, args.out, read, seconds, warning))


def _summary_record(manifest, out, read: int, seconds: float, warning: str | None) -> dict:
    """``corpus --json``: the corpus written, its documents, shards and bytes by split, and what was read."""
    splits = {}
    for split in SPLITS:
        shards = [s for s in manifest.shards if s.split == split]
        splits[split] = {
            "documents": manifest.rows(split),
            "shards": len(shards),
            "bytes": sum(s.size for s in shards),
        }
    return {
        "out": out,
        "name": manifest.name,
        "split_rule": manifest.split_rule,
        "splits": splits,
        "empty_documents_dropped": manifest.empty_documents_dropped,
        "read_bytes": read,
        "seconds": round(seconds, 3),
        "warnings": [warning] if warning else [],
    }


def read_summary(size: int, seconds: float) -> str:
    """``read 2,000 bytes in 0.5 s (4.00kB/s)``: the rate with tqdm's units (3 significant digits, k/M/G), so a tiny
    input never reads "0.0 MB/s"; no rate when no time was measured."""
    from tqdm import tqdm  # here: the CLI's start-up imports no tqdm

    took = f"{seconds:,.1f} s" if seconds >= 0.1 else f"{seconds * 1000:,.0f} ms"
    rate = f" ({tqdm.format_sizeof(size / seconds, 'B', 1000)}/s)" if seconds > 0 else ""
    return f"read {megabytes(size)} in {took}{rate}"
