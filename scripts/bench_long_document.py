"""Peak memory of ``hf-tokbin build`` against the length of the longest document (issue 16).

For each size (default 1, 4 and 16 MiB) it writes a corpus of a few short
stories plus ONE document of that many bytes (TinyStories-like words), builds
it with GPT-2's tokenizer as a fresh process (``--fast never``: the
``tokenizers`` path; and ``--fast auto``), and prints the build's peak RSS
beside the same build without the long document, and the growth as a
multiple of the document's size. The long document is the shard's first
(``--at sample``: the fast-path check's sample holds it, issue 21) or its
101st (``--at later``: only the encoding sees it). Run it before and after a
change to compare.

    python scripts/bench_long_document.py                 # 1, 4, 16 MiB, both places
    python scripts/bench_long_document.py --mib 1 4 --fast never --at sample

The peak is the build process's own maximum RSS (``wait4``'s ``ru_maxrss``;
``--num-proc 1`` encodes in that process). Needs GPT-2's tokenizer from
``tests/tokenizer_files.py`` (npm; cached after the first run).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from release_fixtures import stories, write_corpus  # noqa: E402
from tokenizer_files import gpt2_tokenizer_json  # noqa: E402

MIB = 1 << 20


def long_document(size: int) -> str:
    """``size`` bytes of ASCII story text."""
    text = " ".join(s for s in stories(20_000, seed=7) if s.isascii())
    return (text * (size // len(text) + 1))[:size]


def peak_rss_of_build(corpus: Path, tokenizer: Path, out: Path, fast: str) -> tuple[int, float]:
    """(peak RSS in bytes, seconds) of one ``hf-tokbin build`` process."""
    command = [
        sys.executable,
        "-m",
        "hf_tokbin",
        "build",
        "--corpus",
        str(corpus),
        "--tokenizer",
        str(tokenizer),
        "--out",
        str(out),
        "--fast",
        fast,
        "--quiet",
    ]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        sys.exit(f"build failed ({process.returncode}): {process.stderr.read().decode()[-2000:]}")
    return usage.ru_maxrss * 1024, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, nargs="+", default=[1, 4, 16], help="long-document sizes in MiB")
    parser.add_argument("--fast", nargs="+", default=["never", "auto"], choices=["never", "auto"])
    parser.add_argument(
        "--at",
        nargs="+",
        default=["sample", "later"],
        choices=["sample", "later"],
        help="the long document first (in the check's sample) or 101st",
    )
    args = parser.parse_args()
    tokenizer = gpt2_tokenizer_json()
    short = stories(200, seed=3)
    with tempfile.TemporaryDirectory(prefix="bench_long_document-") as folder:
        root = Path(folder)
        write_corpus(root / "base", [("train", short), ("validation", short[:20])])
        print(
            f"{'document':>9} {'at':>7} {'fast':>6} {'peak RSS':>10} "
            f"{'without it':>11} {'growth':>9} {'growth/size':>12} {'seconds':>8}"
        )
        for fast in args.fast:
            base, _ = peak_rss_of_build(root / "base", tokenizer, root / f"out-base-{fast}", fast)
            for at in args.at:
                for mib in args.mib:
                    place = 0 if at == "sample" else 100
                    corpus = write_corpus(
                        root / f"corpus-{mib}-{at}",
                        [
                            ("train", [*short[:place], long_document(mib * MIB), *short[place:]]),
                            ("validation", short[:20]),
                        ],
                    )
                    peak, seconds = peak_rss_of_build(corpus, tokenizer, root / f"out-{mib}-{at}-{fast}", fast)
                    growth = peak - base
                    print(
                        f"{mib:>6} MiB {at:>7} {fast:>6} {peak / MIB:>6.0f} MiB {base / MIB:>7.0f} "
                        f"MiB {growth / MIB:>5.0f} MiB {growth / (mib * MIB):>11.1f}x {seconds:>8.1f}"
                    )


if __name__ == "__main__":
    main()
