"""Write a TinyStories-like text file of a requested size, deterministically.

The output follows the layout of the TinyStories V2 files (the TinyStories rules): stories
of simple children's English with named characters, paragraphs separated by a
blank line, and after each story a line holding only ``<|endoftext|>``,
sometimes followed by one or two blank lines. ``--truncate-first`` starts the
file in the middle of a story, as the real validation file does.

The same ``--seed`` and ``--mb`` give the same bytes on every machine
(``random.Random`` with a fixed seed; no hash-ordered containers). Generation
stops at the first story boundary at or after ``--mb`` * 1,000,000 bytes.

    python scripts/make_tinystories_like.py --mb 200 --seed 0 --out train.txt
    python scripts/make_tinystories_like.py --mb 0.04 --seed 1 --truncate-first --out valid.txt
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

DELIMITER = "<|endoftext|>"

GIRLS = ("Lily", "Mia", "Sue", "Anna", "Lucy", "Zoe", "Emma", "Sara", "Amy", "Jill", "Kate", "Ella", "Rosie", "Daisy")
BOYS = ("Tom", "Ben", "Max", "Sam", "Timmy", "Jack", "Leo", "Tim", "Bob", "Joe", "Finn", "Billy", "Jake", "Ollie")
ANIMALS = (
    "dog",
    "cat",
    "bird",
    "bunny",
    "bear",
    "frog",
    "duck",
    "fish",
    "puppy",
    "kitten",
    "mouse",
    "owl",
    "fox",
    "lion",
)
THINGS = (
    "ball",
    "toy",
    "kite",
    "box",
    "hat",
    "car",
    "boat",
    "cake",
    "flower",
    "book",
    "rock",
    "apple",
    "truck",
    "doll",
    "shell",
    "drum",
)
PLACES = ("park", "garden", "forest", "house", "beach", "school", "pond", "farm", "yard", "store", "town", "hill")
ADJECTIVES = (
    "big",
    "little",
    "red",
    "blue",
    "happy",
    "shiny",
    "soft",
    "brave",
    "kind",
    "funny",
    "tall",
    "old",
    "pretty",
    "small",
)
FEELINGS = ("happy", "sad", "scared", "proud", "excited", "sorry", "angry", "surprised", "tired", "curious")
PLAYS = ("play", "run", "jump", "sing", "dance", "draw", "swim", "read", "build", "hide")
DID = ("played", "ran", "jumped", "sang", "danced", "laughed", "looked", "walked", "shared", "helped")
LESSONS = (
    "sharing is good",
    "it is important to be kind",
    "friends help each other",
    "it is good to say sorry",
    "being brave is not easy",
)

# A long tail of invented words, so that a BPE trained on the text learns
# thousands of merges as it does on TinyStories (whose vocabulary is small but
# not tiny): without it an 8,192-entry training stops near 730 entries. Made
# from syllables by their own fixed seed, so every --seed shares one lexicon.
_ONSETS = (
    "b",
    "bl",
    "br",
    "c",
    "ch",
    "cl",
    "cr",
    "d",
    "dr",
    "f",
    "fl",
    "fr",
    "g",
    "gl",
    "gr",
    "h",
    "j",
    "k",
    "l",
    "m",
    "n",
    "p",
    "pl",
    "pr",
    "qu",
    "r",
    "s",
    "sh",
    "sl",
    "sn",
    "sp",
    "st",
    "sw",
    "t",
    "th",
    "tr",
    "v",
    "w",
    "wh",
    "y",
    "z",
)
_NUCLEI = ("a", "e", "i", "o", "u", "ee", "oo", "ai", "ea", "ou", "ow", "ie", "oa", "ar", "er", "or", "ay", "y")
_CODAS = (
    "",
    "",
    "",
    "b",
    "ck",
    "d",
    "g",
    "ll",
    "m",
    "n",
    "nd",
    "ng",
    "nk",
    "p",
    "r",
    "sh",
    "ss",
    "st",
    "t",
    "th",
    "x",
    "zz",
)


def _invent(count: int, seed: int) -> tuple[str, ...]:
    rng = random.Random(seed)
    words: dict[str, None] = {}  # insertion-ordered set: the same order on every machine
    while len(words) < count:
        syllables = rng.choice((1, 2, 2, 3))
        words["".join(rng.choice(_ONSETS) + rng.choice(_NUCLEI) + rng.choice(_CODAS) for _ in range(syllables))] = None
    return tuple(words)


_LEXICON = _invent(6000, seed=20240520)
RARE_NAMES = tuple(w.capitalize() for w in _LEXICON[:1000])
RARE_ANIMALS, RARE_THINGS, RARE_PLACES = _LEXICON[1000:2000], _LEXICON[2000:4000], _LEXICON[4000:5000]
RARE_ADJECTIVES = _LEXICON[5000:]
RARE_SHARE = 0.2  # how often a word comes from the long tail


class StoryMaker:
    """Stories from sentence templates; every choice comes from one seeded ``random.Random``."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def word(self, common: tuple[str, ...], rare: tuple[str, ...]) -> str:
        """Mostly a common word; sometimes one of the long tail, the first ones far more often (Zipf-like)."""
        if self.rng.random() < RARE_SHARE:
            return rare[int(len(rare) * self.rng.random() ** 3)]
        return self.rng.choice(common)

    def character(self) -> tuple[str, str, str, str]:
        """A name with its kind and pronouns (subject, possessive)."""
        if self.rng.random() < 0.5:
            return self.word(GIRLS, RARE_NAMES), "girl", "she", "her"
        return self.word(BOYS, RARE_NAMES), "boy", "he", "his"

    def story(self) -> str:
        c = self.rng.choice
        name, kind, he, his = self.character()
        friend = self.word(GIRLS + BOYS, RARE_NAMES)
        while friend == name:
            friend = self.word(GIRLS + BOYS, RARE_NAMES)
        thing, place, animal = (
            self.word(THINGS, RARE_THINGS),
            self.word(PLACES, RARE_PLACES),
            self.word(ANIMALS, RARE_ANIMALS),
        )
        opening = c(
            (
                f"Once upon a time, there was a {self.word(ADJECTIVES, RARE_ADJECTIVES)} "
                f"{c((kind, animal))} named {name}.",
                f"One day, {name} went to the {place} with {his} mom.",
                f"{name} was a {self.word(ADJECTIVES, RARE_ADJECTIVES)} {animal} who lived near the {place}.",
                f"Once upon a time, in a {self.word(ADJECTIVES, RARE_ADJECTIVES)} "
                f"{place}, there lived a child named {name}.",
            )
        )
        middle = [
            f"{he.capitalize()} liked to {c(PLAYS)} with {his} {self.word(ADJECTIVES, RARE_ADJECTIVES)} {thing}.",
            f"One day, {name} saw a {self.word(ADJECTIVES, RARE_ADJECTIVES)} "
            f"{self.word(THINGS, RARE_THINGS)} in the {place}.",
            f'"Can I {c(PLAYS)} with your {thing}?" asked {friend}.',
            f'"Yes, you can!" said {name}. {he.capitalize()} felt {c(FEELINGS)}.',
            f"{name} and {friend} {c(DID)} together all day.",
            f"Then a {self.word(ADJECTIVES, RARE_ADJECTIVES)} "
            f"{self.word(ANIMALS, RARE_ANIMALS)} came and took the {thing}.",
            f"{name} felt {c(FEELINGS)}. {he.capitalize()} did not know what to do.",
            f'"Do not be {c(FEELINGS)}," said {friend}. "We can find it."',
            f"They looked under the tree and behind the {self.word(THINGS, RARE_THINGS)}.",
            f"At last, they found the {thing} near the {self.word(PLACES, RARE_PLACES)}.",
        ]
        self.rng.shuffle(middle)
        sentences = [opening, *middle[: self.rng.randint(3, len(middle))]]
        sentences.append(
            c(
                (
                    f"From that day on, {name} and {friend} were best friends.",
                    f"{name} learned that {c(LESSONS)}.",
                    f"{name} smiled and went home. The end.",
                )
            )
        )
        # Paragraphs of one to four sentences, separated by a blank line as in TinyStories V2.
        paragraphs, i = [], 0
        while i < len(sentences):
            step = self.rng.randint(1, 4)
            paragraphs.append(" ".join(sentences[i : i + step]))
            i += step
        return "\n\n".join(paragraphs)

    def delimiter(self) -> str:
        """The delimiter line; blank lines sometimes follow it (the TinyStories rules)."""
        return "\n" + DELIMITER + "\n" + "\n" * self.rng.choice((0, 0, 0, 1, 2))


