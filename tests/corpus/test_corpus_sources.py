"""``corpus import --source-column``: a ``source`` column of checked
source names, counted in the manifest, loadable by datasets.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hf_tokbin
from hf_tokbin.cli import main
from hf_tokbin.corpus import write as corpus_write
from hf_tokbin.errors import CorpusInputError, FormatError
from hf_tokbin.formats.corpus_manifest import CorpusManifest

ROWS = [
    {"text": f"document {i}", "src": ["web", "books"][i % 2], "split": "validation" if i == 4 else "train"}
    for i in range(6)
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("bad, shown", [(None, "null"), ("web\x1b[2J", "\\x1b"), ("a|b", "a|b"), ("", "''")])
def test_a_null_or_unprintable_source_in_jsonl_is_one_line_naming_the_file_and_line(tmp_path, capsys, bad, shown):
    rows = [*ROWS[:3], {**ROWS[3], "src": bad}, *ROWS[4:]]
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    assert main(["corpus", "import", str(path), "--out", str(tmp_path / "out"), "--source-column", "src"]) != 0
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "\x1b" not in err
    assert f"{path}: line 4: source column 'src' must hold a source name" in err and shown in err
    assert not (tmp_path / "out").exists()


def test_a_bad_source_in_a_parquet_input_names_the_file_and_row(tmp_path):
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"text": ["a", "b", "c"], "src": ["web", "web", "new\nline"]}), path)
    with pytest.raises(CorpusInputError) as info:
        corpus_write.import_corpus([path], tmp_path / "out", source_column="src")
    assert str(info.value).startswith(f"{path}: row 2: source column 'src' must hold a source name")
    assert "\n" not in str(info.value)


def test_an_in_memory_dataset_keeps_its_source_column_and_datasets_loads_the_corpus(tmp_path):
    import datasets

    manifest = hf_tokbin.import_dataset(datasets.Dataset.from_list(ROWS), tmp_path / "corpus", source_column="src")
    assert manifest.documents_by_source == {"train": {"books": 3, "web": 2}, "validation": {"web": 1}}
    assert pq.read_schema(tmp_path / "corpus" / manifest.shards[0].path).names == ["text", "split", "source"]
    card = (tmp_path / "corpus" / "README.md").read_text()
    assert "name: source" in card
    loaded = datasets.load_dataset(str(tmp_path / "corpus"), cache_dir=str(tmp_path / "cache"))
    assert loaded["train"].features["source"] == datasets.Value("string")
    assert loaded["train"]["source"][:] == [r["src"] for r in ROWS if r["split"] == "train"]


def test_more_distinct_sources_than_the_bound_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus_write, "MAX_SOURCES", 2)
    path = write_jsonl(tmp_path / "rows.jsonl", [{"text": f"t{i}", "src": f"s{i}"} for i in range(3)])
    with pytest.raises(CorpusInputError, match="at most 2 distinct sources"):
        corpus_write.import_corpus([path], tmp_path / "out", source_column="src")


def test_the_bound_is_on_the_distinct_sources_of_all_splits_together(tmp_path, monkeypatch):
    # stats.json counts every source of both splits: 2 in train and 2 others in validation are 4, past a bound of 3,
    # and a corpus that no build could finish is refused at import, not after a build encoded all of it.
    monkeypatch.setattr(corpus_write, "MAX_SOURCES", 3)
    rows = [{"text": f"t{i}", "src": f"s{i % 4}", "split": "train" if i % 4 < 2 else "validation"} for i in range(8)]
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    with pytest.raises(CorpusInputError, match="at most 3 distinct sources"):
        corpus_write.import_corpus([path], tmp_path / "out", source_column="src")


def test_a_manifest_counting_more_distinct_sources_than_the_bound_over_its_splits_is_refused(tmp_path, monkeypatch):
    from hf_tokbin.formats import corpus_manifest

    rows = [{"text": f"t{i}", "src": f"s{i % 4}", "split": "train" if i % 4 < 2 else "validation"} for i in range(8)]
    corpus_write.import_corpus([write_jsonl(tmp_path / "rows.jsonl", rows)], tmp_path / "corpus", source_column="src")
    monkeypatch.setattr(corpus_manifest, "MAX_SOURCES", 3)
    with pytest.raises(FormatError, match="documents_by_source must map"):
        CorpusManifest.read(tmp_path / "corpus")


def test_a_manifest_counting_a_source_that_is_no_source_name_is_refused(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    corpus_write.import_corpus([path], tmp_path / "corpus", source_column="src")
    manifest_path = tmp_path / "corpus" / "_MANIFEST.json"
    record = json.loads(manifest_path.read_text())
    record["documents_by_source"]["train"]["<b>web</b>"] = record["documents_by_source"]["train"].pop("web")
    manifest_path.write_text(json.dumps(record))
    with pytest.raises(FormatError, match="documents_by_source must map") as info:
        CorpusManifest.read(tmp_path / "corpus")
    assert str(info.value).startswith(str(manifest_path))


def test_verify_of_a_corpus_holds_the_build_s_bound_on_distinct_sources(tmp_path):
    # A shard whose source column names more distinct sources than any build counts: verify stops at the bound
    # (naming the shard), as the build does, instead of counting them all.
    from hf_tokbin._io import sha256_file
    from hf_tokbin.errors import VerificationError
    from hf_tokbin.formats.rules import MAX_SOURCES
    from hf_tokbin.verify.corpus import verify_corpus

    write_jsonl(tmp_path / "rows.jsonl", [{"text": "a story", "src": "web"}])
    assert (
        main(
            [
                "corpus",
                "import",
                str(tmp_path / "rows.jsonl"),
                "--out",
                str(tmp_path / "corpus"),
                "--source-column",
                "src",
            ]
        )
        == 0
    )
    manifest_path = tmp_path / "corpus" / "_MANIFEST.json"
    manifest = json.loads(manifest_path.read_text())
    (entry,) = manifest["shards"]
    shard = tmp_path / "corpus" / entry["path"]
    table = pq.read_table(shard)
    n = MAX_SOURCES + 1
    columns = {"text": ["a story"] * n, "split": ["train"] * n, "source": [f"s{i}" for i in range(n)]}
    pq.write_table(
        pa.table({name: pa.array(columns[name], type=table.schema.field(name).type) for name in table.schema.names}),
        shard,
    )
    entry.update(rows=n, size=shard.stat().st_size, sha256=sha256_file(shard))
    manifest["documents_by_source"] = {"train": {"web": n}}
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(VerificationError, match=rf"{entry['path']}: .*at most {MAX_SOURCES:,} distinct sources"):
        verify_corpus(tmp_path / "corpus")
