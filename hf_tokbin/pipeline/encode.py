"""Encoding one input shard in bounded batches; one pool of worker processes serves the whole build.

:func:`encode_shard` reads the shard's Parquet file ``plan.batch_size`` rows
at a time (pyarrow, streaming: never the whole shard), cuts each batch to at
most :data:`MAX_BATCH_TEXT_BYTES` of text, encodes it with
:class:`EncodeBatch` (the encoder of :mod:`hf_tokbin.tokenizer.encoder`:
``tokenizers``' ids, a faster engine only where it reproduces them) and
yields (flat ids, lengths, text bytes) in corpus order, batch by batch, for
the part writer. With ``num_proc`` > 1 the batches are encoded by a pool of
``num_proc`` worker processes (:class:`hf_tokbin.engines.local.WorkerPool`)
started once per build, at most ``2 * num_proc`` batches in flight: memory is
bounded by the batch, not by the shard. Each document's ids are the same
whatever the batch it is in, so the bytes do not depend on ``num_proc`` or
batch size.

This replaces ``Dataset.map(batched=True, num_proc=N)``, which converted the
whole shard to an Arrow file and mapped it to another one (both memory-mapped
and read through, so the peak grew with the shard) and started a new pool for
every shard; docs/speed.md has the measurements.

:func:`prepare_encoder` runs the fast-path check once per build, and keeps
its outcome in ``$HF_TOKBIN_CACHE/fast-path/`` keyed by the tokenizer, the
engines' versions and the proof's code; a cached outcome is used only after
the routed encoder matches ``tokenizers`` again on the corpus sample and the
probe texts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
import os
import stat
from pathlib import Path

import numpy as np

from .._io import write_text_atomic
from ..errors import BuildError
from ..formats.release import part_name
from ..tokenizer.long_documents import encode_in_bounded_pieces
from .given_ids import check_given
from .plan import BuildPlan

MAX_BATCH_TEXT_BYTES = 16 << 20  # a batch of documents is cut to this much text (a longer document goes alone)
_READ_BUFFER = 1 << 20  # pyarrow reads the shard through a buffer of this size, not whole column chunks at once


class EncodeBatch:
    """One batch of texts to ids, checked and narrowed to the release's width (``uint16``, or ``uint32`` above 65,536 ids).

    Made per batch in the process that encodes it; the encoder reaches worker
    processes once, when the build's pool starts (inherited by fork, or
    unpickled once per spawned worker), and each process loads its engines
    once. Called on a table (``{"text": ...}``) it returns a table of id
    lists.
    """

    def __init__(self, encoder, vocab_size: int, source: str | None = None):
        self.encoder = encoder
        self.vocab_size = vocab_size
        self.source = source  # the shard, for the error message
        self.dtype = np.uint16 if vocab_size <= 65536 else np.uint32

    def encode(self, texts) -> tuple[np.ndarray, np.ndarray]:
        """(flat ids in the release's width, ``int64`` lengths) of ``texts`` (a pyarrow string array or a list)."""
        if not isinstance(texts, list):
            texts = texts.to_pylist()
        # Long documents in bounded pieces, same ids (tokenizer/long_documents.py).
        flat, lengths = encode_in_bounded_pieces(self.encoder, texts)
        # Before the narrowing cast: an id the width cannot hold would wrap silently.
        if flat.size and int(flat.max()) >= self.vocab_size:
            raise BuildError(self.source, "the encoder produced an id outside the tokenizer's vocabulary", expected=f"ids < {self.vocab_size}", got=int(flat.max()))
        return np.asarray(flat, dtype=self.dtype), lengths

    def __call__(self, table):
        import pyarrow as pa

        flat, lengths = self.encode(table.column("text"))
        offsets = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return pa.table({"ids": pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(flat))})


def _encode_task(encoder, task: tuple) -> tuple[np.ndarray, np.ndarray, int]:
    """One batch of one shard, in this process or a worker's (:meth:`WorkerPool.map_ordered`): (flat ids, lengths, text bytes)."""
    vocab_size, source, texts, n_bytes = task
    return (*EncodeBatch(encoder, vocab_size, source).encode(texts), n_bytes)


def _given_tasks(plan: BuildPlan, index: int, tasks):
    """The encoding tasks of shard ``index`` with the kept ids of their documents and which of them to check."""
    shards = plan.corpus.shards
    split = shards[index].split
    take = plan.given_ids.reader(split, sum(s.rows for s in shards[:index] if s.split == split))
    first = sum(s.rows for s in shards[:index])  # in corpus order: what --check-ids sample:K spreads over
    total = sum(s.rows for s in shards)
    for vocab_size, source, texts, n_bytes in tasks:
        yield (vocab_size, source, texts, n_bytes, *take(len(texts)), plan.given_ids.check.mask(first, len(texts), total))
        first += len(texts)


SAMPLE_DOCS_PER_SHARD = 64
SAMPLE_DOCS = 2048


