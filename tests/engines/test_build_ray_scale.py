"""``hf-tokbin build --engine ray`` of a Hub corpus of 220 shards on the session's three-node cluster: the driver moves
no tokens.

Inside the cluster's namespaces (only loopback) a driver script starts the Hub
test server, seeds two plain Parquet repos of the same shape (220 shards of
40 documents each) whose documents differ in length past the first 60 shards
(the first ones, identical, are the bounded sample the encoder's proof reads
on the driver), and runs the real command line:

1. ``--engine ray`` on each repo, the build process wrapped so that it
   records its own ``/proc/self/io`` at exit, while the script watches
   ``/proc/PID/maps`` for any mapped token file;
2. ``--engine local`` on the long repo (the reference bytes);
3. ``--engine ray`` on the long repo with small llm.c files (many pack
   tasks), a worker process SIGKILLed while it runs a pack task, and the
   same with ``--engine local``;
4. ``hf-tokbin verify --engine ray`` (a task per pair and llm.c file) on the
   release, and on a copy with one flipped byte in an llm.c file.

Each shard is fetched by the node that encodes it (the driver reads only the
listing and the Parquet footers), the llm.c files are packed by tasks, so the
driver's extra reads and writes between the two repos must stay under 1% of
the extra token bytes. Needs root and the ``[ray]`` extra.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench_build import IO_RECORDING_BUILD
from release_fixtures import stories

from hf_tokbin.tokenizer import train_bpe

pytestmark = pytest.mark.slow
pytest_plugins = ["ray_cluster"]  # the session's one cluster

TRAIN_SHARDS, VALIDATION_SHARDS, DOCUMENTS = 216, 4, 40
SAMPLED_SHARDS = 60  # >= 2048 sampled documents / 40 per shard: identical in both repos
BIG_FILES, SMALL_FILES = 2_000_000, 40_000  # --max-tokens-per-file: a few llm.c files, or dozens (pack tasks to kill)

DRIVER = r'''
import json, os, shutil, signal, subprocess, sys, threading, time
from pathlib import Path

sys.path.insert(0, %(tests)r)
import psutil
from hub_server import HubServer, client_env

WORK = Path.cwd()
DEADLINE_S = 1500  # only stops a hung build
WRAPPER = %(wrapper)r  # scripts/bench_build.py's IO_RECORDING_BUILD: a build that records its /proc/self/io
(WORK / "wrapper.py").write_text(WRAPPER)
PACK_TITLE = "ray::pack_file["


def options(repo, out, max_tokens):
    return [
        "--corpus", repo, "--tokenizer", "tok", "--tokenizer-id", "tiny", "--max-tokens-per-file", str(max_tokens),
        "--out", out, "--quiet",
    ]


def watch_maps(process, mapped):
    """Every file the build process maps that is a token file of the release or a segment."""
    while process.poll() is None:
        try:
            with open(f"/proc/{process.pid}/maps") as f:
                for line in f:
                    path = line.split()[-1] if len(line.split()) >= 6 else ""
                    if str(WORK) in path and (path.endswith((".bin", ".tokens", ".ends")) or "/tokens/" in path):
                        mapped.add(path)
        except OSError:
            pass
        time.sleep(0.02)


def ray_build(env, repo, out, max_tokens, io_file, on_pack=None):
    command = [
        sys.executable, str(WORK / "wrapper.py"), io_file, "build", *options(repo, out, max_tokens),
        "--engine", "ray", "--ray-address", os.environ["RAY_ADDRESS"],
    ]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    mapped = set()
    watcher = threading.Thread(target=watch_maps, args=(process, mapped), daemon=True)
    watcher.start()
    killed = on_pack(process) if on_pack else None
    stdout, stderr = process.communicate(timeout=DEADLINE_S)
    watcher.join()
    return {"returncode": process.returncode, "stderr": stderr[-4000:], "mapped": sorted(mapped), "killed": killed}


def local_build(env, repo, out, max_tokens):
    done = subprocess.run(
        ["hf-tokbin", "build", *options(repo, out, max_tokens), "--engine", "local"],
        env=env, capture_output=True, text=True, timeout=DEADLINE_S,
    )
    return {"returncode": done.returncode, "stderr": done.stderr[-4000:]}


def verify(env, release):
    done = subprocess.run(
        ["hf-tokbin", "verify", release, "--engine", "ray", "--ray-address", os.environ["RAY_ADDRESS"]],
        env=env, capture_output=True, text=True, timeout=DEADLINE_S,
    )
    return {"returncode": done.returncode, "stdout": done.stdout[-2000:], "stderr": done.stderr[-2000:]}


def kill_a_pack_worker(process):
    """SIGKILL the first worker seen running a pack task (its title still says so just before the kill)."""
    deadline = time.monotonic() + DEADLINE_S
    while process.poll() is None and time.monotonic() < deadline:
        for worker in psutil.process_iter(["pid", "cmdline"]):
            try:
                title = " ".join(worker.info["cmdline"] or [])
                if title.startswith(PACK_TITLE) and " ".join(psutil.Process(worker.pid).cmdline()).startswith(
                    PACK_TITLE
                ):
                    os.kill(worker.pid, signal.SIGKILL)
                    return {"pid": worker.pid, "title": title}
            except (psutil.Error, OSError):
                continue
        time.sleep(0.002)
    return None


report = {}
with HubServer() as hub:
    home = WORK / "hf-home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, **client_env(hub, home), "HF_TOKBIN_HUB_BACKOFF": "0.05"}
    for name in ("short", "long"):
        report[f"commit_{name}"] = hub.seed_repo(f"tester/{name}", WORK / "repos" / name)
    report["short"] = ray_build(env, "tester/short", "short-ray", %(big)d, str(WORK / "io-short.json"))
    report["long"] = ray_build(env, "tester/long", "long-ray", %(big)d, str(WORK / "io-long.json"))
    report["long_local"] = local_build(env, "tester/long", "long-local", %(big)d)
    report["killed"] = ray_build(
        env, "tester/long", "killed-ray", %(small)d, str(WORK / "io-killed.json"), kill_a_pack_worker
    )
    report["killed_local"] = local_build(env, "tester/long", "killed-local", %(small)d)
    report["verify"] = verify(env, "long-ray")
    if report["long"]["returncode"] != 0:  # nothing to corrupt: the report says why
        raise SystemExit("the Ray build of tester/long failed: " + report["long"]["stderr"])
    shutil.copytree("long-ray", "corrupted")
    victim = sorted(Path("corrupted").rglob("tokens/*/*/train-*.bin"))[-1]
    data = bytearray(victim.read_bytes())
    data[-3] ^= 0x01  # another id: the file's SHA-256 no longer matches COMPLETE.json
    victim.write_bytes(bytes(data))
    report["verify_corrupted"] = {**verify(env, "corrupted"), "victim": victim.name}
    report["whole_shard_downloads"] = sum(
        1 for _, method, path, status in hub.requests
        if method == "GET" and status == 200 and path.endswith(".parquet")
    )
for name in ("short", "long"):
    report[f"io_{name}"] = json.loads((WORK / f"io-{name}.json").read_text())
(WORK / "report.json").write_text(json.dumps(report))
'''


def write_repo(folder: Path, long_documents: bool) -> None:
    """220 Parquet shards named as ``datasets``' default patterns expect; past SAMPLED_SHARDS, documents up to 8x
    longer."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (folder / "data").mkdir(parents=True)
    shards = [("train", k, TRAIN_SHARDS) for k in range(TRAIN_SHARDS)] + [
        ("validation", k, VALIDATION_SHARDS) for k in range(VALIDATION_SHARDS)
    ]
    for position, (split, k, count) in enumerate(shards):
        longer = long_documents and position >= SAMPLED_SHARDS
        texts = stories(DOCUMENTS, seed=1000 + position, max_words=320 if longer else 40)
        # No statistics: the footers of both repos have the same size, whatever the text.
        pq.write_table(
            pa.table({"text": texts}),
            folder / "data" / f"{split}-{k:05d}-of-{count:05d}.parquet",
            write_statistics=False,
        )


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def token_bytes(root: Path) -> int:
    """Bytes of token data in a release: the llm.c files and the Megatron .bin files."""
    return sum(p.stat().st_size for p in root.rglob("*.bin"))


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("build_ray_scale")
    train_bpe(stories(300, seed=1), 600, root / "tok")
    for name, long_documents in (("short", False), ("long", True)):
        write_repo(root / "repos" / name, long_documents)
    return root


