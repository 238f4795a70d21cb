"""The fast path never changes an id, on any document: the per-code-point proof and per-document routing.

gigatoken's Unicode tables are newer than those ``tokenizers`` uses: U+A7CE
(Unicode 16) is a letter to gigatoken, other punctuation to ``tokenizers``, so
``"\\ua7ce's"`` splits differently. A sample of the corpus cannot see that; the
check classifies every code point instead, and documents holding one it could
not prove go to ``tokenizers``.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import pytest
from encoder_cases import MIXED_SCRIPT_TEXTS, NEW_DIGIT, NEW_LETTER
from hypothesis import HealthCheck, given, settings
from release_fixtures import write_corpus
from tokenizer_files import gpt2_tokenizer_json, llama3_tokenizer_json, story_texts
from tokenizers import Tokenizer

from hf_tokbin.pipeline import build, plan_build
from hf_tokbin.tokenizer import encoder as encoder_module
from hf_tokbin.tokenizer import proof as proof_module
from hf_tokbin.tokenizer.encoder import DocumentEncoder, prove_code_points
from hf_tokbin.tokenizer.resolve import resolve_tokenizer

pytestmark = pytest.mark.slow  # real tokenizers on both paths

TOKENIZERS = {"gpt2": gpt2_tokenizer_json, "llama3": llama3_tokenizer_json}


@functools.cache
def _reference(path) -> Tokenizer:
    return Tokenizer.from_file(str(path))


def _definition(path, texts: list[str], parse_special: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """tokenizers' ids, one encode per text: the definition."""
    tokenizer = _reference(path)
    tokenizer.encode_special_tokens = not parse_special
    per_text = [tokenizer.encode(t, add_special_tokens=False).ids for t in texts]
    flat = [i for ids in per_text for i in ids]
    return np.asarray(flat, dtype=np.uint32), np.asarray([len(ids) for ids in per_text], dtype=np.int64)


def _json(name: str) -> Path:
    return TOKENIZERS[name]() / "tokenizer.json"


@pytest.fixture(scope="module")
def checked():
    """One checked fast-path encoder per real tokenizer (the check runs once, as in a build)."""
    encoders = {}
    for name in TOKENIZERS:
        encoder = DocumentEncoder.from_tokenizer_json(_json(name))
        assert encoder.check_fast_path(story_texts(5)).used
        encoders[name] = encoder
    return encoders


def test_the_engines_really_differ_on_these_characters():
    # The premise of the tests below: without routing, gigatoken changes ids on new characters.
    import gigatoken

    for name in TOKENIZERS:
        engine = gigatoken.Tokenizer.from_json(_json(name).read_text())
        for char in (NEW_LETTER, NEW_DIGIT):
            text = f"Lily saw {char}'s toy"
            assert engine.encode(text).tolist() != _definition(_json(name), [text])[0].tolist()


