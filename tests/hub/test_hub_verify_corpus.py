"""``hf-tokbin verify NS/NAME`` of a pushed corpus folder: checked as a corpus, against its _MANIFEST.json."""

from __future__ import annotations

import json

from hub_server import cli, make_corpus


def test_a_pushed_corpus_verifies_as_a_corpus(hub, env, tmp_path):
    corpus, rows = make_corpus(tmp_path / "corpus")
    assert cli(env, "push", corpus, "--repo", "tester/corpus").returncode == 0
    done = cli(env, "verify", "tester/corpus")
    assert done.returncode == 0, done.stderr
    assert "OK" in done.stdout and "corpus" in done.stdout and "_MANIFEST.json" in done.stdout, done.stdout
    record = json.loads(cli(env, "verify", "tester/corpus", "--json").stdout)
    assert record["ok"] and record["kind"] == "hub corpus", record
    manifest = json.loads((corpus / "_MANIFEST.json").read_text())
    assert record["shards"] == len(manifest["shards"]), record


def test_a_corpus_shard_changed_on_the_hub_is_named(hub, env, tmp_path):
    corpus, rows = make_corpus(tmp_path / "corpus")
    assert cli(env, "push", corpus, "--repo", "tester/corpus").returncode == 0
    manifest = json.loads((corpus / "_MANIFEST.json").read_text())
    shard = manifest["shards"][0]["path"]
    changed = tmp_path / "changed" / shard
    changed.parent.mkdir(parents=True)
    changed.write_bytes(b"not the shard's bytes")
    hub.seed_repo("tester/corpus", tmp_path / "changed")  # a later commit replaces the shard, not _MANIFEST.json
    done = cli(env, "verify", "tester/corpus")
    assert done.returncode == 1 and shard in done.stderr, done.stderr