def _open_shard(source, where):
    """The shard's Parquet file (a path or an open binary file), read through a bounded buffer; a clear error naming ``where`` if it is not Parquet with a text column."""
    import pyarrow.parquet as pq

    try:
        # pre_buffer=False: pyarrow's default reads ahead and keeps up to the whole file's column chunks (the peak grew with the shard).
        file = pq.ParquetFile(source, buffer_size=_READ_BUFFER, pre_buffer=False)
        file.schema_arrow.field("text")
        return file
    except (OSError, ValueError, KeyError) as e:  # pyarrow's errors derive from these
        raise BuildError(where, "corpus shard is not readable Parquet with a text column", got=str(e).splitlines()[0][:200]) from e


def text_batches(source, batch_size: int, where=None):
    """The shard's texts in order, ``batch_size`` rows at a time, each batch cut to at most MAX_BATCH_TEXT_BYTES of text.

    ``source``: the shard's path, or an open binary file; ``where`` names it in errors (default: the path).
    """
    import pyarrow.compute as pc

    where = source if where is None else where
    with _open_shard(source, where) as file:
        try:
            row = 0
            for batch in file.iter_batches(batch_size=batch_size, columns=["text"], use_threads=False):
                texts = batch.column(0)
                if texts.null_count:
                    first_null = row + int(np.argmax(texts.is_null().to_numpy(zero_copy_only=False)))
                    raise BuildError(where, f"row {first_null} of this shard has no text (null)", hint="a corpus made by hf-tokbin corpus never holds one")
                row += len(texts)
                ends = np.cumsum(pc.binary_length(texts).to_numpy(zero_copy_only=False), dtype=np.int64)
                first = 0
                while first < len(texts):
                    done = int(ends[first - 1]) if first else 0
                    last = max(first + 1, int(np.searchsorted(ends, done + MAX_BATCH_TEXT_BYTES, side="right")))
                    yield texts.slice(first, last - first), int(ends[last - 1]) - done
                    first = last
        except (OSError, ValueError) as e:
            raise BuildError(where, "corpus shard is not readable Parquet with a text column", got=str(e).splitlines()[0][:200]) from e


def sample_documents(plan: BuildPlan) -> list[str]:
    """The first documents of every shard: what the fast path must reproduce before it is used."""
    sample = []
    for shard in plan.corpus.shards:
        if not shard.rows or len(sample) >= SAMPLE_DOCS:
            continue
        with plan.shard_source.open_for_sample(shard) as handle:
            for texts, _ in text_batches(handle, SAMPLE_DOCS_PER_SHARD, where=plan.shard_source.location(shard)):
                sample.extend(texts.to_pylist())
                break
    return sample[:SAMPLE_DOCS]


def prepare_encoder(plan: BuildPlan) -> BuildPlan:
    """Load the encoder once and check its fast path on a sample of the corpus (the proof cached, see :func:`check_with_cache`)."""
    from ..tokenizer.encoder import encoder_for

    encoder = encoder_for(plan.tokenizer.path, plan.fast, parse_special=plan.parse_special)
    check_with_cache(encoder, sample_documents(plan))
    return dataclasses.replace(plan, encoder=encoder)


def encode_shard(plan: BuildPlan, index: int, progress: bool = True, shard_path: Path | None = None):
    """Yield (flat ids, lengths, text bytes) for the documents of input shard ``index`` in order, in bounded batches.

    ``shard_path``: where the shard's bytes are (default: in the corpus folder).
    With ``plan.num_proc`` > 1 the batches are encoded by the build's worker
    pool (:func:`hf_tokbin.engines.local.shared_pool`), else in this process
    (where gigatoken uses its own threads).
    """
    from concurrent.futures.process import BrokenProcessPool

    from tqdm.auto import tqdm

    from ..engines.local import close_shared_pool, shared_pool

    shard = plan.corpus.shards[index]
    if shard.rows == 0:
        return
    shard_path = Path(plan.corpus_root) / shard.path if shard_path is None else shard_path
    source = os.fspath(shard_path)
    tasks = ((plan.tokenizer.vocab_size, source, texts, n_bytes) for texts, n_bytes in text_batches(shard_path, plan.batch_size))
    work = _encode_task
    if plan.given_ids is not None:  # a dataset's input_ids column: written after the check (given_ids.py)
        tasks, work = _given_tasks(plan, index, tasks), check_given
    if plan.num_proc > 1:
        results = shared_pool(plan.encoder, plan.num_proc).map_ordered(work, tasks)
    else:
        results = (work(plan.encoder, task) for task in tasks)
    with tqdm(total=shard.rows, desc=f"encoding {part_name(index)}", unit="doc", disable=not progress) as bar:
        try:
            for flat, lengths, n_bytes in results:
                bar.update(int(lengths.size))
                yield flat, lengths, n_bytes
        except BrokenProcessPool:
            close_shared_pool()
            raise BuildError(source, "an encoding worker process died (killed, or out of memory)", hint="lower --num-proc or --batch-size, or give the machine more memory") from None


# ---------------------------------------------------------------- the fast-path check's cache

CHECK_CACHE_FORMAT = "hf_tokbin.fast-path-check/1"
_CHECK_CACHE_MAX_BYTES = 1 << 20  # a record holds a few thousand ranges at most
_LAST_CODE_POINT = 0x10FFFF


