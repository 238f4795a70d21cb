"""``verify_release``: every broken promise of a release is found and named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from release_fixtures import stories, write_corpus

from hf_tokbin._io import sha256_file, write_json_atomic
from hf_tokbin.build import build, plan_build
from hf_tokbin.cli import main
from hf_tokbin.errors import TokbinError
from hf_tokbin.records import FileEntry
from hf_tokbin.release import Complete, Receipt
from hf_tokbin.tokenizer import resolve_tokenizer, train_bpe
from hf_tokbin.verify_release import verify_release


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("v")
    train_bpe(stories(200, seed=5), 500, root / "tok")
    corpus = write_corpus(root / "corpus", [("train", stories(80, seed=6)), ("validation", stories(30, seed=7))])
    plan = plan_build(corpus, resolve_tokenizer(str(root / "tok")), root / "release", max_tokens_per_file=800)
    build(plan, progress=False)
    return root / "release"


@pytest.fixture
def copy(release, tmp_path) -> Path:
    dst = tmp_path / "release"
    shutil.copytree(release, dst)
    return dst


def reseal(root: Path) -> None:
    """Rewrite COMPLETE.json (and receipts) so only the deeper rule is broken."""
    for receipt_path in sorted((root / "receipts").glob("*.json")):
        receipt = Receipt.read(receipt_path)
        files = tuple(FileEntry(f.path, (root / f.path).stat().st_size, sha256_file(root / f.path)) for f in receipt.files)
        Receipt(receipt.part, receipt.input_shard, receipt.splits, files).write(root)
    entries = [FileEntry(p.relative_to(root).as_posix(), p.stat().st_size, sha256_file(p)) for p in sorted(root.rglob("*")) if p.is_file() and p.name != "COMPLETE.json"]
    Complete(tuple(sorted(entries, key=lambda e: e.path))).write(root)


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
    (copy / "extra.txt").write_text("hello")
    expect_error(copy, "extra.txt", "not listed")
    (copy / "extra.txt").unlink()
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
    path = copy / "receipts/part-000000.json"
    obj = json.loads(path.read_text())
    obj["splits"]["train"]["text_tokens"] += 1
    write_json_atomic(path, obj)
    reseal(copy)
    expect_error(copy, "part-000000.bin", "conservation")


def test_stats_that_disagree(copy):
    path = copy / "stats.json"
    obj = json.loads(path.read_text())
    obj["splits"]["train"]["documents"] += 1
    write_json_atomic(path, obj)
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
