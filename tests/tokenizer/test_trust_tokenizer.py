"""``tokenizer train`` refuses options it cannot honour, in one line, before any work."""

from __future__ import annotations

import subprocess
import sys

import pytest
from release_fixtures import stories, write_corpus

from hf_tokbin.cli import main
from hf_tokbin.errors import TokenizerError
from hf_tokbin.tokenizer.train import MAX_TRAIN_VOCAB, train_bpe


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("c") / "corpus", [("train", stories(20, seed=1))])


def train(corpus, out, *flags):
    # A child process: tokenizers aborts the process (SIGABRT) on a vocabulary it cannot allocate.
    return subprocess.run(
        [sys.executable, "-m", "hf_tokbin", "tokenizer", "train", "--corpus", str(corpus), "--out", str(out), *flags],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("vocab_size", [str(2**32), str(2**31 - 1), str(MAX_TRAIN_VOCAB + 1)])
def test_a_vocab_size_beyond_the_bound_is_refused_in_one_line(corpus, tmp_path, vocab_size):
    result = train(corpus, tmp_path / "t", "--vocab-size", vocab_size)
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "--vocab-size" in result.stderr and f"{MAX_TRAIN_VOCAB:,}" in result.stderr
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("vocab_size", ["256", "0", "-5"])
def test_a_vocab_size_below_the_bytes_and_specials_is_refused(corpus, tmp_path, vocab_size, capsys):
    assert (
        main(["tokenizer", "train", "--corpus", str(corpus), "--out", str(tmp_path / "t"), "--vocab-size", vocab_size])
        == 1
    )
    assert "--vocab-size" in capsys.readouterr().err
    assert not (tmp_path / "t").exists()


def test_the_smallest_vocab_size_is_the_bytes_and_specials(corpus, tmp_path, capsys):
    assert (
        main(["tokenizer", "train", "--corpus", str(corpus), "--out", str(tmp_path / "t"), "--vocab-size", "257"]) == 0
    )
    with pytest.raises(TokenizerError, match="vocab"):
        train_bpe(["a b"], 257, tmp_path / "u", ("<|bos|>", "<|eos|>"))


@pytest.mark.parametrize("sample_chars", ["-1", "0"])
def test_a_non_positive_sample_is_refused(corpus, tmp_path, sample_chars, capsys):
    assert (
        main(
            [
                "tokenizer",
                "train",
                "--corpus",
                str(corpus),
                "--out",
                str(tmp_path / "t"),
                "--sample-chars",
                sample_chars,
            ]
        )
        == 1
    )
    assert "--sample-chars" in capsys.readouterr().err
    assert not (tmp_path / "t").exists()
