"""``hf-tokbin merge RELEASE --out DIR``: one Megatron pair per split (:mod:`hf_tokbin.pipeline.merge`)."""

from __future__ import annotations


def add_arguments(parser) -> None:
    parser.add_argument("release", help="a release folder with Megatron pairs")
    parser.add_argument("--out", required=True, help="a new or empty folder for <split>.bin/.idx and MERGED.json")
    parser.add_argument("--quiet", action="store_true", help="no progress bars (this command shows none; accepted as by every command)")
    parser.set_defaults(run=run)


def run(args) -> int:
    from ..pipeline.merge import merge_release

    record = merge_release(args.release, args.out)
    out = args.out.rstrip("/")  # "--out merged/" names merged/train, not merged//train
    for split, merged in record["splits"].items():
        print(
            f"{out}/{split}: {merged['documents']:,} documents, {merged['tokens']:,} tokens from {len(merged['parts'])} part(s)"
        )
    return 0