def test_the_class_check_finds_what_ids_alone_would_miss(checked):
    # Widened past the universe, the new letter is unproven by its pieces alone: in the one-character probes
    # the difference is invisible in ids (no merge spans the boundary), the boundary tokenizers show it.
    encoder = checked["llama3"]
    tokenizer, engine = encoder.tokenizer, encoder._load_gigatoken()
    universe = np.array(
        [ord(c) for c in ("A", "é", "1", " ", "!", NEW_LETTER, NEW_DIGIT, "\u0301", "日")], dtype=np.int64
    )
    assert prove_code_points(tokenizer, engine, universe).tolist() == [False] * 5 + [True, True, False, False]
    assert (
        encoder_module._encode_tokenizers(tokenizer, [f"a{NEW_LETTER}"])[0].tolist()
        == encoder_module._encode_with_gigatoken(engine, [f"a{NEW_LETTER}"])[0].tolist()
    )
    pre_tokenizer = encoder._components()["pre_tokenizer"]
    proof = encoder_module._code_point_proof(tokenizer, engine, list(encoder._probes), pre_tokenizer, nfc=False)
    assert proof._unproven_in_universe(universe).tolist() == [False] * 5 + [True, True, False, False]


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
def test_a_new_character_in_document_150_gives_the_same_ids_on_both_paths(checked, name):
    texts = story_texts(200, seed=3)
    texts[149] = f"{texts[149]} {NEW_LETTER}'s {NEW_DIGIT}'s end."
    fast, slow = checked[name], DocumentEncoder.from_tokenizer_json(_json(name), fast="never")
    slow.check_fast_path()
    want = _definition(_json(name), texts)
    for batch_size in (1000, 64, 7):
        got = [fast.encode_batch(texts[i : i + batch_size]) for i in range(0, len(texts), batch_size)]
        fast_ids, fast_lengths = np.concatenate([g[0] for g in got]), np.concatenate([g[1] for g in got])
        assert np.array_equal(fast_lengths, want[1]) and np.array_equal(fast_ids, want[0])
    slow_ids, slow_lengths = slow.encode_batch(texts)
    assert np.array_equal(slow_ids, want[0]) and np.array_equal(slow_lengths, want[1])
    assert fast._route(texts) == [149]  # only that document left the fast path


def test_a_new_character_the_proof_covers_is_routed_by_the_proof_not_the_universe(checked, monkeypatch):
    # Widen the universe to hold U+A7CE: the class check itself must leave it unproven.
    real_in_universe = proof_module.in_universe
    new = np.array([ord(NEW_LETTER), ord(NEW_DIGIT)])
    monkeypatch.setattr(proof_module, "in_universe", lambda cps: real_in_universe(cps) | np.isin(cps, new))
    encoder = DocumentEncoder.from_tokenizer_json(_json("llama3"))
    assert encoder.check_fast_path(story_texts(3)).used
    texts = ["plain story", f"x {NEW_LETTER}'s", f"{NEW_DIGIT}'s 12", "Lily"]
    assert encoder._route(texts) == [1, 2]
    assert encoder._router.unproven >= 2  # decided when the batch held them
    got, want = encoder.encode_batch(texts), _definition(_json("llama3"), texts)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_build_with_a_new_character_in_document_150_is_byte_identical_fast_and_never(tmp_path):
    texts = story_texts(200, seed=4)
    texts[149] = f"Ben said {NEW_LETTER}'s name. {NEW_DIGIT}'s too."
    corpus = write_corpus(tmp_path / "corpus", [("train", texts), ("validation", story_texts(3, seed=5))])
    info = resolve_tokenizer(str(TOKENIZERS["llama3"]()))
    outputs = {}
    for fast in ("auto", "never"):
        summary = build(plan_build(corpus, info, tmp_path / fast, fast=fast), progress=False)
        assert summary.encoder.startswith("gigatoken " if fast == "auto" else "tokenizers ")
        # The summary says which engine encoded how many documents: only document 150 left the fast path.
        assert summary.documents_by_engine == (
            {"gigatoken": 202, "tokenizers": 1} if fast == "auto" else {"tokenizers": 203}
        )
        assert (
            "documents encoded by " in summary.table()
            and summary.record()["documents_by_engine"] == summary.documents_by_engine
        )
        root = tmp_path / fast
        outputs[fast] = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.bin"))}
    assert outputs["auto"] and outputs["auto"] == outputs["never"]
    from hf_tokbin.formats import megatron

    pair = megatron.MegatronPair(tmp_path / "auto" / "shards" / "train" / "part-000000.bin")
    want_ids, want_lengths = _definition(_json("llama3"), texts)
    doc = pair[149]
    start = int(want_lengths[:149].sum())
    assert doc[:-1].tolist() == want_ids[start : start + want_lengths[149]].tolist()


# ------------------------------------------------------------ randomized


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=MIXED_SCRIPT_TEXTS)
def test_random_mixed_script_texts_give_tokenizers_ids(checked, name, texts):
    got, want = checked[name].encode_batch(texts), _definition(_json(name), texts)
    assert got[1].tolist() == want[1].tolist()
    assert got[0].tolist() == want[0].tolist()


