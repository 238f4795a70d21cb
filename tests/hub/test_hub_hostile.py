"""A pull (and ``build --corpus NS/NAME``) against a Hub-protocol server that lies (tests/hostile_hub.py).

Each test sets one lie and checks that nothing is written, deleted or shown
that the user did not ask for, that the pull stops with one clear error, and
that a limit (size, time) holds. The real huggingface_hub client is used,
unmodified, against 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest
from hostile_hub import HostileHub
from hub_server import HubServer, client_env, git_blob_oid, make_corpus, write_complete
from hypothesis import example, given, settings
from hypothesis import strategies as st
from release_fixtures import build_release

from hf_tokbin.errors import FormatError, HubError, VerificationError
from hf_tokbin.hub import RetryPolicy, pull_release
from hf_tokbin.hub.download import DownloadLimits, Expected, Source
from hf_tokbin.hub.layout import check_path

pytestmark = pytest.mark.slow  # builds and pulls from hostile servers in child processes

TOKEN = "hf_hostile_test_token_0123456789"
REPO = "tester/release"
FAST = RetryPolicy(attempts=2, base_delay=0.01)
# Roomy on purpose: a busy CI machine once took over 0.5 s for a 1 KB file, so only the tests about slowness set
# tight limits, each its own. A limit that must fire where other requests of the same pull must succeed is roomy too
# (ROOMY_S), and the server is made far slower than it instead; only a limit on the one request a test makes is tight.
ROOMY = DownloadLimits(read_timeout=30.0, min_rate=1e6, grace=60.0)
ROOMY_S = 20.0  # seconds no request to 127.0.0.1 that must succeed comes near, however busy the machine
HUNG_S = 120.0  # elapsed-time bounds: far above a limit of ROOMY_S firing, far below the server's minutes
_CLI = "import sys; from hf_tokbin.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.fixture
def hub():
    with HostileHub(token=TOKEN) as server:
        yield server


def pull(hub, out, **kwargs):
    kwargs.setdefault("limits", ROOMY)
    kwargs.setdefault("retry", FAST)
    return pull_release(REPO, out, endpoint=hub.url, token=TOKEN, progress=False, **kwargs)


def sent_after_hang_up(hub, path) -> int:
    """The bytes the server wrote of ``path`` before it saw the client hang up (at its next write, a trickle's delay
    or two later, on a thread of its own that a busy machine may run later still); waits for that, at most a minute:
    a bound on a wait, not a timed assertion."""
    deadline = time.monotonic() + 60
    while path not in hub.sent and time.monotonic() < deadline:
        time.sleep(0.05)
    return hub.sent[path]


def tree(root) -> set[str]:
    """Every path under ``root`` (files, folders, symlinks)."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


def staging_of(out, commit):
    return out.parent / f".{out.name}.pull-{commit}"


def edit_complete(release, edit) -> None:
    path = release / "COMPLETE.json"
    record = json.loads(path.read_text())
    edit(record["files"])
    path.write_text(json.dumps(record, indent=2) + "\n")


# -- 1. the commit id ----------------------------------------------------------------------------


def test_a_commit_id_that_climbs_out_cannot_delete_or_write_a_sibling_folder(hub, tmp_path, release):
    hub.seed_repo(REPO, release)
    victim = tmp_path / "victim00"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine")
    hub.reported_sha = "/../victim" + "0" * 30  # an old pull named its staging folder from the first 12 characters
    before = tree(tmp_path)
    for _ in range(2):  # the second run is the one that used to remove the "staging folder" left by the first
        with pytest.raises(HubError, match="commit id that is not 40 lowercase hex digits") as error:
            pull(hub, tmp_path / "out")
    assert (victim / "keep.txt").read_text() == "mine"
    assert tree(tmp_path) == before
    assert "/../victim" in str(error.value)


def test_server_strings_are_escaped_never_printed_raw(hub, tmp_path, release):
    hub.seed_repo(REPO, release)
    hub.reported_sha = "\x1b]0;pwned\x07\x1b[2J" + "a" * 30
    with pytest.raises(HubError) as error:
        pull(hub, tmp_path / "out")
    message = str(error.value)
    assert "\x1b" not in message and "\x07" not in message
    assert "\\x1b]0;pwned\\x07" in message
    assert not any(tmp_path.glob(".out.pull-*"))


def test_build_from_a_hub_corpus_with_a_forged_commit_id_writes_nothing_outside_the_cache(hub, tmp_path):
    corpus, _ = make_corpus(tmp_path / "corpus")
    hub.seed_repo("tester/corpus", corpus)
    hub.reported_sha = "../../../../PWN"
    home = tmp_path / "a/b/home"  # deep enough that ../../../.. from inside the cache stays under tmp_path
    home.mkdir(parents=True)
    env = {**os.environ, **client_env(hub, home, TOKEN)}
    before = {p for p in tree(tmp_path) if not p.startswith("a/b/home")}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            _CLI,
            "build",
            "--corpus",
            "tester/corpus",
            "--tokenizer",
            "byte",
            "--format",
            "llmc",
            "--out",
            str(tmp_path / "out"),
            "--quiet",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "commit id that is not 40 lowercase hex digits" in lines[0], result.stderr
    assert {p for p in tree(tmp_path) if not p.startswith("a/b/home")} == before
    assert not [p for p in tree(home) if "PWN" in p]


