"""A partial copy (``pull --include``) verifies, merges and gets recipes (issue 22).

``PARTIAL.json`` keeps ``COMPLETE.json``'s whole listing: ``verify`` checks every
file the copy holds against its entry, says what is absent, and applies the
records' rules as for a whole release; ``merge`` merges the splits it holds.
"""

from __future__ import annotations

import json
import shutil

import pytest
from hostile_hub import HostileHub

from hf_tokbin.cli import main
from hf_tokbin.errors import VerificationError
from hf_tokbin.hub import RetryPolicy, pull_release
from hf_tokbin.pipeline.merge import merge_release
from hf_tokbin.trainers import LoaderSettings, recipe
from hf_tokbin.verify.release import verify_release

TOKEN = "hf_partial_test_token_0123456789"
REPO = "tester/release"


@pytest.fixture
def partial(release, tmp_path):
    with HostileHub(token=TOKEN) as hub:
        hub.seed_repo(REPO, release)
        out = tmp_path / "partial"
        pull_release(REPO, out, endpoint=hub.url, token=TOKEN, include=["llmc:train", "megatron:train"], retry=RetryPolicy(attempts=2, base_delay=0.01), progress=False)
    return out


def test_a_partial_copy_verifies_and_names_what_is_absent(partial, capsys):
    assert not (partial / "COMPLETE.json").exists() and not list((partial / "shards").glob("validation/*"))
    report = verify_release(partial)
    (warning,) = [w for w in report.warnings if w.startswith("partial copy")]
    assert "absent" in warning and "validation" in warning
    assert main(["verify", str(partial)]) == 0
    assert "partial copy:" in capsys.readouterr().out


def test_a_changed_or_extra_file_in_a_partial_copy_is_an_error(partial, tmp_path):
    changed = shutil.copytree(partial, tmp_path / "changed")
    (pair,) = sorted((changed / "shards" / "train").glob("*.bin"))[:1]
    data = bytearray(pair.read_bytes())
    data[0] ^= 1
    pair.write_bytes(bytes(data))
    with pytest.raises(VerificationError, match="SHA-256"):
        verify_release(changed)
    extra = shutil.copytree(partial, tmp_path / "extra")
    (extra / "notes.txt").write_text("x")  # outside the release layout: no part of it, reported
    assert any("notes.txt" in w and "outside the release layout" in w for w in verify_release(extra).warnings)
    (extra / "shards" / "validation").mkdir(exist_ok=True)
    (extra / "shards" / "validation" / "part-000099.bin").write_bytes(b"x")  # inside the layout: the copy is broken
    with pytest.raises(VerificationError, match="not listed in PARTIAL.json"):
        verify_release(extra)


def test_a_partial_copy_merges_the_splits_it_holds(partial, tmp_path):
    record = merge_release(partial, tmp_path / "merged")
    assert list(record["splits"]) == ["train"] and (tmp_path / "merged" / "train.bin").is_file()
    listing = json.loads((partial / "PARTIAL.json").read_text())["complete"]
    assert len(listing) > len(json.loads((partial / "PARTIAL.json").read_text())["files"])


def test_recipes_work_on_a_partial_copy(partial):
    s = LoaderSettings(batch_size=1, seq_len=4)
    megatron_argv = recipe(partial, "megatron", s).commands[0]
    assert "--train-data-path" in megatron_argv and "--valid-data-path" not in megatron_argv
    llmc = recipe(partial, "llmc", s)
    assert not [f for f in llmc.findings if f.rule == "glob"]  # the glob selects exactly the files the copy holds


def test_an_include_glob_that_matches_nothing_is_an_error(release, tmp_path, capsys, monkeypatch):
    # A typo in a glob would otherwise leave a copy of the records alone, which verifies OK.
    from hf_tokbin.errors import HubError

    with HostileHub(token=TOKEN) as hub:
        hub.seed_repo(REPO, release)
        with pytest.raises(HubError, match=r"--include: .*shards/train/part-9\* matches no file"):
            pull_release(
                REPO,
                tmp_path / "copy",
                endpoint=hub.url,
                token=TOKEN,
                include=["shards/train/part-9*"],
                retry=RetryPolicy(attempts=2, base_delay=0.01),
                progress=False,
            )
        assert not (tmp_path / "copy").exists()
        capsys.readouterr()
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        status = main(
            [
                "pull",
                REPO,
                "--out",
                str(tmp_path / "copy"),
                "--endpoint",
                hub.url,
                "--include",
                "shards/train/part-9*",
                "--quiet",
            ]
        )
    assert status == 1 and "matches no file" in capsys.readouterr().err
