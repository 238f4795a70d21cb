"""hf-tokbin show / hf_tokbin.show: a document or a training window decoded, boundary tokens marked."""

from __future__ import annotations

from pathlib import Path

import datasets
import pytest
from tokenizer_files import gpt2_tokenizer_json, story_texts

import hf_tokbin
from hf_tokbin.cli import main
from hf_tokbin.errors import FormatError, TokenizerError
from hf_tokbin.readers.decode import document_bounds
from hf_tokbin.readers.views import LlmcSplit

TEXTS = story_texts(30)  # with "!" inside: the BOS id (0) as text is text


@pytest.fixture(scope="module")
def tok() -> Path:
    return gpt2_tokenizer_json()


@pytest.fixture(scope="module", params=["before", "after"])
def release(request, tok, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("rel") / "stories"
    hf_tokbin.build_release(
        datasets.Dataset.from_dict({"text": TEXTS}),
        tok,
        out,
        progress=False,
        shard_rows=12,
        llmc_separator=request.param,
        bos="!",
    )
    return out


@pytest.mark.parametrize("format", ["llmc", "megatron"])
def test_a_document_decodes_to_its_corpus_text(release, tok, format):
    for n in (0, 11, 12, 29):  # the first, the last of a file or pair, the first of the next, the last
        shown = hf_tokbin.show(release, doc=n, format=format, tokenizer=tok)
        assert shown.documents() == {n: TEXTS[n]} and "!" in "".join(TEXTS)
        assert [p.role for p in shown.pieces if p.role] in (["BOS", "EOD"], ["separator", "BOS"], ["BOS", "separator"])


@pytest.mark.parametrize("format", ["llmc", "megatron"])
def test_a_window_across_documents_shows_where_they_meet(release, tok, format):
    whole = hf_tokbin.show(release, doc=5, format=format, tokenizer=tok)
    start = whole.stop - 6  # six tokens before document 6 starts, and ten after
    shown = hf_tokbin.show(release, window=start, length=16, format=format, tokenizer=tok)
    texts = shown.documents()
    assert sorted(texts) == [5, 6]
    assert TEXTS[5].endswith(texts[5]) and texts[5] and TEXTS[6].startswith(texts[6]) and texts[6]
    rendered = shown.render()
    assert "── document 5 (continued) ──" in rendered and "\n── document 6 ──\n" in rendered
    assert "⟦BOS 0 '!'⟧" in rendered and ("⟦EOD 50256 '<|endoftext|>'⟧" in rendered) == (format == "megatron")


def test_the_command_prints_what_python_renders(release, tok, capsys):
    assert (
        main(["show", str(release), "--window", "40", "--len", "90", "--format", "llmc", "--tokenizer", str(tok)]) == 0
    )
    assert (
        capsys.readouterr().out
        == hf_tokbin.show(release, window=40, length=90, format="llmc", tokenizer=tok).render() + "\n"
    )


def test_documents_of_a_split_are_counted_as_the_build_wrote_them(release):
    starts, ends = document_bounds(LlmcSplit.open(release, "train"))
    assert starts.size == len(TEXTS) and (ends > starts).all()


def test_a_release_decodes_with_the_tokenizer_it_holds_and_asks_without_it(release, tok, tmp_path, capsys):
    import shutil

    assert hf_tokbin.show(release, doc=3).documents() == {3: TEXTS[3]}  # tokenizer/tokenizer.json of the release
    bare = shutil.copytree(release, tmp_path / "bare")
    shutil.rmtree(bare / "tokenizer")
    assert main(["show", str(bare), "--doc", "0"]) == 1
    err = capsys.readouterr().err
    assert "built with a local tokenizer.json" in err and "give --tokenizer PATH" in err and len(err.splitlines()) == 1


def test_another_tokenizer_is_refused(release):
    with pytest.raises(TokenizerError, match="not the tokenizer this release was built with"):
        hf_tokbin.show(release, doc=0, tokenizer="byte")


def test_a_byte_release_decodes_without_a_tokenizer(tmp_path):
    out = tmp_path / "bytes"
    hf_tokbin.build_release(
        datasets.Dataset.from_dict({"text": ["héllo", "wörld"]}), "byte", out, progress=False, doc_sep=0
    )
    shown = hf_tokbin.show(out, doc=1)
    assert shown.documents() == {1: "wörld"} and shown.render().endswith("wörld⟦EOD 0 '\\x00'⟧")


@pytest.mark.parametrize(
    "options,message",
    [
        ({"window": 0}, "--doc N, or --window OFFSET with --len T"),
        ({"doc": 30}, "no document 30"),
        ({"window": 10**9, "length": 5}, "window outside"),
    ],
)
def test_bad_positions_are_one_clear_error(release, tok, options, message):
    with pytest.raises(FormatError, match=message):
        hf_tokbin.show(release, tokenizer=tok, **options)


CONTROL_TEXT = "red \x1b[31malert\x07 and \x7f del \x9b c1 tab\there"


def test_show_escapes_control_characters_and_raw_prints_them(tmp_path, capsys):
    out = tmp_path / "controls"
    hf_tokbin.build_release(
        datasets.Dataset.from_dict({"text": [CONTROL_TEXT]}), "byte", out, progress=False, doc_sep=3
    )
    capsys.readouterr()
    assert main(["show", str(out), "--doc", "0"]) == 0
    shown = capsys.readouterr()
    assert "red ^[[31malert^G and ^? del M-^[ c1 tab\there" in shown.out
    assert not any(c in shown.out for c in "\x1b\x07\x7f\x9b")
    assert "--raw" in shown.err
    assert main(["show", str(out), "--doc", "0", "--raw"]) == 0
    assert CONTROL_TEXT in capsys.readouterr().out


def test_show_help_says_how_to_get_the_raw_text(capsys):
    with pytest.raises(SystemExit):
        main(["show", "--help"])
    assert "--raw" in capsys.readouterr().out


def test_one_document_numbering_under_a_shuffle_seed(tmp_path, capsys):
    from hf_tokbin.formats.preview import read_preview

    texts = [f"story number {i}" for i in range(40)]
    out = tmp_path / "shuffled"
    hf_tokbin.build_release(
        datasets.Dataset.from_dict({"text": texts}),
        "byte",
        out,
        progress=False,
        doc_sep=0,
        shard_rows=7,
        shuffle_seed=5,
    )
    preview = read_preview(out / "preview" / "train.parquet")
    previewed = {d: t for d, t in zip(preview["document"], preview["text"])}
    seen = []
    for n in range(len(texts)):
        by_format = {format: hf_tokbin.show(out, doc=n, format=format).documents() for format in ("megatron", "llmc")}
        assert by_format["megatron"] == by_format["llmc"] and list(by_format["llmc"]) == [n], (n, by_format)
        seen.append(by_format["llmc"][n])
        if n in previewed:
            assert previewed[n] == seen[-1]
    assert sorted(seen) == sorted(texts) and seen != texts  # every document once, in the shuffled order
    assert "Documents are numbered from 0 in that interleaved order" in (out / "README.md").read_text(encoding="utf-8")
    # A Megatron window names its documents by the same numbers.
    window = hf_tokbin.show(out, window=0, length=60, format="megatron")
    assert all(window.documents()[d] in seen[d] for d in window.documents())
    with pytest.raises(SystemExit):
        main(["show", "--help"])
    assert "numbered" in capsys.readouterr().out
