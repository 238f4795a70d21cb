"""Raw text to a verified release, against seed 002's encoder on the same cores (issue 8).

Both jobs start from the same TinyStories-like text files and the same
8,192-entry byte-level BPE, run as fresh processes (start-up and imports
count), alternately, ``--rounds`` times each:

- **seed 002**: its story reader, its pure-Python chunk-cache encoder in a
  ``multiprocessing.Pool`` of ``--num-proc`` processes, one flat uint16 file
  (``scripts/bench_build.py --seed002-job``);
- **hf_tokbin**: ``hf-tokbin corpus tinystories`` then ``hf-tokbin build
  --format llmc,megatron --num-proc N``.

It checks that both produced the same ids for every story (from the
Megatron pairs, EOD stripped), then prints MB/s of text, tokens/s, the ratio
and the peak memory of each job's whole process tree (PSS, sampled every 20 ms).

    python scripts/bench_build.py --mb 200            # the issue's figure
    python scripts/bench_build.py --mb 20 --rounds 1  # a quick look

Needs ``psutil`` (for the process-tree memory).
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from seed002 import stories

HERE = Path(__file__).resolve().parent
BATCH = 512


# ---------------------------------------------------------------- seed 002's job (run in its own process)


def batched(iterable, size: int):
    batch = []
    for item in iterable:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


_encoder = None


def _init(tokenizer_json: str) -> None:
    global _encoder
    from seed002 import Seed002Encoder

    _encoder = Seed002Encoder.from_tokenizer_json(tokenizer_json)


def _encode(batch: list[str]):
    return _encoder.encode_batch(batch)


def seed002_job(tokenizer_json: str, out: str, num_proc: int, texts: list[str]) -> None:
    """Encode every story of ``texts`` files; write ids (uint16) and lengths (int64) side by side."""
    with open(out + ".ids", "wb") as ids_file, open(out + ".lengths", "wb") as lengths_file:
        with multiprocessing.Pool(num_proc, initializer=_init, initargs=(tokenizer_json,)) as pool:
            for path in texts:
                for ids, lengths in pool.imap(_encode, batched(stories(path), BATCH), chunksize=4):
                    ids.astype(np.uint16).tofile(ids_file)
                    lengths.tofile(lengths_file)


# ---------------------------------------------------------------- measuring


def run_tree(commands: list[list[str]]) -> tuple[float, int]:
    """Run commands one after the other; wall seconds and peak memory (PSS) of the process tree, in bytes."""
    import psutil

    peak = 0
    start = time.perf_counter()
    for command in commands:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        root = psutil.Process(process.pid)
        while process.poll() is None:
            try:
                tree = [root, *root.children(recursive=True)]
                # PSS: pages shared by forked workers are counted once, split between them.
                peak = max(peak, sum(p.memory_full_info().pss for p in tree if p.is_running()))
            except psutil.Error:
                pass
            time.sleep(0.02)
        if process.returncode != 0:
            sys.exit(f"failed: {' '.join(command)}\n{process.stderr.read().decode()}")
    return time.perf_counter() - start, peak


def digest_seed002(out: Path) -> tuple[str, int]:
    ids = np.fromfile(f"{out}.ids", dtype=np.uint16)
    lengths = np.fromfile(f"{out}.lengths", dtype=np.int64)
    return hashlib.sha256(ids.tobytes() + lengths.tobytes()).hexdigest(), int(ids.size)


def digest_release(release: Path) -> tuple[str, int]:
    from hf_tokbin.megatron import MegatronPair

    ids, lengths = [], []
    for split in ("train", "validation"):
        for idx in sorted((release / "shards" / split).glob("*.idx")):
            pair = MegatronPair(idx)
            keep = np.ones(pair.n_tokens, dtype=bool)
            keep[(pair.pointers // pair.dtype.itemsize) + pair.lengths - 1] = False  # the EOD of each document
            ids.append(np.asarray(pair.tokens[keep], dtype=np.uint16))
            lengths.append(pair.lengths.astype(np.int64) - 1)
    flat, lens = np.concatenate(ids), np.concatenate(lengths)
    return hashlib.sha256(flat.tobytes() + lens.tobytes()).hexdigest(), int(flat.size)


def prepare(work: Path, mb: float, vocab_size: int) -> tuple[Path, Path, Path]:
    """Text files (train: mb, valid: 1%), and a BPE trained on the first 10M characters (not timed)."""
    sys.path.insert(0, str(HERE))
    from make_tinystories_like import write_file

    work.mkdir(parents=True, exist_ok=True)
    train, valid = work / f"train-{mb:g}MB.txt", work / f"valid-{mb:g}MB.txt"
    if not train.exists():
        write_file(train, mb, seed=0)
        write_file(valid, max(mb / 100, 0.1), seed=1)
    tokenizer = work / f"bpe-{vocab_size}"
    if not (tokenizer / "tokenizer.json").exists():
        corpus = work / "tokenizer-corpus"
        shutil.rmtree(corpus, ignore_errors=True)
        hf_tokbin = [sys.executable, "-m", "hf_tokbin"]
        subprocess.run([*hf_tokbin, "corpus", "tinystories", str(train), "--out", str(corpus)], check=True, capture_output=True)
        subprocess.run([*hf_tokbin, "tokenizer", "train", "--corpus", str(corpus), "--vocab-size", str(vocab_size), "--out", str(tokenizer)], check=True, capture_output=True)
    return train, valid, tokenizer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=200.0, help="MB of training text (validation: 1%% more)")
    parser.add_argument("--num-proc", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="runs of each job, alternating; the best counts")
    parser.add_argument("--vocab-size", type=int, default=8192)
    parser.add_argument("--shard-mb", type=float, default=None, help="corpus shard size in MB of text (default: hf-tokbin's); fix it to compare memory across corpus sizes")
    parser.add_argument("--work", type=Path, default=Path("bench-build"), help="folder for inputs and outputs")
    parser.add_argument("--seed002-job", nargs="+", metavar="ARG", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.seed002_job:
        tokenizer_json, out, *texts = args.seed002_job
        seed002_job(tokenizer_json, out, args.num_proc, texts)
        return 0

    train, valid, tokenizer = prepare(args.work, args.mb, args.vocab_size)
    text_mb = (train.stat().st_size + valid.stat().st_size) / 1e6
    hf_tokbin = [sys.executable, "-m", "hf_tokbin"]
    corpus, release, baseline = args.work / "corpus", args.work / "release", args.work / "seed002"
    shard_option = ["--shard-bytes", str(int(args.shard_mb * 1e6))] if args.shard_mb else []
    jobs = {
        "seed 002 encoder": [[sys.executable, __file__, "--num-proc", str(args.num_proc), "--seed002-job", str(tokenizer / "tokenizer.json"), str(baseline), str(train), str(valid)]],
        "hf_tokbin corpus + build": [
            [*hf_tokbin, "corpus", "tinystories", str(train), str(valid), "--out", str(corpus), *shard_option],
            [*hf_tokbin, "build", "--corpus", str(corpus), "--tokenizer", str(tokenizer), "--format", "llmc,megatron", "--num-proc", str(args.num_proc), "--out", str(release), "--quiet"],
        ],
    }
    best = {name: (float("inf"), 0) for name in jobs}
    for round_ in range(args.rounds):
        for name, commands in jobs.items():
            shutil.rmtree(corpus, ignore_errors=True)
            shutil.rmtree(release, ignore_errors=True)
            seconds, peak = run_tree(commands)
            print(f"round {round_ + 1}: {name:<26} {seconds:7.2f} s  peak {peak / 2**20:7.0f} MiB", flush=True)
            best[name] = (min(best[name][0], seconds), max(best[name][1], peak))

    ours, n_tokens = digest_release(release)
    theirs, their_tokens = digest_seed002(baseline)
    if ours != theirs:
        sys.exit(f"ids differ: seed 002 gave {their_tokens:,} tokens, hf_tokbin {n_tokens:,}")
    base_seconds = best["seed 002 encoder"][0]
    print(f"\n{text_mb:,.1f} MB of text, {n_tokens:,} tokens, ids identical; {args.num_proc} processes; best of {args.rounds}")
    print(f"{'job':<26}{'seconds':>9}{'MB/s':>9}{'Mtok/s':>9}{'ratio':>8}{'peak MiB':>10}")
    for name, (seconds, peak) in best.items():
        print(f"{name:<26}{seconds:>9.2f}{text_mb / seconds:>9.1f}{n_tokens / seconds / 1e6:>9.2f}{base_seconds / seconds:>8.2f}{peak / 2**20:>10.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
