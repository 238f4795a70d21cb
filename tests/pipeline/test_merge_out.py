"""Review: ``merge --out`` inside the release folder made the release fail its own verify."""

from __future__ import annotations

import shutil

import pytest
from release_fixtures import stories, write_corpus

from hf_tokbin.cli import main
from hf_tokbin.errors import BuildError
from hf_tokbin.pipeline import build, plan_build
from hf_tokbin.pipeline.merge import merge_release
from hf_tokbin.tokenizer import resolve_tokenizer
from hf_tokbin.verify.release import verify_release


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("merge_inside")
    corpus = write_corpus(root / "corpus", [("train", stories(12, 1)), ("validation", stories(4, 2))])
    out = root / "release"
    build(plan_build(corpus, resolve_tokenizer("byte", doc_sep_id=0), out), progress=False)
    return out


@pytest.mark.parametrize("inside", ["merged", "shards/train/merged", "."])
def test_a_merge_folder_inside_the_release_is_refused_and_the_release_stays_valid(built, tmp_path, inside, capsys):
    release = shutil.copytree(built, tmp_path / "release")
    before = sorted(p.relative_to(release).as_posix() for p in release.rglob("*"))
    with pytest.raises(BuildError, match="the merge folder must be outside the release|must be new or empty"):
        merge_release(release, release / inside)
    capsys.readouterr()
    assert main(["merge", str(release), "--out", str(release / inside)]) == 1
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert sorted(p.relative_to(release).as_posix() for p in release.rglob("*")) == before
    verify_release(release)


def test_a_merge_folder_beside_the_release_still_works(built, tmp_path):
    release = shutil.copytree(built, tmp_path / "release")
    record = merge_release(release, tmp_path / "release-merged")
    assert record["splits"]["train"]["documents"] == 12
    verify_release(release)
