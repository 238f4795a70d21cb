"""Tokens mean what the text says: boundary tokens from the tokenizer's own files,
special-token text as ordinary text, and the document layouts of both formats.

Real tokenizers (GPT-2, Llama 3 from ``tests/tokenizer_files.py``) and a BPE trained with
the TinyStories rules' ``<|bos|>``/``<|eos|>``; every expectation is computed with ``tokenizers`` itself.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from release_fixtures import write_corpus
from tokenizer_files import GPT2_EOS_ID, LLAMA3_EOS_ID, gpt2_tokenizer_json, llama3_tokenizer_json, story_texts
from tokenizers import Tokenizer

from hf_tokbin._io import sha256_file
from hf_tokbin.cli import main
from hf_tokbin.errors import TokenizerError, VerificationError
from hf_tokbin.formats import llmc, megatron
from hf_tokbin.formats.records import FileEntry
from hf_tokbin.formats.release import Complete
from hf_tokbin.formats.run_config import RunConfig
from hf_tokbin.pipeline import build, plan_build
from hf_tokbin.tokenizer import resolve_tokenizer
from hf_tokbin.verify.release import verify_release

pytestmark = pytest.mark.slow  # real GPT-2 and Llama 3 builds

SPECIAL_TEXT = "Hello <|endoftext|> world <|end_of_text|> and <|begin_of_text|> end"


def only_files(folder: Path, names: tuple[str, ...], into: Path) -> Path:
    into.mkdir(parents=True)
    for name in names:
        shutil.copyfile(folder / name, into / name)
    return into


def megatron_documents(release: Path, split: str = "train") -> list[list[int]]:
    documents = []
    for idx in sorted((release / "shards" / split).glob("*.idx")):
        pair = megatron.MegatronPair(idx)
        documents += [pair[i].tolist() for i in range(len(pair))]
    return documents


def llmc_stream(release: Path, split: str = "train") -> list[int]:
    folder = next((release / "tokens").glob("*/*"))
    manifest = llmc.TokensManifest.read(folder / llmc.MANIFEST_NAME)
    return [i for f in manifest.files if f.split == split for i in llmc.open_tokens(folder / f.name).tolist()]


def run_config(release: Path) -> dict:
    return json.loads((release / "run_config.json").read_text())


def reseal(root: Path) -> None:
    """A new COMPLETE.json, so verify reaches the deeper rule a test broke."""
    from hf_tokbin.formats.release import Receipt

    for path in sorted((root / "receipts").glob("*.json")):
        receipt = Receipt.read(path)
        files = tuple(
            FileEntry(f.path, (root / f.path).stat().st_size, sha256_file(root / f.path)) for f in receipt.files
        )
        Receipt(receipt.part, receipt.input_shard, receipt.splits, files).write(root)
    entries = [
        FileEntry(p.relative_to(root).as_posix(), p.stat().st_size, sha256_file(p))
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "COMPLETE.json"
    ]
    Complete(tuple(entries)).write(root)


# ------------------------------------------------------------------ boundary tokens from the tokenizer's files


def test_llama3_folder_with_only_tokenizer_config_builds_megatron_with_eod_128001(tmp_path, capsys):
    folder = only_files(llama3_tokenizer_json(), ("tokenizer.json",), tmp_path / "llama3")
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"eos_token": "<|end_of_text|>", "bos_token": "<|begin_of_text|>"})
    )
    corpus = write_corpus(tmp_path / "corpus", [("train", story_texts(20, seed=1))])
    out = tmp_path / "release"
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                str(folder),
                "--format",
                "megatron",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    first_line = capsys.readouterr().out.splitlines()[0]
    assert first_line.startswith("separator/EOD 128001 '<|end_of_text|>' (from tokenizer_config.json eos_token)")
    assert all(document[-1] == LLAMA3_EOS_ID for document in megatron_documents(out))
    assert run_config(out)["doc_sep"] == {
        "id": LLAMA3_EOS_ID,
        "token": "<|end_of_text|>",
        "source": "tokenizer_config.json eos_token",
        "ordinary_text_can_encode": False,
    }
    verify_release(out)


def test_eos_token_as_transformers_writes_it_and_from_special_tokens_map(tmp_path):
    folder = only_files(gpt2_tokenizer_json(), ("tokenizer.json",), tmp_path / "gpt2")
    (folder / "special_tokens_map.json").write_text(
        json.dumps({"eos_token": {"content": "<|endoftext|>", "lstrip": False}})
    )
    info = resolve_tokenizer(str(folder))
    assert (info.doc_sep_id, info.doc_sep.source) == (GPT2_EOS_ID, "special_tokens_map.json eos_token")
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"eos_token": {"__type": "AddedToken", "content": "<|endoftext|>"}})
    )
    # before special_tokens_map.json
    assert resolve_tokenizer(str(folder)).doc_sep.source == "tokenizer_config.json eos_token"
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 198}))
    assert resolve_tokenizer(str(folder)).doc_sep_id == 198  # generation_config.json comes first
    # and the option before all
    assert resolve_tokenizer(str(folder), doc_sep="<|endoftext|>").doc_sep.source == "--doc-sep"
    (folder / "generation_config.json").unlink()
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|eos|>"}))
    with pytest.raises(
        TokenizerError, match=r"tokenizer_config.json: eos_token is not a single token of this tokenizer.*'<\|eos\|>'"
    ):
        resolve_tokenizer(str(folder))


def test_doc_sep_as_a_token_string_with_gpt2_and_clear_errors(tmp_path, capsys):
    corpus = write_corpus(tmp_path / "corpus", [("train", story_texts(10, seed=2))])
    folder = only_files(gpt2_tokenizer_json(), ("tokenizer.json",), tmp_path / "gpt2")  # no file names a separator
    out = tmp_path / "release"
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                str(folder),
                "--doc-sep",
                "<|endoftext|>",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    assert "separator/EOD 50256 '<|endoftext|>' (from --doc-sep)" in capsys.readouterr().out
    assert llmc_stream(out)[0] == GPT2_EOS_ID and megatron_documents(out)[0][-1] == GPT2_EOS_ID
    verify_release(out)
    # The older spelling, an id, still works.
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                str(folder),
                "--doc-sep-id",
                "50256",
                "--out",
                str(tmp_path / "by-id"),
                "--quiet",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert (out / "shards/train/part-000000.bin").read_bytes() == (
        tmp_path / "by-id/shards/train/part-000000.bin"
    ).read_bytes()
    for argv, message in (
        (["--doc-sep", "<|eos|>"], "--doc-sep is not a single token of this tokenizer"),
        (["--doc-sep", "hello world"], "--doc-sep is not a single token of this tokenizer"),
        (["--bos", "99999999"], "--bos: a boundary token must be a valid id"),
        ([], "this tokenizer has none"),
    ):
        assert (
            main(
                [
                    "build",
                    "--corpus",
                    str(corpus),
                    "--tokenizer",
                    str(folder),
                    "--format",
                    "megatron",
                    *argv,
                    "--out",
                    str(tmp_path / "bad"),
                    "--quiet",
                ]
            )
            == 1
        )
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "bad").exists()


def test_several_eos_ids_ask_to_choose_and_the_byte_hint_fits_it(tmp_path, capsys):
    folder = only_files(gpt2_tokenizer_json(), ("tokenizer.json",), tmp_path / "gpt2")
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": [50256, 198]}))
    with pytest.raises(TokenizerError, match="several ids; choose the separator with --doc-sep"):
        resolve_tokenizer(str(folder))
    corpus = write_corpus(tmp_path / "corpus", [("train", ["a b c"])])
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                "byte",
                "--format",
                "megatron",
                "--out",
                str(tmp_path / "o"),
                "--quiet",
            ]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert "byte tokenizer" in err and "--doc-sep N" in err and "tokenizer.json" not in err
    with pytest.raises(TokenizerError, match="the byte tokenizer has no token strings"):
        resolve_tokenizer("byte", doc_sep="<|endoftext|>")


# ------------------------------------------------------------------ special-token text is text


@pytest.mark.parametrize("name", ["gpt2", "llama3"])
@pytest.mark.parametrize("fast", ["auto", "never"])
def test_special_token_text_gives_tokenizers_ordinary_ids_in_both_formats(tmp_path, name, fast):
    folder = {"gpt2": gpt2_tokenizer_json, "llama3": llama3_tokenizer_json}[name]()
    reference = Tokenizer.from_file(str(folder / "tokenizer.json"))
    texts = [SPECIAL_TEXT, "<|endoftext|>", *story_texts(5, seed=3)]
    corpus = write_corpus(tmp_path / "corpus", [("train", texts)])
    results = {}
    for parse in (False, True):
        out = tmp_path / f"release-{parse}"
        info = resolve_tokenizer(str(folder))
        build(plan_build(corpus, info, out, fast=fast, parse_special=parse), progress=False)
        reference.encode_special_tokens = not parse
        expected = [reference.encode(t, add_special_tokens=False).ids for t in texts]
        sep = info.doc_sep_id
        assert megatron_documents(out) == [ids + [sep] for ids in expected]
        assert llmc_stream(out) == [i for ids in expected for i in [sep, *ids]]
        assert run_config(out)["special_tokens"] == ("parsed" if parse else "ordinary")
        results[parse] = (verify_release(out), expected)
    ordinary, parsed = results[False][1], results[True][1]
    special_ids = {reference.token_to_id(t) for t in ("<|endoftext|>", "<|end_of_text|>", "<|begin_of_text|>")} - {None}
    assert not special_ids & set(ordinary[0]) and not special_ids & set(ordinary[1])  # no false boundary from the text
    assert special_ids <= set(parsed[0])  # --parse-special-tokens: every one of its special tokens, parsed
    assert parsed[1] == ([GPT2_EOS_ID] if name == "gpt2" else ordinary[1])  # <|endoftext|> is no Llama 3 token
    assert results[False][0].warnings == []
    if name == "gpt2":  # the parsed <|endoftext|> is the separator: named as a warning, with its document
        assert any("document 0 of part-000000.bin" in w and "parsed" in w for w in results[True][0].warnings)


# ------------------------------------------------------------------ document layouts


@pytest.fixture(scope="module")
def seed002(tmp_path_factory):
    """A corpus of TinyStories-style stories and a BPE trained on it with the TinyStories rules' <|bos|> and
    <|eos|>."""
    root = tmp_path_factory.mktemp("seed002")
    corpus = write_corpus(
        root / "corpus",
        [
            ("train", story_texts(60, seed=4)),
            ("validation", story_texts(15, seed=5)),
            ("train", story_texts(30, seed=6)),
        ],
    )
    tokenizer = root / "tokenizer"
    assert (
        main(
            [
                "tokenizer",
                "train",
                "--corpus",
                str(corpus),
                "--vocab-size",
                "400",
                "--special-tokens",
                "<|bos|>,<|eos|>",
                "--out",
                str(tokenizer),
            ]
        )
        == 0
    )
    return corpus, tokenizer


def corpus_texts(corpus: Path, split: str) -> list[str]:
    from hf_tokbin.corpus.source import iter_texts
    from hf_tokbin.formats.corpus_manifest import CorpusManifest

    return list(iter_texts(corpus, CorpusManifest.read(corpus), split))


def test_tokenizer_train_writes_the_boundary_files_and_refuses_to_overwrite(seed002, capsys):
    corpus, tokenizer = seed002
    reference = Tokenizer.from_file(str(tokenizer / "tokenizer.json"))
    assert (reference.token_to_id("<|bos|>"), reference.token_to_id("<|eos|>")) == (0, 1)
    assert json.loads((tokenizer / "generation_config.json").read_text()) == {"bos_token_id": 0, "eos_token_id": 1}
    assert json.loads((tokenizer / "tokenizer_config.json").read_text())["bos_token"] == "<|bos|>"
    assert json.loads((tokenizer / "tokenizer_config.json").read_text())["eos_token"] == "<|eos|>"
    before = (tokenizer / "tokenizer.json").read_bytes()
    capsys.readouterr()
    assert main(["tokenizer", "train", "--corpus", str(corpus), "--vocab-size", "300", "--out", str(tokenizer)]) == 1
    assert "output folder is not empty" in capsys.readouterr().err
    assert (tokenizer / "tokenizer.json").read_bytes() == before
    assert (
        main(
            [
                "tokenizer",
                "train",
                "--corpus",
                str(corpus),
                "--vocab-size",
                "400",
                "--special-tokens",
                "<|bos|>,<|eos|>",
                "--out",
                str(tokenizer),
                "--overwrite",
            ]
        )
        == 0
    )
    assert (tokenizer / "tokenizer.json").read_bytes() == before  # deterministic
    assert (
        main(
            [
                "tokenizer",
                "train",
                "--corpus",
                str(corpus),
                "--special-tokens",
                "<|bos|>",
                "--eos-token",
                "<|eos|>",
                "--out",
                str(tokenizer.parent / "x"),
            ]
        )
        == 1
    )
    assert "the eos token must be one of the special tokens" in capsys.readouterr().err


def test_seed002_layout_bos_story_eos_in_both_formats(seed002, tmp_path, capsys):
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    corpus, tokenizer = seed002
    out = tmp_path / "release"
    argv = [
        "build",
        "--corpus",
        str(corpus),
        "--tokenizer",
        str(tokenizer),
        "--bos",
        "<|bos|>",
        "--doc-sep",
        "<|eos|>",
        "--llmc-sep",
        "after",
        "--out",
        str(out),
        "--quiet",
    ]
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "separator/EOD 1 '<|eos|>' (from --doc-sep); BOS 0 '<|bos|>' (from --bos); "
        "llm.c separator after each document; "
        "special-token text encoded as ordinary text"
    )
    # the TinyStories rules' own encoder (scripts/tinystories_reference.py)
    from tinystories_reference import ChunkCacheEncoder

    reference = Tokenizer.from_file(str(tokenizer / "tokenizer.json"))
    seed = ChunkCacheEncoder.from_tokenizer_json(tokenizer / "tokenizer.json")
    for split, llmc_split in (("train", "train"), ("validation", "val")):
        stories = [[0, *reference.encode(t, add_special_tokens=False).ids, 1] for t in corpus_texts(corpus, split)]
        # the TinyStories rules' `[bos_id, *output, eos_id]`
        assert stories == [[0, *seed.encode(t), 1] for t in corpus_texts(corpus, split)]
        # the TinyStories rules' flat stream, exactly
        assert llmc_stream(out, llmc_split) == [i for story in stories for i in story]
        assert megatron_documents(out, split) == stories
    dataset = IndexedDataset(str(out / "shards/train/part-000000"))
    assert [int(x) for x in dataset.sequence_lengths] == [len(d) for d in megatron_documents(out)[:60]]
    assert np.array(dataset[0])[[0, -1]].tolist() == [0, 1]
    config = RunConfig.read(out / "run_config.json")
    assert (config.bos_id, config.doc_sep_id, config.llmc_separator, config.llmc_layout) == (0, 1, "after", "gpt2")
    stats = json.loads((out / "stats.json").read_text())["splits"]["train"]
    assert stats["bos_tokens"] == stats["eod_tokens"] == 90 and stats["total_tokens"] == stats["text_tokens"] + 180
    card = (out / "README.md").read_text()
    assert "`[bos] + ids + [eod]`" in card and "`[bos] + ids + [sep]`" in card and "ordinary text" in card
    report = verify_release(out)
    assert report.warnings == []


def test_bos_with_the_separator_before_and_the_deprecated_variant(seed002, tmp_path, capsys):
    corpus, tokenizer = seed002
    out = tmp_path / "release"
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                str(tokenizer),
                "--bos",
                "0",
                "--llmc-variant",
                "seed000",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    reference = Tokenizer.from_file(str(tokenizer / "tokenizer.json"))
    texts = corpus_texts(corpus, "train")
    # [sep] + [bos] + ids
    assert llmc_stream(out) == [i for t in texts for i in [1, 0, *reference.encode(t, add_special_tokens=False).ids]]
    assert megatron_documents(out) == [[0, *reference.encode(t, add_special_tokens=False).ids, 1] for t in texts]
    assert run_config(out)["llmc"] == {
        "layout": "gpt2",
        "separator": "before",
        "max_tokens_per_file": llmc.DEFAULT_MAX_TOKENS,
    }
    verify_release(out)
    capsys.readouterr()
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                "byte",
                "--format",
                "llmc",
                "--llmc-sep",
                "after",
                "--out",
                str(tmp_path / "b"),
                "--quiet",
            ]
        )
        == 1
    )
    assert "--llmc-sep after needs a separator" in capsys.readouterr().err


@pytest.fixture
def bos_release(seed002, tmp_path):
    corpus, tokenizer = seed002
    out = tmp_path / "release"
    build(
        plan_build(corpus, resolve_tokenizer(str(tokenizer), bos="<|bos|>"), out, llmc_separator="after"),
        progress=False,
    )
    return out


def test_verify_checks_every_document_starts_with_bos(bos_release):
    path = bos_release / "shards/train/part-000000.bin"
    pair = megatron.MegatronPair(path)
    position = int(pair.pointers[3]) // pair.dtype.itemsize
    del pair
    data = bytearray(path.read_bytes())
    data[position * 2 : position * 2 + 2] = (7).to_bytes(2, "little")
    path.write_bytes(bytes(data))
    reseal(bos_release)
    with pytest.raises(Exception, match="sequence 3 must begin with BOS"):
        verify_release(bos_release)


def test_a_boundary_id_text_cannot_give_inside_a_document_is_an_error(bos_release):
    # Put the EOD <|eos|> inside document 2 in both formats: every count and the stream equality still hold.
    pair_path = bos_release / "shards/train/part-000000.bin"
    pair = megatron.MegatronPair(pair_path)
    position = int(pair.pointers[2]) // pair.dtype.itemsize + 2
    del pair
    for path, offset in (
        (pair_path, 0),
        (next((bos_release / "tokens").glob("*/*/train-00000.bin")), llmc.HEADER_BYTES),
    ):
        data = bytearray(path.read_bytes())
        data[offset + position * 2 : offset + position * 2 + 2] = (1).to_bytes(2, "little")
        path.write_bytes(bytes(data))
    folder = next((bos_release / "tokens").glob("*/*"))
    manifest = json.loads((folder / "_MANIFEST.json").read_text())
    for f in manifest["files"]:
        f["sha256"] = sha256_file(folder / f["name"])
    (folder / "_MANIFEST.json").write_text(json.dumps(manifest))
    reseal(bos_release)
    with pytest.raises(
        VerificationError,
        match=r"part-000000.bin: the separator id 1 '<\|eos\|>' is inside a document: document 2 of part-000000.bin"
        r".*cannot give this id",
    ):
        verify_release(bos_release)


def test_a_boundary_id_text_can_give_is_a_warning_naming_file_and_document(tmp_path, capsys):
    # The byte tokenizer with the newline as separator: a document holding a newline holds that id.
    corpus = write_corpus(tmp_path / "corpus", [("train", ["one line", "two\nlines", "three"])])
    out = tmp_path / "release"
    assert (
        main(
            ["build", "--corpus", str(corpus), "--tokenizer", "byte", "--doc-sep", "10", "--out", str(out), "--quiet"]
        )
        == 0
    )
    capsys.readouterr()
    report = verify_release(out)
    assert len(report.warnings) == 1 and "document 1 of part-000000.bin, token 3" in report.warnings[0]
    assert main(["verify", str(out)]) == 0
    assert "warning:" in capsys.readouterr().out


def test_run_config_format_1_is_still_read(bos_release):
    config = run_config(bos_release)
    v1 = {
        "format": "hf_tokbin.run_config/1",
        **{k: config[k] for k in ("dataset", "version", "corpus", "split_rule", "formats", "versions", "megatron")},
        "tokenizer": {**config["tokenizer"], "doc_sep_id": 1},
        "eod_id": 1,
        "llmc": {"variant": "seed000", "max_tokens_per_file": 10, "doc_sep_id": 1},
    }
    path = bos_release / "v1.json"
    path.write_text(json.dumps(v1))
    read = RunConfig.read(path)
    assert (read.doc_sep_id, read.eod_id, read.bos, read.llmc_layout, read.llmc_separator, read.special_tokens) == (
        1,
        1,
        None,
        "gpt2",
        "before",
        "parsed",
    )


def test_one_id_as_both_bos_and_separator_is_at_home_at_both_ends(tmp_path, capsys):
    corpus = write_corpus(tmp_path / "corpus", [("train", ["ab", "c\x00d", "e"])])
    out = tmp_path / "release"
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                "byte",
                "--doc-sep",
                "0",
                "--bos",
                "0",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    assert megatron_documents(out) == [[0, 97, 98, 0], [0, 99, 0, 100, 0], [0, 101, 0]]
    assert llmc_stream(out) == [0, 0, 97, 98, 0, 0, 99, 0, 100, 0, 0, 101]
    warnings = verify_release(out).warnings
    # only the NUL byte of the text
    assert len(warnings) == 1 and "document 1 of part-000000.bin, token 2" in warnings[0]


# ------------------------------------------------------ llm.c's Llama 3 layout: <|begin_of_text|> before each document

LLAMA3_BEGIN_OF_TEXT = 128000


def test_llama3_layout_writes_llmc_own_data_begin_of_text_before_each_document(tmp_path, capsys):
    """llm.c's dev/data (tinystories.py, fineweb.py ``tokenize_llama``) writes ``[128000] + ids`` per document, no
    128001."""
    from hf_tokbin import trainers

    corpus = write_corpus(
        tmp_path / "corpus", [("train", story_texts(12, seed=5)), ("validation", story_texts(4, seed=6))]
    )
    tokenizer = llama3_tokenizer_json()
    out = tmp_path / "release"
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                str(tokenizer),
                "--llmc-layout",
                "llama3",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.splitlines()[0] == (
        "separator/EOD 128001 '<|end_of_text|>' (from generation_config.json eos_token_id); no BOS; "
        "llm.c separator 128000 '<|begin_of_text|>' (from --llmc-layout llama3: llm.c's own Llama 3 data) "
        "before each document; "
        "special-token text encoded as ordinary text"
    )
    reference = Tokenizer.from_file(str(tokenizer / "tokenizer.json"))
    for split, llmc_split in (("train", "train"), ("validation", "val")):
        ids = [reference.encode(t, add_special_tokens=False).ids for t in corpus_texts(corpus, split)]
        # and no 128001 anywhere
        assert llmc_stream(out, llmc_split) == [i for d in ids for i in [LLAMA3_BEGIN_OF_TEXT, *d]]
        assert megatron_documents(out, split) == [[*d, LLAMA3_EOS_ID] for d in ids]  # Megatron keeps its EOD
    config = RunConfig.read(out / "run_config.json")
    assert (config.doc_sep_id, config.eod_id, config.bos, config.llmc_separator) == (
        LLAMA3_EOS_ID,
        LLAMA3_EOS_ID,
        None,
        "before",
    )
    assert config.llmc_doc_sep.id == LLAMA3_BEGIN_OF_TEXT
    assert llmc.TokensManifest.read(out / "tokens/llama3/toy/_MANIFEST.json").doc_sep_id == LLAMA3_BEGIN_OF_TEXT
    assert verify_release(out).warnings == []
    assert [f for f in trainers.check(out, "llmc-llama3") if f.rule == "begin-of-text"] == []
    assert "128000" in (out / "README.md").read_text()


@pytest.mark.parametrize(
    "extra, first",
    [
        (["--llmc-sep", "before"], [LLAMA3_EOS_ID]),
        (["--bos", "128000"], [LLAMA3_EOS_ID, LLAMA3_BEGIN_OF_TEXT]),
        (["--doc-sep", "<|end_of_text|>"], [LLAMA3_EOS_ID]),
    ],
)
def test_llama3_layout_default_gives_way_to_the_boundary_options(tmp_path, capsys, extra, first):
    corpus = write_corpus(tmp_path / "corpus", [("train", story_texts(3, seed=7))])
    tokenizer = llama3_tokenizer_json()
    out = tmp_path / "release"
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                str(tokenizer),
                "--llmc-layout",
                "llama3",
                *extra,
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    assert "llm.c separator before each document" in capsys.readouterr().out.splitlines()[0]
    reference = Tokenizer.from_file(str(tokenizer / "tokenizer.json"))
    assert llmc_stream(out) == [
        i for t in corpus_texts(corpus, "train") for i in [*first, *reference.encode(t, add_special_tokens=False).ids]
    ]
    assert "doc_sep" not in run_config(out)["llmc"]
    verify_release(out)
