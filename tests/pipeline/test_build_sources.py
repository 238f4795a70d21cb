"""stats.json by source and split (the Megatron release layout): a corpus's source column counted per part,
summed, checked to add up.

Every expected count is computed from the input rows alone, with ``tokenizers`` (or UTF-8 bytes for the byte
tokenizer), never from the release.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from release_fixtures import counts_by_source, source_rows, write_corpus
from tokenizer_files import gpt2_tokenizer_json

import hf_tokbin
from hf_tokbin.cli import main
from hf_tokbin.errors import BuildError, TokbinError
from hf_tokbin.formats.release import Receipt
from hf_tokbin.pipeline import build, plan_build
from hf_tokbin.pipeline import encode as sources_module
from hf_tokbin.pipeline.encode import SourceCounter
from hf_tokbin.tokenizer import resolve_tokenizer
from hf_tokbin.verify.release import verify_release

ROWS = source_rows(120, seed=4)


def write_jsonl(path, rows, rename: dict | None = None):
    rename = rename or {}
    path.write_text(
        "".join(json.dumps({rename.get(k, k): v for k, v in row.items()}) + "\n" for row in rows), encoding="utf-8"
    )
    return path


def stats_of(release) -> dict:
    return json.loads((release / "stats.json").read_text())


def assert_sources_add_up(stats: dict) -> None:
    for split, total in stats["splits"].items():
        for key, value in total.items():
            assert sum(by_split[split][key] for by_split in stats["sources"].values() if split in by_split) == value, (
                split,
                key,
            )


def test_corpus_import_with_a_source_column_then_build_counts_every_source_as_tokenizers_does(tmp_path):
    tokenizer = gpt2_tokenizer_json()
    jsonl = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    corpus, out = tmp_path / "corpus", tmp_path / "release"
    # --shard-rows 9: several parts per split, so the counts are summed over receipts.
    assert (
        main(["corpus", "import", str(jsonl), "--out", str(corpus), "--source-column", "src", "--shard-rows", "9"])
        == 0
    )
    assert main(["build", "--corpus", str(corpus), "--tokenizer", str(tokenizer), "--out", str(out), "--quiet"]) == 0
    stats = stats_of(out)
    assert stats["sources"] == counts_by_source(ROWS, tokenizer / "tokenizer.json")
    assert sorted(stats["sources"]) == ["books", "web", "wiki/fa"] and "validation" not in stats["sources"]["books"]
    assert_sources_add_up(stats)
    receipts = [Receipt.read(p) for p in sorted((out / "receipts").glob("*.json"))]
    assert len(receipts) > 4 and all(r.sources is not None for r in receipts)
    assert json.loads((out / "run_config.json").read_text())["corpus"]["source_column"] == "source"
    verify_release(out)


def test_build_from_raw_jsonl_files_with_a_source_column_counts_by_source_whatever_the_order(tmp_path):
    jsonl = write_jsonl(tmp_path / "rows.jsonl", ROWS, rename={"src": "source"})
    expected = counts_by_source(ROWS, None)
    for seed in (None, "7"):
        out = tmp_path / f"release-{seed}"
        shuffle = ["--shuffle-seed", seed] if seed else []
        assert (
            main(
                [
                    "build",
                    "--corpus",
                    str(jsonl),
                    "--source-column",
                    "source",
                    "--tokenizer",
                    "byte",
                    "--doc-sep",
                    "0",
                    "--out",
                    str(out),
                    "--quiet",
                    *shuffle,
                ]
            )
            == 0
        )
        assert stats_of(out)["sources"] == expected
        verify_release(out)


def test_without_a_source_column_the_receipts_have_no_sources_and_the_dataset_is_the_one_source(tmp_path):
    jsonl = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    out = tmp_path / "release"
    assert (
        main(["build", "--corpus", str(jsonl), "--tokenizer", "byte", "--doc-sep", "0", "--out", str(out), "--quiet"])
        == 0
    )
    stats = stats_of(out)
    assert stats["sources"] == {"release": stats["splits"]}
    assert all("sources" not in json.loads(p.read_text()) for p in (out / "receipts").glob("*.json"))
    assert "source_column" not in json.loads((out / "run_config.json").read_text())["corpus"]


def test_build_release_of_an_in_memory_dataset_with_source_column(tmp_path):
    import datasets

    dataset = datasets.Dataset.from_list(ROWS)
    hf_tokbin.build_release(dataset, "byte", tmp_path / "release", doc_sep=0, source_column="src", progress=False)
    assert stats_of(tmp_path / "release")["sources"] == counts_by_source(ROWS, None)


def test_a_corpus_folder_shard_with_the_named_column_is_counted_and_a_bad_name_is_one_line_naming_shard_and_row(
    tmp_path,
):
    corpus = write_corpus(tmp_path / "corpus", [("train", ["a b", "c", "d e f"])])
    _add_column(corpus, "site", ["x.org", "y.org", "x.org"])
    out = tmp_path / "release"
    build(plan_build(corpus, resolve_tokenizer("byte", doc_sep=0), out, source_column="site"), progress=False)
    assert {name: c["train"]["documents"] for name, c in stats_of(out)["sources"].items()} == {"x.org": 2, "y.org": 1}

    bad = write_corpus(tmp_path / "bad", [("train", ["a b", "c", "d e f"])])
    _add_column(bad, "site", ["x.org", "y\x1b[31m", "x.org"])
    with pytest.raises(TokbinError) as info:
        build(
            plan_build(bad, resolve_tokenizer("byte", doc_sep=0), tmp_path / "bad-release", source_column="site"),
            progress=False,
        )
    message = str(info.value)
    assert (
        "\n" not in message and "data/train-00000.parquet" in message and "row 1" in message and "\x1b" not in message
    )
    with pytest.raises(TokbinError, match="missing source column 'nope'"):
        build(
            plan_build(corpus, resolve_tokenizer("byte", doc_sep=0), tmp_path / "nope", source_column="nope"),
            progress=False,
        )


def _add_column(corpus, name, values):
    """Give the corpus's one shard a column ``name`` and re-pin it in the manifest."""
    import pyarrow.parquet as pq

    from hf_tokbin._io import sha256_file
    from hf_tokbin.formats.corpus_manifest import CorpusManifest, CorpusShard

    manifest = CorpusManifest.read(corpus)
    shard = manifest.shards[0]
    path = corpus / shard.path
    pq.write_table(pq.read_table(path).append_column(name, pa.array(values, pa.string())), path)
    pinned = CorpusShard(shard.path, shard.split, shard.rows, path.stat().st_size, sha256_file(path))
    CorpusManifest(manifest.name, manifest.split_rule, manifest.sources, (pinned,)).write(corpus)


