"""Write a TinyStories-like text file of a requested size, deterministically.

The output follows the layout of the TinyStories V2 files (seed 002): stories
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
ANIMALS = ("dog", "cat", "bird", "bunny", "bear", "frog", "duck", "fish", "puppy", "kitten", "mouse", "owl", "fox", "lion")
THINGS = ("ball", "toy", "kite", "box", "hat", "car", "boat", "cake", "flower", "book", "rock", "apple", "truck", "doll", "shell", "drum")
PLACES = ("park", "garden", "forest", "house", "beach", "school", "pond", "farm", "yard", "store", "town", "hill")
ADJECTIVES = ("big", "little", "red", "blue", "happy", "shiny", "soft", "brave", "kind", "funny", "tall", "old", "pretty", "small")
FEELINGS = ("happy", "sad", "scared", "proud", "excited", "sorry", "angry", "surprised", "tired", "curious")
PLAYS = ("play", "run", "jump", "sing", "dance", "draw", "swim", "read", "build", "hide")
DID = ("played", "ran", "jumped", "sang", "danced", "laughed", "looked", "walked", "shared", "helped")
LESSONS = ("sharing is good", "it is important to be kind", "friends help each other", "it is good to say sorry", "being brave is not easy")


class StoryMaker:
    """Stories from sentence templates; every choice comes from one seeded ``random.Random``."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def character(self) -> tuple[str, str, str, str]:
        """A name with its kind and pronouns (subject, possessive)."""
        if self.rng.random() < 0.5:
            return self.rng.choice(GIRLS), "girl", "she", "her"
        return self.rng.choice(BOYS), "boy", "he", "his"

    def story(self) -> str:
        c = self.rng.choice
        name, kind, he, his = self.character()
        friend = c(GIRLS + BOYS)
        while friend == name:
            friend = c(GIRLS + BOYS)
        thing, place, animal = c(THINGS), c(PLACES), c(ANIMALS)
        opening = c(
            (
                f"Once upon a time, there was a {c(ADJECTIVES)} {c((kind, animal))} named {name}.",
                f"One day, {name} went to the {place} with {his} mom.",
                f"{name} was a {c(ADJECTIVES)} {animal} who lived near the {place}.",
                f"Once upon a time, in a {c(ADJECTIVES)} {place}, there lived a child named {name}.",
            )
        )
        middle = [
            f"{he.capitalize()} liked to {c(PLAYS)} with {his} {c(ADJECTIVES)} {thing}.",
            f"One day, {name} saw a {c(ADJECTIVES)} {c(THINGS)} in the {place}.",
            f'"Can I {c(PLAYS)} with your {thing}?" asked {friend}.',
            f'"Yes, you can!" said {name}. {he.capitalize()} felt {c(FEELINGS)}.',
            f"{name} and {friend} {c(DID)} together all day.",
            f"Then a {c(ADJECTIVES)} {c(ANIMALS)} came and took the {thing}.",
            f"{name} felt {c(FEELINGS)}. {he.capitalize()} did not know what to do.",
            f'"Do not be {c(FEELINGS)}," said {friend}. "We can find it."',
            f"They looked under the tree and behind the {c(THINGS)}.",
            f"At last, they found the {thing} near the {c(PLACES)}.",
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
        """The delimiter line; blank lines sometimes follow it (seed 002)."""
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
