"""The build encodes in bounded batches on one worker pool: bytes independent of batch size and num_proc, memory
bounded by the batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from release_fixtures import stories
from tokenizers import Tokenizer

from hf_tokbin._io import sha256_file
from hf_tokbin.engines import local
from hf_tokbin.errors import BuildError, FormatError
from hf_tokbin.formats import megatron
from hf_tokbin.formats.corpus_manifest import CorpusManifest, CorpusShard
from hf_tokbin.pipeline import build, plan_build
from hf_tokbin.pipeline import encode as encode_module
from hf_tokbin.pipeline.encode import text_batches
from hf_tokbin.tokenizer import resolve_tokenizer, train_bpe
from hf_tokbin.tokenizer.encoder import DocumentEncoder

pytestmark = pytest.mark.slow  # builds with the full fast-path check


@pytest.fixture(scope="module")
def bpe_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bpe")
    train_bpe(stories(400, seed=1), 600, out)
    return out


UNPROVEN_TEXT = "Bob\ua7ce's toy\ua7ce's"  # U+A7CE: a letter to gigatoken 0.10.0, punctuation to tokenizers


@pytest.fixture(scope="module")
def bpe_with_unproven_merges(tmp_path_factory) -> Path:
    """A BPE trained where U+A7CE is common, so the two engines' ids differ on it (not only their pieces)."""
    out = tmp_path_factory.mktemp("bpe-a7ce")
    train_bpe(stories(200, seed=1) + [UNPROVEN_TEXT] * 200, 400, out)
    return out


def write_shards(root: Path, shards: list[tuple[str, list[str]]], row_group_size: int) -> Path:
    """A corpus whose shard i holds ``shards[i]``, written in row groups of ``row_group_size`` rows."""
    (root / "data").mkdir(parents=True)
    entries = []
    for i, (split, texts) in enumerate(shards):
        rel = f"data/{split}-{i:05d}.parquet"
        pq.write_table(pa.table({"text": pa.array(texts, pa.string())}), root / rel, row_group_size=row_group_size)
        entries.append(CorpusShard(rel, split, len(texts), (root / rel).stat().st_size, sha256_file(root / rel)))
    CorpusManifest("toy", "files", (), tuple(entries)).write(root)
    return root


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_shard_larger_than_batch_and_buffers_gives_the_same_bytes_whatever_batch_and_num_proc(
    tmp_path, bpe_dir, monkeypatch
):
    texts = stories(900, seed=5)
    texts[100] = "x" * 3000  # longer than the batch text limit below: it goes alone
    corpus = write_shards(
        tmp_path / "corpus", [("train", texts), ("validation", stories(60, seed=6))], row_group_size=64
    )
    assert pq.ParquetFile(corpus / "data/train-00000.parquet").metadata.num_row_groups > 10
    # Internal limits far below the shard (about 300 kB of text), so every one of them is crossed.
    monkeypatch.setattr(encode_module, "MAX_BATCH_TEXT_BYTES", 2000)
    monkeypatch.setattr(encode_module, "_READ_BUFFER", 4096)
    info = resolve_tokenizer(str(bpe_dir))
    releases = {}
    for num_proc, batch_size in ((1, 1), (1, 100_000), (2, 3), (2, 100_000)):
        out = tmp_path / f"r-{num_proc}-{batch_size}"
        build(plan_build(corpus, info, out, num_proc=num_proc, batch_size=batch_size), progress=False)
        releases[num_proc, batch_size] = tree_bytes(out)
    first = releases[1, 1]
    for key, release in releases.items():
        assert release.keys() == first.keys() and release == first, key
    # And they are tokenizers' ids, document by document, in corpus order.
    reference = Tokenizer.from_file(str(bpe_dir / "tokenizer.json"))
    pair = megatron.MegatronPair(tmp_path / "r-2-3" / "shards" / "train" / "part-000000.bin")
    assert len(pair) == len(texts)
    for i in (0, 99, 100, 101, len(texts) - 1):
        assert pair[i][:-1].tolist() == reference.encode(texts[i], add_special_tokens=False).ids