# ------------------------------------------------------------ special-token text is ordinary text


SPECIAL_TEXTS = [
    "Hello <|endoftext|> world",
    "x<|end_of_text|>y <|begin_of_text|>z",
    "no specials here",
    "<|endoftext|>",
]


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
@pytest.mark.parametrize("fast", ["auto", "never"])
def test_special_token_text_is_ordinary_text_by_default(name, fast):
    encoder = DocumentEncoder.from_tokenizer_json(_json(name), fast=fast)
    assert encoder.check_fast_path(SPECIAL_TEXTS).used == (fast == "auto")
    ids, lengths = encoder.encode_batch(SPECIAL_TEXTS)
    want_ids, want_lengths = _definition(_json(name), SPECIAL_TEXTS)
    assert ids.tolist() == want_ids.tolist() and lengths.tolist() == want_lengths.tolist()
    specials = {
        t.content: i for i, t in Tokenizer.from_file(str(_json(name))).get_added_tokens_decoder().items() if t.special
    }
    assert not set(ids.tolist()) & set(specials.values())  # no 50256, 128000 or 128001 anywhere


def test_gpt2_ordinary_text_is_encode_ordinary():
    # GPT-2's encode_ordinary is the BPE of the text with no special token at all:
    # the same tokenizer without its added token gives it.
    import json

    config = json.loads(_json("gpt2").read_text())
    config["added_tokens"] = []
    ordinary = Tokenizer.from_str(json.dumps(config))
    want = [ordinary.encode(t, add_special_tokens=False).ids for t in SPECIAL_TEXTS]
    assert want[0] == [15496, 1279, 91, 437, 1659, 5239, 91, 29, 995]
    for fast in ("auto", "never"):
        encoder = DocumentEncoder.from_tokenizer_json(_json("gpt2"), fast=fast)
        encoder.check_fast_path()
        ids, lengths = encoder.encode_batch(SPECIAL_TEXTS)
        assert np.split(ids, np.cumsum(lengths)[:-1])[0].tolist() == want[0]
        assert ids.tolist() == [i for row in want for i in row]


@pytest.mark.parametrize("name, expected", [("gpt2", {50256}), ("llama3", {128000, 128001})])
@pytest.mark.parametrize("fast", ["auto", "never"])
def test_parse_special_gives_the_parsed_ids(name, expected, fast):
    encoder = DocumentEncoder.from_tokenizer_json(_json(name), fast=fast, parse_special=True)
    encoder.check_fast_path(story_texts(3))
    ids, lengths = encoder.encode_batch(SPECIAL_TEXTS)
    want_ids, want_lengths = _definition(_json(name), SPECIAL_TEXTS, parse_special=True)
    assert ids.tolist() == want_ids.tolist() and lengths.tolist() == want_lengths.tolist()
    assert expected <= set(ids.tolist())


def test_parse_special_survives_pickling():
    import pickle

    encoder = DocumentEncoder.from_tokenizer_json(_json("gpt2"), parse_special=True)
    encoder.check_fast_path()
    copy = pickle.loads(pickle.dumps(encoder))
    assert copy.parse_special and 50256 in copy.encode_batch(["a<|endoftext|>b"])[0].tolist()
    plain = pickle.loads(pickle.dumps(DocumentEncoder.from_tokenizer_json(_json("gpt2"), fast="never")))
    assert 50256 not in plain.encode_batch(["a<|endoftext|>b"])[0].tolist()


def test_encoder_for_takes_parse_special():
    from hf_tokbin.tokenizer.encoder import encoder_for

    assert encoder_for(_json("gpt2"), fast="never", parse_special=True).parse_special
    assert not encoder_for(_json("gpt2"), fast="never").parse_special


