"""Speed and peak memory of ``hf-tokbin corpus tinystories`` on TinyStories-like files.

For each size (default 50 MB and 200 MB) this script

1. generates the file with scripts/make_tinystories_like.py (seed 0);
2. times, in this process, the TinyStories rules' line-by-line reader (the baseline) and
   hf_tokbin's block reader over the same file (best of ``--repeat`` passes),
   and checks they give the same stories;
3. runs ``hf-tokbin corpus tinystories FILE --out DIR`` in a subprocess and
   reads that process's peak RSS from ``os.wait4`` (its own rusage, so one
   run's peak never leaks into the next).

Peak memory must stay flat from 50 MB to 200 MB: the last line prints the ratio.

    python scripts/bench_corpus.py [--sizes 50,200] [--dir /tmp/bench]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_tinystories_like import write_file  # noqa: E402
from tinystories_reference import stories as reference_stories  # noqa: E402

from hf_tokbin.corpus.builders.tinystories import read_stories  # noqa: E402

CLI = "import sys; from hf_tokbin.cli import main; sys.exit(main())"


def time_reader(reader, path: Path, repeat: int) -> tuple[float, int, int]:
    """Best seconds of ``repeat`` passes (the machine may be shared), story count and length sum."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        count = total = 0
        for story in reader(path):
            count += 1
            total += len(story)
        best = min(best, time.perf_counter() - started)
    return best, count, total


def run_cli(path: Path, out: Path) -> tuple[float, float, int, str]:
    """(wall seconds, in-command MB/s, peak RSS bytes, summary) of one ``corpus tinystories`` run."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-c", CLI, "corpus", "tinystories", str(path), "--out", str(out)],
        stderr=subprocess.PIPE,
        text=True,
    )
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"corpus tinystories failed ({process.returncode}):\n{stderr}")
    rate = re.search(r"\(([\d,.]+) MB/s\)", stderr)
    return (
        wall,
        float(rate.group(1).replace(",", "")) if rate else float("nan"),
        usage.ru_maxrss * 1024,
        stderr.strip(),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="50,200", help="file sizes in MB, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="passes per reader; the best is reported")
    parser.add_argument("--dir", type=Path, help="work folder (default: a temporary one, removed at the end)")
    args = parser.parse_args(argv)
    work = args.dir or Path(tempfile.mkdtemp(prefix="hf_tokbin-bench-corpus-"))
    work.mkdir(parents=True, exist_ok=True)
    peaks = {}
    try:
        print(
            f"{'size':>6} {'stories':>10} {'rules reader':>12} {'block reader':>13} "
            f"{'ratio':>6} {'corpus (cmd)':>13} {'corpus (wall)':>14} {'peak RSS':>9}"
        )
        for megabytes in [float(s) for s in args.sizes.split(",")]:
            path = work / f"tinystories-like-{megabytes:g}MB.txt"
            if not path.exists():
                write_file(path, megabytes, seed=0)
            size_mb = path.stat().st_size / 1e6
            reference_seconds, reference_count, reference_sum = time_reader(reference_stories, path, args.repeat)
            ours_seconds, ours_count, ours_sum = time_reader(read_stories, path, args.repeat)
            if (reference_count, reference_sum) != (ours_count, ours_sum):
                raise SystemExit(f"{path}: readers disagree: reference {reference_count} stories, ours {ours_count}")
            out = work / f"corpus-{megabytes:g}"
            shutil.rmtree(out, ignore_errors=True)
            wall, command_rate, peak, summary = run_cli(path, out)
            peaks[megabytes] = peak
            print(
                f"{size_mb:5.0f}M {ours_count:>10,} {size_mb / reference_seconds:>8.1f} "
                f"MB/s {size_mb / ours_seconds:>9.1f} MB/s "
                f"{reference_seconds / ours_seconds:>5.1f}x {command_rate:>8.1f} "
                f"MB/s {size_mb / wall:>9.1f} MB/s {peak / 2**20:>6.0f} MB"
            )
            shutil.rmtree(out, ignore_errors=True)
        if len(peaks) > 1:
            small, large = min(peaks), max(peaks)
            print(
                f"peak RSS {large:g} MB / {small:g} MB input: "
                f"{peaks[large] / peaks[small]:.2f}x (flat memory: close to 1)"
            )
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