def test_build_from_a_hub_corpus_fetched_at_a_checked_commit_still_builds_offline(hub, tmp_path):
    corpus, _ = make_corpus(tmp_path / "corpus")
    hub.seed_repo("tester/corpus", corpus)
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, **client_env(hub, home, TOKEN)}
    build = [
        sys.executable,
        "-c",
        _CLI,
        "build",
        "--corpus",
        "tester/corpus",
        "--tokenizer",
        "byte",
        "--format",
        "llmc",
        "--quiet",
        "--out",
    ]
    online = subprocess.run(
        [*build, str(tmp_path / "online")], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert online.returncode == 0, online.stderr
    offline = subprocess.run(
        [*build, str(tmp_path / "offline")],
        env={**env, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert offline.returncode == 0, offline.stderr  # the branch's ref was recorded for the checked snapshot
    assert tree(tmp_path / "online") == tree(tmp_path / "offline")
    assert all(
        (tmp_path / "online" / p).read_bytes() == (tmp_path / "offline" / p).read_bytes()
        for p in tree(tmp_path / "online")
        if (tmp_path / "online" / p).is_file()
    )


# -- 2. planted files ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "planted",
    [
        ".git/config",
        "../x",
        "/etc/x",
        "~/t.txt",
        "shards/.hidden",
        "README.md\n.git/config",
        "shards\\x.bin",
        "notes.txt",
    ],
)
def test_complete_json_listing_a_path_outside_the_layout_is_refused_before_any_write(hub, tmp_path, release, planted):
    entry = {"path": planted, "size": 5, "sha256": "ab" * 32}
    edit_complete(release, lambda files: (files.append(entry), files.sort(key=lambda f: f["path"])))
    commit = hub.seed_repo(REPO, release)
    out = tmp_path / "out"
    with pytest.raises((HubError, FormatError)) as error:
        pull(hub, out)
    assert "\n" not in str(error.value)
    assert not out.exists()
    assert hub.downloads(commit) == ["COMPLETE.json"]  # refused before any file was fetched
    staged = tree(staging_of(out, commit))
    assert staged <= {".records", ".records/COMPLETE.json"}, staged
    assert not (tmp_path / "x").exists() and not (tmp_path / "t.txt").exists()


@pytest.mark.parametrize(
    "given, planted",
    [
        # was fetched into tmp_path/PWN, past the scratch folder
        ("hf://datasets/tester/inputs/a/**", "a/" + "../" * 6 + "PWN/x.jsonl"),
        ("hf://datasets/tester/inputs/a", "b/PWN.jsonl"),  # another folder than the one asked: was imported
        # a plain repo's data files: datasets' patterns take it
        ("tester/inputs", "data/" + "../" * 6 + "PWN/train.jsonl"),
        ("hf://datasets/tester/inputs/a", "a//PWN.jsonl"),
        ("hf://datasets/tester/inputs/a/*.jsonl", "/a/PWN.jsonl"),
    ],
)
def test_a_listing_entry_outside_the_folder_listed_is_refused_before_any_download(hub, tmp_path, given, planted):
    """A corpus input on the Hub (hf:// glob or folder, or a plain repo) is listed by the tree listing; a listed path
    that climbs out (``..``), is absolute, or lies outside the folder listed is one error, before any file is
    fetched.
    """
    folder = tmp_path / "inputs"
    for path in ("a/x.jsonl", "data/train.jsonl"):
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text('{"text": "mine"}\n')
    hub.seed_repo("tester/inputs", folder)
    data = b'{"text": "planted"}\n'
    hub.planted_tree_entries = [{"type": "file", "path": planted, "size": len(data), "oid": git_blob_oid(data)}]
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, **client_env(hub, home, TOKEN), "HF_TOKBIN_HUB_ATTEMPTS": "1"}
    out = tmp_path / "deep" / "out"
    result = subprocess.run(
        [sys.executable, "-c", _CLI, "corpus", "import", given, "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "lists a path outside the folder listed" in lines[0] and planted in lines[0], (
        result.stderr[-2000:]
    )
    assert hub.count("GET", r"/resolve/") == 0  # refused at the listing: nothing fetched
    assert not [p for p in tree(tmp_path) if "PWN" in p] and not out.exists()


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "shards",
                "train",
                "validation",
                "part-000001.bin",
                "receipts",
                "part-000002.json",
                "tokens",
                "a",
                "README.md",
                "stats.json",
                ".",
                "..",
                "",
                ".git",
                "config",
                "~",
                "a\\b",
                "x\ny",
                "\x00",
                "\x1b[2J",
                " ",
                "data",
                "s.parquet",
            ]
        ),
        min_size=1,
        max_size=5,
    )
)
@example(["shards", "train", "part-000001.bin"])
@example(["tokens", "a", "a", "README.md"])
@example(["data", "a", "s.parquet"])
@example(["receipts", "part-000002.json"])
def test_a_path_the_layout_accepts_stays_inside_and_is_never_hidden(parts):
    path = "/".join(parts)
    for kind in ("release", "corpus"):
        try:
            check_path(kind, path, "COMPLETE.json")
        except HubError as error:
            assert "\n" not in str(error) and "\x1b" not in str(error) and "\x00" not in str(error)
            continue
        root = "/r/staging"
        assert os.path.normpath(os.path.join(root, path)).startswith(root + "/")
        assert not any(part.startswith(".") or part == "" for part in path.split("/"))
        assert all(c.isprintable() and c != "\\" for c in path)
        # a space inside a name is fine, a blank name is not
        assert all(part.strip() == part for part in path.split("/"))


def test_names_a_build_allows_are_pulled(hub, tmp_path):
    release = build_release(tmp_path / "built", name="histoires courtes", tokenizer_id="octets 日本")
    hub.seed_repo(REPO, release)
    summary = pull(hub, tmp_path / "out")
    assert summary.complete and (tmp_path / "out/tokens/octets 日本/histoires courtes/_MANIFEST.json").is_file()


def test_symlinks_and_files_planted_in_a_kept_staging_folder_are_removed_never_followed(hub, tmp_path, release):
    commit = hub.seed_repo(REPO, release)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    out = tmp_path / "out"
    staging = staging_of(out, commit)
    staging.mkdir()
    (staging / "shards").symlink_to(outside)  # what someone else could leave between two runs
    (staging / "stats.json").symlink_to(outside / "keep.txt")
    (staging / "evil.txt").write_text("planted\n")
    summary = pull(hub, out)
    assert tree(outside) == {"keep.txt"} and (outside / "keep.txt").read_text() == "mine"
    assert summary.complete and summary.fetched == summary.files - 1  # the links were removed, every file fetched
    assert not [p for p in out.rglob("*") if p.is_symlink()] and not (out / "evil.txt").exists()
    assert (out / "stats.json").read_bytes() == (release / "stats.json").read_bytes()


