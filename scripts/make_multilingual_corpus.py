"""Write a multilingual JSONL corpus from the word lists the ``wordfreq`` package ships.

    python scripts/make_multilingual_corpus.py --mb 60 --out multilingual/

Documents in 42 languages (Latin, Cyrillic, Greek, Arabic, Persian, Hebrew,
Urdu, Devanagari, Bengali, Tamil, CJK, Hangul, Vietnamese, ...), each a few
sentences of words drawn by their frequency, with numbers and punctuation;
beside them source code, emoji and a share of Latin-script text in NFD
(decomposed accents), the shapes that part tokenizer engines. Every document
is one JSON line ``{"text": ...}``; shards of ``--shard-mb`` each. The same
``--seed`` gives the same bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import unicodedata

import numpy as np

# Languages written without spaces between words.
NO_SPACES = {"ja", "zh"}
SENTENCE_END = {"ja": "。", "zh": "。", "ar": ".", "fa": ".", "ur": "۔", "hi": "।", "bn": "।"}
LATIN_WITH_ACCENTS = ("vi", "fr", "pt", "es", "de", "cs", "pl", "ro", "tr", "is", "hu", "sk", "lt", "lv")
EMOJI = "😀😂🥲😍🤔👍🏽👋🏿🎉🔥✨🌍🚀❤️🇫🇷🇯🇵🇧🇷👨‍👩‍👧🐈‍⬛🙏🏻💯✅⚠️"
CODE = (
    "def {f}({a}, {b}=None):\n    \"\"\"{w}.\"\"\"\n    if {b} is None:\n        {b} = []\n"
    "    for i in range({n}):\n        {b}.append({a}[i] * {n} + i)  # {w}\n    return {b}\n\n",
    "function {f}({a}, {b}) {{\n  const out = {{}};\n  for (let i = 0; i < {n}; i++) {{\n"
    "    out[`${{{a}}}_${{i}}`] = {b}?.[i] ?? null; // {w}\n  }}\n  return out;\n}}\n\n",
    "#include <stdio.h>\nint {f}(int {a}, int {b}) {{\n\treturn ({a} << {n}) ^ {b}; /* {w} */\n}}\n\n",
    "SELECT {a}, COUNT(*) AS {b} FROM {f} WHERE {a} > {n} GROUP BY {a}; -- {w}\n",
)


def word_lists(size: int) -> dict[str, tuple[list[str], np.ndarray]]:
    import wordfreq

    lists = {}
    for lang in sorted(wordfreq.available_languages()):
        # The raw frequency list: word_frequency() would tokenize each word (MeCab for Japanese).
        frequencies = sorted(wordfreq.get_frequency_dict(lang).items(), key=lambda item: (-item[1], item[0]))[:size]
        words = [word for word, _ in frequencies]
        weights = np.array([frequency for _, frequency in frequencies], dtype=np.float64)
        lists[lang] = (words, np.cumsum(weights / weights.sum()))
    return lists


def sentence(rng: random.Random, words: list[str], cumulative: np.ndarray, lang: str) -> str:
    count = rng.randint(4, 18)
    picked = [words[int(np.searchsorted(cumulative, rng.random()))] for _ in range(count)]
    if rng.random() < 0.3:
        picked.insert(rng.randrange(len(picked) + 1), str(rng.choice((rng.randint(0, 99), rng.randint(100, 99999)))))
    joined = ("" if lang in NO_SPACES else " ").join(picked)
    if rng.random() < 0.2:
        joined += rng.choice((",", ";", ":", " —", " (", "?", "!"))
    if lang not in NO_SPACES and not lang.startswith(("ar", "fa", "ur", "he")):
        joined = joined[:1].upper() + joined[1:]
    return joined + SENTENCE_END.get(lang, ".")


def document(rng: random.Random, lists: dict, langs: list[str]) -> str:
    kind = rng.random()
    if kind < 0.06:
        word = rng.choice(lists["en"][0])
        names = {k: rng.choice(lists["en"][0][:400]).lower() + "_" + str(rng.randint(0, 9)) for k in "fab"}
        return "".join(
            rng.choice(CODE).format(n=rng.randint(1, 64), w=word, **names) for _ in range(rng.randint(2, 8))
        )
    lang = rng.choice(langs)
    words, cumulative = lists[lang]
    parts = []
    for _ in range(rng.randint(3, 30)):
        parts.append(sentence(rng, words, cumulative, lang))
        if rng.random() < 0.05:
            parts.append(rng.choice(EMOJI) * rng.randint(1, 3))
        if rng.random() < 0.04:  # a phrase from another language: mixed-script documents
            other = rng.choice(langs)
            parts.append(sentence(rng, *lists[other], other))
    text = ("" if lang in NO_SPACES else " ").join(parts)
    if rng.random() < 0.15:
        text = text.replace(". ", ".\n\n", rng.randint(1, 4))
    if lang in LATIN_WITH_ACCENTS and rng.random() < 0.1:
        text = unicodedata.normalize("NFD", text)  # decomposed accents: NFC normalizers change these
    return text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=60.0, help="total UTF-8 text, in MB (default 60)")
    parser.add_argument("--shard-mb", type=float, default=6.0, help="text per JSONL shard, in MB (default 6)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--words", type=int, default=5000, help="words per language's list (default 5000)")
    parser.add_argument("--out", required=True, help="folder for train-NNNNN.jsonl")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    lists = word_lists(args.words)
    langs = sorted(lists)
    os.makedirs(args.out, exist_ok=True)
    total, shard, written = int(args.mb * 1e6), int(args.shard_mb * 1e6), 0
    index, documents = 0, 0
    while written < total:
        path = os.path.join(args.out, f"train-{index:05d}.jsonl")
        in_shard = 0
        with open(path, "w", encoding="utf-8") as f:
            while in_shard < shard and written < total:
                text = document(rng, lists, langs)
                size = len(text.encode("utf-8"))
                f.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")
                in_shard, written, documents = in_shard + size, written + size, documents + 1
        index += 1
    print(
        f"{documents:,} documents, {written / 1e6:.1f} MB of text in "
        f"{index} shards under {args.out} ({len(langs)} languages)"
    )


if __name__ == "__main__":
    main()
