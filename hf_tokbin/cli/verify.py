"""``hf-tokbin verify PATH [--for TARGET]``.

Without ``--for``: check every byte the seeds promise. With ``--for``: check
what that trainer's own loader would trip on (:mod:`hf_tokbin.compat`), print
one finding per line (``LEVEL: FILE: RULE: MESSAGE``) and a summary; exit 1 if
any finding is an error.
"""

from __future__ import annotations


def add_arguments(parser) -> None:
    from ..verify.compat import TARGETS, LoaderSettings

    defaults = LoaderSettings()
    parser.add_argument("path", help="a release folder, an llm.c token folder or .bin, or a Megatron .idx/.bin or folder of pairs")
    parser.add_argument("--for", dest="target", choices=list(TARGETS), help="check against this trainer's loader instead")
    parser.add_argument("--batch-size", "-B", type=int, default=defaults.batch_size, help="the loader's batch size B (default: %(default)s, llm.c's)")
    parser.add_argument("--seq-len", "-T", type=int, default=defaults.seq_len, help="the loader's sequence length T (default: %(default)s, llm.c's)")
    parser.add_argument("--world-size", type=int, default=defaults.world_size, help="processes reading the same files (default: %(default)s)")
    parser.add_argument("--eod-id", type=int, default=None, help="the EOD id for Megatron/MaxText checks (default: run_config.json's)")
    parser.set_defaults(run=run)


def run(args) -> int:
    if args.target is None:
        from ..verify.files import verify_path

        print(verify_path(args.path))
        return 0
    from ..verify.compat import ERROR, WARNING, LoaderSettings, check

    settings = LoaderSettings(args.batch_size, args.seq_len, args.world_size, args.eod_id)
    findings = check(args.path, args.target, settings)
    for finding in findings:
        print(finding)
    errors = sum(f.level == ERROR for f in findings)
    warnings = sum(f.level == WARNING for f in findings)
    print(f"{args.path}: --for {args.target} (B={settings.batch_size}, T={settings.seq_len}): {errors} error(s), {warnings} warning(s)")
    return 1 if errors else 0