def test_a_symlinked_folder_that_appears_during_a_pull_is_refused(tmp_path):
    from hf_tokbin.hub.download import safe_destination

    root, outside = tmp_path / "staging", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "shards").symlink_to(outside)
    with pytest.raises(HubError, match="expected a folder the pull made, found a symlink"):
        safe_destination(root, "shards/train/part-000000.bin")
    assert tree(outside) == set()


# -- 3. incomplete never looks complete ----------------------------------------------------------


def test_complete_json_listing_no_files_fails(hub, tmp_path, release):
    edit_complete(release, lambda files: files.clear())
    hub.seed_repo(REPO, release)
    with pytest.raises(HubError, match="lists no files"):
        pull(hub, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("omitted", ["tokens/byte/toy/val-00000.bin", "receipts/part-000002.json"])
def test_complete_json_omitting_files_the_release_lists_fails_the_verify_rules(hub, tmp_path, release, omitted):
    # Omit the file (and, for a receipt, the pair it names) from COMPLETE.json and from the repo.
    gone = {omitted} | (
        {"shards/validation/part-000002.bin", "shards/validation/part-000002.idx"}
        if omitted.startswith("receipts/")
        else set()
    )
    for path in gone:
        (release / path).unlink()
    write_complete(release)
    commit = hub.seed_repo(REPO, release)
    out = tmp_path / "out"
    with pytest.raises(VerificationError) as error:
        pull(hub, out)
    assert str(error.value).startswith(f"hf://datasets/{REPO}@{commit}/")
    assert not out.exists()
    # taken out again: the staging folder does not look complete either
    assert not (staging_of(out, commit) / "COMPLETE.json").exists()


def test_a_failed_verify_never_leaves_complete_json_under_out(hub, tmp_path, release):
    stats = json.loads((release / "stats.json").read_text())
    stats["splits"]["train"]["documents"] += 1  # consistent bytes, broken promise
    (release / "stats.json").write_text(json.dumps(stats, indent=2) + "\n")
    write_complete(release)
    commit = hub.seed_repo(REPO, release)
    out = tmp_path / "out"
    with pytest.raises(VerificationError, match="stats.json: splits.train.documents differs from the receipts"):
        pull(hub, out)
    assert not out.exists() and not (staging_of(out, commit) / "COMPLETE.json").exists()


# -- 4. bounded downloads ------------------------------------------------------------------------


def test_a_server_streaming_far_more_than_listed_is_cut_at_the_listed_size(hub, tmp_path, release):
    path = "shards/train/part-000000.bin"
    size = (release / path).stat().st_size
    commit = hub.seed_repo(REPO, release)
    hub.oversize[path] = 400 * 1024 * 1024
    out = tmp_path / "out"
    with pytest.raises(HubError, match=f"sent more bytes than COMPLETE.json lists; stopped reading: expected {size}"):
        pull(hub, out)
    # the client hung up long before 400 MB (socket buffers hold a few MB)
    assert sent_after_hang_up(hub, path) < 64 * 1024 * 1024
    staged = staging_of(out, commit)
    assert not (staged / path).exists() and not [p for p in tree(staged) if p.endswith(".download")]


def test_a_server_trickling_bytes_cannot_hold_a_pull(hub, tmp_path, release):
    path = "run_config.json"
    hub.seed_repo(REPO, release)
    # a byte every 0.2 s, each read far within the read timeout: its 1.8 KB would take 6 minutes
    hub.trickle[path] = 0.2
    # The grace is every file's: roomy for the others, however busy the machine; the trickled file's runs out first.
    with pytest.raises(HubError, match=r"/run_config\.json: download too slow.*re-run: it resumes"):
        pull(hub, tmp_path / "out", limits=DownloadLimits(read_timeout=30.0, min_rate=1e6, grace=ROOMY_S))
    assert sent_after_hang_up(hub, path) < (release / path).stat().st_size


def test_a_server_that_stops_sending_times_out(hub, tmp_path, release):
    hub.seed_repo(REPO, release)
    hub.trickle["stats.json"] = 120.0  # stalled: far longer than the read timeout
    # The read timeout is every file's: roomy for the others, however busy the machine (one attempt: it is waited out).
    with pytest.raises(HubError, match="download stats.json failed"):
        pull(
            hub,
            tmp_path / "out",
            limits=DownloadLimits(read_timeout=ROOMY_S, min_rate=1e6, grace=60.0),
            retry=RetryPolicy(attempts=1),
        )


# -- 5, 6. resumable and parallel ----------------------------------------------------------------


def test_an_interrupted_pull_resumes_and_downloads_only_the_rest(hub, tmp_path, release):
    commit = hub.seed_repo(REPO, release)
    listed = [f["path"] for f in json.loads((release / "COMPLETE.json").read_text())["files"]]
    broken = "shards/train/part-000001.bin"  # in the middle of COMPLETE.json's order
    hub.fail[broken] = FAST.attempts
    out = tmp_path / "out"
    with pytest.raises(HubError, match="re-run the same command: it resumes") as error:
        pull(hub, out, max_workers=1)
    assert "read access" not in str(error.value)
    first = hub.downloads(commit)
    kept = set(first) - {"COMPLETE.json", broken}
    assert kept and not out.exists()

    summary = pull(hub, out)
    second = hub.downloads(commit)[len(first):]
    assert sorted(second) == sorted({"COMPLETE.json", *listed} - kept)  # the record, and only the files not kept
    assert summary.complete and summary.fetched == len(listed) - len(kept)
    assert not any(tmp_path.glob(".out.pull-*"))


def test_a_file_changed_in_the_kept_staging_folder_is_fetched_again(hub, tmp_path, release):
    commit = hub.seed_repo(REPO, release)
    hub.fail["stats.json"] = FAST.attempts
    out = tmp_path / "out"
    with pytest.raises(HubError):
        pull(hub, out, max_workers=1)
    staging = staging_of(out, commit)
    readme = staging / "README.md"
    assert readme.is_file()
    readme.write_text("tampered\n")
    before = len(hub.downloads(commit))
    pull(hub, out)
    assert "README.md" in hub.downloads(commit)[before:]
    assert (out / "README.md").read_bytes() == (release / "README.md").read_bytes()


def test_downloads_run_eight_at_a_time_without_a_head_request_per_file(hub, tmp_path, release):
    commit = hub.seed_repo(REPO, release)
    hub.gate(8)  # the first downloads wait until 8 are in flight together
    summary = pull(hub, tmp_path / "out")
    assert hub.gate_opened.is_set()
    assert summary.complete and hub.count("HEAD", "/resolve/") == 0
    # each file once
    assert sorted(hub.downloads(commit)) == sorted(p for p in tree(release) if (release / p).is_file())


# -- 7. --include and corpus repos ---------------------------------------------------------------


def test_include_fetches_only_the_named_parts_and_the_records(hub, tmp_path, release):
    commit = hub.seed_repo(REPO, release)
    out = tmp_path / "out"
    summary = pull(hub, out, include=["megatron:train"])
    held = {p for p in tree(out) if (out / p).is_file()}
    assert {p for p in held if p.startswith(("shards/", "tokens/")) and not p.endswith("_MANIFEST.json")} == {
        "shards/train/part-000000.bin",
        "shards/train/part-000000.idx",
        "shards/train/part-000001.bin",
        "shards/train/part-000001.idx",
    }
    assert {
        "run_config.json",
        "stats.json",
        "README.md",
        "receipts/part-000002.json",
        "tokens/byte/toy/_MANIFEST.json",
        "PARTIAL.json",
    } <= held
    assert "COMPLETE.json" not in held  # not the whole release, and not presented as one
    partial = json.loads((out / "PARTIAL.json").read_text())
    assert partial["commit"] == commit and partial["include"] == ["megatron:train"]
    assert sorted(f["path"] for f in partial["files"]) == sorted(held - {"PARTIAL.json"})
    assert not summary.complete and "PARTIAL copy (megatron:train)" in str(summary)
    assert set(hub.downloads(commit)) == {"COMPLETE.json", *(held - {"PARTIAL.json"})}


def test_a_partial_pull_after_an_interrupted_full_one_holds_only_what_it_names(hub, tmp_path, release):
    commit = hub.seed_repo(REPO, release)
    hub.fail["stats.json"] = FAST.attempts
    out = tmp_path / "out"
    with pytest.raises(HubError):
        pull(hub, out, max_workers=1)  # leaves the files COMPLETE.json lists before stats.json
    assert (staging_of(out, commit) / "shards/validation/part-000002.bin").is_file()
    pull(hub, out, include=["train"])
    held = {p for p in tree(out) if (out / p).is_file()}
    assert not [p for p in held if "validation/" in p or p.endswith("val-00000.bin")]
    partial = json.loads((out / "PARTIAL.json").read_text())
    assert sorted(f["path"] for f in partial["files"]) == sorted(held - {"PARTIAL.json"})


def test_include_still_verifies_what_it_holds(hub, tmp_path, release):
    hub.seed_repo(REPO, release)
    hub.flip_stored_byte(REPO, "shards/validation/part-000002.idx")
    with pytest.raises(VerificationError, match="part-000002.idx: SHA-256 differs from COMPLETE.json"):
        pull(hub, tmp_path / "out", include=["validation"])
    assert pull(hub, tmp_path / "train", include=["train"]).files > 0  # the flipped file is not needed for train


@pytest.mark.parametrize("bad", ["megatron:test", "parquet", ":", "llmc:"])
def test_a_bad_include_is_one_clear_error(hub, tmp_path, release, bad):
    with pytest.raises(HubError, match="--include: each item is FORMAT:SPLIT, FORMAT or SPLIT"):
        pull(hub, tmp_path / "out", include=[bad])


def test_a_corpus_repo_can_be_pulled_one_split_at_a_time(hub, tmp_path):
    corpus, _ = make_corpus(tmp_path / "corpus")
    commit = hub.seed_repo(REPO, corpus)
    out = tmp_path / "out"
    summary = pull(hub, out, include=["validation"])
    assert {p for p in tree(out) if (out / p).is_file()} == {
        "data/validation-00000.parquet",
        "README.md",
        "PARTIAL.json",
    }
    assert "data/train-00000.parquet" not in hub.downloads(commit)
    assert summary.kind == "corpus" and summary.partial == ("validation",)
    with pytest.raises(HubError, match="a corpus repo has no formats"):
        pull(hub, tmp_path / "other", include=["megatron:train"])


# -- 9. errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code", "message", "rule", "hint"),
    [
        (401, None, "Invalid credentials in Authorization header", "no read access", "can read this repo"),
        (403, None, "Your token does not have read access to this repo", "no read access", "can read this repo"),
        (
            403,
            "GatedRepo",
            "Access to dataset tester/release is restricted. You must have access to it",
            "the repo is gated",
            "request access on",
        ),
    ],
)
def test_read_errors_show_the_server_message_and_a_hint_for_reading(hub, tmp_path, status, code, message, rule, hint):
    hub.deny = (status, code, message)
    with pytest.raises(HubError) as error:
        pull(hub, tmp_path / "out")
    text = str(error.value)
    assert rule in text and hint in text and message in text
    assert "write access" not in text and TOKEN not in text
    if code == "GatedRepo":
        assert f"{hub.url}/datasets/{REPO}" in text


