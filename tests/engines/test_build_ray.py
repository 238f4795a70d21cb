"""``hf-tokbin build --engine ray`` end to end, on a real Ray cluster (the session's: a head and two workers).

The session's one cluster (the ``ray_cluster`` fixture: Ray takes seconds to
start) runs the real command line as the Ray driver, inside a network
namespace that has only loopback (see ``ray_cluster.py``), three times, each
time from the driver's directory with
relative ``--corpus``, ``--tokenizer`` and ``--out`` while the nodes run in
another directory:

1. an uninterrupted build;
2. a build during which the worker process encoding a part is SIGKILLed
   from outside (found by its Ray process title ``ray::encode_part[N]``);
3. a build whose driver is SIGKILLed after some receipts exist, then the
   same command again.

Every release must be byte for byte the release of ``--engine local``
(built outside the namespace), and ``hf-tokbin verify`` must accept it.

A mixture of three corpora (``tests/mixture_fixtures.py``: ``--corpus en
--corpus fr --corpus code --mix ...``, relative too) is built on the same
cluster in both formats and in llm.c alone, each equal to its ``--engine local
--num-proc 1`` build.
These tests need root and the ``[ray]`` extra.
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest
from mixture_fixtures import SEPARATOR, write_mixture_corpora
from ray_cluster import NODES
from release_fixtures import stories, write_corpus

from hf_tokbin.cli import main
from hf_tokbin.engines.ray import check_reachable
from hf_tokbin.errors import BuildError
from hf_tokbin.formats.release import part_name
from hf_tokbin.tokenizer import train_bpe

pytestmark = pytest.mark.slow  # a Ray cluster

# Shards large enough that a part takes a moment to encode (the worker kill
# must land mid-part), small enough that the whole file runs in about a minute.
SHARDS = [("train", stories(2500, seed=30 + i, max_words=150)) for i in range(4)] + [
    ("validation", stories(400, seed=40)),
    ("train", []),
]
MAX_TOKENS_PER_FILE = 100_000  # several llm.c files per split: the finish rolls over
OPTIONS = ["--corpus", "corpus", "--tokenizer", "tok", "--max-tokens-per-file", str(MAX_TOKENS_PER_FILE), "--quiet"]
SUMMARY = re.compile(r"(\d+) parts built, (\d+) skipped")

pytest_plugins = ["ray_cluster"]  # the session's one cluster

# The driver: it runs `hf-tokbin build --engine ray` (the installed command)
# in its own directory and watches the cluster's processes with psutil; the
# PID namespace holds only this cluster, so every `ray::encode_part[N]`
# process is a worker running part N of one of these builds.
DRIVER = r'''
import json, os, signal, subprocess, time

import psutil

OPTIONS = %(options)s
TITLE = "ray::encode_part["
DEADLINE_S = 900  # only stops a hung build: each wait below ends on an event, a loaded machine takes longer


def start(out):
    command = [
        "hf-tokbin", "build", *OPTIONS, "--out", out, "--engine", "ray", "--ray-address", os.environ["RAY_ADDRESS"]
    ]
    return subprocess.Popen(command, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def workers():
    """The processes running a part now, as (pid, part index, parent pid, working directory)."""
    found = set()
    for process in psutil.process_iter(["pid", "ppid", "cmdline"]):
        try:
            title = " ".join(process.info["cmdline"] or []).strip()
            if title.startswith(TITLE):
                found.add((process.pid, int(title[len(TITLE):].split("]")[0]), process.info["ppid"], process.cwd()))
        except (psutil.Error, ValueError):
            continue  # ended, or changed its title, while we looked
    return found


def receipts(out):
    """The finished parts' receipts (not a receipt being written)."""
    directory = os.path.join(out, "receipts")
    return sorted(n for n in os.listdir(directory) if n.startswith("part-")) if os.path.isdir(directory) else []


def receipt_exists(out, index):
    return os.path.exists(os.path.join(out, "receipts", f"part-{index:06d}.json"))


def finish(process, seen):
    """Wait for a build, noting the part workers seen meanwhile; its outcome as a dict."""
    deadline = time.monotonic() + DEADLINE_S
    while process.poll() is None and time.monotonic() < deadline:
        seen.update(workers())
        time.sleep(0.01)
    if process.poll() is None:
        process.kill()
    stdout, stderr = process.communicate()
    return {"returncode": process.returncode, "stdout": stdout, "stderr": stderr[-4000:]}


