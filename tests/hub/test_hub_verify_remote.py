"""``hf-tokbin verify NS/NAME``: a release on the Hub checked against the Hub's own metadata at one commit,
without downloading its token files (hf_tokbin.hub.remote_verify), against the test server (tests/hostile_hub.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from hostile_hub import HostileHub
from hub_server import Blob, client_env

from hf_tokbin.errors import HubError, VerificationError
from hf_tokbin.hub.remote_verify import verify_remote
from hf_tokbin.hub.retry import RetryPolicy

TOKEN = "hf_verify_test_token_0123456789"
REPO = "tester/release"
FAST = RetryPolicy(attempts=2, base_delay=0.01)
_CLI = "import sys; from hf_tokbin.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.fixture
def hub():
    with HostileHub(token=TOKEN) as server:
        yield server


def verify(hub, **kwargs):
    return verify_remote(REPO, endpoint=hub.url, token=TOKEN, retry=FAST, progress=False, **kwargs)


def token_files(paths) -> list[str]:
    return [p for p in paths if p.endswith((".bin", ".idx"))]


def replace_on_the_hub(hub, path: str, data: bytes) -> None:
    """Someone pushes other bytes for ``path`` (the Hub's metadata is that of the new bytes); COMPLETE.json stays."""
    repo = hub.repo(REPO)
    tree = dict(repo.resolve("main").tree)
    tree[path] = Blob.store(data, lfs=path.endswith((".bin", ".idx")))
    repo.add_commit("main", f"replace {path}", tree, [path])


def test_a_good_release_passes_without_downloading_a_token_file(hub, release):
    commit = hub.seed_repo(REPO, release)
    report = verify(hub)
    assert report.commit == commit and report.sampled == ()
    assert token_files(hub.downloads(commit)) == []
    # COMPLETE.json and every file it lists (the preview's two and the card's two pictures included)
    files = sum(1 for p in release.rglob("*") if p.is_file())
    assert files == 20 and f"hf://datasets/{REPO}@{commit}: OK: {files} files" in report.summary()
    assert report.report.splits["train"].documents == 60


def test_files_replaced_on_the_hub_are_each_named(hub, release):
    hub.seed_repo(REPO, release)
    replace_on_the_hub(hub, "shards/train/part-000001.bin", b"\x07" * (release / "shards/train/part-000001.bin").stat().st_size)
    replace_on_the_hub(hub, "tokens/byte/toy/val-00000.bin", b"other bytes")
    replace_on_the_hub(hub, "shards/train/part-000099.bin", b"planted")  # inside the layout, not listed
    replace_on_the_hub(hub, "NOTES.md", b"added by hand\n")  # outside the layout: not part of the release
    with pytest.raises(VerificationError, match=r"disagree with COMPLETE.json \(3 files\)") as error:
        verify(hub)
    message = str(error.value)
    assert "shards/train/part-000001.bin has another LFS SHA-256 on the Hub" in message
    assert "tokens/byte/toy/val-00000.bin has 11 bytes on the Hub" in message
    assert "shards/train/part-000099.bin is on the Hub but not listed in COMPLETE.json" in message
    assert "NOTES.md" not in message


def test_a_file_added_by_hand_outside_the_layout_is_reported_not_failed(hub, release):
    commit = hub.seed_repo(REPO, release)
    replace_on_the_hub(hub, "NOTES.md", b"added by hand\n")
    replace_on_the_hub(hub, "images/card.png", b"png")
    report = verify(hub)
    assert report.others == ("NOTES.md", "images/card.png")
    others = (
        "2 other files in the repo, outside the release layout and not part of the release: NOTES.md, images/card.png"
    )
    assert others in report.summary()
    with pytest.raises(VerificationError, match="NOTES.md is on the Hub but not listed in COMPLETE.json"):
        verify(hub, strict=True)
    assert commit != hub.repo(REPO).branches["main"]


def test_a_replaced_record_is_named(hub, release):
    hub.seed_repo(REPO, release)
    stats = (release / "stats.json").read_bytes()
    replace_on_the_hub(hub, "stats.json", stats.replace(b"1", b"2", 1))  # same size, other bytes
    with pytest.raises(VerificationError, match="stats.json: SHA-256 differs from COMPLETE.json"):
        verify(hub)


def test_the_sample_downloads_and_verifies_parts(hub, release):
    commit = hub.seed_repo(REPO, release)
    report = verify(hub, download_sample=2)
    assert report.sampled == ("part-000000", "part-000002")
    assert sorted(token_files(hub.downloads(commit))) == [
        "shards/train/part-000000.bin", "shards/train/part-000000.idx", "shards/validation/part-000002.bin", "shards/validation/part-000002.idx",
    ]
    hub.flip_stored_byte(REPO, "shards/validation/part-000002.idx")  # bit rot the metadata does not show
    assert verify(hub).sampled == ()
    with pytest.raises(VerificationError, match="part-000002.idx: SHA-256 differs from COMPLETE.json"):
        verify(hub, download_sample=3)


def test_verify_is_pinned_to_the_revision_asked_for(hub, release):
    first = hub.seed_repo(REPO, release)
    replace_on_the_hub(hub, "stats.json", b"{}\n")
    with pytest.raises(VerificationError):
        verify(hub)
    assert verify(hub, revision=first).commit == first


def test_a_forged_commit_id_stops_the_check(hub, release):
    hub.seed_repo(REPO, release)
    hub.reported_sha = "../" * 13 + "x"
    with pytest.raises(HubError, match="not 40 lowercase hex digits"):
        verify(hub)


def test_cli_verify_of_a_hub_repo(hub, release, tmp_path):
    commit = hub.seed_repo(REPO, release)
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, **client_env(hub, home, TOKEN)}
    def run(*args):
        return subprocess.run([sys.executable, "-c", _CLI, "verify", *args], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False)

    ok = run(REPO, "--endpoint", hub.url, "--download-sample", "1")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith(f"hf://datasets/{REPO}@{commit}: OK:") and "part-000000" in ok.stdout
    replace_on_the_hub(hub, "shards/train/part-000000.idx", b"x")
    bad = run(REPO)
    assert bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert "shards/train/part-000000.idx has 1 bytes on the Hub" in bad.stderr
    local_flag = run(str(release), "--revision", "main")
    assert local_flag.returncode == 1 and "--revision apply to a Hub repo NS/NAME only" in local_flag.stderr


def test_a_release_in_a_folder_is_verified_alone(hub, release, tmp_path):
    repo_folder = tmp_path / "repo"
    shutil.copytree(release, repo_folder / "releases/v1")
    (repo_folder / "NOTES.md").write_text("beside the release, not part of it\n")
    commit = hub.seed_repo(REPO, repo_folder)
    report = verify(hub, path_in_repo="releases/v1")
    # With the preview's two files and the card's two pictures.
    assert report.summary().startswith(f"hf://datasets/{REPO}@{commit}/releases/v1: OK: 20 files")
    replace_on_the_hub(hub, "releases/v1/extra.txt", b"planted\n")
    assert verify(hub, path_in_repo="releases/v1").others == ("extra.txt",)
    with pytest.raises(VerificationError, match="extra.txt is on the Hub but not listed in COMPLETE.json"):
        verify(hub, path_in_repo="releases/v1", strict=True)
