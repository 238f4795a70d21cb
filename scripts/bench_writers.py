"""Throughput and memory of the llm.c and Megatron writers against plain ``numpy.tofile``.

Each writer is fed documents of realistic length (about 200 tokens, lengths
drawn from a geometric distribution) in batches of a few thousand through
``add_documents``, exactly as a build feeds it. The baselines write the very
same output bytes (separators / EOD already in place, prepared before the
clock starts) with ``ndarray.tofile`` into one file, then fsync, since every
writer fsyncs too:

- ``tofile``         the I/O floor;
- ``tofile+sha256``  the same plus hashing the finished file, which every
                     writer does at close for its manifest or receipt.

Writers and baselines alternate in the same process, ``--rounds`` times, and
the best time of each is kept, so a noisy neighbour on a shared machine
slows all of them alike. The script prints MB/s of output, the ratio to each
baseline (the target is >= 0.8 of ``tofile+sha256``), the time the writer
spends in ``close()`` (patching the header, fsync, SHA-256, rename) and a
separate SHA-256 pass over the finished files, then peak memory: the
process's ``ru_maxrss`` and the ``tracemalloc`` peak of one traced run per
writer, which stays flat however long the stream is.

Usage::

    python scripts/bench_writers.py                    # 200M uint16 + 50M uint32 tokens
    python scripts/bench_writers.py --scale 0.05       # a quick run
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import tempfile
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from hf_tokbin._io import sha256_file
from hf_tokbin.formats.llmc import LlmcWriter
from hf_tokbin.formats.megatron import MegatronWriter

GPT2_VOCAB, GPT2_EOT = 50257, 50256
LLAMA3_VOCAB, LLAMA3_EOT = 128256, 128001


@dataclass
class Workload:
    """A pool of document batches, cycled until ``n_tokens`` document tokens have been fed."""

    name: str
    vocab_size: int
    sep_id: int
    batches: list[tuple[np.ndarray, np.ndarray]]  # (flat ids, lengths) per batch
    n_batches: int  # batches fed per run (cycling through the pool)

    def feed(self):
        for i in range(self.n_batches):
            yield self.batches[i % len(self.batches)]

    def output_batches(self, sep_first: bool) -> list[np.ndarray]:
        """Each pooled batch as the writer writes it: a separator before (llm.c) or after (Megatron) each document."""
        out = []
        for ids, lengths in self.batches:
            sizes = lengths + 1
            buffer = np.empty(int(sizes.sum()), dtype=ids.dtype)
            ends = np.cumsum(sizes)
            sep_at = ends - sizes if sep_first else ends - 1
            mask = np.ones(buffer.size, dtype=bool)
            mask[sep_at] = False
            buffer[sep_at] = self.sep_id
            buffer[mask] = ids
            out.append(buffer)
        return out


def make_workload(name, vocab_size, sep_id, dtype, n_tokens, doc_len, batch_docs, pool, seed=0) -> Workload:
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(pool):
        lengths = rng.geometric(1 / doc_len, size=batch_docs).astype(np.int64)
        ids = rng.integers(0, sep_id, size=int(lengths.sum()), dtype=np.int64).astype(dtype)
        batches.append((ids, lengths))
    tokens_per_batch = np.mean([ids.size for ids, _ in batches])
    return Workload(name, vocab_size, sep_id, batches, max(1, round(n_tokens / tokens_per_batch)))


def run_llmc(work: Workload, out: Path) -> tuple[float, float, list[Path]]:
    start = time.perf_counter()
    writer = LlmcWriter(out, "train", work.vocab_size, doc_sep_id=work.sep_id)
    for ids, lengths in work.feed():
        writer.add_documents(ids, lengths)
    before_close = time.perf_counter()
    entries = writer.close()
    end = time.perf_counter()
    return end - start, end - before_close, [out / e.name for e in entries]


def run_megatron(work: Workload, out: Path) -> tuple[float, float, list[Path]]:
    start = time.perf_counter()
    writer = MegatronWriter(out / "part-000000.bin", work.vocab_size, work.sep_id)
    for ids, lengths in work.feed():
        writer.add_documents(ids, lengths)
    before_close = time.perf_counter()
    pair = writer.close()
    end = time.perf_counter()
    return end - start, end - before_close, [pair.bin_path, pair.idx_path]


def run_tofile(
    prepared: list[np.ndarray], n_batches: int, out: Path, hash_it: bool
) -> tuple[float, float, list[Path]]:
    path = out / "baseline.bin"
    start = time.perf_counter()
    with open(path, "wb") as file:
        for i in range(n_batches):
            prepared[i % len(prepared)].tofile(file)
        file.flush()
        os.fsync(file.fileno())
    if hash_it:
        sha256_file(path)
    return time.perf_counter() - start, 0.0, [path]


def output_bytes(paths: list[Path]) -> int:
    return sum(p.stat().st_size for p in paths)


def clear(paths: list[Path]) -> None:
    for p in paths:
        p.unlink(missing_ok=True)


def bench(work: Workload, rounds: int, tmp: Path) -> None:
    prepared = {"llmc": work.output_batches(sep_first=True), "megatron": work.output_batches(sep_first=False)}
    runs = {
        "tofile": lambda: run_tofile(prepared["llmc"], work.n_batches, tmp, hash_it=False),
        "tofile+sha256": lambda: run_tofile(prepared["llmc"], work.n_batches, tmp, hash_it=True),
        "LlmcWriter": lambda: run_llmc(work, tmp),
        "MegatronWriter": lambda: run_megatron(work, tmp),
    }
    best: dict[str, tuple[float, float, int, float]] = {}
    progress = tqdm(total=rounds * len(runs), desc=work.name, unit="run", leave=False)
    for _ in range(rounds):
        for name, run in runs.items():
            gc.collect()
            seconds, close_seconds, paths = run()
            size = output_bytes(paths)
            hash_start = time.perf_counter()
            for p in paths:
                sha256_file(p)
            hash_seconds = time.perf_counter() - hash_start
            clear(paths)
            if name not in best or seconds < best[name][0]:
                best[name] = (seconds, close_seconds, size, hash_seconds)
            progress.update()
    progress.close()

    floor, floor_hashed = best["tofile"][0], best["tofile+sha256"][0]
    n_tokens = work.n_batches * int(np.mean([ids.size for ids, _ in work.batches]))
    print(f"\n{work.name}: about {n_tokens / 1e6:,.0f}M document tokens, best of {rounds}")
    print(f"  {'':16}{'seconds':>9}{'MB/s':>9}{'vs tofile':>11}{'vs +sha256':>12}{'close()':>9}{'sha256 pass':>13}")
    for name, (seconds, close_seconds, size, hash_seconds) in best.items():
        print(
            "  "
            f"{name:16}{seconds:9.2f}{size / seconds / 1e6:9.0f}{floor / seconds:11.2f}{floor_hashed / seconds:12.2f}"
            f"{close_seconds:9.2f}{hash_seconds:13.2f}"
        )


def traced_peak(run, tmp: Path) -> float:
    """The tracemalloc peak (MB) of one run; numpy reports its buffers to tracemalloc."""
    gc.collect()
    tracemalloc.start()
    try:
        _, _, paths = run()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    clear(paths)
    return peak / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--uint16-tokens", type=float, default=200e6, help="document tokens for the GPT-2 (uint16) run"
    )
    parser.add_argument(
        "--uint32-tokens", type=float, default=50e6, help="document tokens for the Llama 3 (uint32/int32) run"
    )
    parser.add_argument("--scale", type=float, default=1.0, help="multiply both token counts (0.05 for a quick run)")
    parser.add_argument("--doc-len", type=float, default=200, help="mean document length in tokens")
    parser.add_argument("--batch-docs", type=int, default=4000, help="documents per add_documents call")
    parser.add_argument("--pool", type=int, default=8, help="distinct batches generated and cycled through")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; the best time of each run is kept")
    parser.add_argument("--dir", default=None, help="where to write (default: a temporary folder)")
    args = parser.parse_args()

    workloads = [
        make_workload(
            "uint16 (vocab 50257)",
            GPT2_VOCAB,
            GPT2_EOT,
            np.uint16,
            args.uint16_tokens * args.scale,
            args.doc_len,
            args.batch_docs,
            args.pool,
        ),
        make_workload(
            "uint32/int32 (vocab 128256)",
            LLAMA3_VOCAB,
            LLAMA3_EOT,
            np.uint32,
            args.uint32_tokens * args.scale,
            args.doc_len,
            args.batch_docs,
            args.pool,
        ),
    ]
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench_writers_") as tmp:
        tmp = Path(tmp)
        for work in workloads:
            bench(work, args.rounds, tmp)
        pool_mb = sum(ids.nbytes + lengths.nbytes for w in workloads for ids, lengths in w.batches) / 1e6
        print("\nPeak memory (the input pool of batches is held by the script itself)")
        print(f"  input pool            {pool_mb:9.1f} MB")
        for work in workloads:
            for name, run in (("LlmcWriter", run_llmc), ("MegatronWriter", run_megatron)):
                peak = traced_peak(lambda: run(work, tmp), tmp)
                print(f"  tracemalloc peak, {name:15} {work.name:28} {peak:9.1f} MB")
    print(f"  ru_maxrss of the process  {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:9.1f} MB")


if __name__ == "__main__":
    main()
