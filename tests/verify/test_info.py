"""``hf-tokbin info RELEASE``: a summary read through the releases' own record readers (``Stats``, ``RunConfig``)."""

from __future__ import annotations

import json
import shutil

import pytest
from release_fixtures import build_with_sources, stories, write_corpus

from hf_tokbin.cli import main


def run_main(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """A release of a corpus without a source column (byte tokenizer, EOD 0)."""
    root = tmp_path_factory.mktemp("plain")
    corpus = write_corpus(root / "corpus", [("train", stories(12, 1)), ("validation", stories(4, 2))])
    assert main(["build", "--corpus", str(corpus), "--tokenizer", "byte", "--doc-sep", "0", "--out", str(root / "release"), "--quiet"]) == 0
    return root / "release"


def edited_copy(release, tmp_path, edit):
    """A copy of ``release`` whose stats.json is ``edit``ed."""
    copy = tmp_path / "release"
    shutil.copytree(release, copy)
    stats = json.loads((copy / "stats.json").read_text())
    edit(stats)
    (copy / "stats.json").write_text(json.dumps(stats))
    return copy


@pytest.mark.parametrize(
    "edit, rule",
    [
        (lambda s: s["splits"]["train"].update(total_tokens=s["splits"]["train"]["total_tokens"] + 1), "splits.train.total_tokens must be the sum of the tokens"),
        (lambda s: s.update(dataset="../toy"), "dataset must be one folder name"),
        (lambda s: s.update(sources=[]), "sources must be an object"),
    ],
)
def test_info_reads_stats_json_through_its_reader_and_refuses_what_it_refuses(plain, tmp_path, capsys, edit, rule):
    copy = edited_copy(plain, tmp_path, edit)
    code, out, err = run_main(capsys, "info", copy)
    assert (code, out) == (1, "") and len(err.splitlines()) == 1 and "Traceback" not in err
    assert str(copy / "stats.json") in err and rule in err


def test_info_reads_run_config_json_through_its_reader(plain, tmp_path, capsys):
    copy = edited_copy(plain, tmp_path, lambda s: None)
    config = json.loads((copy / "run_config.json").read_text())
    config["tokenizer"]["vocab_size"] = "lots"  # once printed as it stood: "(vocab lots)"
    (copy / "run_config.json").write_text(json.dumps(config))
    code, out, err = run_main(capsys, "info", copy)
    assert (code, out) == (1, "") and len(err.splitlines()) == 1
    assert str(copy / "run_config.json") in err and "tokenizer.vocab_size" in err
