"""``hf-tokbin tokenizer train``."""

from __future__ import annotations

from ..tokenizer.resolve import EOS_TOKEN
from .progress import show_progress


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    train = sub.add_parser("train", help="train a byte-level BPE on the first characters of a corpus's train split")
    train.add_argument("--corpus", required=True, help="a corpus folder written by hf-tokbin corpus")
    train.add_argument("--vocab-size", type=int, default=8192, help="entries, the 256 bytes and the special tokens included (at most 2**24; default 8192)")
    train.add_argument("--sample-chars", type=int, default=10_000_000, help="characters of the train split to train on (positive)")
    train.add_argument("--out", required=True, help="folder for tokenizer.json, tokenizer_config.json and generation_config.json")
    train.add_argument("--special-tokens", default=EOS_TOKEN, help=f"comma-separated special tokens, given the first ids in order (default {EOS_TOKEN}; seed 002: '<|bos|>,<|eos|>')")
    train.add_argument("--bos-token", default=None, help="the BOS token the files name (default: the first special token)")
    train.add_argument("--eos-token", default=None, help="the EOS token, the document separator a build finds (default: the last special token)")
    train.add_argument("--overwrite", action="store_true", help="replace the tokenizer files of a non-empty --out")
    train.add_argument("--quiet", action="store_true", help="no progress bars")
    train.set_defaults(run=run_train)


def run_train(args) -> int:
    from ..corpus.source import iter_texts
    from ..formats.corpus_manifest import CorpusManifest
    from ..tokenizer.resolve import load_tokenizer_json
    from ..tokenizer.train import (
        check_output_folder,
        check_special_tokens,
        check_training_options,
        sample_texts,
        train_bpe,
    )

    special_tokens = tuple(t.strip() for t in args.special_tokens.split(","))
    # Before reading the corpus: a bad option or an occupied folder costs nothing.
    check_special_tokens(args.out, special_tokens, args.bos_token, args.eos_token)
    check_training_options(args.out, args.vocab_size, special_tokens, args.sample_chars)
    check_output_folder(args.out, args.overwrite)
    manifest = CorpusManifest.read(args.corpus)
    # At most --sample-chars characters (10 MB by default): small enough to hold at once.
    texts = list(sample_texts(iter_texts(args.corpus, manifest, "train"), args.sample_chars))
    path = train_bpe(texts, args.vocab_size, args.out, special_tokens, bos_token=args.bos_token, eos_token=args.eos_token, overwrite=args.overwrite, progress=show_progress(args.quiet))
    vocab_size = load_tokenizer_json(path).get_vocab_size(with_added_tokens=True)
    print(f"wrote {path} ({vocab_size:,} entries, trained on the first {sum(map(len, texts)):,} characters of train)")
    return 0
