"""Flags that do not apply are refused, never recorded as if they did."""

from __future__ import annotations

import pytest
from release_fixtures import stories, write_corpus

from hf_tokbin.cli import main
from hf_tokbin.errors import TokenizerError
from hf_tokbin.tokenizer import resolve_tokenizer, train_bpe

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def local_tokenizer(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tok") / "tok"
    train_bpe(stories(20, seed=3), 300, folder)
    return folder


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("c") / "corpus", [("train", stories(5, seed=4))])


@pytest.mark.parametrize("option", [{"revision": COMMIT}, {"subfolder": "sub"}])
@pytest.mark.parametrize("kind", ["byte", "local"])
def test_hub_only_tokenizer_options_are_refused_for_a_local_or_byte_tokenizer(local_tokenizer, kind, option):
    name = "byte" if kind == "byte" else str(local_tokenizer)
    with pytest.raises(TokenizerError, match="Hub tokenizer"):
        resolve_tokenizer(name, **option)


@pytest.mark.parametrize(
    "flag", [["--tokenizer-revision", COMMIT], ["--tokenizer-subfolder", "sub"], ["--corpus-revision", COMMIT]]
)
def test_build_refuses_them_before_any_work(corpus, local_tokenizer, tmp_path, capsys, flag):
    out = tmp_path / "release"
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                str(local_tokenizer),
                "--out",
                str(out),
                "--quiet",
                *flag,
            ]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert flag[0] in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_without_them_the_build_runs(corpus, local_tokenizer, tmp_path):
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                str(local_tokenizer),
                "--out",
                str(tmp_path / "release"),
                "--quiet",
            ]
        )
        == 0
    )
