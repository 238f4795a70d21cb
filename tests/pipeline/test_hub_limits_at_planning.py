"""A release too large for one Hub folder is refused at build planning, before any work, with the shard size that
would fit."""

from __future__ import annotations

import pytest

from hf_tokbin.errors import BuildError
from hf_tokbin.formats.corpus_manifest import CorpusManifest, CorpusShard
from hf_tokbin.pipeline import plan_build
from hf_tokbin.tokenizer import resolve_tokenizer


def manifest_with_parts(folder, n_parts: int) -> None:
    """A corpus manifest listing ``n_parts`` train shards (planning reads the manifest; the shards themselves are
    checked later)."""
    shards = tuple(CorpusShard(f"data/train-{i:05d}.parquet", "train", 1, 10, f"{i:064x}") for i in range(n_parts))
    folder.mkdir()
    CorpusManifest("big", "files", (), shards, "mit", ("en",)).write(folder)


class _NoShardCheck:
    """Planning's shard source, without files on disk: this test is about the release's layout only."""

    def check(self, manifest):
        pass


def test_twenty_thousand_parts_are_refused_before_any_work(tmp_path):
    manifest_with_parts(tmp_path / "corpus", 20_000)
    with pytest.raises(
        BuildError, match=r"would hold (20|40),000 entries, the Hub allows at most 10,000 per folder.*about 4x larger"
    ):
        plan_build(tmp_path / "corpus", resolve_tokenizer("byte", doc_sep=0), tmp_path / "out", shards=_NoShardCheck())
    assert not (tmp_path / "out").exists()


def test_five_thousand_parts_fit(tmp_path):
    manifest_with_parts(tmp_path / "corpus", 5_000)
    plan = plan_build(
        tmp_path / "corpus", resolve_tokenizer("byte", doc_sep=0), tmp_path / "out", shards=_NoShardCheck()
    )
    assert len(plan.corpus.shards) == 5_000
