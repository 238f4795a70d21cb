"""``hf-tokbin corpus``."""

from __future__ import annotations

from ..errors import TokbinError


def add_arguments(parser) -> None:
    parser.set_defaults(run=run)


def run(args) -> int:
    raise TokbinError("hf-tokbin corpus is not implemented yet")
