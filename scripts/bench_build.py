"""Raw text to a verified release, against seed 002's encoder on the same cores (issues 8 and 15).

Both jobs start from the same TinyStories-like text files and the same
8,192-entry byte-level BPE, run as fresh processes (start-up and imports
count), alternately, ``--rounds`` times each:

- **seed 002**: its story reader, its pure-Python chunk-cache encoder in a
  ``multiprocessing.Pool`` of ``--num-proc`` processes, one flat uint16 file
  (``scripts/bench_build.py --seed002-job``);
- **hf_tokbin**: ``hf-tokbin corpus tinystories`` then ``hf-tokbin build
  --format llmc,megatron --num-proc N`` (then ``hf-tokbin verify``, timed on
  its own line, not in the ratio).

It checks that both produced the same ids for every story (from the
Megatron pairs, EOD stripped), then prints MB/s of text, tokens/s, the ratio,
the peak memory of each job's whole process tree (PSS, sampled every 20 ms),
and hf_tokbin's stages: the corpus command, the build's start-up (imports and
planning, up to ``run_config.json``), its parts (fast-path check, encoding,
writing, up to the last receipt), its finish (up to ``COMPLETE.json``) and its
exit, each with its share of the wall time and its peak. The fast-path
check's cache (``HF_TOKBIN_CACHE``, here ``WORK/cache``) is emptied before the
first round, so round 1 pays the full check and later rounds the cached one;
both are printed.

    python scripts/bench_build.py --mb 200            # the issue's figure
    python scripts/bench_build.py --mb 20 --rounds 1  # a quick look
    python scripts/bench_build.py --mb 2200 --rounds 1 --shard-mb 2000  # TinyStories V2's size, one 2 GB shard
    python scripts/bench_build.py --mb 50 --rounds 1 --writes-against /work/main  # + bytes written per token, vs that tree

With ``--writes-against TREE`` a last section builds the same corpus once
more with this tree's code and once with TREE's (another checkout, e.g. the
code before a change), each build process (``--num-proc 1``: no encoding workers, so
``wchar`` counts no pipe traffic) recording its own ``/proc/self/io`` at
exit, and prints for each: the wall time, the finish's share of it (from
the files' times, as above), and the bytes written per byte of token data
(the llm.c files and the Megatron ``.bin`` files): ``wchar`` (what the
process wrote through write calls) and ``write_bytes`` (what reached the
disk's block layer, kernel copies included). The ideal is 1 per format plus
the records (indices, receipts, manifests).

Needs ``psutil`` (for the process-tree memory).
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
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


def run_tree(commands: list[list[str]], env: dict | None = None) -> tuple[list[tuple[float, float]], list[tuple[float, int]]]:
    """Run commands one after the other: each one's (start, end) time, and (time, PSS bytes) samples of the process tree."""
    import psutil

    spans, samples = [], []
    for command in commands:
        started = time.time()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        root = psutil.Process(process.pid)
        while process.poll() is None:
            try:
                tree = [root, *root.children(recursive=True)]
                # PSS: pages shared by forked workers are counted once, split between them.
                samples.append((time.time(), sum(p.memory_full_info().pss for p in tree if p.is_running())))
            except psutil.Error:
                pass
            time.sleep(0.02)
        stderr = process.stderr.read().decode()
        if process.returncode != 0:
            sys.exit(f"failed: {' '.join(command)}\n{stderr}")
        spans.append((started, time.time()))
    return spans, samples


def peak_between(samples: list[tuple[float, int]], start: float, end: float) -> int:
    return max((pss for t, pss in samples if start <= t <= end), default=0)


def build_stages(release: Path, start: float, end: float) -> list[tuple[str, float, float]]:
    """The build's stages from the times its files were written: start-up, parts, finish, exit."""
    first = (release / "run_config.json").stat().st_mtime
    last_receipt = max(p.stat().st_mtime for p in (release / "receipts").glob("*.json"))
    complete = (release / "COMPLETE.json").stat().st_mtime
    return [
        ("build: start-up, imports, plan", start, first),
        ("build: parts (check, encode, write)", first, last_receipt),
        ("build: finish (llm.c, stats, card)", last_receipt, complete),
        ("build: exit", complete, end),
    ]