def check_cache_dir() -> Path:
    """``$HF_TOKBIN_CACHE/fast-path`` (default ``~/.cache/hf_tokbin/fast-path``)."""
    return Path(os.environ.get("HF_TOKBIN_CACHE") or Path.home() / ".cache" / "hf_tokbin") / "fast-path"


def check_cache_key(encoder) -> dict:
    """What the proof's outcome depends on: the tokenizer as the encoder holds it, the policy, both engines' versions and the proof's own code."""
    from ..tokenizer import encoder as encoder_module

    return {
        "tokenizer_sha256": hashlib.sha256(encoder.tokenizer_json.encode("utf-8")).hexdigest(),
        "parse_special": encoder.parse_special,
        "gigatoken": importlib.metadata.version("gigatoken"),
        "tokenizers": importlib.metadata.version("tokenizers"),
        "proof_sha256": hashlib.sha256(Path(encoder_module.__file__).read_bytes()).hexdigest(),
    }


def check_with_cache(encoder, sample_texts: list[str]):
    """``encoder.check_fast_path(sample_texts)``, or its cached outcome when that still holds; returns the check.

    The per-code-point proof costs 1 to 2.5 s and depends only on the key
    (:func:`check_cache_key`). A cached outcome is a JSON file we wrote: it is
    used only if it is a regular file of bounded size, names this key, holds
    well-formed code point ranges, and the encoder restored from it gives
    ``tokenizers``' ids on ``sample_texts`` and the probe texts; anything else
    runs the full check (and rewrites the record). Only a proven fast path is
    cached: a refusal is decided quickly.
    """
    from ..tokenizer.encoder import DocumentEncoder

    if not isinstance(encoder, DocumentEncoder) or encoder.fast == "never":
        return encoder.check_fast_path(sample_texts)
    key = check_cache_key(encoder)
    path = check_cache_dir() / f"{hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()}.json"
    record = _read_check_record(path, key)
    restored = _restore_check(encoder, record, sample_texts) if record is not None else None
    if restored is not None:
        return restored
    check = encoder.check_fast_path(sample_texts)
    if check.used:
        _write_check_record(path, key, encoder)
    return check


def _read_check_record(path: Path, key: dict) -> dict | None:
    """The cached record at ``path`` if it is one we wrote for ``key`` and well-formed, else None (run the check)."""
    try:
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > _CHECK_CACHE_MAX_BYTES:
            return None
        record = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") != CHECK_CACHE_FORMAT or record.get("key") != key:
        return None
    ranges, engine, reason, count = record.get("unproven"), record.get("engine"), record.get("reason"), record.get("unproven_in_universe")
    if not (isinstance(engine, str) and isinstance(reason, str) and isinstance(count, int) and not isinstance(count, bool) and isinstance(ranges, list)):
        return None
    previous = -1
    for pair in ranges:  # sorted, disjoint, inside U+0000..U+10FFFF
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in pair)):
            return None
        if not previous < pair[0] <= pair[1] <= _LAST_CODE_POINT:
            return None
        previous = pair[1]
    return record


def _restore_check(encoder, record: dict, sample_texts: list[str]):
    """Give ``encoder`` the cached outcome; the check if the restored encoder matches ``tokenizers`` on the sample and probes, else None."""
    import time

    from ..tokenizer.encoder import PROBE_TEXTS, DocumentEncoder, FastPathCheck

    started = time.perf_counter()
    source = encoder.source
    state = encoder.__getstate__()  # the pickling state: what the check decides, as workers receive it
    state.update(
        check=FastPathCheck(True, record["engine"], record["reason"] + " (proof read from the cache)", 0.0, record["unproven_in_universe"]),
        unproven=tuple((lo, hi) for lo, hi in record["unproven"]),
        parsed_added=tuple(encoder.parsed_added_tokens()),
        gigatoken_json=None,  # made again from the tokenizer's JSON on first use
    )
    encoder.__setstate__(state)
    encoder.source = source
    texts = [*sample_texts, *PROBE_TEXTS]
    try:
        want = DocumentEncoder(encoder.tokenizer, "never", source, encoder.parse_special).encode_batch(texts)
        got = encoder.encode_batch(texts)
        same = all(np.array_equal(w, g) for w, g in zip(want, got))
    except Exception:  # gigatoken cannot load it now: the full check says why
        same = False
    if not same:
        return None
    return dataclasses.replace(state["check"], seconds=time.perf_counter() - started)


def _write_check_record(path: Path, key: dict, encoder) -> None:
    """Keep a proven outcome for the next build; a cache that cannot be written is only a slower next build."""
    state = encoder.__getstate__()
    check = state["check"]
    record = {
        "format": CHECK_CACHE_FORMAT,
        "key": key,
        "engine": check.engine,
        "reason": check.reason,
        "unproven_in_universe": check.unproven_in_universe,
        "unproven": [list(pair) for pair in state["unproven"]],
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(record, sort_keys=True))
    except OSError:
        pass
