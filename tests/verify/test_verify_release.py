"""``verify_release``: every broken promise of a release is found and named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from release_edits import edit_json, reseal
from release_fixtures import stories, write_corpus

from hf_tokbin._io import sha256_file, write_json_atomic
from hf_tokbin.cli import main
from hf_tokbin.errors import TokbinError
from hf_tokbin.formats import llmc
from hf_tokbin.formats.megatron import MegatronPair
from hf_tokbin.formats.release import Receipt, is_release_path, list_release_paths
from hf_tokbin.pipeline import build, plan_build
from hf_tokbin.tokenizer import resolve_tokenizer, train_bpe
from hf_tokbin.verify.release import verify_release

SEPARATOR = "<|endoftext|>"  # the trained tokenizer's special token: its id is the document separator


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tok") / "tok"
    train_bpe(stories(200, seed=5), 500, folder)
    return resolve_tokenizer(str(folder))


@pytest.fixture(scope="module")
def release(tmp_path_factory, tokenizer) -> Path:
    """Both formats; parts 0 and 2 are train with 40 documents each, part 1 is validation."""
    root = tmp_path_factory.mktemp("v")
    corpus = write_corpus(
        root / "corpus",
        [("train", stories(40, seed=6)), ("validation", stories(30, seed=7)), ("train", stories(40, seed=8))],
    )
    build(plan_build(corpus, tokenizer, root / "release", max_tokens_per_file=800), progress=False)
    return root / "release"


@pytest.fixture(scope="module")
def train_only(tmp_path_factory, tokenizer) -> Path:
    """Both formats, no validation split; document 10's text holds the separator token itself (parsed as the token)."""
    root = tmp_path_factory.mktemp("t")
    texts = stories(30, seed=9)
    texts[10] = f"{texts[10]} {SEPARATOR} and then the end"
    corpus = write_corpus(root / "corpus", [("train", texts)])
    build(plan_build(corpus, tokenizer, root / "release", max_tokens_per_file=300, parse_special=True), progress=False)
    return root / "release"


@pytest.fixture
def copy(release, tmp_path) -> Path:
    dst = tmp_path / "release"
    shutil.copytree(release, dst)
    return dst


@pytest.fixture
def train_only_copy(train_only, tmp_path) -> Path:
    dst = tmp_path / "train_only"
    shutil.copytree(train_only, dst)
    return dst


def write_llmc_file(directory: Path, name: str, ids, vocab_size: int) -> dict:
    """Write a token file in the llm.c layout; return the fields of its manifest entry but split and n_docs."""
    llmc.write_tokens(directory / name, np.asarray(ids), vocab_size)
    return {"name": name, "n_tokens": len(ids), "sha256": sha256_file(directory / name)}


def expect_error(root: Path, *fragments: str) -> str:
    with pytest.raises(TokbinError) as info:
        verify_release(root)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message
    return message


def test_good_release_verifies(release):
    report = verify_release(release)
    assert report.splits["train"].documents == 80 and report.splits["validation"].documents == 30


def test_missing_complete_json(copy):
    (copy / "COMPLETE.json").unlink()
    expect_error(copy, "incomplete")


def test_flipped_byte_names_the_file(copy):
    target = copy / "shards/train/part-000000.bin"
    data = bytearray(target.read_bytes())
    data[10] ^= 1
    target.write_bytes(bytes(data))
    expect_error(copy, "part-000000.bin", "SHA-256")


def test_missing_and_extra_files(copy, tmp_path):
    (copy / "extra.txt").write_text("hello")  # outside the release layout: no part of it, reported
    assert any("extra.txt" in w for w in verify_release(copy).warnings)
    (copy / "extra.txt").unlink()
    (copy / "receipts" / "part-000099.json").write_text("{}")  # inside the layout: the release is broken
    expect_error(copy, "part-000099.json", "not listed")
    (copy / "receipts" / "part-000099.json").unlink()
    (copy / "stats.json").unlink()
    expect_error(copy, "stats.json", "missing")