def test_the_counter_sums_per_source_and_bounds_the_distinct_sources(monkeypatch):
    counter = SourceCounter("shard.parquet")
    counter.add(pa.array(["b", "a", "b"]), np.array([3, 1, 5]), np.array([2, 1, 4]))
    counter.add(pa.array(["a"]), np.array([7]), np.array([6]))
    assert counter.totals() == {"a": (2, 7, 8), "b": (2, 6, 8)}
    monkeypatch.setattr(sources_module, "MAX_SOURCES", 2)
    with pytest.raises(BuildError, match="at most 2 distinct sources") as info:
        counter.add(pa.array(["c"]), np.array([1]), np.array([1]))
    assert str(info.value).startswith("shard.parquet: ")


def test_a_limited_build_counts_the_sources_of_the_documents_it_took(tmp_path):
    jsonl = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    corpus, out = tmp_path / "corpus", tmp_path / "release"
    assert main(["corpus", "import", str(jsonl), "--out", str(corpus), "--source-column", "src"]) == 0
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--limit",
                "50",
                "--tokenizer",
                "byte",
                "--doc-sep",
                "0",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    taken = [row for row in ROWS if row["text"] and row["split"] == "train"][:50]
    assert stats_of(out)["sources"] == counts_by_source(taken, None)
    verify_release(out)


