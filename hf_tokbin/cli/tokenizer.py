"""``hf-tokbin tokenizer train``."""

from __future__ import annotations

from ..tokenizer.resolve import EOS_TOKEN
from .output import add_json_flag, emit
from .progress import show_progress

CORPUS_HELP = (
    "what build --corpus takes: a corpus folder (hf-tokbin corpus), a Hub dataset repo NS/NAME, or input files, "
    "folders, globs or hf:// paths (written as a temporary corpus, as corpus import does)"
)
SPECIAL_TOKENS_HELP = (
    f"comma-separated special tokens, given the first ids in order (default {EOS_TOKEN}; "
    "the TinyStories rules: '<|bos|>,<|eos|>')"
)


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    train = sub.add_parser("train", help="train a byte-level BPE on the first characters of a corpus's train split")
    train.add_argument("--corpus", required=True, help=CORPUS_HELP)
    train.add_argument("--corpus-revision", default=None, help="pinned revision of a Hub corpus")
    train.add_argument(
        "--corpus-config", default=None, help="config of a plain Hub dataset repo (default: its default)"
    )
    train.add_argument(
        "--vocab-size",
        type=int,
        default=8192,
        help="entries, the 256 bytes and the special tokens included (at most 2**24; default 8192)",
    )
    train.add_argument(
        "--sample-chars", type=int, default=10_000_000, help="characters of the train split to train on (positive)"
    )
    train.add_argument(
        "--out", required=True, help="folder for tokenizer.json, tokenizer_config.json and generation_config.json"
    )
    train.add_argument("--special-tokens", default=EOS_TOKEN, help=SPECIAL_TOKENS_HELP)
    train.add_argument(
        "--bos-token", default=None, help="the BOS token the files name (default: the first special token)"
    )
    train.add_argument(
        "--eos-token",
        default=None,
        help="the EOS token, the document separator a build finds (default: the last special token)",
    )
    train.add_argument("--overwrite", action="store_true", help="replace the tokenizer files of a non-empty --out")
    train.add_argument("--quiet", action="store_true", help="no progress bars")
    add_json_flag(train)
    train.set_defaults(run=run_train)


def run_train(args) -> int:
    from ..api import corpus_for_build
    from ..tokenizer.resolve import load_tokenizer_json
    from ..tokenizer.train import (
        check_output_folder,
        check_special_tokens,
        check_training_options,
        corpus_texts,
        sample_texts,
        train_bpe,
    )

    special_tokens = tuple(t.strip() for t in args.special_tokens.split(","))
    # Before reading the corpus: a bad option or an occupied folder costs nothing.
    check_special_tokens(args.out, special_tokens, args.bos_token, args.eos_token)
    check_training_options(args.out, args.vocab_size, special_tokens, args.sample_chars)
    check_output_folder(args.out, args.overwrite)
    progress = show_progress(args.quiet)
    # The corpus as build --corpus reads it (files and globs are imported into a temporary corpus first).
    hub_choice = (args.corpus_revision, args.corpus_config, None)
    with corpus_for_build(args.corpus, args.out, progress=progress, hub_choice=hub_choice) as (corpus, _, _):
        # At most --sample-chars characters (10 MB by default): small enough to hold at once.
        texts = list(sample_texts(corpus_texts(corpus, "train"), args.sample_chars))
    path = train_bpe(
        texts,
        args.vocab_size,
        args.out,
        special_tokens,
        bos_token=args.bos_token,
        eos_token=args.eos_token,
        overwrite=args.overwrite,
        progress=progress,
    )
    vocab_size = load_tokenizer_json(path).get_vocab_size(with_added_tokens=True)
    characters = sum(map(len, texts))
    human = f"wrote {path} ({vocab_size:,} entries, trained on the first {characters:,} characters of train)"
    record = {
        "tokenizer": path,
        "out": args.out,
        "vocab_size": vocab_size,
        "characters": characters,
        "documents": len(texts),
        "split": "train",
        "special_tokens": list(special_tokens),
    }
    emit(args, human, record)
    return 0