def test_id_beyond_vocab_in_a_pair_is_found_even_when_sealed(copy):
    target = copy / "shards/validation/part-000001.bin"
    data = bytearray(target.read_bytes())
    data[0:2] = (60000).to_bytes(2, "little")
    target.write_bytes(bytes(data))
    reseal(copy)
    expect_error(copy, "part-000001.bin", "vocab_size")


def test_missing_eod_is_found_even_when_sealed(copy):
    target = copy / "shards/train/part-000000.bin"
    data = bytearray(target.read_bytes())
    data[-2:] = (5).to_bytes(2, "little")
    target.write_bytes(bytes(data))
    reseal(copy)
    expect_error(copy, "part-000000.bin", "EOD")


def test_receipt_counts_that_do_not_add_up(copy):
    edit_json(
        copy / "receipts/part-000000.json",
        lambda obj: obj["splits"]["train"].update(text_tokens=obj["splits"]["train"]["text_tokens"] + 1),
    )
    reseal(copy)
    expect_error(copy, "part-000000.bin", "conservation")


def test_stats_that_disagree(copy):
    edit_json(
        copy / "stats.json",
        lambda obj: obj["splits"]["train"].update(documents=obj["splits"]["train"]["documents"] + 1),
    )
    reseal(copy)
    expect_error(copy, "stats.json", "receipts")


def test_llmc_file_removed_from_the_stream(copy):
    directory = copy / "tokens/tok/toy"
    manifest = json.loads((directory / "_MANIFEST.json").read_text())
    last = [f for f in manifest["files"] if f["split"] == "train"][-1]
    manifest["files"].remove(last)
    (directory / last["name"]).unlink()
    write_json_atomic(directory / "_MANIFEST.json", manifest)
    reseal(copy)
    expect_error(copy, "_MANIFEST.json", "conservation")


