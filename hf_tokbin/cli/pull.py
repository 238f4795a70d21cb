"""``hf-tokbin pull NS/NAME --out DIR [--revision REV] [--endpoint URL] [--allow-incomplete] [--quiet]``."""

from __future__ import annotations


def add_arguments(parser) -> None:
    parser.add_argument("repo", metavar="NS/NAME", help="the Hub dataset repo holding the release (releases only: a corpus repo loads with datasets.load_dataset)")
    parser.add_argument("--out", required=True, metavar="DIR", help="where the verified release goes (must not exist, or be empty)")
    parser.add_argument("--revision", default=None, metavar="REV", help="branch, tag or commit id (default main)")
    parser.add_argument("--endpoint", default=None, metavar="URL", help="Hub endpoint (default: HF_ENDPOINT or https://huggingface.co)")
    parser.add_argument("--allow-incomplete", action="store_true", help="download a release without COMPLETE.json (only its receipts' files are checked)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.set_defaults(run=run)


def run(args) -> int:
    from huggingface_hub.utils import disable_progress_bars

    from ..hub import pull_release

    disable_progress_bars()  # the client's per-file bars would break hf-tokbin's own
    summary = pull_release(args.repo, args.out, revision=args.revision, endpoint=args.endpoint, allow_incomplete=args.allow_incomplete, progress=not args.quiet)
    print(f"pulled {summary}")
    return 0
