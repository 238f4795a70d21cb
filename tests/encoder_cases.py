"""Texts and tokenizer shapes the encoder tests share: the
definition of the ids, and shapes a fast path could get wrong.
"""

from __future__ import annotations

import unicodedata

from hypothesis import strategies as st
from tokenizer_files import story_texts
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

# Code points gigatoken 0.10 and tokenizers 0.23 classify differently (Unicode 16 letters and digits).
NEW_LETTER, NEW_DIGIT = "\ua7ce", "\U00011de0"

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
    """The definition: one Tokenizer.encode per text, flattened;
    special-token text is ordinary text unless parse_special.
    """
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
            vocab_size=vocab_size,
            special_tokens=["<|endoftext|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
    if normalizer is not None:
        tokenizer.normalizer = normalizer
    tokenizer.train_from_iterator(story_texts(300, seed=7), trainer)
    tokenizer.add_tokens(list(added))
    path = folder / "tokenizer.json"
    tokenizer.save(str(path))
    return str(path)


# ------------------------------------------------------------ randomized mixed-script texts


def _unassigned(low: int, high: int) -> list[str]:
    return [chr(c) for c in range(low, high) if unicodedata.category(chr(c)) == "Cn" and not 0xD800 <= c < 0xE000]


_PIECES = st.sampled_from(
    [
        *"aZé ß Ωжא日한ـ",  # scripts
        *"0189٣३१²½Ⅻ",  # digits and numbers
        *" \t\n\r\u00a0\u2003\u3000\u0085\u2028\x0b\x0c\x1c",  # white space variants
        *"\u0301\u0308\u200d\ufe0f\u20e3",  # combining marks, joiners, selectors
        *"'’\"!?.,-_/\\<|>",  # punctuation
        "😀", "👍🏽", "👨‍👩‍👧", "🇫🇷", "🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f",  # emoji
        "'s", "'S", "'ll", "'VE", "ſ", "\u212a",  # contractions and case folds
        NEW_LETTER, NEW_DIGIT, "\U0001e5d0", "\u1c89", "\U00010d4a",  # Unicode 15-16 assignments
        *_unassigned(0x0870, 0x0890)[:4], *_unassigned(0x2FE0, 0x2FF0)[:3], "\U000e0200", "\U000f0000", "\U0010fffd",
        "<|endoftext|>", "<|end_of_text|>", "<|begin_of_text|>",  # special-token text
        "Hello", " world", "123456", "  ", "\n\n",
    ]
)
MIXED_SCRIPT_TEXTS = st.lists(st.lists(_PIECES, max_size=12).map("".join), min_size=1, max_size=8)
