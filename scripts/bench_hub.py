"""Push and pull throughput of hf_tokbin against huggingface_hub's own upload_folder / snapshot_download.

On the same release folder, in one command:

- **push**: ``hf_tokbin.hub.push_folder`` (local check, batches, read-back of every file,
  COMPLETE.json last) against ``HfApi.upload_folder`` (one commit, no read-back);
- **pull**: ``hf_tokbin.hub.pull_release`` (every file checked against COMPLETE.json and the
  receipts) against ``snapshot_download`` (no check).

By default it starts the Hub-protocol test server (``tests/hub_server.py``) in a child
process on 127.0.0.1 and synthesizes a Megatron release of ``--parts`` parts of ``--mb``
MB in all; ``--endpoint URL --namespace NS`` (with ``HF_TOKEN``) measures a real Hub
instead, pushing to ``NS/hf-tokbin-bench-ours-R`` and ``NS/hf-tokbin-bench-theirs-R`` (R: the round).
Xet is disabled (``HF_HUB_DISABLE_XET=1``) so both sides use the same LFS transfer.

    python scripts/bench_hub.py                    # 32 MB in 8 parts, local test server
    python scripts/bench_hub.py --mb 200 --parts 40
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_DISABLE_XET", "1")  # before huggingface_hub is imported
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "hf_bench_token_0123456789"
_SERVER = f"""
import sys
sys.path.insert(0, {str(ROOT / "tests")!r})
from hub_server import HubServer
with HubServer(token={TOKEN!r}) as hub:
    print(hub.url, flush=True)
    sys.stdin.read()  # until the parent closes it
"""


def make_release(root: Path, parts: int, total_mb: float, seed: int = 0) -> Path:
    """A Megatron release of ``parts`` parts, ``total_mb`` MB of uint16 tokens in all, with receipts and COMPLETE.json.
    """
    import numpy as np

    sys.path.insert(0, str(ROOT / "tests"))
    from hub_server import _release_run_config, write_complete

    from hf_tokbin._io import write_json_atomic
    from hf_tokbin.cards.release import render_release_card
    from hf_tokbin.formats.megatron import MegatronWriter
    from hf_tokbin.formats.records import FileEntry
    from hf_tokbin.formats.release import Receipt, SplitCounts, pair_path, part_name

    rng = np.random.default_rng(seed)
    tokens_per_part = int(total_mb * 1e6 / 2 / parts)
    totals = {"documents": 0, "text_tokens": 0, "eod_tokens": 0}
    for index in range(parts):
        part = part_name(index)
        writer = MegatronWriter(root / pair_path("train", part, "bin"), 50_000, 0)
        docs = 0
        for start in range(0, tokens_per_part, 1000):
            writer.add_document(
                rng.integers(1, 50_000, size=min(999, tokens_per_part - start), dtype=np.int64).tolist()
            )
            docs += 1
        pair = writer.close()
        counts = SplitCounts(docs, tokens_per_part - docs, docs)
        for key, value in counts.to_dict().items():
            totals[key] = totals.get(key, 0) + value
        files = (
            FileEntry(pair_path("train", part, "bin"), pair.bin_size, pair.bin_sha256),
            FileEntry(pair_path("train", part, "idx"), pair.idx_size, pair.idx_sha256),
        )
        Receipt(
            part, FileEntry(f"data/train-{index:05d}.parquet", 1000 + index, f"{index:064x}"), {"train": counts}, files
        ).write(root)
    totals["total_tokens"] = totals["text_tokens"] + totals["eod_tokens"]
    write_json_atomic(
        root / "stats.json", {"splits": {"train": totals}, "sources": {"tinystories": {"train": totals}}}
    )
    write_json_atomic(root / "run_config.json", _release_run_config(root, parts, 50_000, 0, "local"))
    (root / "README.md").write_text(render_release_card(root), encoding="utf-8")
    write_complete(root)
    return root


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=32.0, help="release size in MB (default 32)")
    parser.add_argument("--parts", type=int, default=8, help="parts in the release (default 8)")
    parser.add_argument(
        "--release", type=Path, default=None, help="an existing release folder instead of a synthetic one"
    )
    parser.add_argument("--endpoint", default=None, help="a real Hub endpoint (default: start the local test server)")
    parser.add_argument("--namespace", default="bench", help="namespace of the bench repos")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, alternately; the best counts (default 3)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench_hub-"))
    server = None
    try:
        if args.endpoint is None:
            server = subprocess.Popen(
                [sys.executable, "-c", _SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
            endpoint = server.stdout.readline().strip()
            token = TOKEN
        else:
            endpoint, token = args.endpoint, os.environ.get("HF_TOKEN")
        os.environ["HF_HOME"] = str(work / "hf-home")
        from huggingface_hub import HfApi, snapshot_download

        from hf_tokbin.hub import pull_release, push_folder

        release = args.release or make_release(work / "release", args.parts, args.mb)
        size = sum(p.stat().st_size for p in release.rglob("*") if p.is_file())
        files = sum(1 for p in release.rglob("*") if p.is_file())
        api = HfApi(endpoint=endpoint, token=token)
        best: dict[str, list[float]] = {"push": [float("inf")] * 2, "pull": [float("inf")] * 2}
        # alternately, fresh repos each round; the best round counts (the first is cold)
        for round_ in range(args.rounds):
            ours, theirs = (
                f"{args.namespace}/hf-tokbin-bench-ours-{round_}",
                f"{args.namespace}/hf-tokbin-bench-theirs-{round_}",
            )

            def upload_folder():
                api.create_repo(theirs, repo_type="dataset", exist_ok=True)
                api.upload_folder(folder_path=release, repo_id=theirs, repo_type="dataset")

            times = {
                "push": (
                    timed(lambda: push_folder(release, ours, endpoint=endpoint, token=token, progress=False)),
                    timed(upload_folder),
                ),
                "pull": (
                    timed(
                        lambda: pull_release(
                            ours, work / f"pulled-{round_}", endpoint=endpoint, token=token, progress=False
                        )
                    ),
                    timed(
                        lambda: snapshot_download(
                            theirs,
                            repo_type="dataset",
                            local_dir=work / f"snapshot-{round_}",
                            endpoint=endpoint,
                            token=token,
                        )
                    ),
                ),
            }
            for what, pair in times.items():
                best[what] = [min(a, b) for a, b in zip(best[what], pair)]
        results = {what: tuple(pair) for what, pair in best.items()}
        print(f"release: {files} files, {size / 1e6:.1f} MB; endpoint {endpoint}; best of {args.rounds} rounds")
        print(f"{'':6} {'hf_tokbin':>12} {'huggingface_hub':>16} {'ratio':>7}")
        for what, (mine, reference) in results.items():
            print(
                f"{what:6} {size / 1e6 / mine:9.1f} MB/s {size / 1e6 / reference:12.1f} MB/s {reference / mine:6.2f}x"
            )
        print("(ratio > 1: hf_tokbin is faster; it also checks every byte, huggingface_hub does not)")
    finally:
        if server is not None:
            server.stdin.close()
            server.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
