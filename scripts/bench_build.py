"""Raw text to a verified release: hf_tokbin against the encoder alone and the TinyStories rules' method.

Every job starts from the same TinyStories-like text files and the same
8,192-entry byte-level BPE and runs as fresh processes (start-up and imports
count):

- **encoder limit**: gigatoken alone encoding the same stories (read before the
  clock starts), one process, all threads, batches of 20,000, with the
  process settings of hf-tokbin's commands (``hf_tokbin.cli.reuse_freed_memory``):
  the floor;
- **chunk cache, per character**: the TinyStories rules' story reader and pure-Python chunk-cache
  encoder (``scripts/tinystories_reference.py``, ``re`` with spelled-out character classes)
  in a ``multiprocessing.Pool`` of ``--num-proc`` processes;
- **chunk cache, C regex**: the same method as fast as pure Python makes it
  (``ChunkCacheRegexEncoder``: the ``regex`` package's ``\\p{L}``, chunks looked up);
- **hf_tokbin, --num-proc 1 and N**: ``hf-tokbin corpus tinystories`` then
  ``hf-tokbin build --format llmc,megatron`` (then ``hf-tokbin verify`` of the
  last release, ``--rounds`` times, timed on its own line: the best, and each run).

It checks that every job produced the same ids for every story (the Megatron
pairs, EOD stripped), then prints seconds, MB/s, each job's ratio to the
encoder limit and the chunk-cache baselines' ratios to hf_tokbin, the peak memory of each
job's process tree (PSS, sampled every 100 ms: reading PSS walks the
process's page tables, and sampling every 20 ms slowed a 2.2 GB build by
5-15%), the load average, and
hf_tokbin's stages side by side for both ``--num-proc``: the corpus command,
the build's start-up (imports and planning, up to ``run_config.json``), its
parts (fast-path proof, encoding, writing, up to the last receipt), its finish
(up to ``COMPLETE.json``) and its exit, each with its share and its peak.

    python scripts/bench_build.py --mb 200             # the reference figure
    python scripts/bench_build.py --mb 20 --rounds 1   # a quick look
    python scripts/bench_build.py --mb 2200 --skip-per-char-baseline   # TinyStories V2's size, default shards

The encoder limit and each hf_tokbin job run ``--rounds`` times (default 3),
interleaved (the limit right before each round), and the best of each is
printed: on a shared machine the speed drifts by tens of percent within
minutes, and the best run is the one least disturbed (as ``timeit`` reports).
Each round's own ratio to the limit run just before it is printed too, with
their median. The chunk-cache baselines run once.

Needs ``pip install 'hf_tokbin[bench]'`` (psutil, regex).

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
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from tinystories_reference import stories

HERE = Path(__file__).resolve().parent
BATCH = 512
LIMIT_BATCH = 20_000


# ---------------------------------------------------------------- the chunk-cache baseline (its own process)


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


def _init(tokenizer_json: str, variant: str) -> None:
    global _encoder
    from tinystories_reference import ChunkCacheEncoder, ChunkCacheRegexEncoder

    encoder_class = {"per-char": ChunkCacheEncoder, "regex": ChunkCacheRegexEncoder}[variant]
    _encoder = encoder_class.from_tokenizer_json(tokenizer_json)


def _encode(batch: list[str]):
    return _encoder.encode_batch(batch)


def baseline_job(variant: str, tokenizer_json: str, out: str, num_proc: int, texts: list[str]) -> None:
    """Encode every story of ``texts`` files; write ids (uint16) and lengths (int64) side by side."""
    with open(out + ".ids", "wb") as ids_file, open(out + ".lengths", "wb") as lengths_file:
        with multiprocessing.Pool(num_proc, initializer=_init, initargs=(tokenizer_json, variant)) as pool:
            for path in texts:
                for ids, lengths in pool.imap(_encode, batched(stories(path), BATCH), chunksize=4):
                    ids.astype(np.uint16).tofile(ids_file)
                    lengths.tofile(lengths_file)


# ---------------------------------------------------------------- measuring


PSS_SAMPLE_SECONDS = 0.1


def run_tree(
    commands: list[list[str]], env: dict | None = None
) -> tuple[list[tuple[float, float]], list[tuple[float, int]]]:
    """Run commands one after the other: each one's (start, end)
    time, and (time, PSS bytes) samples of the process tree.
    """
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
            time.sleep(PSS_SAMPLE_SECONDS)
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


def encoder_limit_job(tokenizer_json: str, out: str, texts: list[str]) -> None:
    """gigatoken alone on every story of ``texts`` files (read first, not timed): prints the encoding seconds."""
    import gigatoken
    from awkward import flatten, num, to_numpy

    from hf_tokbin.cli import reuse_freed_memory
    from hf_tokbin.corpus.tinystories_text import read_stories

    if not os.environ.get("HF_TOKBIN_BENCH_PLAIN_LIMIT"):
        reuse_freed_memory()

    config = json.loads(Path(tokenizer_json).read_text())
    config["added_tokens"] = []  # as the build gives it (no story holds one)
    engine = gigatoken.Tokenizer.from_json(json.dumps(config))
    documents = [story for path in texts for story in read_stories(path)]
    engine.encode_batch(documents[:100])  # its thread pool started, as in a build
    ids, lengths = [], []
    started = time.perf_counter()
    for first in range(0, len(documents), LIMIT_BATCH):
        rows = engine.encode_batch(documents[first : first + LIMIT_BATCH])
        ids.append(to_numpy(flatten(rows, axis=1)).astype(np.uint16))
        lengths.append(to_numpy(num(rows, axis=1)).astype(np.int64))
    seconds = time.perf_counter() - started
    np.concatenate(ids).tofile(out + ".ids")
    np.concatenate(lengths).tofile(out + ".lengths")
    print(f"{seconds:.4f}")


def digest_flat(out: Path) -> tuple[str, int]:
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
        subprocess.run(
            [*hf_tokbin, "corpus", "tinystories", str(train), "--out", str(corpus)], check=True, capture_output=True
        )
        subprocess.run(
            [
                *hf_tokbin,
                "tokenizer",
                "train",
                "--corpus",
                str(corpus),
                "--vocab-size",
                str(vocab_size),
                "--out",
                str(tokenizer),
            ],
            check=True,
            capture_output=True,
        )
    return train, valid, tokenizer


def load() -> str:
    return "load average " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=200.0, help="MB of training text (validation: 1%% more)")
    parser.add_argument(
        "--num-proc",
        type=int,
        default=2,
        help="processes of the chunk-cache baseline's pool and of the second hf_tokbin build",
    )
    parser.add_argument("--vocab-size", type=int, default=8192)
    parser.add_argument(
        "--shard-mb", type=float, default=None, help="corpus shard size in MB of text (default: hf-tokbin's)"
    )
    parser.add_argument(
        "--skip-per-char-baseline", action="store_true", help="leave out the slowest baseline (minutes at 2.2 GB)"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help=(
            "runs of the encoder limit and of each hf_tokbin job; the "
            "best of each is printed (a shared machine's speed drifts)"
        ),
    )
    parser.add_argument("--work", type=Path, default=Path("bench-build"), help="folder for inputs and outputs")
    parser.add_argument(
        "--writes-against",
        type=Path,
        metavar="TREE",
        help="also compare bytes written per token and the finish's share with the hf_tokbin code of TREE",
    )
    parser.add_argument("--baseline-job", nargs="+", metavar="ARG", help=argparse.SUPPRESS)
    parser.add_argument("--limit-job", nargs="+", metavar="ARG", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.baseline_job:
        variant, tokenizer_json, out, *texts = args.baseline_job
        baseline_job(variant, tokenizer_json, out, args.num_proc, texts)
        return 0
    if args.limit_job:
        tokenizer_json, out, *texts = args.limit_job
        encoder_limit_job(tokenizer_json, out, texts)
        return 0

    train, valid, tokenizer = prepare(args.work, args.mb, args.vocab_size)
    text_mb = (train.stat().st_size + valid.stat().st_size) / 1e6
    tokenizer_json, inputs = str(tokenizer / "tokenizer.json"), [str(train), str(valid)]
    print(f"{text_mb:,.1f} MB of text; {load()}", flush=True)
    limit_out = args.work / "limit"
    limit, reference = encoder_limit(tokenizer_json, limit_out, inputs)
    n_tokens = reference[1]
    print(f"encoder limit (gigatoken alone, batches of {LIMIT_BATCH:,}): {limit:.2f} s ({load()})", flush=True)
    plain, plain_ids = encoder_limit(tokenizer_json, limit_out, inputs, tuned=False)
    _same_ids(plain_ids, reference, "the plain encoder limit")
    print(
        f"the same without hf-tokbin's process settings (glibc's and mimalloc's defaults): {plain:.2f} s ({load()})",
        flush=True,
    )

    results: dict[str, tuple[float, int]] = {}
    baselines = ["regex"] if args.skip_per_char_baseline else ["per-char", "regex"]
    for variant in baselines:
        out = args.work / f"chunk-cache-{variant}"
        spans, samples = run_tree(
            [
                [
                    sys.executable,
                    __file__,
                    "--num-proc",
                    str(args.num_proc),
                    "--baseline-job",
                    variant,
                    tokenizer_json,
                    str(out),
                    *inputs,
                ]
            ]
        )
        results[f"chunk cache, {variant}, {args.num_proc} proc"] = (
            spans[-1][1] - spans[0][0],
            peak_between(samples, spans[0][0], spans[-1][1]),
        )
        _same_ids(digest_flat(out), reference, f"chunk cache ({variant})")
        print(
            f"chunk cache ({variant}): {results[f'chunk cache, {variant}, {args.num_proc} proc'][0]:.2f} s ({load()})",
            flush=True,
        )
    stages = {}
    ratios: dict[str, list[float]] = {}
    for round_ in range(1, args.rounds + 1):
        # The limit again right before each round of ours: a machine slower for a while slows both.
        round_limit = encoder_limit(tokenizer_json, limit_out, inputs)[0]
        limit = min(limit, round_limit)
        for num_proc in sorted({1, args.num_proc}):
            name = f"hf_tokbin, --num-proc {num_proc}"
            seconds, peak, stage_times, release = run_hf_tokbin(args, train, valid, tokenizer, num_proc)
            _same_ids(digest_release(release), reference, name)
            ratios.setdefault(name, []).append(seconds / round_limit)
            print(
                f"round {round_} of {args.rounds}: encoder limit {round_limit:.2f} "
                f"s, {name} {seconds:.2f} s ({seconds / round_limit:.2f}x; {load()})",
                flush=True,
            )
            if name not in results or seconds < results[name][0]:
                results[name], stages[num_proc] = (seconds, peak), stage_times
    print_results(text_mb, n_tokens, limit, results, stages, args.rounds)
    for name, values in ratios.items():
        print(
            f"{name}: x limit within each round (the limit run just before it): "
            f"{', '.join(f'{r:.2f}' for r in values)}; median {statistics.median(values):.2f}"
        )
    release_mb = sum(p.stat().st_size for p in release.rglob("*") if p.is_file()) / 1e6
    runs = []  # (seconds, peak) of each verify, the first right after the build (its writeback may still run)
    for _ in range(args.rounds):
        spans, samples = run_tree([[sys.executable, "-m", "hf_tokbin", "verify", str(release)]])
        runs.append((spans[0][1] - spans[0][0], peak_between(samples, *spans[0])))
    seconds, peak = min(runs)
    each = ", ".join(f"{s:.2f}" for s, _ in runs)
    print(
        f"then hf-tokbin verify: {seconds:.2f} s for {release_mb:,.0f} MB ({release_mb / seconds:,.0f} "
        f"MB/s; best of {len(runs)}: {each} s), peak {peak / 2**20:.0f} MiB ({load()})"
    )
    if args.writes_against:
        trees = {"this tree": HERE.parent, str(args.writes_against): args.writes_against}
        print_writes_per_token(args.work / "corpus", tokenizer, 1, args.work / "writes", trees, dict(os.environ))
    return 0


def encoder_limit(
    tokenizer_json: str, out: Path, inputs: list[str], tuned: bool = True
) -> tuple[float, tuple[str, int]]:
    """One run of the encoder alone in a fresh process: its seconds, and the digest of its ids.

    ``tuned``: with the process settings hf-tokbin's own commands run with (hf_tokbin.cli.reuse_freed_memory), so the
    limit is the encoder at its best here; else as a plain ``python`` process runs it (printed once, for reference).
    """
    # The variables are read as numpy and pyarrow load, before the job could set them; the job itself calls mallopt.
    settings = (
        {"ARROW_DEFAULT_MEMORY_POOL": "system", "OPENBLAS_NUM_THREADS": "1"}
        if tuned
        else {"HF_TOKBIN_BENCH_PLAIN_LIMIT": "1"}
    )
    process = subprocess.run(
        [sys.executable, __file__, "--limit-job", tokenizer_json, str(out), *inputs],
        capture_output=True,
        text=True,
        check=True,
        env={**settings, **os.environ},
    )
    return float(process.stdout.split()[-1]), digest_flat(out)


def _same_ids(got: tuple[str, int], want: tuple[str, int], name: str) -> None:
    if got != want:
        sys.exit(f"ids differ: the encoder alone gave {want[1]:,} tokens, {name} {got[1]:,}")


def run_hf_tokbin(args, train: Path, valid: Path, tokenizer: Path, num_proc: int):
    """corpus tinystories + build: (seconds, peak, stages, release folder)."""
    hf_tokbin = [sys.executable, "-m", "hf_tokbin"]
    corpus, release = args.work / "corpus", args.work / f"release-{num_proc}"
    shutil.rmtree(corpus, ignore_errors=True)
    shutil.rmtree(release, ignore_errors=True)
    shard_option = ["--shard-bytes", str(int(args.shard_mb * 1e6))] if args.shard_mb else []
    spans, samples = run_tree(
        [
            [*hf_tokbin, "corpus", "tinystories", str(train), str(valid), "--out", str(corpus), *shard_option],
            [
                *hf_tokbin,
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                str(tokenizer),
                "--format",
                "llmc,megatron",
                "--num-proc",
                str(num_proc),
                "--out",
                str(release),
                "--quiet",
            ],
        ]
    )
    rows = [("corpus tinystories", *spans[0]), *build_stages(release, *spans[1])]
    stages = [(label, end - start, peak_between(samples, start, end)) for label, start, end in rows]
    return spans[-1][1] - spans[0][0], peak_between(samples, spans[0][0], spans[-1][1]), stages, release


def print_results(text_mb: float, n_tokens: int, limit: float, results: dict, stages: dict, rounds: int = 1) -> None:
    ours = min(seconds for name, (seconds, _) in results.items() if name.startswith("hf_tokbin"))
    print(f"\n{text_mb:,.1f} MB of text, {n_tokens:,} tokens, ids identical in every job; {load()}")
    if rounds > 1:
        print(
            f"(the encoder limit and hf_tokbin: the best of {rounds} rounds, each round both; "
            "the chunk cache: one run)"
        )
    print(f"{'job':<30}{'seconds':>9}{'MB/s':>9}{'x limit':>9}{'x faster':>10}{'peak MiB':>10}")
    print(f"{'encoder limit (gigatoken)':<30}{limit:>9.2f}{text_mb / limit:>9.1f}{1:>9.2f}{'':>10}{'':>10}")
    for name, (seconds, peak) in results.items():
        faster = f"{seconds / ours:>10.2f}" if name.startswith("chunk cache") else f"{'':>10}"
        print(
            f"{name:<30}{seconds:>9.2f}{text_mb / seconds:>9.1f}{seconds / limit:>9.2f}{faster}{peak / 2**20:>10.0f}"
        )
    print("(x limit: the job's time over the encoder limit's; x faster: the chunk cache's time over hf_tokbin's best)")
    columns = sorted(stages)
    print(f"\nhf_tokbin stages{''.join(f'   --num-proc {n}: s, share, peak MiB' for n in columns)}")
    for i, (label, *_rest) in enumerate(stages[columns[0]]):
        cells = []
        for n in columns:
            total = sum(seconds for _, seconds, _ in stages[n])
            _, seconds, peak = stages[n][i]
            cells.append(f"{seconds:>10.2f} {100 * seconds / total:>5.1f}% {peak / 2**20:>7.0f}")
        print(f"  {label:<38}{'    '.join(cells)}")
    totals = [sum(seconds for _, seconds, _ in stages[n]) for n in columns]
    blank = ""
    print(f"  {'total':<38}{'    '.join(f'{t:>10.2f} {100:>5.1f}% {blank:>7}' for t in totals)}")



# ----------------------------------------------------------------
# bytes written per token, the finish's share (issue 24)

# Runs `hf-tokbin build` in this process, then records /proc/self/io (the build's own reads and writes; its encoding
# workers write nothing) as JSON in argv[1].
IO_RECORDING_BUILD = """
import json, sys
from hf_tokbin.cli import main
code = main(sys.argv[2:])
with open("/proc/self/io") as f:
    io = {k: int(v) for k, v in (line.split(": ") for line in f.read().splitlines())}
