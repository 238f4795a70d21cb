"""``pull``'s options as ``hf download`` takes them: an hf:// URL, literal paths in --include, --exclude, --token;
an --include that selects no file of the release is an error, not a records-only copy."""

from __future__ import annotations

import os

import pytest
from hub_server import REPO, TOKEN, cli


@pytest.fixture
def pushed(hub, env, release):
    assert cli(env, "push", release, "--repo", REPO, "--private").returncode == 0
    return release


def held(folder) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_pull_takes_an_hf_url(pushed, env, tmp_path):
    done = cli(env, "pull", f"hf://datasets/{REPO}", "--out", tmp_path / "copy")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "copy" / "COMPLETE.json").is_file()


def test_include_takes_a_literal_path_and_exclude_leaves_files_out(pushed, env, tmp_path):
    one = cli(env, "pull", REPO, "--out", tmp_path / "one", "--include", "shards/train/part-000000.bin")
    assert one.returncode == 0, one.stderr
    pairs = {p for p in held(tmp_path / "one") if p.startswith("shards/")}
    assert pairs == {"shards/train/part-000000.bin", "shards/train/part-000000.idx"}, pairs
    rest = cli(env, "pull", REPO, "--out", tmp_path / "rest", "--exclude", "shards/validation/*")
    assert rest.returncode == 0, rest.stderr
    files = held(tmp_path / "rest")
    assert not any(p.startswith("shards/validation/") for p in files) and "PARTIAL.json" in files, files
    assert any(p.startswith("shards/train/") for p in files) and "COMPLETE.json" not in files


@pytest.mark.parametrize("pattern", ["shards/train/part-9999*", "shards/train/part-999999.bin"])
def test_an_include_that_matches_nothing_is_an_error(pushed, env, tmp_path, pattern):
    done = cli(env, "pull", REPO, "--out", tmp_path / "copy", "--include", pattern)
    assert done.returncode == 1, done.stdout
    assert pattern in done.stderr and "matches no" in done.stderr, done.stderr
    assert not (tmp_path / "copy").exists()


def test_token_on_pull_and_verify(pushed, env, tmp_path):
    anonymous = {k: v for k, v in env.items() if k != "HF_TOKEN"}
    assert cli(anonymous, "pull", REPO, "--out", tmp_path / "denied").returncode == 1  # a private repo
    done = cli(anonymous, "pull", REPO, "--out", tmp_path / "copy", "--token", TOKEN)
    assert done.returncode == 0, done.stderr
    checked = cli(anonymous, "verify", REPO, "--token", TOKEN)
    assert checked.returncode == 0, checked.stderr
    assert TOKEN not in done.stdout + done.stderr + checked.stdout + checked.stderr
    assert os.environ.get("HF_TOKEN") != TOKEN  # the token came from the flag
