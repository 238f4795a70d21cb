"""Push (hf_tokbin.hub.push) against the Hub-protocol test server, with the real huggingface_hub client.

Pushes run in a child process: huggingface_hub reads HF_HUB_DISABLE_XET and
HF_ENDPOINT when it is imported, so the client is configured through its
environment before that, never patched.
"""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import httpx2
import pytest
from hub_server import REPO, TOKEN, cli, make_corpus, make_verified_release, write_complete
from huggingface_hub.errors import HfHubHTTPError

from hf_tokbin.corpus import write_tinystories_corpus
from hf_tokbin.errors import HubError
from hf_tokbin.formats.release import Receipt
from hf_tokbin.hub import CommitRateLimiter, HubLimits, RetryPolicy, Upload
from hf_tokbin.hub.push import _Publisher, pack_batches
from hf_tokbin.hub.retry import call_with_retry

pytestmark = pytest.mark.slow  # pushes through the Hub test server in child processes

# Runs the Python API with explicit limits (the command line has no knobs for them).
_PUSH_API = """
import json, sys
from hf_tokbin.errors import TokbinError
from hf_tokbin.hub import HubLimits, push_folder
args = json.loads(sys.argv[1])
try:
    limits = HubLimits(**args["limits"])
    print(push_folder(args["folder"], args["repo"], revision=args["revision"], limits=limits, progress=False))
except TokbinError as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(1)
"""

# Another writer changes a checked file (same size, one bit) between the local check and the upload.
_PUSH_WHILE_WRITING = """
import sys
from pathlib import Path
import hf_tokbin.hub.push as push
from hf_tokbin.errors import TokbinError
folder, repo, victim = sys.argv[1:4]
checked = push._LocalFiles.check
def check_then_rewrite(plan, prefix, progress):
    local = checked(plan, prefix, progress)
    path = Path(folder) / victim
    data = bytearray(path.read_bytes())
    data[-2] ^= 0x01
    path.write_bytes(bytes(data))
    return local
push._LocalFiles.check = check_then_rewrite
try:
    print(push.push_folder(folder, repo, progress=False))
except TokbinError as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(1)
"""


def push_api(env, folder, repo=REPO, revision="main", **limits) -> subprocess.CompletedProcess:
    args = json.dumps({"folder": str(folder), "repo": repo, "revision": revision, "limits": limits})
    return subprocess.run(
        [sys.executable, "-c", _PUSH_API, args], env=env, capture_output=True, text=True, timeout=120
    )


def local_files(root) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def pushed_commits(hub, repo=REPO, branch="main"):
    return hub.repo(repo).history(branch)[1:]  # without the repo's initial commit


def assert_published(hub, release):
    remote = hub.head_files(REPO)
    remote.pop(".gitattributes")
    assert remote == local_files(release)
    assert pushed_commits(hub)[-1].changed == ("COMPLETE.json",)


# -- the normal path -----------------------------------------------------------