def wait_until(process, ready, seen):
    """Poll until ready() returns something (returned), or the build ends (None)."""
    deadline = time.monotonic() + DEADLINE_S
    while process.poll() is None and time.monotonic() < deadline:
        seen.update(workers())
        value = ready()
        if value:
            return value
        time.sleep(0.005)
    return None


def describe(seen):
    return [{"pid": pid, "part": part, "parent": parent, "cwd": cwd} for pid, part, parent, cwd in sorted(seen)]


def still_on_part(pid, part):
    """Whether process pid (stopped by the caller) is still running that part: its title says so."""
    try:
        return " ".join(psutil.Process(pid).cmdline()).startswith(f"{TITLE}{part}]")
    except psutil.Error:
        return False


def held_on_every_node(raylets, held):
    """Stop (SIGSTOP) each node's first worker caught on a part, until one is held on every node.

    ``held`` maps a node's raylet pid to its held worker's pid. A held worker
    keeps its one-CPU node busy, so the next parts must go to the other
    nodes: every node takes a part however a busy machine's Ray schedules.
    False until then (the build may end first: the test then fails, saying so).
    """
    for pid, part, parent, _ in workers():
        if parent in held:
            continue
        os.kill(pid, signal.SIGSTOP)
        if still_on_part(pid, part):
            held[parent] = pid
        else:
            os.kill(pid, signal.SIGCONT)  # it finished that part meanwhile
    return set(held) == set(raylets)


report = {"driver_cwd": os.getcwd()}
# One raylet per node; a worker is the child of its node's raylet.
report["raylets"] = sorted(
    p.pid for p in psutil.process_iter(["cmdline"]) if "raylet/raylet" in " ".join(p.info["cmdline"] or [])
)

# 1. Uninterrupted (each node's first worker held until every node has one).
seen = set()
build = start("plain")
held = {}
report["held_on_every_node"] = wait_until(build, lambda: held_on_every_node(report["raylets"], held), seen) is not None
for pid in held.values():
    os.kill(pid, signal.SIGCONT)
report["plain"] = finish(build, seen)
report["plain"]["workers"] = describe(seen)

# 2. A worker SIGKILLed while it builds a part, once another part is done.
seen = set()
build = start("killed-worker")


def a_worker_mid_part():
    if not receipts("killed-worker"):
        return None
    for pid, part, _, _ in workers():
        os.kill(pid, signal.SIGSTOP)  # so it cannot finish the part between the check and the kill
        if still_on_part(pid, part) and not receipt_exists("killed-worker", part):
            os.kill(pid, signal.SIGKILL)
            try:
                psutil.Process(pid).wait(timeout=DEADLINE_S)  # gone once its raylet reaps it, later on a loaded machine
            except psutil.NoSuchProcess:
                pass  # already gone
            # Still no receipt after the worker is gone: the kill landed mid-part.
            return {"pid": pid, "part": part, "receipt_after_kill": receipt_exists("killed-worker", part)}
        os.kill(pid, signal.SIGCONT)
    return None


report["killed_worker"] = wait_until(build, a_worker_mid_part, seen)
report["killed_worker_build"] = finish(build, seen)

# 3. The driver SIGKILLed once two parts are done; then the same command again.
seen = set()
build = start("killed-driver")
report["driver_killed_at"] = wait_until(
    build, lambda: len(receipts("killed-driver")) >= 2 and receipts("killed-driver"), seen
)
os.killpg(build.pid, signal.SIGKILL)
build.wait()
# Ray ends the dead driver's tasks; the re-run starts once they are gone, as
# a user's would (two attempts at one part must not write at the same time).
killed_at = time.monotonic()
while workers() and time.monotonic() < killed_at + DEADLINE_S:
    time.sleep(0.05)
report["old_workers_left"] = describe(workers())
report["seconds_until_old_workers_gone"] = time.monotonic() - killed_at  # for the record
report["receipts_before_rerun"] = receipts("killed-driver")
report["complete_before_rerun"] = os.path.exists(os.path.join("killed-driver", "COMPLETE.json"))
report["rerun"] = finish(start("killed-driver"), seen)

with open("report.json", "w") as f:
    json.dump(report, f)