def time_check(tokenizer: Path, corpus: Path, cache: Path) -> tuple[float, float]:
    """Seconds of the fast-path check in this process: full (empty cache), then from the cache."""
    import os

    from hf_tokbin.pipeline.encode import check_with_cache, sample_documents
    from hf_tokbin.pipeline.plan import plan_build
    from hf_tokbin.tokenizer.encoder import encoder_for
    from hf_tokbin.tokenizer.resolve import resolve_tokenizer

    os.environ["HF_TOKBIN_CACHE"] = str(cache)
    shutil.rmtree(cache, ignore_errors=True)
    plan = plan_build(corpus, resolve_tokenizer(str(tokenizer)), cache / "unused")
    seconds = []
    for _ in range(2):
        encoder = encoder_for(plan.tokenizer.path)
        seconds.append(check_with_cache(encoder, sample_documents(plan)).seconds)
    shutil.rmtree(cache, ignore_errors=True)
    return seconds[0], seconds[1]


def digest_seed002(out: Path) -> tuple[str, int]:
    ids = np.fromfile(f"{out}.ids", dtype=np.uint16)
    lengths = np.fromfile(f"{out}.lengths", dtype=np.int64)
    return hashlib.sha256(ids.tobytes() + lengths.tobytes()).hexdigest(), int(ids.size)


def digest_release(release: Path) -> tuple[str, int]:
    from hf_tokbin.formats.megatron import MegatronPair

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