def test_a_part_that_counts_a_document_under_the_wrong_source_fails_the_build(tmp_path, monkeypatch):
    jsonl = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    corpus = tmp_path / "corpus"
    assert main(["corpus", "import", str(jsonl), "--out", str(corpus), "--source-column", "src"]) == 0
    counted = SourceCounter.totals

    def one_moved(self):  # still adds up to the part's split counts: only the import's own count can tell
        totals = counted(self)
        (a, b) = sorted(totals)[:2]
        totals[a] = (totals[a][0] - 1, *totals[a][1:])
        totals[b] = (totals[b][0] + 1, *totals[b][1:])
        return totals

    monkeypatch.setattr(SourceCounter, "totals", one_moved)
    with pytest.raises(
        BuildError, match="documents out per source must equal the corpus manifest's documents_by_source"
    ):
        build(plan_build(corpus, resolve_tokenizer("byte", doc_sep=0), tmp_path / "release"), progress=False)


def test_more_distinct_sources_over_all_parts_than_the_bound_stop_the_build_before_the_llmc_files_are_packed(
    tmp_path, monkeypatch
):
    # Each shard holds 2 sources (within the bound of 3), the parts 4 together: the receipts hold them all, and so
    # would stats.json. A plain Hub repo's column (here a kept column, not imported as the source column) is
    # counted only by the parts, so the finish is the first place to see them all; it stops before packing.
    from hf_tokbin.formats.build_options import BuildOptions

    rows = [{"text": f"document {i} " * 3, "src": f"s{i // 5}"} for i in range(20)]
    corpus, out = tmp_path / "corpus", tmp_path / "release"
    assert (
        main(
            [
                "corpus",
                "import",
                str(write_jsonl(tmp_path / "rows.jsonl", rows)),
                "--out",
                str(corpus),
                "--keep-columns",
                "src",
                "--shard-rows",
                "10",
                "--all-train",
            ]
        )
        == 0
    )
    monkeypatch.setattr(sources_module, "MAX_SOURCES", 3)
    plan = plan_build(corpus, resolve_tokenizer("byte", doc_sep=0), out, BuildOptions(source_column="src"))
    with pytest.raises(BuildError, match="at most 3 distinct sources") as info:
        build(plan, progress=False)
    assert "4" in str(info.value) and "a source names a part of the corpus" in str(info.value)
    assert not list(out.rglob("train-*.bin")), "no llm.c file is packed for a build that cannot finish"


def test_a_source_column_the_shards_lack_is_refused_before_the_output_is_touched(tmp_path, capsys):
    # A typo in --source-column: refused at the plan, so the re-run without the typo finds no other build at --out.
    corpus, out = tmp_path / "corpus", tmp_path / "release"
    assert (
        main(
            [
                "corpus",
                "import",
                str(write_jsonl(tmp_path / "rows.jsonl", ROWS)),
                "--out",
                str(corpus),
                "--keep-columns",
                "src",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--source-column",
                "scr",
                "--tokenizer",
                "byte",
                "--doc-sep",
                "0",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        != 0
    )
    assert "missing source column 'scr'" in capsys.readouterr().err
    assert not out.exists()
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--source-column",
                "src",
                "--tokenizer",
                "byte",
                "--doc-sep",
                "0",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )


def test_a_source_column_flag_on_a_corpus_folder_that_counts_its_sources_is_refused_not_ignored(tmp_path, capsys):
    # The folder counts its "source" column (corpus import --source-column); another column named at the build
    # would be silently ignored, and stats.json would not be what the user asked for.
    jsonl = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    corpus, out = tmp_path / "corpus", tmp_path / "release"
    assert main(["corpus", "import", str(jsonl), "--out", str(corpus), "--source-column", "src"]) == 0
    capsys.readouterr()
    code = main(
        [
            "build",
            "--corpus",
            str(corpus),
            "--source-column",
            "src",
            "--tokenizer",
            "byte",
            "--doc-sep",
            "0",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "--source-column" in err and "_MANIFEST.json" in err and "counts its documents by source" in err
    assert not out.exists()
    # Naming the folder's own column is what the build does anyway: accepted.
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--source-column",
                "source",
                "--tokenizer",
                "byte",
                "--doc-sep",
                "0",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    assert stats_of(out)["sources"] == counts_by_source(ROWS, None)