def test_a_full_disk_is_one_clear_error_and_the_re_run_ends_byte_identical(hub, tmp_path, release, monkeypatch):
    import errno

    from hf_tokbin.hub import download

    commit = hub.seed_repo(REPO, release)
    real_fdopen = download.os.fdopen

    class FullDisk:
        def __init__(self, file):
            self.file = file

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.file.close()

        def write(self, chunk):
            raise OSError(errno.ENOSPC, "No space left on device")

    def fdopen(fd, mode):
        name = os.readlink(f"/proc/self/fd/{fd}")
        file = real_fdopen(fd, mode)
        return FullDisk(file) if name.endswith("part-000001.bin.download") else file

    monkeypatch.setattr(download.os, "fdopen", fdopen)
    out = tmp_path / "out"
    with pytest.raises(
        HubError,
        match=(
            r"download shards/train/part-000001.bin failed: the disk is "
            r"full.*free space and re-run the same command: it resumes"
        ),
    ):
        pull(hub, out)
    assert not out.exists() and not (staging_of(out, commit) / "COMPLETE.json").exists()
    monkeypatch.undo()
    pull(hub, out)
    assert {p: (out / p).read_bytes() for p in tree(out) if (out / p).is_file()} == {
        p: (release / p).read_bytes() for p in tree(release) if (release / p).is_file()
    }


