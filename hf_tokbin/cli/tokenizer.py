"""``hf-tokbin tokenizer train``."""

from __future__ import annotations


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    train = sub.add_parser("train", help="train a byte-level BPE on the first characters of a corpus's train split")
    train.add_argument("--corpus", required=True, help="a corpus folder written by hf-tokbin corpus")
    train.add_argument("--vocab-size", type=int, default=8192)
    train.add_argument("--sample-chars", type=int, default=10_000_000, help="characters of the train split to train on")
    train.add_argument("--out", required=True, help="folder for tokenizer.json and generation_config.json")
    train.set_defaults(run=run_train)


def run_train(args) -> int:
    from ..corpus_manifest import CorpusManifest, iter_texts
    from ..tokenizer import sample_texts, train_bpe

    manifest = CorpusManifest.read(args.corpus)
    texts = sample_texts(iter_texts(args.corpus, manifest, "train"), args.sample_chars)
    path = train_bpe(texts, args.vocab_size, args.out)
    print(f"wrote {path} ({args.vocab_size:,} entries, trained on the first {args.sample_chars:,} characters of train)")
    return 0
