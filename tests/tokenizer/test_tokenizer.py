"""Tokenizer identity, separators, and deterministic BPE training (the TinyStories rules)."""

from __future__ import annotations

import hashlib
import json

import pytest
from release_fixtures import stories, write_corpus
from tokenizers import Tokenizer

from hf_tokbin.cli import main
from hf_tokbin.errors import TokenizerError
from hf_tokbin.formats.run_config import BYTE_DESCRIPTION
from hf_tokbin.tokenizer.resolve import resolve_tokenizer
from hf_tokbin.tokenizer.train import sample_texts, train_bpe


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("tok") / "tiny"
    train_bpe(stories(300, seed=1), 400, out)
    return out


def test_byte_tokenizer_identity():
    info = resolve_tokenizer("byte")
    assert (info.tokenizer_id, info.vocab_size, info.doc_sep_id, info.path) == ("byte", 256, None, None)
    assert info.sha256 == hashlib.sha256(BYTE_DESCRIPTION.encode()).hexdigest()
    assert resolve_tokenizer("byte", doc_sep_id=10).doc_sep_id == 10
    with pytest.raises(TokenizerError, match="valid id"):
        resolve_tokenizer("byte", doc_sep_id=256)


def test_folder_file_and_separator_sources(trained, tmp_path):
    by_folder = resolve_tokenizer(str(trained))
    by_file = resolve_tokenizer(str(trained / "tokenizer.json"))
    assert by_folder == by_file
    assert by_folder.tokenizer_id == "tiny" and by_folder.vocab_size == 400
    assert by_folder.doc_sep_id == Tokenizer.from_file(str(trained / "tokenizer.json")).token_to_id("<|endoftext|>")
    assert by_folder.sha256 == hashlib.sha256((trained / "tokenizer.json").read_bytes()).hexdigest()
    given = resolve_tokenizer(str(trained), tokenizer_id="mine", doc_sep_id=7)
    assert (given.doc_sep_id, given.doc_sep.source) == (7, "--doc-sep")
    # run_config.json records the separator once, on its own: not in the tokenizer record.
    assert "path" not in by_folder.to_record() and "doc_sep_id" not in by_folder.to_record()


@pytest.mark.parametrize("name", [".", "tokenizer.json"])
def test_a_tokenizer_in_the_working_folder_is_named_after_that_folder(trained, monkeypatch, name):
    monkeypatch.chdir(trained)
    info = resolve_tokenizer(name)
    assert info.tokenizer_id == "tiny" and info == resolve_tokenizer(str(trained))


def test_a_symlinked_tokenizer_is_named_after_the_folder_of_the_link(trained, tmp_path):
    # The layout of a Hub cache snapshot: snapshots/<commit>/tokenizer.json -> ../../blobs/<sha>.
    (tmp_path / "blobs").mkdir()
    (tmp_path / "blobs" / "abc").write_bytes((trained / "tokenizer.json").read_bytes())
    (tmp_path / "snapshot").mkdir()
    (tmp_path / "snapshot" / "tokenizer.json").symlink_to(tmp_path / "blobs" / "abc")
    assert resolve_tokenizer(str(tmp_path / "snapshot")).tokenizer_id == "snapshot"


def test_generation_config_rules(trained, tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "tokenizer.json").write_bytes((trained / "tokenizer.json").read_bytes())
    assert resolve_tokenizer(str(folder)).doc_sep_id is None
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": [3, 3]}))
    assert resolve_tokenizer(str(folder)).doc_sep_id == 3
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": [3, 4]}))
    with pytest.raises(TokenizerError, match="several ids"):
        resolve_tokenizer(str(folder))
    assert resolve_tokenizer(str(folder), doc_sep_id=4).doc_sep_id == 4
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": []}))
    with pytest.raises(TokenizerError, match="eos_token_id is an empty list"):
        resolve_tokenizer(str(folder))
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 999999}))
    with pytest.raises(TokenizerError, match="valid id"):
        resolve_tokenizer(str(folder))


def test_bad_tokenizers_are_named(tmp_path):
    with pytest.raises(TokenizerError, match="no tokenizer.json"):
        resolve_tokenizer(str(tmp_path))
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(TokenizerError, match="cannot load tokenizer.json") as info:
        resolve_tokenizer(str(tmp_path))
    assert str(tmp_path / "tokenizer.json") in str(info.value)
    with pytest.raises(TokenizerError, match="not found"):
        resolve_tokenizer("./nowhere")


def test_training_is_deterministic_and_puts_the_separator_first(tmp_path):
    texts = stories(300, seed=2)
    train_bpe(texts, 410, tmp_path / "a")
    train_bpe(texts, 410, tmp_path / "b")
    assert (tmp_path / "a/tokenizer.json").read_bytes() == (tmp_path / "b/tokenizer.json").read_bytes()
    tokenizer = Tokenizer.from_file(str(tmp_path / "a/tokenizer.json"))
    assert tokenizer.get_vocab_size() == 410 and tokenizer.token_to_id("<|endoftext|>") == 0
    # GPT-2's convention: one special token is both BOS and EOS.
    assert json.loads((tmp_path / "a/generation_config.json").read_text()) == {"bos_token_id": 0, "eos_token_id": 0}
    assert json.loads((tmp_path / "a/tokenizer_config.json").read_text())["eos_token"] == "<|endoftext|>"
    text = "Lily saw 42 dogs! 日本 😀"
    assert tokenizer.decode(tokenizer.encode(text).ids) == text


