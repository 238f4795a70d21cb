"""Corpus inputs through datasets' own readers: every accepted form of the same documents gives the same corpus."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import subprocess
import sys
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from hf_tokbin.cli import main
from hf_tokbin.corpus.write import import_corpus
from hf_tokbin.errors import CorpusInputError
from hf_tokbin.formats.corpus_manifest import CorpusManifest

# 90 documents with the awkward parts of real text: non-ASCII, quotes, escapes, tabs, long ones.
DOCUMENTS = [
    f"Document {i}: caf\u00e9 \u201cquoted\u201d \\ backslash \t tab {'long ' * (i * 7)}\u4e2d\u6587 \U0001f600 end."
    for i in range(90)
]


def jsonl_bytes(rows) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")


def corpus_texts(directory: Path) -> list[str]:
    manifest = CorpusManifest.read(directory)
    return [t for s in manifest.shards for t in pq.read_table(directory / s.path).column("text").to_pylist()]


def one_of_each_form(tmp_path: Path) -> dict[str, list]:
    """The same 90 documents in every accepted form, each as the paths to give import_corpus."""
    rows = [{"text": t, "id": i} for i, t in enumerate(DOCUMENTS)]
    data = jsonl_bytes(rows)
    tmp_path.mkdir(parents=True, exist_ok=True)
    forms: dict[str, list] = {}
    (tmp_path / "plain.jsonl").write_bytes(data)
    forms["jsonl"] = [tmp_path / "plain.jsonl"]
    (tmp_path / "c.jsonl.gz").write_bytes(gzip.compress(data))
    forms["gz"] = [tmp_path / "c.jsonl.gz"]
    (tmp_path / "c.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(data))
    forms["zst"] = [tmp_path / "c.jsonl.zst"]
    (tmp_path / "c.jsonl.bz2").write_bytes(bz2.compress(data))
    forms["bz2"] = [tmp_path / "c.jsonl.bz2"]
    (tmp_path / "c.jsonl.xz").write_bytes(lzma.compress(data))
    forms["xz"] = [tmp_path / "c.jsonl.xz"]
    shards = tmp_path / "shards"
    shards.mkdir()
    for k in range(3):  # a glob over three shards, in name order
        (shards / f"part-{k}.jsonl.gz").write_bytes(gzip.compress(jsonl_bytes(rows[k * 30 : (k + 1) * 30])))
    forms["glob"] = [str(shards / "part-*.jsonl.gz")]
    forms["folder"] = [shards]
    (tmp_path / "array.json").write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    forms["json array"] = [tmp_path / "array.json"]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "p.parquet", row_group_size=7)
    forms["parquet"] = [tmp_path / "p.parquet"]
    dataset = datasets.Dataset.from_list(rows)
    dataset.save_to_disk(str(tmp_path / "saved"))
    forms["save_to_disk"] = [tmp_path / "saved"]
    datasets.DatasetDict({"train": dataset}).save_to_disk(str(tmp_path / "saved_dict"))
    forms["save_to_disk dict"] = [tmp_path / "saved_dict"]
    arrows = sorted((tmp_path / "saved").glob("*.arrow"))
    forms["arrow"] = arrows
    return forms


def test_the_same_documents_in_every_accepted_form_give_identical_corpus_texts(tmp_path):
    forms = one_of_each_form(tmp_path / "in")
    shards = {}
    for i, (form, paths) in enumerate(forms.items()):
        out = tmp_path / f"out{i}"
        manifest = import_corpus(paths, out, name="c", shard_rows=40)
        assert corpus_texts(out) == DOCUMENTS, form
        shards[form] = manifest.shards
    # Same documents, same split, same limit: the very same shard bytes.
    assert len({tuple((s.path, s.sha256) for s in v) for v in shards.values()}) == 1


def test_text_files_are_one_document_per_line(tmp_path):
    lines = [d.replace("\t", " ") for d in DOCUMENTS]
    (tmp_path / "a.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "b.txt.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    import_corpus([tmp_path / "a.txt"], tmp_path / "one", name="c")
    import_corpus([tmp_path / "b.txt.gz"], tmp_path / "two", name="c")
    assert corpus_texts(tmp_path / "one") == lines == corpus_texts(tmp_path / "two")


def test_a_dataset_dict_folder_gives_each_split_its_rows(tmp_path):
    datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict({"text": ["a", "b"]}),
            "test": datasets.Dataset.from_dict({"text": ["c"]}),
        }
    ).save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(CorpusInputError, match=r"unknown split name .*got 'test'"):
        import_corpus([tmp_path / "dd"], tmp_path / "refused", name="c")
    manifest = import_corpus([tmp_path / "dd"], tmp_path / "out", name="c", split_map={"test": "validation"})
    assert manifest.split_rule == "files" and (manifest.rows("train"), manifest.rows("validation")) == (2, 1)


def test_limit_keeps_the_first_documents_in_input_order(tmp_path):
    forms = one_of_each_form(tmp_path / "in")
    manifest = import_corpus(forms["glob"], tmp_path / "out", name="c", limit=45)
    assert corpus_texts(tmp_path / "out") == DOCUMENTS[:45] and manifest.rows("train") == 45


def test_several_text_columns_are_joined_in_order(tmp_path):
    (tmp_path / "a.jsonl").write_bytes(jsonl_bytes([{"title": "T1", "body": "B1"}, {"title": "T2", "body": ""}]))
    import_corpus([tmp_path / "a.jsonl"], tmp_path / "out", name="c", text_column=["title", "body"], text_join="\n\n")
    assert corpus_texts(tmp_path / "out") == ["T1\n\nB1", "T2\n\n"]


def test_empty_documents_are_dropped_counted_and_recorded(tmp_path):
    (tmp_path / "a.jsonl").write_bytes(jsonl_bytes([{"text": "a"}, {"text": ""}, {"text": "b"}, {"text": ""}]))
    manifest = import_corpus([tmp_path / "a.jsonl"], tmp_path / "out", name="c")
    assert corpus_texts(tmp_path / "out") == ["a", "b"]
    assert manifest.empty_documents_dropped == 2 == CorpusManifest.read(tmp_path / "out").empty_documents_dropped


def cli_error(capsys, *args) -> str:
    assert main(list(args)) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err  # one line, never a traceback
    return err[0]


def test_deeply_nested_json_is_one_line_naming_file_and_line(tmp_path, capsys):
    path = tmp_path / "deep.jsonl"
    path.write_text('{"text": "ok"}\n{"text": "x", "n": ' + "[" * 100_000 + "]" * 100_000 + "}\n", encoding="utf-8")
    line = cli_error(capsys, "corpus", "import", str(path), "--out", str(tmp_path / "out"))
    assert "deep.jsonl: line 2:" in line and "nested" in line


def test_an_integer_past_pythons_digit_limit_is_one_line_naming_file_and_line(tmp_path, capsys):
    path = tmp_path / "big.jsonl"
    path.write_text('{"text": "ok"}\n{"text": 1' + "0" * 5000 + "}\n", encoding="utf-8")
    line = cli_error(capsys, "corpus", "import", str(path), "--out", str(tmp_path / "out"))
    assert "big.jsonl: line 2:" in line


def test_two_parquet_columns_named_text_is_one_line_naming_the_file(tmp_path, capsys):
    path = tmp_path / "twice.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(["a"]), pa.array(["b"])], names=["text", "text"]), path)
    line = cli_error(capsys, "corpus", "import", str(path), "--out", str(tmp_path / "out"))
    assert "twice.parquet: two columns have the same name" in line


def test_unknown_compressed_type_names_the_accepted_inputs(tmp_path, capsys):
    path = tmp_path / "a.csv.gz"
    path.write_bytes(gzip.compress(b"text\na\n"))
    line = cli_error(capsys, "corpus", "import", str(path), "--out", str(tmp_path / "out"))
    assert "a.csv.gz: unknown input file type" in line and ".zst" in line


def test_kept_and_source_columns_go_into_the_shards_and_sources_are_counted(tmp_path):
    rows = [
        {
            "text": f"t{i}",
            "url": f"u{i}",
            "n": i,
            "src": "web" if i % 3 else "books",
            "split": "validation" if i == 4 else "train",
        }
        for i in range(9)
    ]
    (tmp_path / "a.jsonl").write_bytes(jsonl_bytes(rows))
    manifest = import_corpus(
        [tmp_path / "a.jsonl"], tmp_path / "out", name="c", keep_columns=["url", "n"], source_column="src"
    )
    table = pq.read_table(tmp_path / "out" / manifest.shards[0].path)
    assert table.column_names == ["text", "split", "url", "n", "source"]
    assert table.column("url").to_pylist() == [r["url"] for r in rows if r["split"] == "train"]
    assert manifest.documents_by_source == {"train": {"books": 3, "web": 5}, "validation": {"web": 1}}
    assert CorpusManifest.read(tmp_path / "out") == manifest
    loaded = datasets.load_dataset(str(tmp_path / "out"), cache_dir=str(tmp_path / "cache"))
    assert loaded["train"]["n"][:] == [r["n"] for r in rows if r["split"] == "train"]
    with pytest.raises(CorpusInputError, match="missing kept column 'nope'"):
        import_corpus([tmp_path / "a.jsonl"], tmp_path / "x", name="c", keep_columns=["nope"])


def _damaged_saved_folder(root: Path, damage: str, with_ids: bool) -> tuple[Path, str]:
    """A save_to_disk folder with one damage; the file its error must name."""
    texts = [f"story {i} is here" for i in range(50)]
    columns = {"text": texts, **({"input_ids": [list(t.encode()) for t in texts]} if with_ids else {})}
    folder = root / "saved"
    datasets.Dataset.from_dict(columns).save_to_disk(str(folder))
    arrow = next(folder.glob("*.arrow"))
    if damage == "truncated .arrow":
        arrow.write_bytes(arrow.read_bytes()[: arrow.stat().st_size // 2])
        return folder, arrow.name
    if damage == "features disagree":
        info = json.loads((folder / "dataset_info.json").read_text())
        info["features"]["text"] = {"dtype": "int64", "_type": "Value"}
        (folder / "dataset_info.json").write_text(json.dumps(info))
        return folder, "dataset_info.json"
    state = json.loads((folder / "state.json").read_text())
    state["_format_type"] = damage.split(": ")[1]
    (folder / "state.json").write_text(json.dumps(state))
    return folder, ""


def _build_with_bytes(folder, out):
    """``hf-tokbin build`` of a saved folder with the byte tokenizer, in a child process."""
    command = [
        sys.executable,
        "-m",
        "hf_tokbin",
        "build",
        "--corpus",
        str(folder),
        "--tokenizer",
        "byte",
        "--doc-sep",
        "0",
    ]
    return subprocess.run([*command, "--out", str(out), "--quiet"], capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("with_ids", [False, True], ids=["text", "text and input_ids"])
@pytest.mark.parametrize("damage", ["truncated .arrow", "features disagree"])
def test_a_damaged_save_to_disk_folder_is_one_line_naming_the_file(tmp_path, damage, with_ids):
    folder, named = _damaged_saved_folder(tmp_path, damage, with_ids)
    result = _build_with_bytes(folder, tmp_path / "out")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert f"{folder / named}: " in lines[0] and "save_to_disk" in lines[0], lines[0]


@pytest.mark.parametrize("with_ids", [False, True], ids=["text", "text and input_ids"])
@pytest.mark.parametrize("damage", ["_format_type: torch", "_format_type: jax", "_format_type: nonsense"])
def test_a_saved_folder_is_read_as_its_arrow_files_whatever_format_it_was_saved_with(tmp_path, damage, with_ids):
    folder, _ = _damaged_saved_folder(tmp_path, damage, with_ids)
    result = _build_with_bytes(folder, tmp_path / "out")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "out" / "COMPLETE.json").is_file()
