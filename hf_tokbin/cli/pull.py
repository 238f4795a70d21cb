"""``hf-tokbin pull NS/NAME|hf://datasets/NS/NAME[@REV][/FOLDER] --out DIR [--revision REV] [--endpoint URL]
[--include FORMAT:SPLIT|PATH|GLOB] [--exclude PATH|GLOB] [--path-in-repo FOLDER] [--token TOKEN] [--max-workers N]
[--allow-incomplete] [--quiet]``.

A killed or failed pull keeps its staging folder beside DIR; the same command resumes it.
"""

from __future__ import annotations

from .output import add_json_flag, as_json, emit
from .progress import show_progress


def add_arguments(parser) -> None:
    parser.add_argument(
        "repo",
        metavar="NS/NAME",
        help="the Hub dataset repo holding the release (or a corpus written by hf-tokbin corpus); "
        "hf://datasets/NS/NAME[@REV][/FOLDER] too",
    )
    parser.add_argument(
        "--out", required=True, metavar="DIR", help="where the verified copy goes (must not exist, or be empty)"
    )
    parser.add_argument("--revision", default=None, metavar="REV", help="branch, tag or commit id (default main)")
    parser.add_argument(
        "--endpoint", default=None, metavar="URL", help="Hub endpoint (default: HF_ENDPOINT or https://huggingface.co)"
    )
    parser.add_argument(
        "--include",
        action="append",
        metavar="FORMAT:SPLIT|PATH|GLOB",
        help="fetch only these parts (repeatable, or comma-separated): FORMAT:SPLIT, FORMAT or SPLIT, "
        "FORMAT megatron|llmc, SPLIT train|validation; "
        "or repo paths and globs, as hf download --include takes them (shards/validation/*; one file of a "
        "Megatron pair fetches the pair); a corpus takes SPLIT, paths or globs only. The records are always "
        "fetched; the copy gets PARTIAL.json, not COMPLETE.json. A path or glob that matches no file is an error",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        metavar="PATH|GLOB",
        help="leave out the token files or corpus shards these repo paths or globs match (repeatable, or "
        "comma-separated), as hf download --exclude; the records are always fetched",
    )
    parser.add_argument("--token", default=None, metavar="TOKEN", help="Hub token (default: HF_TOKEN or the login)")
    parser.add_argument(
        "--path-in-repo",
        default=None,
        metavar="FOLDER",
        help="the repo folder holding the release (as pushed with --path-in-repo; default: the top)",
    )
    parser.add_argument(
        "--max-workers",
        "--workers",
        dest="max_workers",
        type=int,
        default=8,
        metavar="N",
        help="parallel downloads, as hf download names it (default: %(default)s; --workers is its older name)",
    )
    parser.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="download a release without COMPLETE.json (only its receipts' files are checked)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    from ..errors import HubError
    from ..hub import pull_release
    from ..hub.layout import Include

    if args.max_workers < 1:
        raise HubError("--max-workers", "must be a positive integer", got=args.max_workers)
    repo, revision, path_in_repo = repo_argument(args.repo, args.revision, args.path_in_repo)
    summary = pull_release(
        repo,
        args.out,
        revision=revision,
        endpoint=args.endpoint,
        token=args.token,
        path_in_repo=path_in_repo,
        include=Include.parse(args.include, args.exclude),
        allow_incomplete=args.allow_incomplete,
        max_workers=args.max_workers,
        progress=show_progress(args.quiet),
    )
    emit(args, f"pulled {summary}", as_json(summary))
    return 0


def repo_argument(given: str, revision: str | None, path_in_repo: str | None) -> tuple[str, str | None, str | None]:
    """NS/NAME, or ``hf://datasets/NS/NAME[@REV][/FOLDER]`` as ``hf download`` and ``corpus import`` take it: the repo
    id, the revision and the folder (each given once: in the URL or by its option)."""
    from ..errors import HubError

    if not given.startswith("hf://"):
        return given, revision, path_in_repo
    from huggingface_hub import parse_hf_uri

    try:
        parsed = parse_hf_uri(given)
    except ValueError as error:
        expected = "hf://datasets/NS/NAME[@REV][/FOLDER]"
        raise HubError(given, "not an hf:// URL of a dataset repo", expected=expected) from error
    if parsed.type != "dataset":
        got = f"a {parsed.type} repo"
        raise HubError(given, "a release is in a dataset repo", expected="hf://datasets/NS/NAME", got=got)
    given_twice = (("--revision", parsed.revision, revision), ("--path-in-repo", parsed.path_in_repo, path_in_repo))
    for option, in_url, by_option in given_twice:
        if in_url and by_option:
            raise HubError(given, f"the URL gives {option} already", hint=f"give it once: in the URL or as {option}")
    return parsed.id, parsed.revision or revision, parsed.path_in_repo or path_in_repo
