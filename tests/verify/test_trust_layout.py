"""``verify`` accepts exactly the release layout, by the same rule a pull applies."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from release_edits import refused, reseal  # the fixture both: tests/conftest.py

from hf_tokbin.errors import HubError
from hf_tokbin.formats.release import is_layout_path
from hf_tokbin.hub.layout import check_path
from hf_tokbin.verify.release import verify_release


@pytest.fixture
def copy(both, tmp_path) -> Path:  # noqa: F811
    return Path(shutil.copytree(both, tmp_path / "release"))


@pytest.mark.parametrize(
    "name",
    ["~/t.txt", "a\nb.txt", "notes.txt", "run_config.json.bak", "tokens.txt", "receipts.json", "shards/train/x.txt"],
)
def test_a_listed_file_outside_the_layout_is_refused(copy, name):
    (copy / name).parent.mkdir(parents=True, exist_ok=True)
    (copy / name).write_text("planted")
    reseal(copy)
    message = refused(copy)
    assert "COMPLETE.json" in message or "shards" in message


def test_the_layout_rule_is_the_pulls(copy):
    # Every path the release lists passes both; paths outside it fail both.
    from hf_tokbin.formats.release import Complete

    for entry in Complete.read(copy).files:
        assert is_layout_path(entry.path)
        check_path("release", entry.path, "COMPLETE.json")
    for path in [
        "~/t.txt",
        "a\nb",
        "notes.txt",
        ".git/config",
        "tokens/a/b/.x",
        "/abs",
        "shards/../x",
        "tokens/a/b/c/d",
        "README.md ",
    ]:
        assert not is_layout_path(path)
        with pytest.raises(HubError):
            check_path("release", path, "COMPLETE.json")


def test_the_release_still_verifies(copy):
    verify_release(copy)