# -- records of a Hub corpus, bounded before they are written ----------------------------------------


@pytest.mark.parametrize("record", ["_MANIFEST.json", "README.md", "data/train-00000.parquet"])
def test_a_corpus_record_served_as_an_endless_stream_is_cut_at_its_listed_size(hub, tmp_path, record):
    """The listing says a few hundred bytes; the server sends 256 MiB without a length. The build stops reading one
    chunk past the listed size, writes nothing of it, and says so in one line. A pushed corpus's shard too: it was
    fetched with snapshot_download, which wrote the whole stream into the cache before it compared sizes."""
    corpus, _ = make_corpus(tmp_path / "corpus")
    if record == "README.md":  # a plain Parquet repo: its card is the record read
        (corpus / "_MANIFEST.json").unlink()
    hub.seed_repo("tester/corpus", corpus)
    hub.oversize[record] = 256 << 20
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, **client_env(hub, home, TOKEN), "HF_TOKBIN_HUB_ATTEMPTS": "1"}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            _CLI,
            "build",
            "--corpus",
            "tester/corpus",
            "--tokenizer",
            "byte",
            "--format",
            "llmc",
            "--out",
            str(tmp_path / "out"),
            "--quiet",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and record in lines[0] and "more bytes" in lines[0], result.stderr[-2000:]
    # stopped early (what the socket buffers took), not the whole stream
    assert sent_after_hang_up(hub, record) < 32 << 20
    written = [p for p in [*home.rglob("*"), *tmp_path.glob("out/**/*")] if p.is_file() and p.stat().st_size > 1 << 20]
    assert written == []
    assert not (tmp_path / "out" / "COMPLETE.json").exists()


def _tokenizer_repo(root):
    """A byte-level tokenizer repo whose generation_config.json names the separator."""
    from tokenizer_files import byte_level_bpe_json
    from tokenizers.pre_tokenizers import ByteLevel

    root.mkdir(parents=True)
    vocab = {c: i for i, c in enumerate(sorted(ByteLevel.alphabet()))}
    (root / "tokenizer.json").write_text(json.dumps(byte_level_bpe_json(vocab=vocab)))
    (root / "generation_config.json").write_text(json.dumps({"eos_token_id": 0}))
    return root


def build_with_hub_tokenizer(hub, tmp_path, home) -> subprocess.CompletedProcess:
    """``hf-tokbin build`` of a small local corpus with the test Hub's tester/tok, one attempt per request."""
    corpus, _ = make_corpus(tmp_path / "corpus")
    home.mkdir()
    env = {**os.environ, **client_env(hub, home, TOKEN), "HF_TOKBIN_HUB_ATTEMPTS": "1"}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            _CLI,
            "build",
            "--corpus",
            str(corpus),
            "--tokenizer",
            "tester/tok",
            "--format",
            "llmc",
            "--out",
            str(tmp_path / "out"),
            "--quiet",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize("file", ["tokenizer.json", "generation_config.json"])
def test_a_hub_tokenizer_file_served_as_an_endless_stream_is_cut_at_its_listed_size(hub, tmp_path, file):
    """The tree at the checked commit lists a few KB; the server sends 600 MiB without a length (more than any bound
    lets through). The build stops one chunk past the listed size, writes nothing of it, and says so in one line."""
    hub.seed_repo("tester/tok", _tokenizer_repo(tmp_path / "model"), repo_type="model")
    hub.oversize[file] = 600 << 20
    home = tmp_path / "home"
    result = build_with_hub_tokenizer(hub, tmp_path, home)
    assert result.returncode == 1, result.stdout + result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and file in lines[0] and "more bytes" in lines[0], result.stderr[-2000:]
    # stopped early (what the socket buffers took), not the whole stream
    assert sent_after_hang_up(hub, file) < 32 << 20
    written = [p for p in [*home.rglob("*"), *tmp_path.glob("out/**/*")] if p.is_file() and p.stat().st_size > 1 << 20]
    assert written == []
    assert not (tmp_path / "out" / "run_config.json").exists()


