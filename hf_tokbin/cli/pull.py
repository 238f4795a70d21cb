"""``hf-tokbin pull NS/NAME --out DIR [--revision REV] [--endpoint URL] [--include FORMAT:SPLIT|GLOB] [--path-in-repo FOLDER] [--max-workers N] [--allow-incomplete] [--quiet]``.

A killed or failed pull keeps its staging folder beside DIR; the same command resumes it.
"""

from __future__ import annotations

from .output import add_json_flag, as_json, emit
from .progress import show_progress


def add_arguments(parser) -> None:
    parser.add_argument("repo", metavar="NS/NAME", help="the Hub dataset repo holding the release (or a corpus written by hf-tokbin corpus)")
    parser.add_argument("--out", required=True, metavar="DIR", help="where the verified copy goes (must not exist, or be empty)")
    parser.add_argument("--revision", default=None, metavar="REV", help="branch, tag or commit id (default main)")
    parser.add_argument("--endpoint", default=None, metavar="URL", help="Hub endpoint (default: HF_ENDPOINT or https://huggingface.co)")
    parser.add_argument(
        "--include",
        action="append",
        metavar="FORMAT:SPLIT|GLOB",
        help="fetch only these parts (repeatable, or comma-separated): FORMAT:SPLIT, FORMAT or SPLIT, FORMAT megatron|llmc, SPLIT train|validation; "
        "or globs of repo paths, as hf download --include takes them (shards/validation/*; one file of a Megatron pair fetches the pair); "
        "a corpus takes SPLIT or globs only. The records are always fetched; the copy gets PARTIAL.json, not COMPLETE.json",
    )
    parser.add_argument("--path-in-repo", default=None, metavar="FOLDER", help="the repo folder holding the release (as pushed with --path-in-repo; default: the top)")
    parser.add_argument("--max-workers", "--workers", dest="max_workers", type=int, default=8, metavar="N", help="parallel downloads, as hf download names it (default: %(default)s; --workers is its older name)")
    parser.add_argument("--allow-incomplete", action="store_true", help="download a release without COMPLETE.json (only its receipts' files are checked)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    from ..errors import HubError
    from ..hub import pull_release

    if args.max_workers < 1:
        raise HubError("--max-workers", "must be a positive integer", got=args.max_workers)
    summary = pull_release(
        args.repo, args.out, revision=args.revision, endpoint=args.endpoint, include=args.include, path_in_repo=args.path_in_repo,
        allow_incomplete=args.allow_incomplete, max_workers=args.max_workers, progress=show_progress(args.quiet),
    )
    emit(args, f"pulled {summary}", as_json(summary))
    return 0
