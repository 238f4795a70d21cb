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
    from ..corpus.source import iter_texts
    from ..formats.corpus_manifest import CorpusManifest
    from ..tokenizer.resolve import load_tokenizer_json
    from ..tokenizer.train import sample_texts, train_bpe

    manifest = CorpusManifest.read(args.corpus)
    # At most --sample-chars characters (10 MB by default): small enough to hold at once.
    texts = list(sample_texts(iter_texts(args.corpus, manifest, "train"), args.sample_chars))
    path = train_bpe(texts, args.vocab_size, args.out)
    vocab_size = load_tokenizer_json(path).get_vocab_size(with_added_tokens=True)
    print(f"wrote {path} ({vocab_size:,} entries, trained on the first {sum(map(len, texts)):,} characters of train)")
    return 0
