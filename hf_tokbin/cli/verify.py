"""``hf-tokbin verify PATH [--for TARGET]`` and
``hf-tokbin verify NS/NAME [--revision REV] [--endpoint URL] [--path-in-repo FOLDER] [--download-sample K]``.

A target that is no local path and reads NS/NAME is a Hub dataset repo:
checked against the Hub's own sizes and SHA-256 at one commit without
downloading its token files (:mod:`hf_tokbin.hub.remote_verify`).

Without ``--for``: check every byte the seeds promise. With ``--for``: that
check too, as one finding, and what that trainer's own loader would trip on
(:mod:`hf_tokbin.trainers`); print one finding per line (``LEVEL: FILE:
RULE: MESSAGE``) and a summary; exit 1 if any finding is an error.
"""

from __future__ import annotations

import os

from .output import add_json_flag, emit

# The trainers of --for in the order --help lists them (every trainer of hf_tokbin.trainers; a test checks).
FOR_CHOICES = ("llmc", "modded-nanogpt", "llmc-llama3", "megatron", "maxtext", "nanogpt")


def add_arguments(parser) -> None:
    from ..trainers import LoaderSettings

    defaults = LoaderSettings()
    parser.add_argument("path", help="a release folder, an llm.c token folder or .bin, a Megatron .idx/.bin, a merge "
        "folder, or a Hub dataset repo NS/NAME")
    parser.add_argument("--revision", default=None, metavar="REV",
        help="a Hub repo's branch, tag or commit id (default main)")
    parser.add_argument("--endpoint", default=None, metavar="URL",
        help="Hub endpoint (default: HF_ENDPOINT or https://huggingface.co)")
    parser.add_argument("--token", default=None, metavar="TOKEN", help="a Hub repo: the token (default: HF_TOKEN)")
    parser.add_argument("--path-in-repo", default=None, metavar="FOLDER",
        help="a Hub repo: the folder holding the release (default: the top)")
    parser.add_argument("--strict", action="store_true",
        help="a Hub repo: fail on files outside the release layout too (default: report them)")
    parser.add_argument("--download-sample", type=int, default=None, metavar="K",
        help="a Hub repo: also download and fully verify the token files of K parts")
    parser.add_argument("--for", dest="target", choices=FOR_CHOICES, help="also check what this trainer trips on")
    parser.add_argument("--batch-size", "-B", type=int, default=defaults.batch_size,
        help="the loader's batch size B (default: %(default)s, llm.c's)")
    parser.add_argument("--seq-len", "-T", type=int, default=defaults.seq_len,
        help="the loader's sequence length T (default: %(default)s, llm.c's)")
    parser.add_argument("--world-size", type=int, default=defaults.world_size,
        help="processes reading the same files (default: %(default)s)")
    parser.add_argument("--eod-id", type=int, default=None,
        help="the EOD id for Megatron/MaxText checks (default: run_config.json's)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars (verify shows none)")
    add_json_flag(parser)
    parser.add_argument("--engine", choices=["local", "ray"], default="local",
        help="a release folder: where the per-file checks run (ray: one task per pair and llm.c file; every node must "
        "see PATH)")
    parser.add_argument("--num-proc", type=int, default=os.cpu_count() or 1, metavar="N",
        help="with --engine local: files checked at once (default: one per core, %(default)s here)")
    parser.add_argument("--ray-address", default=None, metavar="ADDR",
        help="with --engine ray: the cluster (default: Ray's rule, as for build)")
    parser.set_defaults(run=run)


def is_hub_repo(target: str) -> bool:
    """Whether ``target`` names a Hub repo: not an existing local path, and NS/NAME (two non-empty parts)."""
    import os

    from ..formats.rules import is_repo_id

    return not os.path.lexists(target) and is_repo_id(target)


def run(args) -> int:
    hub_options = (
        ("--revision", args.revision), ("--endpoint", args.endpoint), ("--token", args.token),
        ("--download-sample", args.download_sample), ("--path-in-repo", args.path_in_repo),
        ("--strict", args.strict or None),
    )
    hub_flags = [flag for flag, value in hub_options if value is not None]
    if is_hub_repo(args.path):
        if args.target is not None:
            from ..errors import HubError

            raise HubError(args.path, "--for checks local files; download the release first with hf-tokbin pull")
        from ..hub.remote_verify import verify_remote
        from ..hub.retry import path_or_repo

        with path_or_repo(args.path):
            report = verify_remote(
                args.path, revision=args.revision, endpoint=args.endpoint, token=args.token,
                download_sample=args.download_sample or 0, path_in_repo=args.path_in_repo, progress=False,
                strict=args.strict,
            )
        emit(args, report.summary(), report.record())
        return 0
    if hub_flags:
        from ..errors import FormatError

        raise FormatError(
            args.path,
            f"{', '.join(hub_flags)} apply to a Hub repo NS/NAME only, and this is a local path (or not NS/NAME)",
        )
    from ..verify.files import verify_path_record

    if args.target is None:
        emit(
            args,
            *verify_path_record(args.path, engine=args.engine, num_proc=args.num_proc, ray_address=args.ray_address),
        )
        return 0
    from ..trainers import ERROR, WARNING, LoaderSettings, check

    settings = LoaderSettings(args.batch_size, args.seq_len, args.world_size, args.eod_id)
    findings = [*check(args.path, args.target, settings), _every_byte(args)]
    errors = sum(f.level == ERROR for f in findings)
    warnings = sum(f.level == WARNING for f in findings)
    counts = f"{errors} error(s), {warnings} warning(s)"
    loader = f"--for {args.target} (B={settings.batch_size}, T={settings.seq_len})"
    lines = [*map(str, findings), f"{args.path}: {loader}: {counts}"]
    record = {
        "path": args.path, "ok": not errors, "target": args.target, "settings": settings, "findings": findings,
        "errors": errors, "warnings": warnings,
    }
    emit(args, "\n".join(lines), record)
    return 1 if errors else 0


def _every_byte(args):
    """``verify PATH``'s full check as one finding of ``verify --for``: a trainer's rules add to it."""
    from ..errors import TokbinError
    from ..trainers import ERROR, INFO, Finding
    from ..verify.files import verify_path_record

    rule = "every byte (as hf-tokbin verify)"
    try:
        summary, _record = verify_path_record(args.path, args.engine, args.num_proc, args.ray_address)
    except TokbinError as error:
        where = getattr(error, "path", None) or args.path
        return Finding(ERROR, where, rule, getattr(error, "detail", str(error)))
    return Finding(INFO, args.path, rule, summary.splitlines()[0].removeprefix(f"{args.path}: "))
