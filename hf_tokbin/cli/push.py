"""``hf-tokbin push DIR --repo NS/NAME [--revision BRANCH] [--path-in-repo PREFIX] [--delete PATTERN]... [--mirror]
[--dry-run] [--private | --public] [--commit-message TEXT] [--create-pr] [--token TOKEN] [--endpoint URL]
[--quiet]``."""

from __future__ import annotations

from .output import add_json_flag, as_json, emit
from .progress import show_progress


def add_arguments(parser) -> None:
    parser.add_argument(
        "folder",
        metavar="DIR",
        help="a release folder (with COMPLETE.json) or a raw corpus folder (with _MANIFEST.json)",
    )
    parser.add_argument("--repo", required=True, metavar="NS/NAME", help="the Hub dataset repo (created if missing)")
    parser.add_argument(
        "--revision",
        default="main",
        metavar="BRANCH",
        help="branch to push to (created from main if missing; default main)",
    )
    parser.add_argument(
        "--path-in-repo",
        default=None,
        metavar="PREFIX",
        help="publish into this folder of the repo "
        "(several releases can share one repo; pull with the same --path-in-repo)",
    )
    _add_change_arguments(parser)
    parser.add_argument(
        "--commit-message",
        default=None,
        metavar="TEXT",
        help="the commits' title (numbered when the push takes several commits)",
    )
    parser.add_argument(
        "--create-pr", action="store_true", help="open a pull request against main instead of committing to it"
    )
    parser.add_argument(
        "--token",
        default=None,
        metavar="TOKEN",
        help="Hub token (default: HF_TOKEN or the saved login); never printed",
    )
    parser.add_argument(
        "--endpoint", default=None, metavar="URL", help="Hub endpoint (default: HF_ENDPOINT or https://huggingface.co)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_json_flag(parser)
    parser.set_defaults(run=run)


def _add_change_arguments(parser) -> None:
    """What the push may delete, whether it only says what it would do, and a new repo's visibility."""
    parser.add_argument(
        "--delete",
        action="append",
        default=[],
        metavar="PATTERN",
        help="delete remote files the folder does not hold that match PATTERN "
        "(fnmatch, relative to --path-in-repo; may be repeated). Without it no remote file is deleted",
    )
    parser.add_argument(
        "--mirror",
        action="store_true",
        help="delete every remote file (under --path-in-repo) that the folder does not hold",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="say what would be added, kept and deleted; change nothing"
    )
    visibility = parser.add_mutually_exclusive_group()
    visibility.add_argument(
        "--private",
        dest="private",
        action="store_const",
        const=True,
        default=None,
        help="create the repo private (an existing repo must already be private)",
    )
    visibility.add_argument(
        "--public",
        dest="private",
        action="store_const",
        const=False,
        help="create the repo public (an existing repo must already be public). "
        "Without either flag the Hub's default applies",
    )


def run(args) -> int:
    from huggingface_hub.utils import disable_progress_bars

    from ..hub import push_folder
    from ..hub.retry import bound_shared_client_reads

    disable_progress_bars()  # the client's per-file bars would break hf-tokbin's own
    bound_shared_client_reads()  # this process's: a library caller keeps the client it set up
    result = push_folder(
        args.folder,
        args.repo,
        revision=args.revision,
        private=args.private,
        endpoint=args.endpoint,
        token=args.token,
        progress=show_progress(args.quiet),
        path_in_repo=args.path_in_repo,
        delete=args.delete,
        mirror=args.mirror,
        dry_run=args.dry_run,
        commit_message=args.commit_message,
        create_pr=args.create_pr,
    )
    emit(
        args,
        str(result) if args.dry_run else f"pushed {args.folder}: {result}",
        {"folder": args.folder, "dry_run": args.dry_run, **as_json(result)},
    )
    return 0