@pytest.fixture(scope="module")
def report(work, ray_cluster) -> dict:
    tests = str(Path(__file__).resolve().parent.parent)
    process = ray_cluster.run(
        DRIVER % {"tests": tests, "big": BIG_FILES, "small": SMALL_FILES, "wrapper": IO_RECORDING_BUILD}, work
    )
    if process.returncode != 0:
        pytest.fail(f"driver failed ({process.returncode}), Ray's log in {ray_cluster.log}:\n{process.stderr[-6000:]}")
    report = json.loads((work / "report.json").read_text())
    for name in ("short", "long", "long_local", "killed", "killed_local"):
        assert report[name]["returncode"] == 0, (name, report[name]["stderr"])
    return report


def test_a_ray_build_of_220_hub_shards_equals_the_local_build(work, report):
    ray, local = tree_bytes(work / "long-ray"), tree_bytes(work / "long-local")
    assert len([p for p in ray if p.startswith("receipts/")]) == TRAIN_SHARDS + VALIDATION_SHARDS
    assert ray == local


def test_the_driver_s_reads_and_writes_do_not_grow_with_the_token_data(work, report):
    extra_tokens = token_bytes(work / "long-ray") - token_bytes(work / "short-ray")
    assert extra_tokens > 10_000_000 // 4  # the long repo holds megabytes more token data
    extra_read = report["io_long"]["rchar"] - report["io_short"]["rchar"]
    extra_written = report["io_long"]["wchar"] - report["io_short"]["wchar"]
    # The driver reads and writes the preview itself: at most PREVIEW_DOCUMENTS documents a split, however large the
    # corpus (here the long documents make it larger), so it is allowed for on top of the 1%.
    preview = sum(p.stat().st_size for p in (work / "long-ray" / "preview").glob("*.parquet"))
    assert extra_read < 0.01 * extra_tokens + 3 * preview, (extra_read, extra_tokens, preview)
    assert extra_written < 0.01 * extra_tokens + 3 * preview, (extra_written, extra_tokens, preview)
    assert report["short"]["mapped"] == [] and report["long"]["mapped"] == []


def test_every_shard_is_fetched_whole_once_per_build_by_the_nodes_only(report):
    # Three Ray builds and two local ones, each fetching every shard once; the driver's own reads are range requests
    # (footers, sample).
    assert report["whole_shard_downloads"] == 5 * (TRAIN_SHARDS + VALIDATION_SHARDS)


def test_a_worker_killed_mid_pack_still_ends_in_the_local_bytes(work, report):
    assert report["killed"]["killed"] is not None, "no pack task was seen running"
    release = tree_bytes(work / "killed-ray")
    assert len([p for p in release if p.startswith("tokens/") and p.endswith(".bin")]) >= 20  # dozens of pack tasks
    assert release == tree_bytes(work / "killed-local")


def test_verify_on_the_cluster_accepts_the_release_and_names_a_corrupted_file(report):
    assert report["verify"]["returncode"] == 0 and "OK" in report["verify"]["stdout"], report["verify"]
    broken = report["verify_corrupted"]
    assert (
        broken["returncode"] == 1 and broken["victim"] in broken["stderr"] and "Traceback" not in broken["stderr"]
    ), broken
