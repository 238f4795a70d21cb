"""``hf-tokbin push DIR --repo NS/NAME [--revision BRANCH] [--private] [--endpoint URL] [--quiet]``."""

from __future__ import annotations


def add_arguments(parser) -> None:
    parser.add_argument("folder", metavar="DIR", help="a release folder (with COMPLETE.json) or a raw corpus folder (with _MANIFEST.json)")
    parser.add_argument("--repo", required=True, metavar="NS/NAME", help="the Hub dataset repo (created if missing)")
    parser.add_argument("--revision", default="main", metavar="BRANCH", help="branch to push to (created from main if missing; default main)")
    parser.add_argument("--private", action="store_true", help="create the repo private (an existing repo keeps its visibility)")
    parser.add_argument("--endpoint", default=None, metavar="URL", help="Hub endpoint (default: HF_ENDPOINT or https://huggingface.co)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.set_defaults(run=run)


def run(args) -> int:
    from huggingface_hub.utils import disable_progress_bars

    from ..hub import push_folder

    disable_progress_bars()  # the client's per-file bars would break hf-tokbin's own
    summary = push_folder(args.folder, args.repo, revision=args.revision, private=args.private, endpoint=args.endpoint, progress=not args.quiet)
    print(f"pushed {args.folder}: {summary}")
    return 0