def test_text_batches_hold_at_most_the_batch_rows_and_the_text_limit(tmp_path, monkeypatch):
    texts = [f"document {i} " + "word " * (i % 40) for i in range(500)] + ["y" * 5000] + ["z"] * 20
    corpus = write_shards(tmp_path / "corpus", [("train", texts)], row_group_size=97)
    monkeypatch.setattr(encode_module, "MAX_BATCH_TEXT_BYTES", 1000)
    seen = []
    for batch, n_bytes, first_row, _ in text_batches(corpus / "data/train-00000.parquet", 64):
        batch_texts = batch.to_pylist()
        assert first_row == len(seen)  # the shard's row of the batch's first text
        assert 1 <= len(batch_texts) <= 64
        assert n_bytes == sum(len(t.encode()) for t in batch_texts)
        assert n_bytes <= 1000 or len(batch_texts) == 1  # only a document longer than the limit goes over it, alone
        seen.extend(batch_texts)
    assert seen == texts


def _double(state, item):
    return state * item


def test_worker_pool_keeps_at_most_its_window_in_flight():
    consumed = []

    def items():
        for i in range(40):
            consumed.append(i)
            yield i

    pool = local.WorkerPool(3, num_proc=2)
    try:
        results = []
        for result in pool.map_ordered(_double, items(), window=4):
            # Items taken from the input but not yet handed out: never more than the window.
            assert len(consumed) - len(results) <= 4
            results.append(result)
    finally:
        pool.close()
    assert results == [3 * i for i in range(40)]