with open(sys.argv[1], "w") as f:
    json.dump(io, f)
sys.exit(code)
"""


def io_recording_command(record: Path, args: list[str]) -> list[str]:
    """``hf-tokbin ARGS`` recording its ``/proc/self/io`` into ``record``, with the hf_tokbin of ``PYTHONPATH``.

    ``-P``: ``python -c`` would put the working folder first on ``sys.path``, so a bench run from a checkout
    measured that checkout's code for every tree.
    """
    return [sys.executable, "-P", "-c", IO_RECORDING_BUILD, str(record), *args]


def token_data_bytes(release: Path) -> int:
    """Bytes of token data in a release: the llm.c files and the Megatron .bin files."""
    return sum(p.stat().st_size for p in release.rglob("*.bin"))


def print_writes_per_token(
    corpus: Path, tokenizer: Path, num_proc: int, work: Path, trees: dict[str, Path], env: dict
) -> None:
    """One build per code tree of the same corpus: wall time, the finish's share, bytes written per byte of token data.
    """
    import json

    print(
        "\nbytes written per byte of token data (llm.c + Megatron "
        f".bin), the finish's share; --num-proc {num_proc}; {load()}"
    )
    print(f"{'code':<28}{'seconds':>9}{'finish':>9}{'share':>7}{'wchar/B':>9}{'disk/B':>8}")
    for name, tree in trees.items():
        release, record = work / "release", work / "io.json"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        command = io_recording_command(
            record,
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                str(tokenizer),
                "--format",
                "llmc,megatron",
                "--num-proc",
                str(num_proc),
                "--out",
                str(release),
                "--quiet",
            ],
        )
        tree_env = {**env, "PYTHONPATH": os.pathsep.join([str(Path(tree).resolve()), env.get("PYTHONPATH", "")])}
        (span,), _ = run_tree([command], tree_env)
        finish = next(
            seconds
            for label, start, end in build_stages(release, *span)
            for seconds in [end - start]
            if label.startswith("build: finish")
        )
        io, data = json.loads(record.read_text()), token_data_bytes(release)
        wall = span[1] - span[0]
        print(
            f"{name[-28:]:<28}{wall:>9.2f}{finish:>9.2f}{100 * finish / wall:>6.1f}%"
            f"{io['wchar'] / data:>9.2f}{io['write_bytes'] / data:>8.2f}"
        )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