def test_the_check_runs_once_per_build_and_each_code_point_is_proven_once_per_process(tmp_path, monkeypatch):
    # Every call, in this process or a forked worker, appends its pid and what it proved to the file.
    calls = tmp_path / "calls.txt"
    real_prove, real_check = DocumentEncoder._prove, DocumentEncoder.check_fast_path

    def counted_prove(self, code_points):
        with open(calls, "a") as file:
            file.write(f"prove {os.getpid()} {' '.join(map(str, code_points))}\n")
        return real_prove(self, code_points)

    def counted_check(self, *args, **kwargs):
        with open(calls, "a") as file:
            file.write(f"check {os.getpid()}\n")
        return real_check(self, *args, **kwargs)

    monkeypatch.setattr(DocumentEncoder, "_prove", counted_prove)
    monkeypatch.setattr(DocumentEncoder, "check_fast_path", counted_check)
    shards = [("train", story_texts(40, seed=s) + ["caf\u00e9 \u00e9t\u00e9"]) for s in range(3)] + [
        ("validation", story_texts(5, seed=9))
    ]
    corpus = write_corpus(tmp_path / "corpus", shards)
    summary = build(
        plan_build(corpus, resolve_tokenizer(str(TOKENIZERS["gpt2"]())), tmp_path / "r", num_proc=2, batch_size=8),
        progress=False,
    )
    assert summary.encoder.startswith("gigatoken ") and summary.parts_built == 4
    lines = [line.split(" ", 2) for line in calls.read_text().splitlines()]
    assert [pid for kind, pid, *_ in lines if kind == "check"] == [str(os.getpid())]
    proved = {}
    for kind, pid, *code_points in lines:
        if kind == "prove":
            for c in code_points[0].split() if code_points else []:
                assert (pid, c) not in proved  # never twice in one process
                proved[pid, c] = True
    assert any(c == str(ord("\u00e9")) for _, c in proved)


def _forget_proven(cache: Path, code_point: int) -> int:
    """Rewrite every record under ``cache`` that lists unproven ranges so that ``code_point`` is no longer among
    them.
    """
    import json

    spoiled = 0
    for path in cache.rglob("*.json"):
        record = json.loads(path.read_text())
        if isinstance(record, dict) and isinstance(record.get("unproven"), list):
            record["unproven"] = [[lo, hi] for lo, hi in record["unproven"] if hi < code_point or lo > code_point]
            path.write_text(json.dumps(record))
            spoiled += 1
    return spoiled


def test_no_state_outside_the_inputs_can_change_an_id(tmp_path, monkeypatch):
    # A cached proof that wrongly marks U+A7CE proven must not send a document holding it to gigatoken.
    cache = tmp_path / "cache"
    monkeypatch.setenv("HF_TOKBIN_CACHE", str(cache))
    info = resolve_tokenizer(str(TOKENIZERS["llama3"]()))
    first = write_corpus(
        tmp_path / "first", [("train", story_texts(20, seed=6)), ("validation", story_texts(3, seed=5))]
    )
    build(plan_build(first, info, tmp_path / "r1"), progress=False)
    _forget_proven(cache, ord(NEW_LETTER))  # whatever the build kept, it now vouches for U+A7CE
    texts = story_texts(200, seed=4)
    texts[149] = f"Ben said {NEW_LETTER}'s name."  # past the sample the check encodes
    corpus = write_corpus(tmp_path / "corpus", [("train", texts), ("validation", story_texts(3, seed=5))])
    build(plan_build(corpus, info, tmp_path / "r2"), progress=False)
    from hf_tokbin.formats import megatron

    pair = megatron.MegatronPair(tmp_path / "r2" / "shards" / "train" / "part-000000.bin")
    want_ids, want_lengths = _definition(_json("llama3"), texts)
    start = int(want_lengths[:149].sum())
    assert pair[149][:-1].tolist() == want_ids[start : start + want_lengths[149]].tolist()
    assert not (cache / "fast-path").exists()  # nothing a later build could read is kept
