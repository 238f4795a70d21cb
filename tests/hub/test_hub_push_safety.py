"""Push never deletes or publishes unasked, says the Hub's reason, respects its limits, and publishes only
what COMPLETE.json vouches for.

Against the Hub-protocol test server with the real huggingface_hub client, in a child
process (the client reads HF_HUB_DISABLE_XET / HF_ENDPOINT when imported).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import time

import httpx2
import pytest
from hub_server import (  # hub and env: tests/hub/conftest.py
    REPO,
    TOKEN,
    Blob,
    HubServer,
    cli,
    make_corpus,
    make_verified_release,
    write_complete,
)

from hf_tokbin.errors import HubError
from hf_tokbin.hub.files import check_hub_limits, folder_entries, normalize_path_in_repo
from hf_tokbin.hub.retry import RetryPolicy, is_transient, scrub

pytestmark = pytest.mark.slow  # pushes through the Hub test server in child processes

# The Python API with a recorded sleep; ``setup`` runs first (a monkeypatch, in the child only).
_PUSH = """
import json, sys
from hf_tokbin.errors import TokbinError
from hf_tokbin.hub import HubLimits, RetryPolicy, push_folder
args = json.loads(sys.argv[1])
exec(args.get("setup", ""))
slept = []
code = 0
try:
    print(push_folder(args["folder"], args["repo"], limits=HubLimits(**args.get("limits", {})), progress=False,
                      retry=RetryPolicy(attempts=4, base_delay=0.01, sleep=slept.append), **args.get("kwargs", {})))
except TokbinError as e:
    print(f"error: {e}", file=sys.stderr)
    code = 1
print("SLEPT " + json.dumps(slept))
sys.exit(code)
"""

# Between the client's preupload and its commit call, another writer changes stats.json (same size).
_CHANGE_DURING_COMMIT = """
from pathlib import Path
import huggingface_hub
real_preupload = huggingface_hub.HfApi.preupload_lfs_files
rewritten = []
def preupload_then_rewrite(self, *a, **k):
    result = real_preupload(self, *a, **k)
    if not rewritten and any(op.path_in_repo == "stats.json" for op in k.get("additions", [])):
        rewritten.append(1)
        path = Path(args["folder"]) / "stats.json"
        data = bytearray(path.read_bytes())
        data[-2] ^= 0x01
        path.write_bytes(bytes(data))
    return result
huggingface_hub.HfApi.preupload_lfs_files = preupload_then_rewrite
"""


# Files above 64 bytes count as big (hashed by the client, sent by path); count every hash of a file.
_BIG_FILES_COUNTED = """
import collections, os
import huggingface_hub
import hf_tokbin.hub.files as files
import hf_tokbin.hub.push as push
files.INLINE_MAX_BYTES = 64
hashed = collections.Counter()
real_post_init = huggingface_hub.CommitOperationAdd.__post_init__
def counting_post_init(self):
    real_post_init(self)
    if isinstance(self.path_or_fileobj, str):
        hashed[self.path_or_fileobj] += 1
huggingface_hub.CommitOperationAdd.__post_init__ = counting_post_init
real_sha256_file = push.sha256_file
def counting_sha256_file(path):
    hashed[os.fspath(path)] += 1
    return real_sha256_file(path)
push.sha256_file = counting_sha256_file
import atexit
atexit.register(lambda: print("HASHED " + json.dumps(hashed), file=sys.stderr))
"""

# After the check, another writer rewrites a big file (same size; its mtime moves on, as any write's does).
_REWRITE_BIG_AFTER_CHECK = """
from pathlib import Path
checked = push._LocalFiles.check
def check_then_rewrite(plan, prefix, progress):
    local = checked(plan, prefix, progress)
    path = Path(args["folder"]) / "shards/train/part-000001.bin"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    stat = path.stat()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a clock tick coarser than the test is fast
    return local
