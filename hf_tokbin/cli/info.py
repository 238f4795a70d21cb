"""``hf-tokbin info PATH [--json]``."""

from __future__ import annotations

from .output import add_json_flag, emit


def add_arguments(parser) -> None:
    parser.add_argument("path", help="a release folder, an llm.c .bin, or a Megatron .idx/.bin")
    parser.add_argument("--quiet", action="store_true", help="no progress bars (info shows none)")
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    from ..verify.info import describe_record

    emit(args, *describe_record(args.path))
    return 0
