"""``build --dry-run`` (pipeline/dry_run.py): the plan says what the build will count, with nothing written."""

from __future__ import annotations

import json
import re

from release_fixtures import source_rows, stories, write_corpus

from hf_tokbin.cli import main


def dry_run(capsys, corpus, out, *flags) -> str:
    code = main(
        [
            "build",
            "--corpus",
            str(corpus),
            "--tokenizer",
            "byte",
            "--doc-sep",
            "0",
            "--out",
            str(out),
            "--dry-run",
            *flags,
        ]
    )
    text, err = capsys.readouterr()
    assert code == 0, err
    assert not out.exists()  # nothing written
    return text


def test_the_dry_run_of_a_corpus_with_a_source_column_says_it_counts_by_source(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(row) + "\n" for row in source_rows(40, seed=4)))
    assert (
        main(["corpus", "import", str(rows), "--out", str(tmp_path / "corpus"), "--source-column", "src", "--quiet"])
        == 0
    )
    text = dry_run(capsys, tmp_path / "corpus", tmp_path / "release")
    assert "by source: the column 'source' (3 sources in the corpus manifest)" in text


def test_the_dry_run_of_a_corpus_without_one_says_nothing_of_sources(tmp_path, capsys):
    corpus = write_corpus(tmp_path / "corpus", [("train", stories(5, 1)), ("validation", stories(2, 2))])
    assert "by source" not in dry_run(capsys, corpus, tmp_path / "release")


def test_the_dry_run_of_a_small_corpus_gives_sizes_in_bytes_not_zero_megabytes(tmp_path, capsys):
    corpus = write_corpus(tmp_path / "corpus", [("train", stories(5, 1)), ("validation", stories(2, 2))])
    text = dry_run(capsys, corpus, tmp_path / "release")
    assert "0.0 MB" not in text
    assert len(re.findall(r"^  (megatron|llmc): ~[\d,]+ bytes in ", text, re.M)) == 4  # both formats, both splits
