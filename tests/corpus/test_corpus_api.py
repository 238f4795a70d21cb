"""hf_tokbin.build_release: one call from a corpus folder, files, or an in-memory datasets object."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import datasets
import pytest

import hf_tokbin
from hf_tokbin.cli import main

SAMPLE = Path(hf_tokbin.__file__).parent / "data" / "sample"
# The records pin the corpus manifest (whose sources differ:
# input files vs an in-memory dataset); nothing else may differ.
RECORDS = {"run_config.json", "README.md", "COMPLETE.json", "tokens/byte/tinystories/_MANIFEST.json"}


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("corpus") / "tinystories"
    assert (
        main(["corpus", "tinystories", str(SAMPLE / "train.txt"), str(SAMPLE / "valid.txt"), "--out", str(out)]) == 0
    )
    return out


@pytest.fixture(scope="module")
def folder_release(corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("folder") / "tinystories"
    summary = hf_tokbin.build_release(corpus, "byte", out, doc_sep=0, progress=False)
    assert summary.corpus_source == "local" and summary.counts["train"].documents > 0
    return out


@pytest.mark.parametrize("kind", ["Dataset", "DatasetDict", "IterableDataset"])
def test_an_in_memory_dataset_builds_the_same_release_as_the_folder_it_came_from(
    corpus, folder_release, tmp_path, kind
):
    loaded = datasets.load_dataset(str(corpus), cache_dir=str(tmp_path / "cache"))
    source = {
        "DatasetDict": loaded,
        # its split column says where each row goes
        "Dataset": datasets.concatenate_datasets([loaded["train"], loaded["validation"]]),
        "IterableDataset": datasets.concatenate_datasets(
            [loaded["train"], loaded["validation"]]
        ).to_iterable_dataset(),
    }[kind]
    out = tmp_path / "tinystories"
    summary = hf_tokbin.build_release(source, "byte", out, doc_sep=0, progress=False)
    assert summary.corpus_source == "in-memory dataset" and summary.split_rule == "column"
    mine, theirs = files_under(out), files_under(folder_release)
    assert set(mine) == set(theirs)
    # every token file, receipt and stats.json: same bytes
    assert {path for path in mine if mine[path] != theirs[path]} <= RECORDS
    shards = lambda root: json.loads((root / "run_config.json").read_text())["corpus"]["shards"]  # noqa: E731
    assert shards(out) == shards(folder_release)
    assert main(["verify", str(out)]) == 0


def test_files_and_globs_are_imported_then_built(tmp_path):
    (tmp_path / "in").mkdir()
    for k in range(2):
        (tmp_path / "in" / f"p{k}.jsonl").write_text(
            "".join(json.dumps({"text": f"doc {k}-{i}"}) + "\n" for i in range(5)), encoding="utf-8"
        )
    summary = hf_tokbin.build_release(
        str(tmp_path / "in" / "p*.jsonl"), "byte", tmp_path / "rel", doc_sep=0, formats=("megatron",), progress=False
    )
    assert summary.corpus_source == "files" and summary.counts["train"].documents == 10
    assert [p.name for p in tmp_path.iterdir()] == ["in", "rel"] or sorted(p.name for p in tmp_path.iterdir()) == [
        "in",
        "rel",
    ]


def test_import_hf_tokbin_stays_light_and_help_shows_the_main_job():
    code = (
        "import sys, hf_tokbin; assert 'datasets' not in sys.modules "
        "and 'tokenizers' not in sys.modules; help(hf_tokbin)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PAGER": "cat", "PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)},
    )
    assert result.returncode == 0, result.stderr
    assert "build_release(" in result.stdout


def test_build_release_with_a_limit_says_what_each_split_got(corpus, tmp_path):
    summary = hf_tokbin.build_release(corpus, "byte", tmp_path / "first3", doc_sep=0, progress=False, limit=3)
    assert summary.corpus_subset.documents == {"train": 3, "validation": 0}
    assert (
        "--limit 3: validation 0 of" in summary.table()
        and "(none: the limit was reached before this split)" in summary.table()
    )
    recorded = json.loads((tmp_path / "first3" / "run_config.json").read_text())["corpus"]["subset"]
    assert recorded == summary.corpus_subset.to_record()