def test_cli_verify_is_one_line_and_nonzero(copy, capsys):
    (copy / "run_config.json").write_text("{}")
    assert main(["verify", str(copy)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "run_config.json" in err[0] and "Traceback" not in err[0]


def test_a_bare_llmc_token_folder_verifies_against_its_manifest(copy, capsys):
    folder = copy / "tokens/tok/toy"
    assert main(["verify", str(folder)]) == 0
    assert "llm.c token folder" in capsys.readouterr().out
    (folder / "val-00000.bin").unlink()
    assert main(["verify", str(folder)]) == 1
    assert "differ from the manifest" in capsys.readouterr().err


# ------------------------------------------------------------------ which files are a release's


def test_is_release_path_leaves_out_every_hidden_component():
    assert is_release_path("shards/train/part-000000.bin")
    assert is_release_path("README.md")
    assert not is_release_path(".work/llmc/part-000000.bin")
    assert not is_release_path("shards/train/.part-000000.bin.tmp")
    assert not is_release_path(".cache/huggingface/download/stats.json.metadata")
    assert not is_release_path("tokens/.hidden/x.bin")


def test_list_release_paths(tmp_path):
    for rel in [
        "COMPLETE.json",
        "stats.json",
        "shards/train/part-000000.bin",
        ".work/x.bin",
        "shards/train/.part-000001.bin.tmp",
        ".cache/huggingface/a",
    ]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    assert list_release_paths(tmp_path) == ["shards/train/part-000000.bin", "stats.json"]


def test_hidden_files_beside_a_release_are_ignored(copy):
    # What a build leaves (.work/, a temporary file) and what `hf download --local-dir` adds (.cache/).
    for rel in [
        ".work/llmc/part-000000.bin",
        "shards/train/.part-000000.bin.tmp",
        ".cache/huggingface/download/stats.json.metadata",
    ]:
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).write_bytes(b"leftover")
    assert verify_release(copy).splits["train"].documents == 80


def test_complete_json_must_not_list_a_hidden_file(copy):
    (copy / ".notes").write_text("sealed by hand")
    reseal(copy)
    expect_error(copy, "COMPLETE.json", "hidden path", ".notes")


@pytest.mark.parametrize(
    "stray, rule",
    [
        ("shards/train/part-000007", "not one of the files the receipts name"),
        ("tokens/tok/toy/notes.txt", "not one of the llm.c folder"),
    ],
)
def test_files_no_record_names_are_found_even_when_sealed(copy, stray, rule):
    if stray.startswith("shards/"):  # a copy of a real pair under a part number no receipt has
        for suffix in (".bin", ".idx"):
            shutil.copy(copy / f"shards/train/part-000000{suffix}", copy / f"{stray}{suffix}")
    else:
        (copy / stray).write_text("not a token file")
    reseal(copy)
    expect_error(copy, stray, rule)


# ------------------------------------------------------------------ run_config.json


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda c: c["corpus"]["shards"][0].pop("rows"), "corpus.shards[0].rows is missing"),
        (lambda c: c["corpus"]["shards"][1].update(split="test"), "corpus.shards[1].split must be"),
        (lambda c: c["tokenizer"].update(vocab_size="431"), "tokenizer.vocab_size must be"),
        (lambda c: c.update(formats="llmc"), "formats must be"),
        (lambda c: c.pop("corpus"), "corpus.manifest_sha256 is missing"),
        (lambda c: c.update(doc_sep=None), "doc_sep must be an id: the megatron format ends every document with it"),
        (lambda c: c["doc_sep"].update(id=10**6), "doc_sep.id must be an id < vocab_size"),
        (lambda c: c.update(special_tokens="text"), "special_tokens must be ordinary or parsed"),
        (lambda c: c["llmc"].update(separator="middle"), "llmc.separator must be before or after"),
        (lambda c: c["llmc"].update(layout="seed000"), "llmc.layout must be gpt2 or llama3"),
    ],
)
def test_a_bad_run_config_field_is_one_line_naming_it(copy, capsys, change, field):
    edit_json(copy / "run_config.json", change)
    reseal(copy)
    assert main(["verify", str(copy)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "run_config.json" in err[0] and field in err[0]


def test_rows_are_checked_per_part_not_only_per_split(copy):
    # Train totals still add up (41 + 39 = 40 + 40); part 0's receipt no longer matches its shard.
    def move_a_row(config):
        config["corpus"]["shards"][0]["rows"] += 1
        config["corpus"]["shards"][2]["rows"] -= 1

    edit_json(copy / "run_config.json", move_a_row)
    reseal(copy)
    expect_error(copy, "part-000000.json", "documents must equal the rows", "expected 41, got 40")


# ------------------------------------------------------------------ llm.c files


@pytest.mark.parametrize(
    "name, value",
    [
        ("tokenizer_id", "other"),
        ("tokenizer_sha256", "0" * 64),
        ("dataset", "other"),
        ("version", "v9"),
        ("corpus_manifest_sha256", "0" * 64),
    ],
)
def test_manifest_identity_must_be_run_configs(copy, name, value):
    edit_json(copy / "tokens/tok/toy/_MANIFEST.json", lambda m: m.update({name: value}))
    reseal(copy)
    expect_error(copy, "_MANIFEST.json", f"{name} differs from run_config.json", value)


def test_llmc_header_must_record_the_vocab_size(copy):
    directory = copy / "tokens/tok/toy"
    path = directory / "train-00000.bin"
    data = bytearray(path.read_bytes())
    data[12:16] = bytes(4)  # header[3] = 0, which a bare llm.c file may hold
    path.write_bytes(bytes(data))
    edit_json(directory / "_MANIFEST.json", lambda m: m["files"][0].update(sha256=sha256_file(path)))
    reseal(copy)
    expect_error(copy, "train-00000.bin", "header[3] must be the release's vocab_size")


def test_forged_llmc_file_for_a_split_without_documents(train_only_copy):
    directory = train_only_copy / "tokens/tok/toy"
    manifest = json.loads((directory / "_MANIFEST.json").read_text())
    entry = write_llmc_file(directory, "val-00000.bin", [manifest["doc_sep_id"], 5, 6], manifest["vocab_size"])
    manifest["files"].append({**entry, "split": "val", "n_docs": 1})
    write_json_atomic(directory / "_MANIFEST.json", manifest)
    reseal(train_only_copy)
    expect_error(
        train_only_copy, "_MANIFEST.json", "validation: a split without documents has no llm.c files", "val-00000.bin"
    )


def test_swapped_pairs_with_equal_counts_are_found(copy):
    # Parts 0 and 2 (both train, 40 documents) trade pairs, receipt counts and stats: every count still agrees.
    shards = copy / "shards/train"
    for suffix in (".bin", ".idx"):
        a, b = shards / f"part-000000{suffix}", shards / f"part-000002{suffix}"
        a_bytes, b_bytes = a.read_bytes(), b.read_bytes()
        a.write_bytes(b_bytes)
        b.write_bytes(a_bytes)
    first, last = Receipt.read(copy / "receipts/part-000000.json"), Receipt.read(copy / "receipts/part-000002.json")
    Receipt(first.part, first.input_shard, last.splits, first.files).write(copy)
    Receipt(last.part, last.input_shard, first.splits, last.files).write(copy)

    def swap_parts(stats):
        parts = stats["parts"]
        parts["part-000000"], parts["part-000002"] = parts["part-000002"], parts["part-000000"]

    edit_json(copy / "stats.json", swap_parts)
    reseal(copy)
    expect_error(copy, "tokens/tok/toy/train-", "llm.c ids must be the Megatron documents in part order")


def llmc_train_ids(release: Path) -> tuple[list[dict], np.ndarray]:
    """The train entries of the manifest and the ids of all train files, end to end."""
    manifest = json.loads((release / "tokens/tok/toy/_MANIFEST.json").read_text())
    entries = [f for f in manifest["files"] if f["split"] == "train"]
    ids = np.concatenate([llmc.open_tokens(release / "tokens/tok/toy" / f["name"]) for f in entries])
    return entries, ids


def embedded_separator(release: Path) -> tuple[int, int]:
    """The separator id and the llm.c position of the one separator inside a document's text."""
    pair = MegatronPair(release / "shards/train/part-000000.bin")
    separator = json.loads((release / "run_config.json").read_text())["doc_sep"]["id"]
    document_starts = set((np.asarray(pair.pointers) // pair.dtype.itemsize).tolist())
    _, ids = llmc_train_ids(release)
    inside = [int(p) for p in np.flatnonzero(ids == separator) if int(p) not in document_starts]
    assert len(inside) == 1  # the fixture put exactly one there
    return separator, inside[0]


def test_n_docs_moved_onto_a_file_whose_text_holds_the_separator(train_only_copy):
    # Separators are only a lower bound on documents (text may encode to the separator id), so
    # one more n_docs on that file and one less on a neighbour passes every count but this one.
    _, position = embedded_separator(train_only_copy)
    entries, _ = llmc_train_ids(train_only_copy)
    ends = np.cumsum([f["n_tokens"] for f in entries])
    k = int(np.searchsorted(ends, position, side="right"))
    neighbour = k + 1 if k + 1 < len(entries) else k - 1

    def move_a_document(manifest):
        files = [f for f in manifest["files"] if f["split"] == "train"]
        files[k]["n_docs"] += 1
        files[neighbour]["n_docs"] -= 1

    edit_json(train_only_copy / "tokens/tok/toy/_MANIFEST.json", move_a_document)
    reseal(train_only_copy)
    expect_error(
        train_only_copy,
        "_MANIFEST.json",
        f"{entries[k]['name']}: n_docs must be the number of documents the file holds",
    )


def test_llmc_file_starting_inside_a_document(train_only_copy):
    # Re-cut the train files at the separator inside a document's text: the stream and every count
    # stay the same and each file still starts with a separator, but a file now splits a document.
    directory = train_only_copy / "tokens/tok/toy"
    separator, position = embedded_separator(train_only_copy)
    entries, ids = llmc_train_ids(train_only_copy)
    manifest = json.loads((directory / "_MANIFEST.json").read_text())
    for f in entries:
        (directory / f["name"]).unlink()
    pieces = [ids[:position], ids[position:]]
    docs_before = int(np.count_nonzero(pieces[0] == separator))  # every separator before the cut starts a document
    n_docs = [docs_before, sum(f["n_docs"] for f in entries) - docs_before]
    files = [
        {
            **write_llmc_file(directory, f"train-{i:05d}.bin", piece, manifest["vocab_size"]),
            "split": "train",
            "n_docs": n,
        }
        for i, (piece, n) in enumerate(zip(pieces, n_docs))
    ]
    manifest["files"] = files + [f for f in manifest["files"] if f["split"] != "train"]
    write_json_atomic(directory / "_MANIFEST.json", manifest)
    # only the cut is wrong
    edit_json(
        train_only_copy / "run_config.json", lambda c: c["llmc"].update(max_tokens_per_file=max(map(len, pieces)))
    )
    reseal(train_only_copy)
    expect_error(train_only_copy, "train-00001.bin", "must begin where a Megatron document begins")


# ------------------------------------------------------------------ stats.json


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda s: s["parts"]["part-000000"]["train"].update(text_bytes=1), "parts.part-000000.train.text_bytes"),
        (lambda s: s["sources"]["toy"]["train"].update(documents=81), "sources.toy.train.documents"),
        (lambda s: s["parts"].pop("part-000001"), "parts"),
    ],
)
def test_stats_parts_and_sources_must_match_the_receipts(copy, change, field):
    edit_json(copy / "stats.json", change)
    reseal(copy)
    expect_error(copy, "stats.json", f"{field} differs from the receipts")


@pytest.mark.parametrize("target", ["shards/validation/part-000001.bin", "tokens/tok/toy/val-00000.bin"])
def test_per_file_checks_on_a_pool_find_what_one_process_finds(copy, target):
    """``verify --num-proc 2``: the pairs and llm.c files are checked by a pool of tasks, with the same verdicts."""
    assert verify_release(copy, num_proc=2).splits == verify_release(copy).splits
    path = copy / target
    assert path.is_file(), sorted(p.relative_to(copy).as_posix() for p in copy.rglob("*.bin"))
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF  # an id beyond the vocabulary, or another id: either way a broken promise naming the file
    path.write_bytes(bytes(data))
    reseal(copy)
    with pytest.raises(TokbinError) as alone:
        verify_release(copy)
    with pytest.raises(TokbinError) as pooled:
        verify_release(copy, num_proc=2)
    assert str(pooled.value) == str(alone.value) and target.rsplit("/", 1)[-1] in str(alone.value)


def test_verify_num_proc_on_the_command_line(release, capsys):
    from hf_tokbin.cli import main

    assert main(["verify", str(release), "--num-proc", "2"]) == 0
    assert "OK" in capsys.readouterr().out


def test_verify_num_proc_is_the_number_of_files_checked_at_once(release, monkeypatch):
    """``verify --num-proc N``: N files at once, as its help says, whatever the cores (a build's file tasks take
    every core).
    """
    from hf_tokbin.engines import local

    pools = []
    run_in_threads = local.run_in_threads

    def recorded(fn, plan, items, num_threads, *args):
        pools.append(num_threads)
        return run_in_threads(fn, plan, items, num_threads, *args)

    monkeypatch.setattr(local, "usable_cores", lambda: 8)  # a machine with more cores than asked for
    monkeypatch.setattr(local, "run_in_threads", recorded)
    assert verify_release(release, num_proc=1).splits == verify_release(release, num_proc=3).splits
    assert pools and set(pools[: len(pools) // 2]) == {1} and set(pools[len(pools) // 2 :]) == {3}