def _engine_threads(tokenizer_json, texts):
    from tokenizers import Tokenizer as Fresh

    Fresh.from_str(tokenizer_json).encode_batch_fast(texts)  # tokenizers' first use in this worker
    return len(os.listdir("/proc/self/task"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through /proc (Linux)")
def test_a_worker_encodes_with_tokenizers_on_one_thread(bpe_dir):
    # num_proc workers fill num_proc cores: tokenizers starting a thread per core in each would oversubscribe them.
    # A fresh process, whose tokenizers never ran before the fork (else tokenizers itself turns threads off).
    code = (
        "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[2])\n"
        "from test_build_batches import _engine_threads, stories\n"
        "from hf_tokbin.engines import local\n"
        "pool = local.WorkerPool(Path(sys.argv[1]).read_text(), num_proc=2)\n"
        "print(list(pool.map_ordered(_engine_threads, [stories(200, seed=i) for i in range(4)])))\n"
        "pool.close()\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("TOKENIZERS_PARALLELISM", None)
    args = [sys.executable, "-c", code, str(Path(bpe_dir) / "tokenizer.json"), str(Path(__file__).parent)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [1, 1, 1, 1]


def test_one_worker_pool_serves_every_shard_of_a_build(tmp_path, bpe_dir, monkeypatch):
    corpus = write_shards(tmp_path / "corpus", [("train", stories(30, seed=i)) for i in range(6)], row_group_size=8)
    started = []
    original = local.WorkerPool.__init__

    def counting(self, state, num_proc):
        started.append(num_proc)
        original(self, state, num_proc)

    monkeypatch.setattr(local.WorkerPool, "__init__", counting)
    build(plan_build(corpus, resolve_tokenizer(str(bpe_dir)), tmp_path / "r", num_proc=2, batch_size=5), progress=False)
    assert started == [2]
    assert local._shared is None  # closed with the build: no worker processes left behind


def test_workers_prove_the_code_points_they_meet_and_give_the_ids_of_tokenizers(tmp_path, bpe_with_unproven_merges):
    # U+A7CE first appears in a worker's batch, past the sample: the worker proves it (unproven) and routes its
    # documents.
    texts = stories(120, seed=7)
    texts[100] = texts[117] = UNPROVEN_TEXT
    texts[110] = "caf\u00e9 na\u00efve \u65e5\u672c"  # new code points the proof covers
    corpus = write_shards(tmp_path / "corpus", [("train", texts)], row_group_size=16)
    info = resolve_tokenizer(str(bpe_with_unproven_merges))
    outputs = {}
    for fast, num_proc in (("auto", 2), ("auto", 1), ("never", 1)):
        out = tmp_path / f"{fast}-{num_proc}"
        summary = build(plan_build(corpus, info, out, num_proc=num_proc, batch_size=8, fast=fast), progress=False)
        assert summary.encoder.startswith("gigatoken " if fast == "auto" else "tokenizers ")
        outputs[fast, num_proc] = (out / "shards" / "train" / "part-000000.bin").read_bytes()
    assert outputs["auto", 2] == outputs["auto", 1] == outputs["never", 1]
    encoder = DocumentEncoder.from_tokenizer_json(bpe_with_unproven_merges)
    assert encoder.check_fast_path(texts[:8]).used
    assert encoder._route(texts[96:120]) == [4, 21]  # only the documents holding U+A7CE leave the fast path


def test_prefetched_keeps_order_raises_where_the_error_was_and_stops_with_its_consumer():
    assert list(local.prefetched(iter(range(100)), depth=3)) == list(range(100))

    def failing():
        yield 1
        yield 2
        raise ValueError("bad input at item 3")

    got = []
    with pytest.raises(ValueError, match="item 3"):
        for item in local.prefetched(failing()):
            got.append(item)
    assert got == [1, 2]
    produced = []

    def endless():
        for i in range(10**9):
            produced.append(i)
            yield i

    stream = local.prefetched(endless(), depth=2)
    assert [next(stream) for _ in range(5)] == [0, 1, 2, 3, 4]
    stream.close()  # the consumer stops: so does the producer thread
    stopped_at = len(produced)
    assert stopped_at <= 5 + 2 + 2  # taken, queued, and at most one being made
    assert len(produced) == stopped_at


def test_a_null_text_in_a_worker_is_one_error_naming_the_shard(tmp_path, bpe_dir):
    corpus = write_shards(tmp_path / "corpus", [("train", ["Lily ran.", None, "Tom sat."])], row_group_size=8)
    plan = plan_build(corpus, resolve_tokenizer(str(bpe_dir)), tmp_path / "r", num_proc=2)
    with pytest.raises(FormatError, match=r"train-00000\.parquet: row 1: column 'text' has no text \(null\)"):
        build(plan, progress=False)


def _die(encoder, task):
    os._exit(3)  # a worker killed mid-batch (out of memory, kill -9)


def test_a_worker_that_dies_is_one_error_not_a_hang(tmp_path, bpe_dir, monkeypatch):
    corpus = write_shards(tmp_path / "corpus", [("train", stories(40, seed=8))], row_group_size=8)
    monkeypatch.setattr(encode_module, "_encode_task", _die)  # forked workers inherit it
    plan = plan_build(corpus, resolve_tokenizer(str(bpe_dir)), tmp_path / "r", num_proc=2, batch_size=4)
    with pytest.raises(BuildError, match="an encoding worker process died"):
        build(plan, progress=False)
    assert local._shared is None


def test_num_proc_1_encodes_on_a_thread_ahead_of_the_writers(tmp_path, bpe_dir, monkeypatch):
    # gigatoken releases the GIL: the part's writers on the caller's thread overlap the next batches' encoding.
    import threading

    corpus = write_shards(tmp_path / "corpus", [("train", stories(40, seed=8))], row_group_size=8)
    build(
        plan_build(corpus, resolve_tokenizer(str(bpe_dir)), tmp_path / "pool", num_proc=2, batch_size=4),
        progress=False,
    )
    threads = set()
    encode_task = encode_module._encode_task

    def recorded(encoder, task):
        threads.add(threading.current_thread().name)
        return encode_task(encoder, task)

    monkeypatch.setattr(encode_module, "_encode_task", recorded)
    build(plan_build(corpus, resolve_tokenizer(str(bpe_dir)), tmp_path / "r", num_proc=1, batch_size=4), progress=False)
    assert threads == {"hf_tokbin-prefetch"}
    assert tree_bytes(tmp_path / "r") == tree_bytes(tmp_path / "pool")
