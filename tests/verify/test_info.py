"""``hf-tokbin info RELEASE``: a summary read through the releases' own record readers (``Stats``, ``RunConfig``)."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from release_edits import edit_json
from release_fixtures import build_release, build_with_sources, source_rows

from hf_tokbin.cli import main


def run_main(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """A release of a corpus without a source column (byte tokenizer, EOD 0)."""
    return build_release(tmp_path_factory.mktemp("plain"))


def edited_copy(release, tmp_path, name, edit):
    """A copy of ``release`` whose record ``name`` is ``edit``ed."""
    copy = tmp_path / "release"
    shutil.copytree(release, copy)
    edit_json(copy / name, edit)
    return copy


@pytest.mark.parametrize(
    "edit, rule",
    [
        (
            lambda s: s["splits"]["train"].update(total_tokens=s["splits"]["train"]["total_tokens"] + 1),
            "splits.train.total_tokens must be the sum of the tokens",
        ),
        (lambda s: s.update(dataset="../toy"), "dataset must be one folder name"),
        (lambda s: s.update(sources=[]), "sources must be an object"),
    ],
)
def test_info_reads_stats_json_through_its_reader_and_refuses_what_it_refuses(plain, tmp_path, capsys, edit, rule):
    copy = edited_copy(plain, tmp_path, "stats.json", edit)
    code, out, err = run_main(capsys, "info", copy)
    assert (code, out) == (1, "") and len(err.splitlines()) == 1 and "Traceback" not in err
    assert str(copy / "stats.json") in err and rule in err


def test_info_reads_run_config_json_through_its_reader(plain, tmp_path, capsys):
    # Once printed as it stood: "(vocab lots)".
    copy = edited_copy(
        plain, tmp_path, "run_config.json", lambda config: config["tokenizer"].update(vocab_size="lots")
    )
    code, out, err = run_main(capsys, "info", copy)
    assert (code, out) == (1, "") and len(err.splitlines()) == 1
    assert str(copy / "run_config.json") in err and "tokenizer.vocab_size" in err


@pytest.fixture(scope="module")
def by_source(tmp_path_factory):
    """A release built with --source-column src: three sources, one of them never in validation."""
    return build_with_sources(tmp_path_factory.mktemp("sources"), source_rows(60, seed=4))


@pytest.fixture(scope="module")
def many_sources(tmp_path_factory):
    """A release counting 25 sources, source ``sNN`` the NN+1-th largest in tokens (sources of every size, no tie)."""
    rows = [
        {"text": "word " * (10 * (25 - i)), "src": f"s{i:02d}", "split": "validation" if i % 5 == 0 else "train"}
        for i in range(25)
    ]
    return build_with_sources(tmp_path_factory.mktemp("many"), rows)


SOURCE_ROW = re.compile(r"^(\S+)\s+(train|validation)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+[\d.]+$")


def source_table(text: str) -> dict:
    """The by-source rows of info's text: {(source, split): (documents, text tokens, EOD, total)}, in their order."""
    rows = {}
    for line in text.splitlines():
        found = SOURCE_ROW.match(line)
        if found:
            rows[found.group(1), found.group(2)] = tuple(int(v.replace(",", "")) for v in found.groups()[2:])
    return rows


def stats_rows(release) -> dict:
    sources = json.loads((release / "stats.json").read_text())["sources"]
    return {
        (name, split): (c["documents"], c["text_tokens"], c["eod_tokens"], c["total_tokens"])
        for name, by_split in sources.items()
        for split, c in by_split.items()
    }


def test_info_of_a_release_counted_by_source_shows_each_source_s_counts(by_source, capsys):
    code, out, err = run_main(capsys, "info", by_source)
    assert code == 0, err
    assert "by source (column 'source'): 3 sources" in out
    assert source_table(out) == stats_rows(by_source)  # every source and split, each count as stats.json has it


def test_info_caps_the_source_table_largest_first_and_says_how_many_more(many_sources, capsys):
    code, out, err = run_main(capsys, "info", many_sources)
    assert code == 0, err
    shown = source_table(out)
    assert [name for name, _ in shown] == [f"s{i:02d}" for i in range(20)]  # largest first, 20 of 25
    assert all(stats_rows(many_sources)[key] == counts for key, counts in shown.items())
    assert "... 5 more sources" in out


def test_info_json_carries_every_source_and_the_column(many_sources, plain, capsys):
    code, out, _ = run_main(capsys, "info", many_sources, "--json")
    record = json.loads(out)
    assert code == 0 and record["source_column"] == "source"
    assert (
        record["sources"] == json.loads((many_sources / "stats.json").read_text())["sources"]
        and len(record["sources"]) == 25
    )
    code, out, _ = run_main(capsys, "info", plain, "--json")
    assert code == 0 and json.loads(out)["source_column"] is None


def test_info_of_a_release_without_a_source_column_shows_no_source_table(plain, capsys):
    code, out, _ = run_main(capsys, "info", plain)
    assert code == 0 and "by source" not in out and source_table(out) == {}