def test_push_publishes_every_file_verified_and_complete_json_last(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    result = cli(env, "push", release, "--repo", REPO)
    assert result.returncode == 0, result.stderr
    remote = hub.head_files(REPO)
    remote.pop(".gitattributes")
    assert remote == local_files(release)
    commits = pushed_commits(hub)
    assert commits[-1].changed == ("COMPLETE.json",)
    assert all("COMPLETE.json" not in c.tree for c in commits[:-1])
    assert (
        f"{len(local_files(release))} files" in result.stdout
        and "COMPLETE.json verified at " + commits[-1].oid in result.stdout
    )
    assert TOKEN not in result.stdout + result.stderr


def test_second_push_of_the_same_release_makes_no_commit(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    assert cli(env, "push", release, "--repo", REPO).returncode == 0
    heads = [c.oid for c in hub.repo(REPO).history()]
    again = cli(env, "push", release, "--repo", REPO)
    assert again.returncode == 0, again.stderr
    assert [c.oid for c in hub.repo(REPO).history()] == heads
    assert "already published" in again.stdout
    assert hub.count("PUT", "^/_lfs/") == len(
        [p for p in local_files(release) if p.endswith((".bin", ".idx", ".parquet"))]
    )


def test_each_part_goes_up_with_its_receipt_within_the_commit_limit(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release", parts=4)
    result = push_api(env, release, files_per_commit=5)
    assert result.returncode == 0, result.stderr
    commits = pushed_commits(hub)
    assert len(commits) > 2
    for commit in commits:
        assert len(commit.changed) <= 5
    home_of = {path: i for i, c in enumerate(commits) for path in c.changed}
    for receipt_path in sorted(p for p in local_files(release) if p.startswith("receipts/")):
        receipt = Receipt.read(release / receipt_path)
        assert {home_of[f.path] for f in receipt.files} == {home_of[receipt_path]}
    assert commits[-1].changed == ("COMPLETE.json",)


def test_release_without_a_card_gets_one_rendered_before_complete(hub, env, tmp_path):
    from hf_tokbin.cards.release import render_release_card

    release = make_verified_release(tmp_path / "release", card=False)
    assert not (release / "README.md").exists()
    result = cli(env, "push", release, "--repo", REPO)
    assert result.returncode == 0, result.stderr
    assert hub.head_files(REPO)["README.md"] == render_release_card(release).encode()
    assert "README.md" in pushed_commits(hub)[0].changed


def test_push_to_a_new_branch_of_a_private_repo(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    result = cli(env, "push", release, "--repo", REPO, "--revision", "v1", "--private")
    assert result.returncode == 0, result.stderr
    repo = hub.repo(REPO)
    assert repo.private
    assert "COMPLETE.json" in hub.head_files(REPO, "v1")
    assert set(hub.head_files(REPO, "main")) == {".gitattributes"}


def test_corpus_folder_pushes_and_loads_with_datasets(hub, env, tmp_path):
    corpus, rows = make_corpus(tmp_path / "corpus")
    result = cli(env, "push", corpus, "--repo", "tester/corpus")
    assert result.returncode == 0, result.stderr
    commits = pushed_commits(hub, "tester/corpus")
    assert commits[-1].changed == ("_MANIFEST.json",)
    code = (
        "import json, datasets; d = datasets.load_dataset('tester/corpus'); "
        "print(json.dumps({k: list(d[k]['text']) for k in d}))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert json.loads(loaded.stdout.strip().splitlines()[-1]) == rows


def stories_file(path, texts):
    path.write_text("".join(t + "\n<|endoftext|>\n" for t in texts), encoding="utf-8")
    return path


def test_smaller_corpus_pushed_over_a_bigger_one_leaves_only_its_own_files(hub, env, tmp_path):
    old = write_tinystories_corpus(
        stories_file(tmp_path / "old.txt", [f"old story {i}" for i in range(6)]), None, tmp_path / "old", shard_rows=2
    )
    assert [s.path for s in old.shards] == [
        "data/train-00000.parquet",
        "data/train-00001.parquet",
        "data/train-00002.parquet",
    ]
    assert cli(env, "push", tmp_path / "old", "--repo", "tester/corpus").returncode == 0
    write_tinystories_corpus(
        stories_file(tmp_path / "new.txt", ["new story a", "new story b"]), None, tmp_path / "new"
    )
    refused = cli(env, "push", tmp_path / "new", "--repo", "tester/corpus")
    assert (
        refused.returncode == 1
        and "would be mixed with it" in refused.stderr
        and "--delete 'data/*'" in refused.stderr
    )
    result = cli(env, "push", tmp_path / "new", "--repo", "tester/corpus", "--delete", "data/*")
    assert result.returncode == 0, result.stderr
    remote = hub.head_files("tester/corpus")
    remote.pop(".gitattributes")
    assert remote == local_files(tmp_path / "new")  # train-00001/00002 of the old corpus are gone
    assert "2 remote files the folder does not hold deleted" in result.stdout
    code = (
        "import json, datasets; d = datasets.load_dataset('tester/corpus'); "
        "print(json.dumps({k: list(d[k]['text']) for k in d}))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert json.loads(loaded.stdout.strip().splitlines()[-1]) == {"train": ["new story a", "new story b"]}


def test_smaller_release_pushed_over_a_bigger_one_leaves_only_its_own_files(hub, env, tmp_path):
    big = make_verified_release(tmp_path / "big", parts=3)
    assert cli(env, "push", big, "--repo", REPO).returncode == 0
    small = make_verified_release(tmp_path / "small", parts=1, seed=1)
    before = len(pushed_commits(hub))
    result = cli(env, "push", small, "--repo", REPO, "--mirror")
    assert result.returncode == 0, result.stderr
    remote = hub.head_files(REPO)
    remote.pop(".gitattributes")
    assert remote == local_files(small)
    gone = set(local_files(big)) - set(local_files(small))
    assert {p for p in gone if p.startswith(("shards/", "receipts/"))} == gone and len(
        gone
    ) == 6  # parts 1 and 2: a pair and a receipt each
    new_commits = pushed_commits(hub)[before:]
    # deleted with the stale record
    assert set(new_commits[0].changed) == gone | {"COMPLETE.json"} and "COMPLETE.json" not in new_commits[0].tree
    assert new_commits[-1].changed == ("COMPLETE.json",)
    assert f"{len(gone)} remote files the folder does not hold deleted" in result.stdout


def test_a_foreign_file_on_a_published_branch_is_left_alone_and_deleted_by_mirror(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    assert cli(env, "push", release, "--repo", REPO).returncode == 0
    hub.land_foreign_commit(REPO, "main")
    before = len(pushed_commits(hub))
    kept = cli(env, "push", release, "--repo", REPO)
    assert kept.returncode == 0, kept.stderr
    assert "NOTES.txt" in hub.head_files(REPO) and len(pushed_commits(hub)) == before
    assert "1 other remote files left alone" in kept.stdout
    result = cli(env, "push", release, "--repo", REPO, "--mirror")
    assert result.returncode == 0, result.stderr
    remote = hub.head_files(REPO)
    remote.pop(".gitattributes")
    assert remote == local_files(release)
    new_commits = pushed_commits(hub)[before:]
    assert [c.changed for c in new_commits] == [("NOTES.txt",)]  # COMPLETE.json was right all along: it stays
    assert "1 remote files the folder does not hold deleted" in result.stdout


@pytest.mark.parametrize("victim", ["stats.json", "shards/train/part-000001.bin"])
def test_a_file_changed_after_the_check_stops_the_push(hub, env, tmp_path, victim):
    release = make_verified_release(tmp_path / "release")
    result = subprocess.run(
        [sys.executable, "-c", _PUSH_WHILE_WRITING, str(release), REPO, victim],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stdout
    assert victim in result.stderr and "file changed after it was checked" in result.stderr
    assert pushed_commits(hub) == []  # nothing landed, COMPLETE.json least of all


# -- what stops a push -----------------------------------------------------------


def test_local_corruption_stops_the_push_before_anything_goes_up(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    target = release / "shards/train/part-000001.bin"
    data = bytearray(target.read_bytes())
    data[3] ^= 0x01
    target.write_bytes(bytes(data))
    result = cli(env, "push", release, "--repo", REPO, "--quiet")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr  # the error alone: no traceback, no bar
    assert str(target) in lines[0] and "SHA-256 differs from COMPLETE.json" in lines[0]
    assert hub.requests == []


def test_hub_storing_other_bytes_stops_naming_the_file_and_a_rerun_completes(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release", parts=4)
    bad = "shards/train/part-000002.idx"
    hub.faults.store_flipped.add(bad)
    first = push_api(env, release, files_per_commit=5)
    assert first.returncode == 1
    assert bad in first.stderr and "remote LFS SHA-256 differs from the local file" in first.stderr
    assert "COMPLETE.json" not in hub.head_files(REPO)
    first_run = pushed_commits(hub)
    sent_first = {p for c in first_run for p in c.changed}

    hub.faults.store_flipped.clear()
    second = push_api(env, release, files_per_commit=5)
    assert second.returncode == 0, second.stderr
    assert_published(hub, release)
    second_run = pushed_commits(hub)[len(first_run) :]
    sent_second = {p for c in second_run for p in c.changed}
    # Only the file that failed verification is sent again; everything verified stays.
    assert sent_first & sent_second == {bad}


def test_stale_parent_stops_with_a_one_line_message(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    hub.faults.stale_parent = 1
    result = cli(env, "push", release, "--repo", REPO, "--quiet")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    foreign_head = hub.repo(REPO).branches["main"]
    assert (
        lines[0].startswith("hf-tokbin push: error: ")
        and "someone else pushed" in lines[0]
        and foreign_head in lines[0]
    )
    files = hub.head_files(REPO)
    assert "NOTES.txt" in files and "COMPLETE.json" not in files


# -- transient faults: retried, and the final state is right ---------------------


def test_commit_applied_but_answered_500_is_recognised_not_repeated(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    hub.faults.commit_applied_then_500 = 1
    result = cli(env, "push", release, "--repo", REPO)
    assert result.returncode == 0, result.stderr
    assert "the commit landed" in result.stderr
    assert_published(hub, release)
    assert len(pushed_commits(hub)) == 2  # the batch once, then COMPLETE.json


def test_failed_lfs_put_is_retried(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    hub.faults.put_fails = 1
    result = cli(env, "push", release, "--repo", REPO)
    assert result.returncode == 0, result.stderr
    assert hub.faults.put_fails == 0
    assert any(status == 500 for _, m, p, status in hub.requests if m == "PUT")
    assert_published(hub, release)


def test_rate_limited_commit_waits_retry_after_then_succeeds(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    hub.faults.commit_rate_limited = 1
    hub.faults.retry_after_seconds = 1
    result = cli(env, "push", release, "--repo", REPO)
    assert result.returncode == 0, result.stderr
    assert "HTTP 429" in result.stderr and "retrying in 1s" in result.stderr
    commit_calls = [(t, status) for t, m, p, status in hub.requests if m == "POST" and "/commit/" in p]
    assert commit_calls[0][1] == 429 and commit_calls[1][1] == 200
    assert commit_calls[1][0] - commit_calls[0][0] >= 0.9
    assert_published(hub, release)


def test_dropped_connection_while_reading_back_is_retried(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    hub.faults.paths_info_resets = 1
    result = cli(env, "push", release, "--repo", REPO)
    assert result.returncode == 0, result.stderr
    assert hub.faults.paths_info_resets == 0 and "retrying" in result.stderr
    assert_published(hub, release)


def test_wrong_token_fails_with_a_hint_and_is_never_printed(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    wrong = "hf_wrong_token_abcdefghijklmnop"
    result = cli({**env, "HF_TOKEN": wrong}, "push", release, "--repo", REPO)
    assert result.returncode == 1
    assert "HTTP 401" in result.stderr and "HF_TOKEN" in result.stderr
    assert wrong not in result.stdout + result.stderr


def test_changed_release_removes_the_old_complete_json_first(hub, env, tmp_path):
    release = make_verified_release(tmp_path / "release")
    assert cli(env, "push", release, "--repo", REPO).returncode == 0
    done = len(pushed_commits(hub))
    with open(release / "README.md", "a", encoding="utf-8") as card:  # a changed card: the release still verifies
        card.write("\nA note added after the first push.\n")
    write_complete(release)
    result = cli(env, "push", release, "--repo", REPO)
    assert result.returncode == 0, result.stderr
    new_commits = pushed_commits(hub)[done:]
    assert "COMPLETE.json" in new_commits[0].changed and "COMPLETE.json" not in new_commits[0].tree
    assert new_commits[-1].changed == ("COMPLETE.json",)
    assert_published(hub, release)


# -- pieces, in process ---------------------------------------------------------


def test_pack_batches_keeps_groups_whole_and_within_limits():
    def up(name, size):
        return Upload(name, size, "0" * 64, b"")

    groups = [(up("a", 10), up("b", 10), up("ra", 1)), (up("c", 10), up("rc", 1)), (up("d", 500),), (up("e", 1),)]
    batches = pack_batches(groups, HubLimits(files_per_commit=4, bytes_per_commit=100))
    assert [[u.path for u in b] for b in batches] == [["a", "b", "ra"], ["c", "rc"], ["d"], ["e"]]


def test_rate_limiter_waits_for_the_oldest_commit_to_leave_the_hour():
    now = [1000.0]
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        now[0] += seconds

    limiter = CommitRateLimiter(2, clock=lambda: now[0], sleep=sleep)
    for step in (0.0, 10.0):
        now[0] += step
        assert limiter.wait_turn() == 0.0
        limiter.record()
    now[0] += 5.0
    assert limiter.wait_turn() == pytest.approx(3600.0 - 15.0)
    assert slept == [pytest.approx(3585.0)]


def http_error(status: int, headers: dict | None = None) -> HfHubHTTPError:
    request = httpx2.Request("POST", "http://127.0.0.1/api/datasets/a/b/commit/main")
    return HfHubHTTPError(f"{status} error", response=httpx2.Response(status, headers=headers or {}, request=request))


def test_retry_is_bounded_doubles_its_wait_and_honours_retry_after():
    slept = []
    policy = RetryPolicy(attempts=4, base_delay=0.5, max_delay=30.0, sleep=slept.append)
    calls = []

    def always_503():
        calls.append(1)
        raise http_error(503)

    with pytest.raises(HfHubHTTPError):
        call_with_retry(policy, "commit", always_503)
    assert len(calls) == 4 and slept == [0.5, 1.0, 2.0]

    slept.clear()
    answers = [http_error(429, {"Retry-After": "7"}), "done"]

    def rate_limited_once():
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert call_with_retry(policy, "commit", rate_limited_once) == "done"
    assert slept == [7.0]


def test_retry_does_not_repeat_a_permanent_error():
    calls = []

    def forbidden():
        calls.append(1)
        raise http_error(403)

    with pytest.raises(HfHubHTTPError):
        call_with_retry(RetryPolicy(attempts=5, base_delay=0, sleep=lambda s: None), "commit", forbidden)
    assert len(calls) == 1


class DroppingUploads:
    """An HfApi stand-in whose uploads always drop the connection; the branch head never moves."""

    def __init__(self):
        self.preuploads = self.commits = 0

    def preupload_lfs_files(self, *args, **kwargs):
        self.preuploads += 1
        raise ConnectionError("connection reset by peer")

    def create_commit(self, *args, **kwargs):
        self.commits += 1

    def dataset_info(self, repo_id, revision=None):
        return SimpleNamespace(sha="a" * 40)


def test_a_failing_upload_is_tried_attempts_times_not_attempts_squared():
    api = DroppingUploads()
    slept = []
    publisher = _Publisher(
        api,
        "tester/release",
        "main",
        HubLimits(),
        RetryPolicy(attempts=3, base_delay=0.5, sleep=slept.append),
        head="a" * 40,
    )
    with pytest.raises(HubError, match=r"tester/release@main: upload files failed: .*ConnectionError"):
        publisher.commit([Upload.from_bytes("stats.json", b"{}\n")], [], "Add stats.json")
    assert api.preuploads == 3 and api.commits == 0
    assert slept == [0.5, 1.0]


def test_bad_limits_and_repo_ids_are_refused():
    from hf_tokbin.hub import push_folder

    with pytest.raises(HubError, match="files_per_commit must be a positive integer"):
        HubLimits(files_per_commit=0)
    with pytest.raises(HubError, match="repo id must be NAMESPACE/NAME"):
        push_folder(".", "no-namespace")


def test_retry_settings_from_the_environment_say_what_they_must_be(monkeypatch):
    monkeypatch.setenv("HF_TOKBIN_HUB_ATTEMPTS", "2.5")
    with pytest.raises(
        HubError,
        match=(
            "HF_TOKBIN_HUB_ATTEMPTS: environment variable must be "
            "an integer: expected an integer such as 5, got '2.5'"
        ),
    ):
        RetryPolicy.from_env()
    monkeypatch.setenv("HF_TOKBIN_HUB_ATTEMPTS", "3")
    monkeypatch.setenv("HF_TOKBIN_HUB_BACKOFF", "soon")
    with pytest.raises(HubError, match="HF_TOKBIN_HUB_BACKOFF: environment variable must be a number"):
        RetryPolicy.from_env()
    monkeypatch.setenv("HF_TOKBIN_HUB_BACKOFF", "0.5")
    assert RetryPolicy.from_env() == RetryPolicy(attempts=3, base_delay=0.5)


def test_push_refuses_a_release_that_pull_refuses(copy):
    # Made-up preview text, COMPLETE.json resealed: every digest holds, and pull's verify refuses the preview.
    # push runs the same rules before its first request (the endpoint here answers nothing).
    import pyarrow.parquet as pq
    from release_edits import reseal_complete

    from hf_tokbin.errors import VerificationError
    from hf_tokbin.hub import RetryPolicy, push_folder

    path = copy / "preview" / "train.parquet"
    table = pq.read_table(path)
    texts = ["a made-up story"] * table.num_rows
    pq.write_table(table.set_column(table.schema.get_field_index("text"), "text", [texts]), path)
    reseal_complete(copy)
    with pytest.raises(VerificationError, match=r"preview/train\.parquet: row 0: text must be the document's text"):
        push_folder(
            copy,
            "tester/refused",
            endpoint="http://127.0.0.1:9",
            token="hf_unused",
            retry=RetryPolicy(attempts=1, base_delay=0.01),
            progress=False,
        )