def load() -> str:
    return "load average " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=200.0, help="MB of training text (validation: 1%% more)")
    parser.add_argument("--num-proc", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="runs of each job, alternating; the best counts")
    parser.add_argument("--vocab-size", type=int, default=8192)
    parser.add_argument("--shard-mb", type=float, default=None, help="corpus shard size in MB of text (default: hf-tokbin's); fix it to compare memory across corpus sizes")
    parser.add_argument("--work", type=Path, default=Path("bench-build"), help="folder for inputs and outputs")
    parser.add_argument("--writes-against", type=Path, metavar="TREE", help="also compare bytes written per token and the finish's share with the hf_tokbin code of TREE")
    parser.add_argument("--seed002-job", nargs="+", metavar="ARG", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.seed002_job:
        tokenizer_json, out, *texts = args.seed002_job
        seed002_job(tokenizer_json, out, args.num_proc, texts)
        return 0

    train, valid, tokenizer = prepare(args.work, args.mb, args.vocab_size)
    text_mb = (train.stat().st_size + valid.stat().st_size) / 1e6
    hf_tokbin = [sys.executable, "-m", "hf_tokbin"]
    corpus, release, baseline, cache = args.work / "corpus", args.work / "release", args.work / "seed002", args.work / "cache"
    shard_option = ["--shard-bytes", str(int(args.shard_mb * 1e6))] if args.shard_mb else []
    env = {**os.environ, "HF_TOKBIN_CACHE": str(cache.resolve())}
    jobs = {
        "seed 002 encoder": [[sys.executable, __file__, "--num-proc", str(args.num_proc), "--seed002-job", str(tokenizer / "tokenizer.json"), str(baseline), str(train), str(valid)]],
        "hf_tokbin corpus + build": [
            [*hf_tokbin, "corpus", "tinystories", str(train), str(valid), "--out", str(corpus), *shard_option],
            [*hf_tokbin, "build", "--corpus", str(corpus), "--tokenizer", str(tokenizer), "--format", "llmc,megatron", "--num-proc", str(args.num_proc), "--out", str(release), "--quiet"],
        ],
    }
    shutil.rmtree(cache, ignore_errors=True)  # round 1 pays the full fast-path check
    best = {name: (float("inf"), 0) for name in jobs}
    stages: dict[int, list] = {}
    for round_ in range(args.rounds):
        for name, commands in jobs.items():
            shutil.rmtree(corpus, ignore_errors=True)
            shutil.rmtree(release, ignore_errors=True)
            spans, samples = run_tree(commands, env)
            seconds, peak = spans[-1][1] - spans[0][0], peak_between(samples, spans[0][0], spans[-1][1])
            print(f"round {round_ + 1}: {name:<26} {seconds:7.2f} s  peak {peak / 2**20:7.0f} MiB  ({load()})", flush=True)
            if name.startswith("hf_tokbin"):
                rows = [("corpus tinystories", *spans[0]), *build_stages(release, *spans[1])]
                stages[round_] = [(label, end - start, peak_between(samples, start, end)) for label, start, end in rows]
            best[name] = (min(best[name][0], seconds), max(best[name][1], peak))

    ours, n_tokens = digest_release(release)
    theirs, their_tokens = digest_seed002(baseline)
    if ours != theirs:
        sys.exit(f"ids differ: seed 002 gave {their_tokens:,} tokens, hf_tokbin {n_tokens:,}")
    base_seconds = best["seed 002 encoder"][0]
    print(f"\n{text_mb:,.1f} MB of text, {n_tokens:,} tokens, ids identical; {args.num_proc} processes; best of {args.rounds}; {load()}")
    print(f"{'job':<26}{'seconds':>9}{'MB/s':>9}{'Mtok/s':>9}{'ratio':>8}{'peak MiB':>10}")
    for name, (seconds, peak) in best.items():
        print(f"{name:<26}{seconds:>9.2f}{text_mb / seconds:>9.1f}{n_tokens / seconds / 1e6:>9.2f}{base_seconds / seconds:>8.2f}{peak / 2**20:>10.0f}")
    for round_, rows in stages.items():
        total = sum(seconds for _, seconds, _ in rows)
        note = "full fast-path check" if round_ == 0 else "fast-path check from the cache"
        print(f"\nhf_tokbin stages, round {round_ + 1} ({note}): {total:.2f} s")
        for label, seconds, peak in rows:
            print(f"  {label:<38}{seconds:>7.2f} s {100 * seconds / total:>5.1f}%  peak {peak / 2**20:>6.0f} MiB")
    full, cached = time_check(tokenizer, corpus, cache)
    print(f"\nfast-path check in one process: full {full:.2f} s, from the cache {cached:.2f} s", flush=True)
    verify_spans, verify_samples = run_tree([[*hf_tokbin, "verify", str(release)]], env)
    verify_seconds = verify_spans[0][1] - verify_spans[0][0]
    print(f"then hf-tokbin verify: {verify_seconds:.2f} s, peak {peak_between(verify_samples, *verify_spans[0]) / 2**20:.0f} MiB (every byte of the release checked; {load()})")
    if args.writes_against:
        print_writes_per_token(corpus, tokenizer, 1, args.work / "writes", {"this tree": HERE.parent, str(args.writes_against): args.writes_against}, env)
    return 0


# ---------------------------------------------------------------- bytes written per token, the finish's share (issue 24)

# Runs `hf-tokbin build` in this process, then records /proc/self/io (the build's own reads and writes; its encoding
# workers write nothing) as JSON in argv[1].
_IO_RECORDING_BUILD = """
import json, sys
from hf_tokbin.cli import main
code = main(sys.argv[2:])
with open("/proc/self/io") as f:
    io = {k: int(v) for k, v in (line.split(": ") for line in f.read().splitlines())}
with open(sys.argv[1], "w") as f:
    json.dump(io, f)
sys.exit(code)
"""


def token_data_bytes(release: Path) -> int:
    """Bytes of token data in a release: the llm.c files and the Megatron .bin files."""
    return sum(p.stat().st_size for p in release.rglob("*.bin"))


def print_writes_per_token(corpus: Path, tokenizer: Path, num_proc: int, work: Path, trees: dict[str, Path], env: dict) -> None:
    """One build per code tree of the same corpus: wall time, the finish's share, bytes written per byte of token data."""
    import json

    print(f"\nbytes written per byte of token data (llm.c + Megatron .bin), the finish's share; --num-proc {num_proc}; {load()}")
    print(f"{'code':<28}{'seconds':>9}{'finish':>9}{'share':>7}{'wchar/B':>9}{'disk/B':>8}")
    for name, tree in trees.items():
        release, record = work / "release", work / "io.json"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        command = [sys.executable, "-c", _IO_RECORDING_BUILD, str(record), "build", "--corpus", str(corpus), "--tokenizer", str(tokenizer), "--format", "llmc,megatron", "--num-proc", str(num_proc), "--out", str(release), "--quiet"]
        tree_env = {**env, "PYTHONPATH": os.pathsep.join([str(Path(tree).resolve()), env.get("PYTHONPATH", "")])}
        (span,), _ = run_tree([command], tree_env)
        finish = next(seconds for label, start, end in build_stages(release, *span) for seconds in [end - start] if label.startswith("build: finish"))
        io, data = json.loads(record.read_text()), token_data_bytes(release)
        wall = span[1] - span[0]
        print(f"{name[-28:]:<28}{wall:>9.2f}{finish:>9.2f}{100 * finish / wall:>6.1f}%{io['wchar'] / data:>9.2f}{io['write_bytes'] / data:>8.2f}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