def test_a_pushed_corpus_fetches_only_what_its_checked_manifest_lists(hub, tmp_path):
    """A file added to the repo beside the corpus (a planted 4 MiB blob) is never downloaded; a manifest the Hub's
    listing contradicts is refused before any shard is fetched."""
    corpus, _ = make_corpus(tmp_path / "corpus")
    (corpus / "extra").mkdir()
    (corpus / "extra" / "planted.bin").write_bytes(b"\1" * (4 << 20))
    commit = hub.seed_repo("tester/corpus", corpus)
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, **client_env(hub, home, TOKEN), "HF_TOKBIN_HUB_ATTEMPTS": "1"}
    build = [
        sys.executable,
        "-c",
        _CLI,
        "build",
        "--corpus",
        "tester/corpus",
        "--tokenizer",
        "byte",
        "--format",
        "llmc",
        "--quiet",
        "--out",
    ]
    result = subprocess.run(
        [*build, str(tmp_path / "out")], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert sorted(set(hub.downloads(commit))) == [
        "README.md",
        "_MANIFEST.json",
        "data/train-00000.parquet",
        "data/validation-00000.parquet",
    ]
    manifest = json.loads((corpus / "_MANIFEST.json").read_text())
    manifest["shards"][0]["size"] += 1  # the record says one size, the Hub's listing another
    (corpus / "_MANIFEST.json").write_text(json.dumps(manifest))
    commit = hub.seed_repo("tester/corpus", corpus)
    result = subprocess.run(
        [*build, str(tmp_path / "out2")], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    lines = result.stderr.strip().splitlines()
    assert (
        result.returncode == 1
        and len(lines) == 1
        and "disagrees with the Hub's listing" in lines[0]
        and "data/train-00000.parquet" in lines[0]
    ), result.stderr
    assert not [p for p in hub.downloads(commit) if p.startswith("data/")]


def test_a_hub_tokenizer_config_the_tree_lists_over_its_size_rule_is_refused_before_it_is_read(hub, tmp_path):
    """A generation_config.json the tree lists at more than a config file may be (a record, 16 MiB) is never fetched.
    """
    from hf_tokbin.tokenizer.resolve import CONFIG_MAX_BYTES

    model = _tokenizer_repo(tmp_path / "model")
    (model / "generation_config.json").write_bytes(b'{"eos_token_id": 0}' + b" " * CONFIG_MAX_BYTES)
    commit = hub.seed_repo("tester/tok", model, repo_type="model")
    home = tmp_path / "home"
    result = build_with_hub_tokenizer(hub, tmp_path, home)
    assert result.returncode == 1, result.stdout + result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert (
        len(lines) == 1
        and "generation_config.json" in lines[0]
        and "out of bounds" in lines[0]
        and f"{CONFIG_MAX_BYTES:,}" in lines[0]
    ), result.stderr
    assert hub.downloads(commit) == ["tokenizer.json"]  # the config was refused by its listing, not by reading it
    assert not (tmp_path / "out" / "run_config.json").exists()


def test_an_offline_build_refuses_a_hub_tokenizer_whose_config_the_cache_does_not_hold(hub, tmp_path):
    """generation_config.json names the separator: a cache that lost it (and does not record it absent) must not give
    a build that silently takes the separator from elsewhere, or none."""
    hub.seed_repo("tester/tok", _tokenizer_repo(tmp_path / "model"), repo_type="model")
    corpus, _ = make_corpus(tmp_path / "corpus")
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, **client_env(hub, home, TOKEN), "HF_TOKBIN_HUB_ATTEMPTS": "1"}
    args = [
        sys.executable,
        "-c",
        _CLI,
        "build",
        "--corpus",
        str(corpus),
        "--tokenizer",
        "tester/tok",
        "--format",
        "llmc",
        "--quiet",
    ]
    online = subprocess.run(
        [*args, "--out", str(tmp_path / "online")], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert online.returncode == 0, online.stderr[-2000:]
    [cached] = home.rglob("snapshots/*/generation_config.json")
    cached.unlink()
    offline = subprocess.run(
        [*args, "--out", str(tmp_path / "offline")],
        env={**env, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert offline.returncode == 1, offline.stdout + offline.stderr[-2000:]
    lines = offline.stderr.strip().splitlines()
    assert len(lines) == 1 and "generation_config.json" in lines[0] and "local cache does not hold it" in lines[0], (
        offline.stderr
    )
    assert not (tmp_path / "offline" / "run_config.json").exists()


# -- listings and answers that never end, and an --out with no place beside it (review of session 7) -----------


def test_a_tree_listing_that_pages_forever_is_one_error_not_endless_memory(hub, tmp_path, release, monkeypatch):
    from hf_tokbin.hub import revision

    hub.seed_repo(REPO, release)
    hub.endless_tree = True
    monkeypatch.setattr(revision, "MAX_LISTED_ENTRIES", 5_000)  # the pages hold 1,000 entries each
    with pytest.raises(HubError, match="listing may hold at most 5,000 files and folders"):
        pull(hub, tmp_path / "out")
    assert hub.count("GET", r"/tree/") <= 5_000 // 1_000 + 1 + FAST.attempts * 6
    assert not (tmp_path / "out").exists()


def test_a_tree_page_linking_its_next_page_on_another_host_gets_neither_request_nor_token(hub, tmp_path, release):
    """The Hub links a listing's next page on its own host; a link elsewhere would carry the user's token there."""
    hub.seed_repo(REPO, release)
    hub.page_size = 2  # the release's tree spans many pages
    with HubServer(token=TOKEN) as elsewhere:
        hub.page_origins["tree"] = elsewhere.url
        with pytest.raises(HubError, match="links its next page on another host"):
            pull(hub, tmp_path / "out")
        assert elsewhere.requests == []
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("link", ["http://127.0.0.1\uff1a1\x1bc/x", "http://[::1\x1bc/x"])
def test_a_tree_page_whose_next_link_is_no_url_is_one_error_that_shows_it_escaped(hub, tmp_path, release, link):
    """A next link urllib cannot parse (a netloc that changes under NFKC, an unclosed IPv6 bracket) is one error, the
    link shown escaped: its ValueError went up raw (a terminal escape in it reached the terminal from corpus
    import).
    """
    hub.seed_repo(REPO, release)
    hub.tree_link = f'<{link}>; rel="next"'.encode().decode("latin-1")  # as a server sends it: UTF-8 bytes
    with pytest.raises(HubError, match="links its next page on another host") as error:
        pull(hub, tmp_path / "out")
    assert "\x1b" not in str(error.value) and "\\x1bc" in str(error.value)
    assert not (tmp_path / "out").exists()


def test_a_repo_info_that_never_answers_times_out(hub, tmp_path, release, monkeypatch):
    hub.seed_repo(REPO, release)
    hub.stall_repo_info = 30.0  # far past the read timeout
    monkeypatch.setenv("HF_TOKBIN_PULL_READ_TIMEOUT", "1")
    import time

    started = time.monotonic()
    with pytest.raises(HubError):
        pull(hub, tmp_path / "out")
    assert time.monotonic() - started < 25  # the client gave up (each attempt after 1 s), not the server after 30
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("given", [".", "{cwd}", "{file}/sub"])
def test_an_out_with_no_place_beside_it_is_refused_before_anything_is_fetched(
    hub, tmp_path, release, monkeypatch, given
):
    # An empty current folder passed the old check, was downloaded
    # into a staging folder "..pull-<commit>", then failed.
    hub.seed_repo(REPO, release)
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "a-file").write_text("x")
    monkeypatch.chdir(work)
    out = given.format(cwd=work, file=tmp_path / "a-file")
    before = len(hub.requests)
    with pytest.raises(HubError, match="--out"):
        pull(hub, out)
    assert len(hub.requests) == before  # nothing asked of the server
    assert not [p for p in (*tmp_path.iterdir(), *work.iterdir()) if ".pull-" in p.name] and not any(work.iterdir())


# -- every answer bounded in time as a whole, not only read by read (docs/security.md) --------------------------------


def pull_in_a_child(hub, tmp_path, **env) -> tuple[subprocess.CompletedProcess, float]:
    """``hf-tokbin pull`` in a child process (one attempt per request), and the seconds it took. A child so that a
    pull held by the server fails this test at the subprocess timeout instead of holding the test run. The read
    timeout is roomy (ROOMY_S): the requests before the one a test holds up must succeed, however busy the machine."""
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        **client_env(hub, home, TOKEN),
        "HF_TOKBIN_HUB_ATTEMPTS": "1",
        "HF_TOKBIN_PULL_READ_TIMEOUT": f"{ROOMY_S:g}",
        **env,
    }
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", _CLI, "pull", REPO, "--out", str(tmp_path / "out"), "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        timeout=2 * HUNG_S,
        check=False,
    )
    return result, time.monotonic() - started


def test_a_server_trickling_a_files_headers_cannot_hold_a_pull(hub, tmp_path, release):
    """COMPLETE.json's status line and headers come a byte every second, each read well within the read timeout:
    its ~250 bytes take minutes, and the old deadline, checked between body chunks, was never reached. The file's
    deadline (grace 1 s + its size at 64 KiB/s; the first download, no other waits on it) shuts the connection
    down: one line, seconds in."""
    hub.seed_repo(REPO, release)
    hub.trickle_headers["COMPLETE.json"] = 1.0
    result, seconds = pull_in_a_child(hub, tmp_path, HF_TOKBIN_PULL_GRACE="1")
    assert result.returncode == 1, result.stdout + result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert (
        len(lines) == 1
        and "COMPLETE.json" in lines[0]
        and "download too slow: 0 of" in lines[0]
        and "HF_TOKBIN_PULL_GRACE" in lines[0]
    ), result.stderr[-2000:]
    # the deadline, the child's start-up and two small requests; not the headers' minutes
    assert seconds < HUNG_S, seconds
    assert not (tmp_path / "out").exists()


def test_a_range_read_whose_body_trickles_stops_at_its_deadline(hub, tmp_path):
    """A Parquet footer of a plain Hub corpus is read by range requests; one whose 100 bytes come a byte every second
    (each read within the read timeout) is cut at grace + length / min_rate, not read to its end 100 s later."""
    corpus, _ = make_corpus(tmp_path / "corpus")
    commit = hub.seed_repo("tester/corpus", corpus)
    path = "data/train-00000.parquet"
    hub.trickle[path] = 1.0
    # The one request: a tight grace; its connection and headers get the roomy read timeout.
    source = Source(
        "tester/corpus",
        commit,
        endpoint=hub.url,
        token=TOKEN,
        repo_type="dataset",
        limits=DownloadLimits(read_timeout=ROOMY_S, min_rate=1e6, grace=1.0),
    )
    started = time.monotonic()
    with pytest.raises(HubError, match=r"range read too slow: \d+ of 100 bytes after 1s.*HF_TOKBIN_PULL_GRACE"):
        source.read_range(path, 0, 100)
    assert time.monotonic() - started < 30  # the deadline, not the 100 s the body takes
    assert sent_after_hang_up(hub, path) < 100


def test_an_error_answer_whose_body_trickles_stops_at_the_files_deadline(hub, tmp_path, release):
    """An HTTP 500 is read for its message (at most 64 KiB); a message coming a byte every second (minutes) is cut
    at the file's deadline like any other part of the answer."""
    commit = hub.seed_repo(REPO, release)
    hub.trickle_error["stats.json"] = 1.0
    size = (release / "stats.json").stat().st_size
    # The one request: a tight grace; its connection and headers get the roomy read timeout.
    source = Source(
        REPO,
        commit,
        endpoint=hub.url,
        token=TOKEN,
        repo_type="dataset",
        limits=DownloadLimits(read_timeout=ROOMY_S, min_rate=1e6, grace=1.0),
    )
    staging = tmp_path / "staging"
    staging.mkdir()
    started = time.monotonic()
    with pytest.raises(HubError, match=f"download too slow: 0 of {size:,} bytes after 1s"):
        source.fetch("stats.json", staging, Expected(size))
    assert time.monotonic() - started < 30  # the deadline, not the minutes the message takes
    assert tree(staging) == set()


@pytest.mark.parametrize("server", ["slow pages forever", "page bytes trickled"])
def test_a_tree_listing_that_comes_slowly_is_one_error_at_the_listing_deadline(hub, tmp_path, release, server):
    """Pages of 1,000 entries half a second apart, forever (each well within the read timeout: the 300,000 entry
    bound is 150 s away), or one real page a byte every 0.2 s (many minutes): the listing stops at
    HF_TOKBIN_LISTING_TIMEOUT with one line naming the repo, the bound and how to raise it. The bound is roomy: the
    repo info before the listing, under the same bound, must come through however busy the machine."""
    hub.seed_repo(REPO, release)
    if server == "slow pages forever":
        hub.endless_tree, hub.tree_delay = True, 0.5
    else:
        hub.trickle_tree = 0.2
    result, seconds = pull_in_a_child(hub, tmp_path, HF_TOKBIN_LISTING_TIMEOUT=f"{ROOMY_S:g}")
    assert result.returncode == 1, result.stdout + result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert (
        len(lines) == 1
        and f"{REPO}@" in lines[0]
        and f"file listing took more than {ROOMY_S:g}s" in lines[0]
        and "HF_TOKBIN_LISTING_TIMEOUT" in lines[0]
    ), result.stderr[-2000:]
    assert seconds < HUNG_S, seconds
    assert not (tmp_path / "out").exists()


def test_a_fast_pull_leaves_no_deadline_behind(hub, tmp_path, release):
    """Every download and listing page ran under a deadline; each one's timer is gone once its request is done
    (a cancelled timer's thread ends at once; one left running would live the grace, a minute, or the listing's
    600 s).
    """
    hub.seed_repo(REPO, release)
    assert pull(hub, tmp_path / "out").complete
    for timer in [t for t in threading.enumerate() if isinstance(t, threading.Timer)]:
        timer.join(timeout=20)
        assert not timer.is_alive()


def test_a_repo_info_that_trickles_is_one_error_at_the_listing_deadline(hub, tmp_path, release):
    """The revision's answer a byte every 0.5 s (each read well within the read timeout; the ~1 KB answer takes
    minutes): resolving the commit stops at HF_TOKBIN_LISTING_TIMEOUT with one line; repo_info waited it out."""
    hub.seed_repo(REPO, release)
    hub.trickle_repo_info = 0.5
    result, seconds = pull_in_a_child(hub, tmp_path, HF_TOKBIN_LISTING_TIMEOUT=f"{ROOMY_S:g}")
    assert result.returncode == 1, result.stdout + result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert (
        len(lines) == 1
        and f"{REPO}@" in lines[0]
        and f"resolving the revision took more than {ROOMY_S:g}s" in lines[0]
    ), result.stderr[-2000:]
    assert seconds < HUNG_S, seconds
    assert not (tmp_path / "out").exists()


def test_an_hf_input_whose_repo_info_trickles_is_one_error_at_the_listing_deadline(hub, tmp_path):
    """corpus import hf://…: HfFileSystem.resolve_path asked for the repo's info before the bounded request, bounded in
    neither bytes nor time (the ~1 KB answer a byte every 50 ms took a minute, each read within the read timeout). The
    URL is parsed without a request; the revision is resolved by the bounded request alone."""
    corpus, _ = make_corpus(tmp_path / "corpus")
    hub.seed_repo("tester/corpus", corpus)
    hub.trickle_repo_info = 0.05
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        **client_env(hub, home, TOKEN),
        "HF_TOKBIN_HUB_ATTEMPTS": "1",
        "HF_TOKBIN_PULL_READ_TIMEOUT": "2",
        "HF_TOKBIN_LISTING_TIMEOUT": "3",
    }
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            _CLI,
            "corpus",
            "import",
            "hf://datasets/tester/corpus/data/*.parquet",
            "--out",
            str(tmp_path / "out"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    seconds = time.monotonic() - started
    assert result.returncode == 1, result.stdout + result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and "tester/corpus@main" in lines[0] and "resolving the revision took more than 3s" in lines[0]
    ), result.stderr[-2000:]
    assert seconds < 15, seconds
    assert hub.count("GET", r"^/api/datasets/tester/corpus(/revision/[^/]+)?$") == 1
    assert not (tmp_path / "out").exists()


