"""Memory of a build from a plain Hub dataset repo: bounded by one shard, not by the repo.

Pushes two Parquet repos to the Hub test server (tests/hub_server.py, 127.0.0.1) with the real
huggingface_hub client: 4 shards and 16 shards of the same size. Builds each with
``hf-tokbin build --corpus NS/NAME`` in a child process and samples its memory (RSS and PSS, the
process and its children) and the scratch disk the build holds, then prints them side by side::

    python scripts/bench_hub_corpus.py [--shard-mb 8]

A build that held the whole repo would show ratios near 4 (16 shards / 4 shards); one shard per
worker gives ratios near 1.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from hub_server import HubServer, client_env  # noqa: E402

TOKEN = "hf_bench_token_0123456789"
_UPLOAD = (
    "import sys; from huggingface_hub import HfApi; api = HfApi(); api.create_repo(sys.argv[1], repo_type='dataset', "
    "exist_ok=True); api.upload_folder(repo_id=sys.argv[1], folder_path=sys.argv[2], repo_type='dataset')"
)


def write_shards(folder: Path, shards: int, shard_mb: float) -> None:
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq

    words = ["the", "cat", "sat", "on", "a", "mat", "and", "then", "ran", "far", "away", "home"]
    (folder / "data").mkdir(parents=True)
    for k in range(shards):
        rng = random.Random(k)
        docs, size = [], 0
        while size < shard_mb * 1e6:
            doc = " ".join(rng.choice(words) for _ in range(rng.randrange(50, 400)))
            docs.append(doc)
            size += len(doc)
        pq.write_table(
            pa.table({"text": docs}), folder / "data" / f"train-{k:05d}-of-{shards:05d}.parquet", compression="none"
        )


def sample(pid: int, peaks: dict, scratch: Path, stop: threading.Event) -> None:
    import psutil

    root = psutil.Process(pid)
    while not stop.is_set():
        try:
            procs = [root, *root.children(recursive=True)]
            rss = pss = 0
            for p in procs:
                try:
                    info = p.memory_full_info()
                    rss += info.rss
                    pss += getattr(info, "pss", info.rss)
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    pass
            disk = sum(f.stat().st_size for f in scratch.rglob("*") if f.is_file()) if scratch.exists() else 0
            peaks["rss"] = max(peaks.get("rss", 0), rss)
            peaks["pss"] = max(peaks.get("pss", 0), pss)
            peaks["scratch"] = max(peaks.get("scratch", 0), disk)
        except (psutil.NoSuchProcess, FileNotFoundError):
            pass
        time.sleep(0.05)


def measure(env: dict, repo: str, out: Path) -> dict:
    command = [
        sys.executable,
        "-m",
        "hf_tokbin",
        "build",
        "--corpus",
        repo,
        "--tokenizer",
        "byte",
        "--doc-sep-id",
        "0",
        "--format",
        "megatron",
        "--out",
        str(out),
        "--quiet",
    ]
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peaks: dict = {}
    stop = threading.Event()
    thread = threading.Thread(target=sample, args=(process.pid, peaks, out / ".work" / "shards", stop), daemon=True)
    thread.start()
    _, err = process.communicate(timeout=600)
    stop.set()
    thread.join()
    if process.returncode != 0:
        sys.exit(f"build failed: {err}")
    peaks["seconds"] = time.perf_counter() - started
    peaks["bytes_out"] = sum(f.stat().st_size for f in (out / "shards").rglob("*.bin"))
    return peaks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shard-mb", type=float, default=8.0, help="text per shard, MB (default 8)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, HubServer(token=TOKEN) as hub:
        tmp = Path(tmp)
        env = {
            **os.environ,
            **client_env(hub, tmp / "hf-home", TOKEN),
            "PYTHONPATH": os.pathsep.join([str(REPO), *sys.path]),
        }
        results = {}
        for shards in (4, 16):
            repo = f"bench/plain-{shards}"
            write_shards(tmp / f"in{shards}", shards, args.shard_mb)
            subprocess.run(
                [sys.executable, "-c", _UPLOAD, repo, str(tmp / f"in{shards}")], env=env, check=True, timeout=600
            )
            results[shards] = measure(env, repo, tmp / f"out{shards}")
        a, b = results[4], results[16]
        print(f"{'':<22}{'4 shards':>12}{'16 shards':>12}{'ratio':>8}")
        for key, unit, scale in (
            ("rss", "MB", 1e6),
            ("pss", "MB", 1e6),
            ("scratch", "MB", 1e6),
            ("bytes_out", "MB", 1e6),
            ("seconds", "s", 1),
        ):
            ratio = b[key] / a[key] if a[key] else float("nan")
            print(
                f"{'peak ' + key if key in ('rss', 'pss', 'scratch') else key:<22}"
                f"{a[key] / scale:>11.1f}{unit[0]}{b[key] / scale:>11.1f}{unit[0]}{ratio:>8.2f}"
            )


if __name__ == "__main__":
    main()
