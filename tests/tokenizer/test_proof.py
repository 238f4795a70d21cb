"""The pieces of the per-code-point proof, each against what it stands for."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tokenizers import normalizers

from hf_tokbin.tokenizer import proof
from hf_tokbin.tokenizer.encoder import _trie_pattern, non_ascii_code_points

O200K = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


@pytest.mark.parametrize(
    "pattern, classes",
    [
        (O200K, [r"\p{L}", r"\p{Ll}", r"\p{Lm}", r"\p{Lo}", r"\p{Lt}", r"\p{Lu}", r"\p{M}", r"\p{N}", r"\s"]),
        # DeepSeek V3's: literal Han and kana ranges (the characters themselves, as its tokenizer.json holds them).
        (
            "[一-龥\u3040-ゟ]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+",
            ["[一-龥\u3040-ゟ]", r"\p{L}", r"\p{M}", r"\p{P}", r"\p{S}"],
        ),
        (r"[\]a-z]+|\S", [r"\s"]),
    ],
)
def test_the_classes_a_pattern_reads(pattern, classes):
    assert proof.pattern_classes(pattern) == (sorted(classes), None)


@pytest.mark.parametrize(
    "pattern, why",
    [
        (r"\p{Greek}+", r"a pattern using \p{Greek}"),
        (r"\d+", r"a pattern using \d"),
        (r"\w+", r"a pattern using \w"),
        (r"[\u3040-\u309f]+", r"a pattern using \u"),
        ("。+|a", "a non-ASCII literal outside a bracket"),
        (r"[a[:alpha:]]", "a nested bracket"),
        (r"[abc", "an unclosed bracket"),
    ],
)
def test_a_pattern_the_proof_cannot_read_is_refused(pattern, why):
    classes, reason = proof.pattern_classes(pattern)
    assert classes == [] and why in reason


def test_nfc_inert_text_is_its_own_nfc_in_tokenizers():
    # Every inert code point of the universe, each after a letter and after itself: tokenizers' NFC changes nothing.
    universe = proof.code_point_universe()
    inert = universe[proof.nfc_inert(universe)]
    assert 140_000 < inert.size < universe.size
    text = "".join(f"a{c}{c}" for c in map(chr, inert.tolist()))
    assert normalizers.NFC().normalize_str(text) == text
    # And what is not inert is what NFC may touch: a combining mark, a composition's second, a singleton.
    assert not proof.nfc_inert(np.array([0x0301, 0x0BBE, 0x1161, 0x212B, 0x0344])).any()
    assert proof.nfc_inert(np.array([ord("é"), ord("가"), ord("日"), ord("A")])).all()


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_non_ascii_code_points_read_from_utf8_bytes(text):
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    places, codes = non_ascii_code_points(data)
    want = [
        (i, ord(c))
        for i, c in zip(np.cumsum([0] + [len(c.encode()) for c in text])[:-1].tolist(), text)
        if ord(c) >= 128
    ]
    assert list(zip(places.tolist(), codes.tolist())) == want


_WORDS = st.lists(st.text(alphabet="<>ab\né", min_size=1, max_size=4), min_size=1, max_size=8, unique=True)


@given(words=_WORDS, text=st.text(alphabet="<>abc\né", max_size=40))
def test_the_trie_matches_as_longest_first_alternation(words, text):
    trie = re.compile(_trie_pattern(sorted(words)))
    alternation = re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)))
    assert [m.span() for m in trie.finditer(text)] == [m.span() for m in alternation.finditer(text)]


def test_boundary_tokenizers_show_a_boundary_as_a_merge():
    from tokenizers import Tokenizer

    gpt2_split = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    left = Tokenizer.from_str(proof.boundary_tokenizer_json(gpt2_split, "left", "日"))
    start = proof.boundary_merge_start("日")
    # GPT-2's pattern keeps letters together and puts a digit apart: the merge token shows which.
    assert any(i >= start for i in left.encode("日本", add_special_tokens=False).ids)
    assert not any(i >= start for i in left.encode("日1", add_special_tokens=False).ids)
