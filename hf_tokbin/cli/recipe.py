"""``hf-tokbin recipe RELEASE --for TARGET``: the flags or config lines that train on a release.

Prints the lines (:mod:`hf_tokbin.trainers`), the trainer version they
were checked against, notes, and every warning and error of ``verify --for``
that no printed line fixes (one a line fixes is a note of the change); exits 1
if any finding left is an error.
"""

from __future__ import annotations


def add_arguments(parser) -> None:
    from ..trainers import EOD_LOSS_POLICIES, TARGETS, LoaderSettings

    defaults = LoaderSettings()
    parser.add_argument("path", help="a release folder (or an llm.c token folder, or a folder of Megatron pairs)")
    parser.add_argument("--for", dest="target", required=True, choices=list(TARGETS), help="the trainer")
    parser.add_argument(
        "--batch-size", "-B", type=int, default=defaults.batch_size, help="micro-batch size B (default: %(default)s)"
    )
    parser.add_argument(
        "--seq-len", "-T", type=int, default=defaults.seq_len, help="sequence length T (default: %(default)s)"
    )
    parser.add_argument(
        "--world-size",
        type=int,
        default=defaults.world_size,
        help="processes (GPUs) reading the files (default: %(default)s)",
    )
    parser.add_argument("--eod-id", type=int, default=None, help="the EOD id (default: run_config.json's)")
    parser.add_argument(
        "--epochs",
        type=int,
        default=defaults.epochs,
        help="passes over the train split the step count covers (default: %(default)s)",
    )
    parser.add_argument(
        "--eod-loss",
        choices=EOD_LOSS_POLICIES,
        default=defaults.eod_loss,
        help="train: the loss counts EOD tokens (default; the only policy the llm.c-family trainers have); mask: "
        "Megatron/MaxText mask it",
    )
    parser.add_argument(
        "--init-from",
        default=None,
        metavar="MODEL",
        help="fine-tune this model (llm.c -e/--model, nanoGPT init_from) instead of training from scratch",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the recipe as one JSON object (commands as argv lists)"
    )
    parser.add_argument(
        "--index-dir",
        default=None,
        help="MaxText: where mmap_npy builds its .npy indices (default: RELEASE/.maxtext-index)",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="no progress bars (this command shows none; accepted as by every command)"
    )
    parser.set_defaults(run=run)


def run(args) -> int:
    import json

    from ..trainers import LoaderSettings, recipe

    settings = LoaderSettings(
        args.batch_size, args.seq_len, args.world_size, args.eod_id, args.epochs, args.eod_loss, args.init_from
    )
    result = recipe(args.path, args.target, settings, args.index_dir)
    if args.json:
        print(json.dumps(result.to_record()))  # one line, as every command's --json
    else:
        print(result.text(), end="")
    return 1 if result.has_errors() else 0
