"""Texts and tokenizer shapes the encoder tests share: the definition of the ids, and shapes a fast path could get wrong."""

from __future__ import annotations

from tokenizer_files import story_texts
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

TRICKY_TEXTS = [
    "Hello world<|endoftext|> it's 12345 ok",
    "x<|end_of_text|>y <mytok>z<mytok> <|begin_of_text|>",
    "  many   spaces\n\n\ttabs  \r\n",
    "café naïve ﬁne ＦＵＬＬ ½ Ⅻ ٣",
    "emoji 😀👍🏽👨‍👩‍👧 🇫🇷 日本語のテキスト 한국어",
    "I'm you'll they've she'd IT'S ’s 1234567",
    "",
]


def definition_ids(tokenizer: Tokenizer, texts: list[str], parse_special: bool = False) -> tuple[list[int], list[int]]:
    """The definition: one Tokenizer.encode per text, flattened; special-token text is ordinary text unless parse_special."""
    tokenizer.encode_special_tokens = not parse_special
    per_text = [tokenizer.encode(text, add_special_tokens=False).ids for text in texts]
    return [i for ids in per_text for i in ids], [len(ids) for ids in per_text]


def train_shape(folder, vocab_size=600, normalizer=None, pre_tokenizer=None, added=(), byte_fallback=False) -> str:
    """A small BPE trained with tokenizers, in one of the shapes a fast path could get wrong."""
    if byte_fallback:  # SentencePiece-style (Llama 2): "▁" for spaces, unknown characters as <0xNN> bytes
        tokenizer = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
        tokenizer.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
        tokenizer.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
        specials = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256))]
        trainer = trainers.BpeTrainer(vocab_size=vocab_size + 259, special_tokens=specials, show_progress=False)
    else:
        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizer or pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
        )
    if normalizer is not None:
        tokenizer.normalizer = normalizer
    tokenizer.train_from_iterator(story_texts(300, seed=7), trainer)
    tokenizer.add_tokens(list(added))
    path = folder / "tokenizer.json"
    tokenizer.save(str(path))
    return str(path)