'''


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def parts_built_and_skipped(stdout: str) -> tuple[int, int]:
    match = SUMMARY.search(stdout)
    assert match, f"no summary line in: {stdout!r}"
    return int(match[1]), int(match[2])


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """The driver's directory: the corpus, the tokenizer and, after the session, the releases."""
    root = tmp_path_factory.mktemp("build_ray")
    train_bpe(stories(300, seed=1), 600, root / "tok")
    write_corpus(root / "corpus", SHARDS)
    return root


@pytest.fixture(scope="module")
def local_release(work, tmp_path_factory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("local") / "release"
    absolute = [str(work / value) if value in ("corpus", "tok") else value for value in OPTIONS]
    assert main(["build", *absolute, "--out", str(out), "--engine", "local"]) == 0
    return tree_bytes(out)


@pytest.fixture(scope="module")
def report(work, ray_cluster) -> dict:
    process = ray_cluster.run(DRIVER % {"options": json.dumps(OPTIONS)}, work)
    if process.returncode != 0:
        pytest.fail(f"driver failed ({process.returncode}), Ray's log in {ray_cluster.log}:\n{process.stderr[-6000:]}")
    return json.loads((work / "report.json").read_text())


def test_ray_build_equals_local_build_and_verifies(work, report, local_release, capsys):
    plain = report["plain"]
    assert plain["returncode"] == 0, plain["stderr"]
    assert parts_built_and_skipped(plain["stdout"]) == (len(SHARDS), 0)
    ray_release = tree_bytes(work / "plain")
    assert sorted(ray_release) == sorted(local_release)
    assert ray_release == local_release
    assert main(["verify", str(work / "plain")]) == 0
    assert "OK" in capsys.readouterr().out


def test_relative_paths_are_the_drivers_while_workers_run_elsewhere(work, report):
    # The release went where the driver's relative --out points, though no
    # worker ran in the driver's directory.
    assert (work / "plain" / "COMPLETE.json").is_file()
    worker_dirs = {w["cwd"] for w in report["plain"]["workers"]}
    assert worker_dirs and report["driver_cwd"] not in worker_dirs
    assert Path(report["driver_cwd"]).resolve() == work.resolve()


def test_parts_ran_on_every_node(report):
    assert report["held_on_every_node"], "the build ended before every node had taken a part"
    workers = report["plain"]["workers"]
    assert {w["part"] for w in workers} <= set(range(len(SHARDS)))
    assert len(report["raylets"]) == NODES
    assert {w["parent"] for w in workers} == set(report["raylets"])


def test_worker_killed_mid_part_is_retried_to_the_local_bytes(work, report, local_release):
    killed = report["killed_worker"]
    assert killed is not None, "no worker was caught mid-part: the build ended first"
    assert killed["receipt_after_kill"] is False
    build = report["killed_worker_build"]
    assert build["returncode"] == 0, build["stderr"]
    # Ray noticed the death of that very worker and ran its task again.
    assert f"Worker PID: {killed['pid']}" in build["stdout"] and "the task will be retried" in build["stdout"]
    assert (work / "killed-worker" / "receipts" / f"{part_name(killed['part'])}.json").is_file()
    assert (work / "killed-worker" / "receipts" / f"{part_name(killed['part'])}.json").is_file()
    assert tree_bytes(work / "killed-worker") == local_release


def test_killed_driver_rerun_skips_finished_parts_and_equals_local(work, report, local_release):
    assert report["driver_killed_at"], "the build ended before two parts were done"
    assert report["complete_before_rerun"] is False
    assert report["old_workers_left"] == []  # Ray ended the dead driver's tasks
    done_before = len(report["receipts_before_rerun"])
    assert 2 <= done_before < len(SHARDS)
    rerun = report["rerun"]
    assert rerun["returncode"] == 0, rerun["stderr"]
    assert parts_built_and_skipped(rerun["stdout"]) == (len(SHARDS) - done_before, done_before)
    assert tree_bytes(work / "killed-driver") == local_release


# The mixture: the sources' corpora in the driver's directory, named as --mix names them; several llm.c train files,
# so several pack tasks.
MIXTURE_OPTIONS = [
    *("--corpus", "en", "--corpus", "fr", "--corpus", "code"),
    *("--mix", "en=0.5,fr=0.3,code=0.2", "--tokens", "130000", "--max-epochs", "2"),
    *("--tokenizer", "byte", "--doc-sep", str(SEPARATOR), "--max-tokens-per-file", "30000", "--quiet"),
]
MIXTURE_FORMATS = {"both": "llmc,megatron", "llmc": "llmc"}  # the --out folder of each build, and its --format

# The driver of the mixture builds: `hf-tokbin build --engine ray` once per --format, one after the other.
MIXTURE_DRIVER = r'''
import json, os, subprocess, sys

