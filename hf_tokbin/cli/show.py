"""``hf-tokbin show RELEASE``: decode a document or a training window, boundary tokens marked."""

from __future__ import annotations

import sys

from .output import add_json_flag, as_json, emit


def add_arguments(parser) -> None:
    parser.add_argument("release", help="a release folder")
    parser.add_argument("--split", default="train", help="train or validation (default train)")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--doc",
        type=int,
        metavar="N",
        help="document N of the split: documents are numbered from 0 in the order a trainer reads them "
        "(the llm.c order, the preview's), the same document in either --format",
    )
    which.add_argument(
        "--window",
        type=int,
        metavar="OFFSET",
        help="a training window: --len T tokens of the split's token stream from OFFSET",
    )
    parser.add_argument("--len", dest="length", type=int, metavar="T", help="tokens in the window (with --window)")
    parser.add_argument(
        "--format",
        choices=("llmc", "megatron"),
        default=None,
        help="which files to read (default megatron if the release has it; llmc for a mixture's train split)",
    )
    parser.add_argument(
        "--tokenizer",
        default=None,
        help="the release's tokenizer.json or folder, when it was built from a local one (its SHA-256 is checked)",
    )
    parser.add_argument(
        "--raw",
        action="store_true",
        help="print the text as it is, control characters included (for a pipe); "
        "by default they are escaped as cat -v does: ^[ for ESC, ^G for BEL",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars (show has none)")
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    from ..api import show
    from ..errors import FormatError

    if args.window is not None and args.length is None:
        raise FormatError(None, "--window OFFSET needs --len T")
    shown = show(
        args.release,
        args.split,
        doc=args.doc,
        window=args.window,
        length=args.length,
        format=args.format,
        tokenizer=args.tokenizer,
    )
    text = shown.render(raw=args.raw)
    # The record's text is as decoded: JSON escapes every control character itself.
    emit(args, text, {**as_json(shown), "documents": sorted({p.document for p in shown.pieces})})
    if not args.json and not args.raw and text != shown.render(raw=True):
        print(
            "hf-tokbin show: control characters are shown escaped (^[ is ESC, as cat -v); --raw prints them as is",
            file=sys.stderr,
        )
    return 0
