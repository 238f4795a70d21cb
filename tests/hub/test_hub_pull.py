"""Pull (hf_tokbin.hub.pull) against the Hub-protocol test server, with the real huggingface_hub client.

Downloads never use Xet here (the server offers none), so pulls run in
process; the client is pointed at the server by arguments (endpoint, token,
cache_dir), never patched. Releases are placed on the server directly, so
these tests do not depend on push.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading

import pytest
from hostile_hub import HostileHub
from hub_server import client_env, make_corpus, make_release, write_complete
from release_fixtures import build_release

from hf_tokbin.errors import FormatError, HubError, VerificationError
from hf_tokbin.hub import RetryPolicy, pull_release
from hf_tokbin.hub import pull as pull_module

TOKEN = "hf_pull_test_token_0123456789"
REPO = "tester/release"
FAST = RetryPolicy(attempts=3, base_delay=0.01)


@pytest.fixture
def hub():
    with HostileHub(token=TOKEN) as server:
        yield server


@pytest.fixture
def verified_release(release):
    return release


def pull(hub, tmp_path, out, **kwargs):
    return pull_release(REPO, out, endpoint=hub.url, token=TOKEN, retry=FAST, progress=False, **kwargs)


def files_under(root) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def leftovers(parent, out_name) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".{out_name}.pull-"))


def test_pull_downloads_and_verifies_a_release(hub, tmp_path, verified_release):
    release = verified_release
    commit = hub.seed_repo(REPO, release)
    out = tmp_path / "out"
    summary = pull(hub, tmp_path, out)
    assert files_under(out) == files_under(release)  # no .gitattributes, no client state
    assert (
        summary.commit == commit
        and summary.complete
        and summary.receipts == 3
        and summary.fetched == summary.files - 1
    )
    assert summary.files == len(files_under(release))
    assert leftovers(tmp_path, "out") == []


def test_pull_refuses_a_release_without_complete_json(hub, tmp_path):
    release = make_release(tmp_path / "release")
    hub.seed_repo(REPO, release, skip=("COMPLETE.json",))
    out = tmp_path / "out"
    with pytest.raises(HubError, match="release is incomplete: COMPLETE.json is missing"):
        pull(hub, tmp_path, out)
    assert not out.exists() and leftovers(tmp_path, "out") == []


def test_allow_incomplete_downloads_and_checks_what_receipts_vouch_for(hub, tmp_path):
    release = make_release(tmp_path / "release")
    hub.seed_repo(REPO, release, skip=("COMPLETE.json",))
    out = tmp_path / "out"
    summary = pull(hub, tmp_path, out, allow_incomplete=True)
    expected = files_under(release)
    expected.pop("COMPLETE.json")
    assert files_under(out) == expected
    assert not summary.complete and "INCOMPLETE" in str(summary)


def test_allow_incomplete_still_checks_receipts(hub, tmp_path):
    release = make_release(tmp_path / "release")
    receipt_path = release / "receipts/part-000002.json"
    receipt = json.loads(receipt_path.read_text())
    receipt["files"][0]["sha256"] = "0" * 64  # the receipt vouches for other bytes than the repo holds
    receipt_path.write_text(json.dumps(receipt, indent=2) + "\n")
    hub.seed_repo(REPO, release, skip=("COMPLETE.json",))
    with pytest.raises(
        VerificationError, match=receipt["files"][0]["path"] + ": SHA-256 differs from receipt part-000002"
    ):
        pull(hub, tmp_path, tmp_path / "out", allow_incomplete=True)
    assert not (tmp_path / "out").exists()


def test_a_flipped_byte_is_an_error_naming_the_file_and_nothing_is_left(hub, tmp_path):
    release = make_release(tmp_path / "release")
    commit = hub.seed_repo(REPO, release)
    hub.flip_stored_byte(REPO, "shards/train/part-000001.idx")
    out = tmp_path / "out"
    with pytest.raises(VerificationError) as error:
        pull(hub, tmp_path, out)
    # The file on the Hub, not the staging folder.
    assert error.value.path == f"hf://datasets/{REPO}@{commit}/shards/train/part-000001.idx"
    assert ".pull-" not in str(error.value)
    assert error.value.rule == "SHA-256 differs from COMPLETE.json"
    assert not out.exists() and leftovers(tmp_path, "out") == [f".out.pull-{commit}"]
    # never under its final name
    assert not (tmp_path / f".out.pull-{commit}" / "shards/train/part-000001.idx").exists()


def test_a_receipt_that_disagrees_with_complete_json_is_an_error(hub, tmp_path):
    release = make_release(tmp_path / "release")
    receipt_path = release / "receipts/part-000000.json"
    receipt = json.loads(receipt_path.read_text())
    receipt["files"][0]["size"] += 1
    receipt_path.write_text(json.dumps(receipt, indent=2) + "\n")
    write_complete(release)  # COMPLETE.json vouches for the edited receipt's bytes
    commit = hub.seed_repo(REPO, release)
    with pytest.raises(
        VerificationError, match="receipt disagrees with COMPLETE.json about " + receipt["files"][0]["path"]
    ) as error:
        pull(hub, tmp_path, tmp_path / "out")
    assert error.value.path == f"hf://datasets/{REPO}@{commit}/receipts/part-000000.json"
    assert not (tmp_path / "out").exists()


def test_a_file_listed_but_missing_from_the_repo_is_named_before_any_download(hub, tmp_path):
    release = make_release(tmp_path / "release")
    commit = hub.seed_repo(REPO, release, skip=("stats.json",))
    with pytest.raises(
        HubError,
        match="record disagrees with the Hub's own tree at this commit .1 file.: got stats.json is not in the repo",
    ):
        pull(hub, tmp_path, tmp_path / "out")
    assert not (tmp_path / "out").exists() and hub.downloads(commit) == ["COMPLETE.json"]


def test_a_failed_download_stops_the_pull_without_starting_the_queued_ones(hub, tmp_path, monkeypatch):
    release = make_release(tmp_path / "release")
    # COMPLETE.json lists README.md first, then receipts/part-000000.json: one worker is held by README.md while
    # the other fails on the receipt (HTTP 500 on every attempt); 15 more files are still queued. Every file but the
    # failing one is held until the pull has shut its pool down (the queue cancelled): a fixed hold (0.5 s) let a
    # busy machine's worker finish README.md and take more queued files before the three failures were in.
    commit = hub.seed_repo(REPO, release)
    hub.fail["receipts/part-000000.json"] = FAST.attempts
    shut_down = threading.Event()

    class Pool(pull_module.ThreadPoolExecutor):
        def shutdown(self, wait=True, *, cancel_futures=False):
            super().shutdown(wait=False, cancel_futures=cancel_futures)  # the queued downloads cancelled (if asked)
            shut_down.set()
            super().shutdown(wait=wait)

    monkeypatch.setattr(pull_module, "ThreadPoolExecutor", Pool)
    for path in files_under(release):
        if path not in ("COMPLETE.json", "receipts/part-000000.json"):
            hub.faults.slow_downloads[path] = shut_down
    with pytest.raises(
        HubError, match="download receipts/part-000000.json failed.*re-run the same command: it resumes"
    ):
        pull(hub, tmp_path, tmp_path / "out", max_workers=2)
    fetched = set(hub.downloads(commit))
    started_after_the_failure = fetched - {"COMPLETE.json", "README.md", "receipts/part-000000.json"}
    assert len(started_after_the_failure) <= 1, sorted(started_after_the_failure)  # at most one raced the cancel
    # kept for the re-run
    assert not (tmp_path / "out").exists() and leftovers(tmp_path, "out") == [f".out.pull-{commit}"]


def test_a_corpus_repo_is_pulled_and_checked_against_its_manifest(hub, tmp_path):
    corpus, _ = make_corpus(tmp_path / "corpus")
    hub.seed_repo(REPO, corpus)
    summary = pull(hub, tmp_path, tmp_path / "out")
    assert files_under(tmp_path / "out") == files_under(corpus)
    assert summary.kind == "corpus" and "checked against _MANIFEST.json" in str(summary)
    assert leftovers(tmp_path, "out") == []


def test_an_output_path_that_is_a_file_is_refused_as_a_file(hub, tmp_path):
    out = tmp_path / "out"
    out.write_text("mine")
    with pytest.raises(HubError, match="output path exists and is a file"):
        pull(hub, tmp_path, out)
    assert out.read_text() == "mine"


def test_pull_is_pinned_to_one_commit(hub, tmp_path, verified_release):
    release = verified_release
    first = hub.seed_repo(REPO, release)
    other = build_release(tmp_path / "other", name="other")
    hub.seed_repo(REPO, other)
    summary = pull(hub, tmp_path, tmp_path / "out", revision=first)
    assert summary.commit == first
    assert files_under(tmp_path / "out") == files_under(release)


def test_existing_output_folder_is_refused(hub, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(HubError, match="output folder already exists and is not empty"):
        pull(hub, tmp_path, out)
    assert (out / "keep.txt").read_text() == "mine"


def test_a_malformed_complete_json_is_a_format_error(hub, tmp_path):
    release = make_release(tmp_path / "release")
    (release / "COMPLETE.json").write_text('{"format": "something else", "files": []}\n')
    hub.seed_repo(REPO, release)
    with pytest.raises(FormatError, match="unknown release format"):
        pull(hub, tmp_path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_cli_pull_reports_success_and_errors_in_one_line(hub, tmp_path, verified_release):
    release = verified_release
    hub.seed_repo(REPO, release, skip=("COMPLETE.json",))
    home = tmp_path / "hf-home"
    home.mkdir()
    env = {**os.environ, **client_env(hub, home, TOKEN)}
    code = "import sys; from hf_tokbin.cli import main; sys.exit(main(sys.argv[1:]))"
    refused = subprocess.run(
        [sys.executable, "-c", code, "pull", REPO, "--out", str(tmp_path / "out")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hf-tokbin pull: error: tester/release@"), refused.stderr
    assert "Traceback" not in refused.stderr and TOKEN not in refused.stderr

    hub.seed_repo(REPO, release)
    done = subprocess.run(
        [sys.executable, "-c", code, "pull", REPO, "--out", str(tmp_path / "out")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout.startswith("pulled tester/release@")
        and "checked against COMPLETE.json and 3 receipts" in done.stdout
    )
    assert files_under(tmp_path / "out") == files_under(release)


def test_cli_pull_include_and_workers(hub, tmp_path, verified_release, capsys):
    from hf_tokbin.cli import main

    commit = hub.seed_repo(REPO, verified_release)
    out = tmp_path / "out"
    assert (
        main(
            [
                "pull",
                REPO,
                "--out",
                str(out),
                "--endpoint",
                hub.url,
                "--include",
                "llmc:validation,megatron:validation",
                "--workers",
                "3",
                "--quiet",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert printed.startswith(f"pulled {REPO}@{commit}: PARTIAL copy (llmc:validation, megatron:validation)")
    assert (out / "tokens/byte/toy/val-00000.bin").is_file() and not (out / "tokens/byte/toy/train-00000.bin").exists()
    assert (out / "PARTIAL.json").is_file() and not (out / "COMPLETE.json").exists()
    assert main(["pull", REPO, "--out", str(tmp_path / "other"), "--endpoint", hub.url, "--workers", "0"]) == 1
    assert "--max-workers: must be a positive integer" in capsys.readouterr().err


def test_cli_pull_include_takes_globs_and_max_workers_as_hf_download_does(hub, tmp_path, verified_release, capsys):
    from hf_tokbin.cli import main

    hub.seed_repo(REPO, verified_release)
    out = tmp_path / "out"
    assert (
        main(
            [
                "pull",
                REPO,
                "--out",
                str(out),
                "--endpoint",
                hub.url,
                "--include",
                "shards/validation/*.idx",
                "--include",
                "tokens/*val-*.bin",
                "--max-workers",
                "3",
                "--quiet",
            ]
        )
        == 0
    )
    capsys.readouterr()
    pair = sorted(p.name for p in (out / "shards/validation").iterdir())
    # the glob named the .idx; the pair came whole
    assert pair and {name.rsplit(".", 1)[1] for name in pair} == {"bin", "idx"}
    assert not (out / "shards/train").exists() and not (out / "tokens/byte/toy/train-00000.bin").exists()
    assert (out / "tokens/byte/toy/val-00000.bin").is_file() and (out / "PARTIAL.json").is_file()
    assert main(["verify", str(out), "--quiet"]) == 0


def test_a_release_in_a_folder_of_the_repo_is_pulled_with_path_in_repo(hub, tmp_path, verified_release):
    repo_folder = tmp_path / "repo"
    shutil.copytree(verified_release, repo_folder / "releases/v1")
    (repo_folder / "NOTES.md").write_text("other things live here\n")
    commit = hub.seed_repo(REPO, repo_folder)
    summary = pull(hub, tmp_path, tmp_path / "out", path_in_repo="releases/v1/")
    assert summary.complete and files_under(tmp_path / "out") == files_under(verified_release)
    assert all(p.startswith("releases/v1/") for p in hub.downloads(commit))
    with pytest.raises(HubError, match="release is incomplete"):
        pull(hub, tmp_path, tmp_path / "top")  # the top of the repo holds no release
    with pytest.raises(HubError, match="--path-in-repo: must be a folder of plain, non-hidden names"):
        pull(hub, tmp_path, tmp_path / "bad", path_in_repo="releases/../..")