push._LocalFiles.check = check_then_rewrite
"""




def push_api(env, folder, repo=REPO, setup="", limits=None, **kwargs):
    args = json.dumps({"folder": str(folder), "repo": repo, "setup": setup, "limits": limits or {}, "kwargs": kwargs})
    result = subprocess.run([sys.executable, "-c", _PUSH, args], env=env, capture_output=True, text=True, timeout=120)
    assert result.stdout.strip(), result.stderr[-3000:]
    slept = json.loads(result.stdout.strip().splitlines()[-1].removeprefix("SLEPT "))
    return result, slept


def local_files(root) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def pushed_commits(hub, repo=REPO, branch="main"):
    return hub.repo(repo).history(branch)[1:]


def add_by_hand(hub, files: dict[str, bytes], repo=REPO, branch="main"):
    """Someone adds files on the Hub (the web editor)."""
    r = hub.repo(repo)
    tree = dict(r.resolve(branch).tree)
    tree.update({p: Blob.store(d, False) for p, d in files.items()})
    r.add_commit(branch, "Upload by hand", tree, sorted(files))


CHANGING = ("POST /api/repos/create", "/commit/", "/preupload/", "/branch/", "/info/lfs/", "/_lfs/")


def changing_requests(hub):
    return [
        (m, p)
        for _, m, p, _ in hub.requests
        if m in ("POST", "PUT", "DELETE") and any(c in f"{m} {p}" for c in CHANGING)
    ]


# -- 1. nothing deleted unasked; --delete, --mirror, --dry-run ------------------


def change_card(release) -> None:
    """A changed release that still verifies: a line added to its card, COMPLETE.json rewritten."""
    with open(release / "README.md", "a", encoding="utf-8") as card:
        card.write("\nA note added after the first push.\n")
    write_complete(release)


def test_a_hand_added_file_survives_a_repush_of_a_changed_release(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    assert cli(env, "push", release, "--repo", REPO).returncode == 0
    add_by_hand(hub, {"NOTES.md": b"# notes by hand\n"})
    change_card(release)
    result = cli(env, "push", release, "--repo", REPO)
    assert result.returncode == 0, result.stderr
    remote = hub.head_files(REPO)
    assert remote["NOTES.md"] == b"# notes by hand\n"
    assert (
        remote["README.md"] == (release / "README.md").read_bytes()
        and remote["COMPLETE.json"] == (release / "COMPLETE.json").read_bytes()
    )
    assert "1 other remote files left alone" in result.stdout


def test_delete_patterns_delete_only_what_they_name(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    assert cli(env, "push", release, "--repo", REPO).returncode == 0
    add_by_hand(hub, {"NOTES.md": b"keep me\n", "old/a.txt": b"a\n", "old/b.txt": b"b\n", "scratch.tmp": b"x\n"})
    result = cli(env, "push", release, "--repo", REPO, "--delete", "old/*", "--delete", "*.tmp")
    assert result.returncode == 0, result.stderr
    remote = hub.head_files(REPO)
    assert "NOTES.md" in remote and not {"old/a.txt", "old/b.txt", "scratch.tmp"} & set(remote)
    assert "3 remote files the folder does not hold deleted" in result.stdout
    assert "COMPLETE.json" in remote  # it stayed right all along


def test_dry_run_lists_add_keep_delete_and_changes_nothing(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    assert cli(env, "push", release, "--repo", REPO).returncode == 0
    add_by_hand(hub, {"NOTES.md": b"notes\n", "old.txt": b"old\n"})
    change_card(release)
    heads = dict(hub.repo(REPO).branches)
    hub.requests.clear()
    result = cli(env, "push", release, "--repo", REPO, "--delete", "old.txt", "--dry-run")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "dry run, nothing changed" in lines[0]
    assert {line.split()[1] for line in lines if line.startswith("  add ")} == {"README.md", "COMPLETE.json"}
    assert {line.split()[1] for line in lines if line.startswith("  delete ")} == {"old.txt"}
    assert {line.split()[1] for line in lines if line.startswith("  leave ")} == {"NOTES.md"}
    kept = {line.split()[1] for line in lines if line.startswith("  keep ")}
    assert kept == set(local_files(release)) - {"README.md", "COMPLETE.json"}
    assert hub.repo(REPO).branches == heads and changing_requests(hub) == []


def test_dry_run_of_a_new_repo_creates_nothing(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    result = cli(env, "push", release, "--repo", "tester/new", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "it would be created" in result.stdout and f"would add {len(local_files(release))} files" in result.stdout
    assert hub.repos == {} and changing_requests(hub) == []


def test_files_of_another_release_in_the_layout_are_refused_not_mixed(hub, env, tmp_path):
    big = make_verified_release(tmp_path / "big", parts=3)
    assert cli(env, "push", big, "--repo", REPO).returncode == 0
    heads = dict(hub.repo(REPO).branches)
    small = make_verified_release(tmp_path / "small", parts=1, seed=1)
    result = cli(env, "push", small, "--repo", REPO, "--quiet")
    assert result.returncode == 1
    line = result.stderr.strip()
    assert len(line.splitlines()) == 1 and "would be mixed with it" in line
    assert "--delete 'receipts/*'" in line and "--delete 'shards/*'" in line and "--mirror" in line
    assert hub.repo(REPO).branches == heads


def test_deletions_count_in_the_operations_per_commit(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    assert cli(env, "push", release, "--repo", REPO).returncode == 0
    add_by_hand(hub, {f"extra/{i}.txt": b"%d\n" % i for i in range(7)})
    before = len(pushed_commits(hub))
    result, _ = push_api(env, release, limits={"files_per_commit": 3}, mirror=True)
    assert result.returncode == 0, result.stderr
    new = pushed_commits(hub)[before:]
    assert [len(c.changed) for c in new] == [3, 3, 1]
    assert not any(p.startswith("extra/") for p in hub.head_files(REPO))


# -- 2. visibility only when asked ---------------------------------------------


def test_no_visibility_is_sent_without_a_flag(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    assert cli(env, "push", release, "--repo", REPO).returncode == 0
    assert len(hub.create_payloads) == 1
    assert not {"private", "visibility"} & set(hub.create_payloads[0]), hub.create_payloads[0]


@pytest.mark.parametrize("flag, private", [("--public", False), ("--private", True)])
def test_visibility_flags_are_sent_and_an_existing_repo_of_the_other_kind_is_refused(
    hub, env, tmp_path, flag, private
):
    release = make_verified_release(tmp_path / "release")
    assert cli(env, "push", release, "--repo", REPO, flag).returncode == 0
    sent = hub.create_payloads[0]
    assert sent.get("private", sent.get("visibility") == "private") == private and hub.repo(REPO).private == private
    other = "--private" if flag == "--public" else "--public"
    heads = dict(hub.repo(REPO).branches)
    refused = cli(env, "push", make_verified_release(tmp_path / "other", seed=2), "--repo", REPO, other)
    assert refused.returncode == 1 and "does not change an existing repo" in refused.stderr
    assert hub.repo(REPO).branches == heads


# -- 3. --commit-message, --create-pr, --token, --path-in-repo -----------------


def test_commit_message_titles_every_commit(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    result = cli(env, "push", release, "--repo", REPO, "--commit-message", "Release v1")
    assert result.returncode == 0, result.stderr
    assert [c.message for c in pushed_commits(hub)] == ["Release v1 (1/2)", "Release v1 (2/2)"]
    assert "COMPLETE.json" in pushed_commits(hub)[-1].description


def test_create_pr_leaves_main_alone(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    assert cli(env, "push", make_verified_release(tmp_path / "first", seed=3), "--repo", REPO).returncode == 0
    main = hub.repo(REPO).branches["main"]
    result = cli(env, "push", release, "--repo", REPO, "--create-pr", "--mirror")
    assert result.returncode == 0, result.stderr
    assert hub.repo(REPO).branches["main"] == main
    pr = hub.head_files(REPO, "refs/pr/1")
    pr.pop(".gitattributes")
    assert pr == local_files(release)
    assert pushed_commits(hub, branch="refs/pr/1")[-1].changed == ("COMPLETE.json",)
    assert "/discussions/1" in result.stdout and "refs/pr/1" in result.stdout


def test_token_flag_is_used_and_never_printed(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    no_env_token = {k: v for k, v in env.items() if k != "HF_TOKEN"}
    wrong = "hf_wrong_flag_token_abcdefghijklmnop"
    refused = cli(no_env_token, "push", release, "--repo", REPO, "--token", wrong)
    assert refused.returncode == 1 and "HTTP 401" in refused.stderr and "write access" in refused.stderr
    assert wrong not in refused.stdout + refused.stderr
    result = cli(no_env_token, "push", release, "--repo", REPO, "--token", TOKEN)
    assert result.returncode == 0, result.stderr
    assert TOKEN not in result.stdout + result.stderr


def test_releases_share_a_repo_under_path_in_repo(hub, env, tmp_path):
    v1, v2 = make_verified_release(tmp_path / "v1", seed=1), make_verified_release(tmp_path / "v2", parts=2, seed=2)
    corpus, _ = make_corpus(tmp_path / "corpus")
    assert cli(env, "push", corpus, "--repo", REPO).returncode == 0
    for name, folder in (("v1", v1), ("v2", v2)):
        result = cli(env, "push", folder, "--repo", REPO, "--path-in-repo", f"releases/{name}/")
        assert result.returncode == 0, result.stderr
        assert f"releases/{name}/COMPLETE.json verified at" in result.stdout
    remote = hub.head_files(REPO)
    for name, folder in (("v1", v1), ("v2", v2)):
        assert {
            p[len(f"releases/{name}/") :]: d for p, d in remote.items() if p.startswith(f"releases/{name}/")
        } == local_files(folder)
    assert {p: d for p, d in remote.items() if not p.startswith("releases/") and p != ".gitattributes"} == local_files(
        corpus
    )
    again = cli(env, "push", v1, "--repo", REPO, "--path-in-repo", "releases/v1", "--mirror")
    # --mirror stays inside its folder
    assert again.returncode == 0, again.stderr and "already published" in again.stdout
    assert hub.head_files(REPO) == remote


def test_a_bad_path_in_repo_is_refused():
    for bad in ("../up", "a/../b", ".git", "a//b", "/abs"):
        with pytest.raises(HubError, match="path in repo must be a relative folder"):
            normalize_path_in_repo(bad)
    assert normalize_path_in_repo("releases/v1") == normalize_path_in_repo("releases/v1/") == "releases/v1/"
    assert normalize_path_in_repo(None) == normalize_path_in_repo("") == ""


# -- 4. the server's reason, never the token -----------------------------------


def test_the_servers_message_reaches_the_user_and_the_token_never_does(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    hub.faults.commit_refused = "Your push was rejected because the storage limit of this namespace is reached"
    hub.faults.echo_authorization = True
    result = cli(env, "push", release, "--repo", REPO, "--quiet")
    assert result.returncode == 1
    line = result.stderr.strip()
    assert len(line.splitlines()) == 1
    assert "HTTP 403" in line and "storage limit of this namespace is reached" in line and "write access" in line
    assert TOKEN not in result.stdout + result.stderr and "Bearer ***" in line


def test_server_messages_are_one_printable_line_with_tokens_masked():
    # a real token's shape: hf_ + 34 letters (tests/hub/test_retry.py has the rule)
    token = "hf_" + "abcdefghijklmnopq" * 2
    assert (
        scrub(f"bad\x1b[31m red\nline Authorization: Bearer abc.def {token}")
        == "bad [31m red line Authorization: Bearer *** hf_***"
    )
    assert len(scrub("x" * 5000)) == 300


# -- 5. limits, before the first upload -----------------------------------------


def test_limit_check_counts_entries_per_folder():
    paths = [f"shards/train/part-{i:06d}.bin" for i in range(10_000)] + ["COMPLETE.json"]
    check_hub_limits(paths)
    assert folder_entries(paths) == {"": 2, "shards": 1, "shards/train": 10_000}
    with pytest.raises(
        HubError, match=r"shards/train/ would hold 10,001 entries, the Hub allows at most 10,000 per folder"
    ):
        check_hub_limits(paths + ["shards/train/part-999999.idx"])
    with pytest.raises(HubError, match="the Hub's largest file is"):
        check_hub_limits(["a.bin"], {"a.bin": 51 * 1000**3})


def test_a_release_too_big_for_one_folder_is_refused_before_any_upload(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release", parts=5)  # 10 files in shards/train/, 8 entries at the top
    setup = "import hf_tokbin.hub.files as f; f.HUB_MAX_ENTRIES_PER_FOLDER = 9"
    result, _ = push_api(env, release, setup=setup)
    assert result.returncode == 1
    assert "shards/train/ would hold 10 entries, the Hub allows at most 9 per folder" in result.stderr
    assert changing_requests(hub) == []


# -- 6. the card is validated first ------------------------------------------------


def bad_card_release(root):
    release = make_verified_release(root)
    card = (release / "README.md").read_text()
    (release / "README.md").write_text(re.sub(r"(?m)^license: .*$", "license: not-a-license", card, count=1))
    write_complete(release)
    return release


def test_an_invalid_card_fails_before_any_lfs_upload(hub, env, tmp_path):
    release = bad_card_release(tmp_path / "release")
    result = cli(env, "push", release, "--repo", REPO, "--quiet")
    assert result.returncode == 1
    assert (
        "README.md" in result.stderr
        and "not-a-license" in result.stderr
        and "refuses the dataset card" in result.stderr
    )
    assert hub.count("POST", r"/info/lfs/objects/batch$") == 0 and hub.count("PUT", "^/_lfs/") == 0
    assert REPO not in hub.repos or pushed_commits(hub) == []


def test_validate_yaml_answering_503_is_retried(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    hub.faults.validate_yaml_unavailable = 2  # our check first, then the client's own, inside create_commit
    result = cli(env, "push", release, "--repo", REPO)
    assert result.returncode == 0, result.stderr
    assert "validate the dataset card: HTTP 503" in result.stderr and "retrying" in result.stderr
    assert hub.faults.validate_yaml_unavailable == 0
    assert hub.head_files(REPO)["COMPLETE.json"] == (release / "COMPLETE.json").read_bytes()


# -- 7. 429 with RateLimit headers ----------------------------------------------------


def test_a_429_with_ratelimit_headers_waits_as_told(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    hub.faults.commit_quota = {"remaining": 0, "reset": 42, "limit": 100, "window": 3600}
    result, slept = push_api(env, release)
    assert result.returncode == 0, result.stderr
    assert slept == [43.0]  # the reset time, plus one second as huggingface_hub's own backoff
    assert "rate limit for repository commits" in result.stderr


def test_a_long_rate_limit_wait_stops_with_the_time_to_rerun(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    hub.faults.commit_quota = {"remaining": 0, "reset": 3000, "limit": 100, "window": 3600}
    result, slept = push_api(env, release)
    assert result.returncode == 1 and slept == []
    assert re.search(r"re-run after \d\d:\d\d", result.stderr) and "3001s" in result.stderr
    assert "COMPLETE.json" not in hub.head_files(REPO)


# -- 8. a commit that lands late ------------------------------------------------------


def test_a_commit_that_lands_after_its_504_is_accepted_on_the_retrys_412(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    hub.faults.commit_lands_late = 1
    result = cli(env, "push", release, "--repo", REPO)
    assert result.returncode == 0, result.stderr
    assert "landed late" in result.stderr
    assert [s for _, m, p, s in hub.requests if m == "POST" and "/commit/" in p][:2] == [504, 412]
    remote = hub.head_files(REPO)
    remote.pop(".gitattributes")
    assert remote == local_files(release)
    assert len(pushed_commits(hub)) == 2


def test_a_late_deletion_commit_is_accepted_on_the_retrys_404(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    assert cli(env, "push", release, "--repo", REPO).returncode == 0
    add_by_hand(hub, {"old.txt": b"old\n"})
    hub.faults.commit_lands_late = 1
    result = cli(env, "push", release, "--repo", REPO, "--delete", "old.txt")
    assert result.returncode == 0, result.stderr
    assert "landed late" in result.stderr and "old.txt" not in hub.head_files(REPO)


# -- 9. what is published is what COMPLETE.json vouches for ----------------


def test_a_small_file_changed_during_its_commit_is_not_published_with_new_bytes(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    vouched = next(
        f for f in json.loads((release / "COMPLETE.json").read_text())["files"] if f["path"] == "stats.json"
    )
    result, _ = push_api(env, release, setup=_CHANGE_DURING_COMMIT)
    assert hashlib.sha256((release / "stats.json").read_bytes()).hexdigest() != vouched["sha256"]
    # The bytes read once, checked against COMPLETE.json, are the ones sent and read back.
    assert result.returncode == 0, result.stderr
    assert hashlib.sha256(hub.head_files(REPO)["stats.json"]).hexdigest() == vouched["sha256"]


def test_each_big_file_is_hashed_once_by_the_client_and_sent_by_path(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    result, _ = push_api(env, release, setup=_BIG_FILES_COUNTED)
    assert result.returncode == 0, result.stderr
    hashed = json.loads(result.stderr.split("HASHED ")[-1])
    big = [p for p in local_files(release) if (release / p).stat().st_size > 64]
    assert len(big) > 10 and all(hashed[str(release / p)] == 1 for p in big), hashed
    remote = hub.head_files(REPO)
    remote.pop(".gitattributes")
    assert remote == local_files(release)


def test_a_big_file_rewritten_after_its_check_stops_the_push(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    result, _ = push_api(env, release, setup=_BIG_FILES_COUNTED + _REWRITE_BIG_AFTER_CHECK)
    assert result.returncode == 1
    assert "part-000001.bin" in result.stderr and "file changed after it was checked" in result.stderr
    assert pushed_commits(hub) == []


def test_the_commit_cap_counts_the_repos_recent_commits(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    initial = hub.create_repo(REPO).history()[0]  # its initial commit, a moment ago, counts
    setup = (
        "import functools, atexit\n"
        "import hf_tokbin.hub.push as push\n"
        "capped = []\n"
        "push.CommitRateLimiter = functools.partial(push.CommitRateLimiter, sleep=capped.append)\n"
        "atexit.register(lambda: print('CAPPED ' + json.dumps(capped), file=sys.stderr))\n"
    )
    result, _ = push_api(env, release, setup=setup, limits={"commits_per_hour": 2})
    assert result.returncode == 0, result.stderr
    capped = json.loads(result.stderr.split("CAPPED ")[-1])
    # The second commit waits for the initial one to leave the hour: an hour less that commit's age when it waited,
    # which is at most its age now (the fixed floor of 3500 s failed any run slower than 100 s).
    assert len(capped) == 1 and 3600 - (time.time() - initial.created) - 1 < capped[0] < 3600
    assert "commit cap of 2 per hour reached" in result.stderr


def test_a_history_page_linking_its_next_page_on_another_host_gets_neither_request_nor_token(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    hub.create_repo(REPO)
    hub.land_foreign_commit(REPO, "main")  # two recent commits: the history spans pages
    hub.page_size = 1
    with HubServer(token=TOKEN) as elsewhere:
        hub.page_origins["commits"] = elsewhere.url
        result, _ = push_api(env, release)
        assert elsewhere.requests == []
    assert result.returncode == 0, result.stderr
    assert (
        "could not read the branch's recent commits" in result.stderr
        and "links its next page on another host" in result.stderr
    )


# -- 12. throughput ---------------------------------------------------------------------


def test_the_next_batch_uploads_while_a_commit_is_made(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release", parts=4)
    first_batch_lfs = 2  # part 0: a train pair (its receipt is a plain file)
    # the first commit is answered only once a later file arrived
    hub.faults.gate_after_lfs_objects = first_batch_lfs + 1
    result, _ = push_api(env, release, limits={"files_per_commit": 5})
    assert result.returncode == 0, result.stderr
    assert not hub.faults.gate_timed_out
    part0 = json.loads((release / "receipts/part-000000.json").read_text())
    assert set(pushed_commits(hub)[0].changed) == {f["path"] for f in part0["files"]} | {"receipts/part-000000.json"}
    assert (
        len(pushed_commits(hub)) > 2
        and hub.head_files(REPO)["COMPLETE.json"] == (release / "COMPLETE.json").read_bytes()
    )


def test_a_symlink_in_the_release_is_refused_not_followed(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    outside = tmp_path / "secret.json"
    outside.write_bytes((release / "stats.json").read_bytes())  # same bytes: size and SHA-256 match the record
    (release / "stats.json").unlink()
    (release / "stats.json").symlink_to(outside)
    result = cli(env, "push", release, "--repo", REPO, "--quiet")
    assert result.returncode == 1
    assert "stats.json" in result.stderr and "symlink" in result.stderr
    assert hub.requests == []


def test_a_symlinked_folder_in_the_release_is_refused(hub, env, tmp_path):
    import shutil

    release = make_verified_release(tmp_path / "release")
    shutil.move(release / "receipts", tmp_path / "elsewhere")
    (release / "receipts").symlink_to(tmp_path / "elsewhere")
    result = cli(env, "push", release, "--repo", REPO, "--quiet")
    assert result.returncode == 1
    assert "receipts" in result.stderr and "symlink" in result.stderr
    assert hub.requests == []


# -- 10. hf_xet errors ------------------------------------------------------------------


def test_hf_xet_not_found_is_not_transient():
    hf_xet = pytest.importorskip("hf_xet")

    class XetConnectionError(ConnectionError):  # how older hf_xet versions reported an HTTP status
        __module__ = "hf_xet"

    assert not is_transient(hf_xet.XetObjectNotFoundError("object not found"))
    assert not is_transient(hf_xet.XetAuthenticationError("token refused"))
    assert not is_transient(XetConnectionError("Request failed: HTTP status client error (404 Not Found)"))
    assert is_transient(XetConnectionError("connection reset by peer"))
    assert is_transient(ConnectionError("Request failed: 404"))  # not hf_xet: a plain dropped connection


# -- 11. the test server answers as the Hub does ----------------------------------------


def test_the_server_answers_as_the_hub(hub, tmp_path):
    make_verified_release(tmp_path / "release")
    hub.seed_repo(REPO, tmp_path / "release")
    hub.repo(REPO).private = True
    base = f"{hub.url}/api/datasets/{REPO}"
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with httpx2.Client(timeout=60) as http:  # every request must succeed: roomy on a busy machine
        assert http.get(base).status_code == 401  # private, no token
        assert http.get(f"{hub.url}/api/datasets/tester/missing", headers=auth).status_code == 404
        hub.page_size = 5
        first = http.get(f"{base}/tree/main", params={"recursive": "true"}, headers=auth)
        assert len(first.json()) == 5 and first.links["next"]["url"]
        paths = [f"p{i}" for i in range(1001)]
        too_many = http.post(f"{base}/paths-info/main", data={"paths": paths}, headers=auth)
        assert too_many.status_code == 400 and "Too many paths" in too_many.json()["error"]
        header = json.dumps(
            {"key": "header", "value": {"summary": "rm", "parentCommit": hub.repo(REPO).branches["main"]}}
        )
        gone = json.dumps({"key": "deletedFile", "value": {"path": "no-such-file"}})
        missing = http.post(f"{base}/commit/main", content=f"{header}\n{gone}\n", headers=auth)
        assert missing.status_code == 404 and missing.headers["X-Error-Code"] == "EntryNotFound"


def test_push_pages_through_a_long_tree(hub, env, tmp_path):
    hub.page_size = 3
    release = make_verified_release(tmp_path / "release")
    assert cli(env, "push", release, "--repo", REPO).returncode == 0
    heads = [c.oid for c in hub.repo(REPO).history()]
    again = cli(env, "push", release, "--repo", REPO)
    assert again.returncode == 0 and "already published" in again.stdout, again.stderr
    assert [c.oid for c in hub.repo(REPO).history()] == heads


def test_retry_policy_rate_limit_wait_is_bounded():
    request = httpx2.Request("POST", "http://127.0.0.1/api/datasets/a/b/commit/main")
    from huggingface_hub.errors import HfHubHTTPError

    response = httpx2.Response(
        429,
        headers={"RateLimit": '"api";r=0;t=9', "RateLimit-Policy": '"fixed window";"api";q=500;w=300'},
        request=request,
    )
    error = HfHubHTTPError("429", response=response)
    assert RetryPolicy(max_delay=60).delay(1, error) == 10.0
    with pytest.raises(HubError, match="re-run after"):
        RetryPolicy(max_delay=5).delay(1, error)
    # not the reason for the 429
    remaining = httpx2.Response(429, headers={"RateLimit": '"api";r=3;t=9'}, request=request)
    assert RetryPolicy(base_delay=0.5).delay(1, HfHubHTTPError("429", response=remaining)) == 0.5


def test_hints_fit_the_operation_and_a_gated_repo_asks_for_access():
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError

    from hf_tokbin.hub.retry import as_hub_error, fetch_error

    request = httpx2.Request("GET", "http://127.0.0.1/datasets/a/b/resolve/main/x")
    forbidden = httpx2.Response(403, headers={"X-Error-Message": "no access to a/b"}, request=request)
    error = HfHubHTTPError("403", response=forbidden, server_message="no access to a/b")
    assert "write access" in str(as_hub_error("a/b@main", "commit", error))
    read = str(fetch_error("a/b@main", "corpus", error))
    assert "read access" in read and "write access" not in read and "HTTP 403: no access to a/b" in read
    gated = GatedRepoError(
        "403 gated",
        response=httpx2.Response(403, headers={"X-Error-Code": "GatedRepo"}, request=request),
        server_message="Access to dataset a/b is restricted",
    )
    message = str(fetch_error("a/b@main", "corpus", gated))
    assert "gated" in message and "ask for access" in message and "Access to dataset a/b is restricted" in message