def make_text(megabytes: float, seed: int, truncate_first: bool = False):
    """Yield pieces of the file (stories and delimiter lines) until ``megabytes`` * 1e6 bytes are reached."""
    maker = StoryMaker(seed)
    target = int(megabytes * 1_000_000)
    written = 0
    first = True
    while written < target:
        story = maker.story()
        if first and truncate_first:
            story = story[story.index(" ", len(story) // 2) + 1 :]
        first = False
        piece = story + maker.delimiter()
        written += len(piece.encode("utf-8"))
        yield piece


def write_file(path: Path, megabytes: float, seed: int, truncate_first: bool = False) -> int:
    """Write the file (to a temporary name, then rename) and return its size in bytes."""
    tmp = path.with_name(f".{path.name}.tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(tmp, "w", encoding="utf-8", newline="\n") as file:
        buffer: list[str] = []
        for piece in make_text(megabytes, seed, truncate_first):
            buffer.append(piece)
            if len(buffer) >= 4096:
                file.write("".join(buffer))
                buffer.clear()
        file.write("".join(buffer))
    tmp.replace(path)
    return path.stat().st_size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, required=True, help="size to reach, in MB (1,000,000 bytes)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--truncate-first", action="store_true", help="start in the middle of the first story")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    size = write_file(args.out, args.mb, args.seed, args.truncate_first)
    print(f"{args.out}: {size:,} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
