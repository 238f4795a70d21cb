"""The finish of a build: the driver handles records only. No token file is opened or mapped by the
driver thread, and at a URL none is fetched back (the card's recipes and the preview read records and ranges)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from driver_reads import TOKEN_SUFFIXES, on_the_driver, ranged_read, recording_token_reads
from fsspec.core import url_to_fs
from release_fixtures import stories, write_corpus

from hf_tokbin.cli import main
from hf_tokbin.formats.preview import read_preview
from hf_tokbin.output import LocalFolder, UrlFolder
from hf_tokbin.pipeline import run as job

_unique = itertools.count()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("finish")
    return write_corpus(
        root / "corpus",
        [("train", stories(30, seed=1)), ("validation", stories(10, seed=2)), ("train", stories(30, seed=3))],
    )


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKBIN_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def driver(monkeypatch):
    """What the finish's driver thread opens (but for ranged reads), the ranged reads of token files and which
    files a URL build fetches back: ``{"opened": [...], "ranges": [(rel, start, length)], "fetched": [...]}``."""
    seen = {"opened": [], "ranges": [], "fetched": []}
    finish, fetch = job.publish_release, UrlFolder.fetch

    def recorded_finish(*args, **kwargs):
        with recording_token_reads() as opened:
            try:
                return finish(*args, **kwargs)
            finally:
                seen["opened"] += on_the_driver(opened)

    def recorded_fetch(self, entry):
        seen["fetched"].append(entry.path)
        return fetch(self, entry)

    def ranged(read_range):
        def recorded(self, rel, start, length):
            if rel.endswith(TOKEN_SUFFIXES):
                seen["ranges"].append((rel, start, length))
            with ranged_read():
                return read_range(self, rel, start, length)

        return recorded

    for output in (LocalFolder, UrlFolder):
        monkeypatch.setattr(output, "read_range", ranged(output.read_range))
    monkeypatch.setattr(job, "publish_release", recorded_finish)
    monkeypatch.setattr(UrlFolder, "fetch", recorded_fetch)
    return seen


def preview_bytes(folder: Path) -> int:
    """Bytes of the ids the preview shows, per format (the Megatron and llm.c columns hold as many ids, give or take
    a boundary)."""
    rows = {split: read_preview(folder / f"preview/{split}.parquet") for split in ("train", "validation")}
    columns = [name for name in ("llmc_input_ids", "megatron_input_ids") if name in rows["train"]]
    per_format = [len(ids) + 1 for preview in rows.values() for name in columns for ids in preview[name]]
    return 2 * sum(per_format)


def only_the_preview_is_read(driver: dict, local: Path) -> None:
    """The driver's ranged reads of token files: the first bytes of files, no more ids than the preview shows
    (uint16)."""
    assert driver["ranges"] and all(start == 0 for _, start, _ in driver["ranges"])
    assert sum(length for _, _, length in driver["ranges"]) <= preview_bytes(local)
    driver["ranges"].clear()


def build(corpus: Path, out: str, formats: str) -> None:
    flags = ["--tokenizer", "byte", "--doc-sep", "3", "--format", formats, "--max-tokens-per-file", "2000", "--quiet"]
    assert main(["build", "--corpus", str(corpus), "--out", out, *flags]) == 0


@pytest.mark.parametrize("formats", ["llmc,megatron", "llmc"])
def test_a_url_build_fetches_no_token_file_and_writes_the_local_card(corpus, tmp_path, driver, formats):
    local = tmp_path / "local"
    build(corpus, str(local), formats)
    assert driver["opened"] == []
    only_the_preview_is_read(driver, local)
    url = f"memory://finish/x{next(_unique)}"
    build(corpus, url, formats)
    assert [p for p in driver["fetched"] if p.endswith(TOKEN_SUFFIXES)] == []
    assert driver["opened"] == []
    only_the_preview_is_read(driver, local)
    fs, root = url_to_fs(url)
    assert fs.cat_file(f"{root}/README.md") == (tmp_path / "local" / "README.md").read_bytes()
    assert fs.cat_file(f"{root}/preview/train.parquet") == (tmp_path / "local" / "preview/train.parquet").read_bytes()


def test_a_builds_llmc_files_are_packed_on_every_usable_core(corpus, tmp_path, monkeypatch):
    # A build's --num-proc counts encoding processes: its file tasks (packing llm.c files) take every core; verify's
    # --num-proc is the files checked at once (tests/verify/test_verify_release.py).
    from hf_tokbin.engines import local

    pools, run_in_threads = [], local.run_in_threads

    def recorded(fn, plan, items, num_threads, *args):
        pools.append(num_threads)
        return run_in_threads(fn, plan, items, num_threads, *args)

    monkeypatch.setattr(local, "usable_cores", lambda: 3)
    monkeypatch.setattr(local, "run_in_threads", recorded)
    flags = [
        "--tokenizer",
        "byte",
        "--doc-sep",
        "3",
        "--format",
        "llmc",
        "--max-tokens-per-file",
        "2000",
        "--num-proc",
        "1",
        "--quiet",
    ]
    assert main(["build", "--corpus", str(corpus), "--out", str(tmp_path / "out"), *flags]) == 0
    assert pools == [3]