def test_a_push_to_a_server_that_stops_answering_times_out(hub, tmp_path, release):
    """huggingface_hub's shared client waits forever on a read (timeout None): push's own calls through it (repo
    info, paths info, commits) get HF_TOKBIN_PULL_READ_TIMEOUT, so a stalled server is one error, not a hang."""
    hub.seed_repo(REPO, release)
    hub.stall_repo_info = 40.0  # far past the read timeout
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        **client_env(hub, home, TOKEN),
        "HF_TOKBIN_HUB_ATTEMPTS": "1",
        "HF_TOKBIN_PULL_READ_TIMEOUT": "1",
    }
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", _CLI, "push", str(release), "--repo", REPO, "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        timeout=35,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr[-2000:]
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr[-2000:]
    assert time.monotonic() - started < 25


def test_a_client_hanging_up_mid_answer_leaves_no_traceback_on_stderr(tmp_path, release, capfd):
    """The hostile tests' clients hang up mid-answer on purpose; the server's handler thread used to print the
    BrokenPipeError's traceback to stderr later, into whichever test was capturing it then (a CI failure)."""
    import socket

    with HostileHub(token=TOKEN) as server:
        commit = server.seed_repo(REPO, release)
        server.tree_delay = 0.5
        host, port = server.httpd.server_address[:2]
        handled = threading.Event()  # set once the handler's thread is done, its error (if any) handled
        shutdown_request = server.httpd.shutdown_request
        server.httpd.shutdown_request = lambda request: (shutdown_request(request), handled.set())
        with socket.create_connection((host, port)) as client:  # gone before the answer comes
            client.sendall(
                f"GET /api/datasets/{REPO}/tree/{commit}?recursive=true HTTP/1.1\r\nHost: x\r\n\r\n".encode()
            )
        assert handled.wait(60)  # the handler answered into the closed connection, and failed
    assert "Traceback" not in capfd.readouterr().err
