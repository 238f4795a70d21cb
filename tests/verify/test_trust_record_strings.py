"""Every string of every record is checked on reading: no control character anywhere, each origin field in its own
character set, a pinned revision a commit id.

A hostile publisher writes a release whose records are self-consistent
(COMPLETE.json resealed): ``verify``, ``recipe`` and ``pull`` must refuse it,
and pasting whatever ``recipe`` printed into ``bash`` must run nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hub_server import HubServer
from release_edits import edit_json, reseal

from hf_tokbin.errors import TokbinError
from hf_tokbin.formats.corpus_manifest import CorpusManifest
from hf_tokbin.hub import RetryPolicy, pull_release
from hf_tokbin.verify.release import verify_release

CONSOLE_SCRIPT = Path(sys.executable).with_name("hf-tokbin")
COMMIT = "0123456789abcdef0123456789abcdef01234567"
PAYLOAD = "\ntouch PWNED\n"


@pytest.fixture
def release(copy) -> Path:
    return copy  # a copy of the conftest's release (both formats), for this test to break


def hostile(release: Path, change) -> Path:
    edit_json(release / "run_config.json", change)
    reseal(release)
    return release


def from_the_hub(run_config: dict, revision: str) -> None:
    run_config["tokenizer"].update(source="evil/tokenizer", revision=revision)


def hf_tokbin(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(CONSOLE_SCRIPT), *args], capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.mark.parametrize(
    ("field", "change"),
    [
        ("tokenizer.revision", lambda c: from_the_hub(c, COMMIT + PAYLOAD)),
        ("tokenizer.tokenizer_id", lambda c: c["tokenizer"].update(tokenizer_id="byte\x1b]0;owned\x07")),
        ("split_rule.text", lambda c: c["split_rule"].update(text="train\u202eniart")),
        ("doc_sep.source", lambda c: c["doc_sep"].update(source="--doc-sep\r")),
        ("corpus.name", lambda c: c["corpus"].update(name="tiny\u2028stories")),
    ],
)
def test_a_control_character_in_any_string_of_run_config_is_refused(release, field, change):
    hostile(release, change)
    with pytest.raises(TokbinError, match=rf"run_config.json: {field.replace('.', '[.]')}"):
        verify_release(release)


@pytest.mark.parametrize(
    ("field", "change"),
    [
        ("tokenizer.revision", lambda c: from_the_hub(c, "main")),  # a branch recorded as pinned
        ("tokenizer.revision", lambda c: from_the_hub(c, "$(touch PWNED)")),
        ("tokenizer.source", lambda c: c["tokenizer"].update(source="evil/x;touch PWNED")),
        ("corpus.source", lambda c: c["corpus"].update(source="`touch PWNED`")),
        ("corpus.revision", lambda c: c["corpus"].update(revision=COMMIT)),  # a local corpus has no revision
        ("tokenizer.subfolder", lambda c: c["tokenizer"].update(subfolder="../../etc")),
        ("versions", lambda c: c["versions"].update(hf_tokbin="1.0 && touch PWNED")),
    ],
)
def test_each_origin_field_is_in_its_own_character_set(release, field, change):
    hostile(release, change)
    with pytest.raises(TokbinError, match=rf"run_config.json: {field.replace('.', '[.]')} must be"):
        verify_release(release)


def test_a_commit_id_recorded_for_a_hub_tokenizer_is_accepted(release):
    hostile(release, lambda c: from_the_hub(c, COMMIT))
    verify_release(release)


def test_verify_and_recipe_refuse_a_hostile_release_and_a_pasted_recipe_runs_nothing(release, tmp_path):
    hostile(release, lambda c: from_the_hub(c, COMMIT + PAYLOAD))
    verified = hf_tokbin("verify", str(release))
    assert (
        verified.returncode == 1
        and len(verified.stderr.strip().splitlines()) == 1
        and "tokenizer.revision" in verified.stderr
    )
    for target in ("megatron", "llmc", "nanogpt"):
        shell = tmp_path / f"paste-{target}"
        shell.mkdir()
        printed = hf_tokbin("recipe", str(release), "--for", target, cwd=shell)
        pasted = subprocess.run(["bash"], input=printed.stdout, capture_output=True, text=True, timeout=60, cwd=shell)
        assert not (shell / "PWNED").exists(), (target, printed.stdout, pasted.stderr)
        if target == "megatron":  # its notes name the tokenizer's revision: the record is refused, nothing printed
            assert printed.returncode == 1 and "tokenizer.revision" in printed.stderr and printed.stdout == "", (
                printed.stdout
            )


def test_a_control_character_in_a_corpus_manifest_is_refused(tmp_path):
    from hub_server import make_corpus

    corpus, _ = make_corpus(tmp_path / "corpus")
    path = corpus / "_MANIFEST.json"
    record = json.loads(path.read_text())
    record["shards"][0]["path"] = "data/train-00000.parquet\n; touch PWNED"
    path.write_text(json.dumps(record))
    with pytest.raises(
        TokbinError, match=r"_MANIFEST.json: shards\[0\]\.path: a record's strings hold no control characters"
    ):
        CorpusManifest.read(corpus)


def test_pull_refuses_a_release_with_a_newline_in_its_tokenizer_revision(release, tmp_path):
    hostile(release, lambda c: from_the_hub(c, COMMIT + PAYLOAD))
    with HubServer() as hub:
        hub.seed_repo("tester/hostile", release)
        out = tmp_path / "pulled"
        with pytest.raises(TokbinError, match="tokenizer.revision"):
            pull_release(
                "tester/hostile", out, endpoint=hub.url, retry=RetryPolicy(attempts=1, base_delay=0.01), progress=False
            )
    assert not out.exists()
