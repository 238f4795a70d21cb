"""``hf-tokbin info PATH``."""

from __future__ import annotations


def add_arguments(parser) -> None:
    parser.add_argument("path", help="a release folder, an llm.c .bin, or a Megatron .idx/.bin")
    parser.set_defaults(run=run)


def run(args) -> int:
    from ..verify.info import describe

    print(describe(args.path))
    return 0
