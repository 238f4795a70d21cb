"""The private APIs of datasets and huggingface_hub that hf_tokbin uses (hf_tokbin/corpus/private_apis.py) are pinned:
each still exists with the parameters we pass, and still does what we rely on. An upgrade that changes one fails
here.
"""

from __future__ import annotations

import importlib
import inspect

import pyarrow as pa
import pytest
from datasets.data_files import DataFilesDict, DataFilesList

from hf_tokbin.corpus.builders import CorpusShards
from hf_tokbin.corpus.private_apis import (
    PINNED,
    PINNED_TABLES,
    all_allowed_extensions,
    module_file_filter,
    record_cached_ref,
    stream_builder_tables,
)


@pytest.mark.parametrize(("module", "name", "parameters"), PINNED, ids=[name for _, name, _ in PINNED])
def test_a_pinned_private_api_exists_with_the_parameters_we_pass(module, name, parameters):
    target = importlib.import_module(module)
    for part in name.split("."):
        target = getattr(target, part)
    assert tuple(inspect.signature(target).parameters) == parameters


@pytest.mark.parametrize(("module", "name"), PINNED_TABLES, ids=[name for _, name in PINNED_TABLES])
def test_a_pinned_private_table_exists(module, name):
    assert getattr(importlib.import_module(module), name)


def test_the_extension_tables_keep_what_datasets_keeps():
    assert ".parquet" in all_allowed_extensions() and ".jsonl" in all_allowed_extensions()
    keep = module_file_filter("parquet")
    assert keep("data/train-0.parquet") and not keep("data/train-0.csv") and not keep("notes.txt")


def test_a_builder_s_split_streams_its_tables_through_its_own_generators(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"text": "one"}\n{"text": "two"}\n')
    data_files = DataFilesDict({"input": DataFilesList([str(tmp_path / "a.jsonl")], [()])})
    builder = CorpusShards(cache_dir=str(tmp_path / "cache"), data_files=data_files)
    tables = list(stream_builder_tables(builder, "input"))
    assert all(isinstance(t, pa.Table) for t in tables)
    assert [t for table in tables for t in table.column("text").to_pylist()] == ["one", "two"]
    # streamed: no Arrow cache copy
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.arrow"))


def test_a_recorded_ref_is_what_an_offline_lookup_of_the_branch_finds(tmp_path, monkeypatch):
    from huggingface_hub import constants, try_to_load_from_cache

    commit = "ab" * 20
    storage = tmp_path / "datasets--ns--name"
    snapshot = storage / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (snapshot / "_MANIFEST.json").write_text("{}")
    record_cached_ref(snapshot, "main", commit)
    assert (storage / "refs" / "main").read_text() == commit
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    found = try_to_load_from_cache(
        "ns/name", "_MANIFEST.json", cache_dir=tmp_path, revision="main", repo_type="dataset"
    )
    assert found == str(snapshot / "_MANIFEST.json")