OPTIONS = %(options)s
FORMATS = %(formats)s
DEADLINE_S = 900  # only stops a hung build

report = {}
for out, formats in FORMATS.items():
    command = [
        "hf-tokbin", "build", *OPTIONS, "--format", formats, "--out", out,
        "--engine", "ray", "--ray-address", os.environ["RAY_ADDRESS"],
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=DEADLINE_S)
    report[out] = {"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr[-4000:]}
with open("report.json", "w") as f:
    json.dump(report, f)
'''


@pytest.fixture(scope="module")
def mixture_work(tmp_path_factory) -> Path:
    """The mixture driver's directory: one corpus folder per source and, after its run, the releases."""
    root = tmp_path_factory.mktemp("build_ray_mixture")
    write_mixture_corpora(root)
    return root


@pytest.fixture(scope="module")
def mixture_report(mixture_work, ray_cluster) -> dict:
    code = MIXTURE_DRIVER % {"options": json.dumps(MIXTURE_OPTIONS), "formats": json.dumps(MIXTURE_FORMATS)}
    process = ray_cluster.run(code, mixture_work)
    if process.returncode != 0:
        pytest.fail(f"driver failed ({process.returncode}), Ray's log in {ray_cluster.log}:\n{process.stderr[-6000:]}")
    return json.loads((mixture_work / "report.json").read_text())


@pytest.mark.parametrize("out", list(MIXTURE_FORMATS))
def test_mixture_ray_build_equals_local_num_proc_1_build(mixture_work, mixture_report, tmp_path, out):
    build = mixture_report[out]
    assert build["returncode"] == 0, build["stderr"]
    assert parts_built_and_skipped(build["stdout"]) == (11, 0)  # 8 train and 3 validation shards
    local = tmp_path / "local"
    absolute = [str(mixture_work / value) if value in ("en", "fr", "code") else value for value in MIXTURE_OPTIONS]
    argv = ["build", *absolute, "--format", MIXTURE_FORMATS[out], "--out", str(local), "--engine", "local"]
    assert main([*argv, "--num-proc", "1"]) == 0
    ray_release = tree_bytes(mixture_work / out)
    assert ray_release["COMPLETE.json"] == (local / "COMPLETE.json").read_bytes()
    assert ray_release == tree_bytes(local)
    assert len([name for name in ray_release if "/train-" in name]) == 5  # packed by five tasks


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_unreachable_ray_address_is_one_line_error_at_once(work, tmp_path, capsys):
    address = f"127.0.0.1:{closed_port()}"
    absolute = [str(work / value) if value in ("corpus", "tok") else value for value in OPTIONS]
    code = main(["build", *absolute, "--out", str(tmp_path / "r"), "--engine", "ray", "--ray-address", address])
    err = capsys.readouterr().err
    assert code == 1
    assert err.strip().splitlines() == [
        f"hf-tokbin build: error: {address}: Ray cluster must be reachable: expected a Ray head node listening at "
        "this address, "
        "got ConnectionRefusedError: [Errno 111] Connection refused (HINT: start one with `ray start --head`, or "
        "correct --ray-address)"
    ]
    assert not (tmp_path / "r").exists()  # checked before the first byte is written


def test_reachability_check_connects_to_host_port_and_ray_client_addresses(monkeypatch):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        check_reachable(f"127.0.0.1:{port}")
        check_reachable(f"ray://127.0.0.1:{port}")
        monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
        check_reachable(None)
    port = closed_port()
    for address in (f"ray://127.0.0.1:{port}", f"[::1]:{port}"):
        with pytest.raises(BuildError, match="Ray cluster must be reachable") as caught:
            check_reachable(address)
        assert str(caught.value).startswith(f"{address}: ")
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    with pytest.raises(BuildError, match=f"^127.0.0.1:{port}: Ray cluster must be reachable"):
        check_reachable(None)


def test_reachability_check_leaves_other_addresses_to_ray(monkeypatch):
    connections = []

    def connect(address, timeout):
        connections.append(address)
        return socket.socket()  # closed by the check, unused

    monkeypatch.setattr(socket, "create_connection", connect)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    for address in (None, "auto", "local", "anyscale://my-cluster"):
        check_reachable(address)  # Ray finds, starts or resolves these itself
    assert connections == []
    check_reachable("head.example:6379")  # the patched connect: proves the check would connect here
    assert connections == [("head.example", 6379)]