def test_sample_is_the_first_n_characters():
    texts = ["abcde", "fgh", "ijklmn"]
    assert list(sample_texts(texts, 7)) == ["abcde", "fg"]
    assert "".join(sample_texts(texts, 100)) == "abcdefghijklmn"
    assert list(sample_texts(texts, 0)) == []


def test_cli_tokenizer_train_uses_the_train_split_only(tmp_path, capsys):
    corpus = write_corpus(tmp_path / "c", [("train", stories(200, seed=3)), ("validation", ["zzzzzzzz qqqqqqq " * 50])])
    assert (
        main(
            [
                "tokenizer",
                "train",
                "--corpus",
                str(corpus),
                "--vocab-size",
                "400",
                "--sample-chars",
                "5000",
                "--out",
                str(tmp_path / "t"),
            ]
        )
        == 0
    )
    assert "400" in capsys.readouterr().out
    vocab = Tokenizer.from_file(str(tmp_path / "t/tokenizer.json")).get_vocab()
    assert not any("zz" in token or "qq" in token for token in vocab)


def test_the_build_encodes_with_the_tokenizer_resolve_loaded_from_the_recorded_bytes(tmp_path):
    # One load per build: the encoder takes the object resolve made from the bytes it hashed, once.
    from hf_tokbin.tokenizer.encoder import encoder_for
    from hf_tokbin.tokenizer.resolve import resolve_tokenizer, take_resolved_tokenizer

    folder = tmp_path / "tok"
    train_bpe(["one two three four five six seven"] * 20, 300, folder)
    info = resolve_tokenizer(str(folder))
    want = encoder_for(info.path, "never").encode_batch(["one two"])  # loaded from the file: no digest given
    (folder / "tokenizer.json").write_text("{}")  # changed after resolve: the build still encodes what it recorded
    encoder = encoder_for(info.path, "never", sha256=info.sha256)
    got = encoder.encode_batch(["one two"])
    assert got[0].tolist() == want[0].tolist() and encoder.vocab_size == info.vocab_size
    assert take_resolved_tokenizer(info.sha256) is None  # taken once


@pytest.mark.parametrize("model", ["bpe_with_gap", "unigram", "wordlevel"])
def test_the_id_space_read_from_the_json_is_the_one_tokenizers_counts(tmp_path, model):
    # resolve reads the largest id from the parsed file rather than asking tokenizers for its whole vocabulary.
    from tokenizers import models

    from hf_tokbin.tokenizer.resolve import vocab_size_of

    if model == "bpe_with_gap":
        tokenizer = Tokenizer(models.BPE({"a": 0, "b": 1, "ab": 70_000}, [("a", "b")]))
    elif model == "unigram":
        tokenizer = Tokenizer(models.Unigram([("a", -1.0), ("b", -2.0), ("ab", -0.5)]))
    else:
        tokenizer = Tokenizer(models.WordLevel({"a": 3, "b": 9}, unk_token="a"))
    tokenizer.add_special_tokens(["<|end|>"])
    (tmp_path / "tokenizer.json").write_text(tokenizer.to_str(), encoding="utf-8")
    info = resolve_tokenizer(str(tmp_path))
    assert info.vocab_size == vocab_size_of(tokenizer)
    assert info.vocab_size == {"bpe_with_gap": 70_001, "unigram": 4, "wordlevel": 10}[model]


def test_a_worker_loading_tokenizer_json_again_refuses_other_bytes_than_the_recorded_ones(tmp_path):
    # A Ray worker has no resolved tokenizer handed over: it loads the file at the driver's path, and a node whose
    # copy differs would encode other ids into a release that records the driver's digest.
    from hf_tokbin.tokenizer.encoder import encoder_for

    folder = tmp_path / "tok"
    train_bpe(["one two three four five six seven"] * 20, 300, folder)
    info = resolve_tokenizer(str(folder))
    encoder_for(info.path, "never", sha256=info.sha256)  # the driver's: takes the handed-over tokenizer
    same = encoder_for(info.path, "never", sha256=info.sha256)  # a worker's: loads the same bytes again
    assert same.vocab_size == info.vocab_size
    config = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = config["model"]["vocab"]
    first, second = sorted(vocab)[:2]
    vocab[first], vocab[second] = vocab[second], vocab[first]  # the same size, other ids
    (folder / "tokenizer.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(TokenizerError, match="SHA-256") as error:
        encoder_for(info.path, "never", sha256=info.sha256)
    assert str(folder / "tokenizer.json") in str(error.value) and info.sha256 in str(error.value)
