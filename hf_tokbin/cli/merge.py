"""``hf-tokbin merge RELEASE --out DIR``: one Megatron pair per split (:mod:`hf_tokbin.pipeline.merge`)."""

from __future__ import annotations

from .output import add_json_flag, emit


def add_arguments(parser) -> None:
    parser.add_argument("release", help="a release folder with Megatron pairs")
    parser.add_argument("--out", required=True, help="a new or empty folder for <split>.bin/.idx and MERGED.json")
    parser.add_argument(
        "--quiet", action="store_true", help="no progress bars (this command shows none; accepted as by every command)"
    )
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    from ..pipeline.merge import merge_release

    record = merge_release(args.release, args.out)
    out = args.out.rstrip("/")  # "--out merged/" names merged/train, not merged//train
    lines = []
    splits = {}
    for split, merged in record["splits"].items():
        documents, tokens, parts = merged["documents"], merged["tokens"], len(merged["parts"])
        lines.append(f"{out}/{split}: {documents:,} documents, {tokens:,} tokens from {parts} part(s)")
        splits[split] = {"documents": documents, "tokens": tokens, "parts": parts, "prefix": f"{out}/{split}"}
    emit(args, "\n".join(lines), {"release": args.release, "out": args.out, "splits": splits})
    return 0
