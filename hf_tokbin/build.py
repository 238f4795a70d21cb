"""``hf-tokbin build``: a corpus and a tokenizer in, a verified release out.

A build is a set of independent per-input-shard tasks plus a cheap,
sequential finish:

1. :func:`plan_build` reads the corpus manifest and the tokenizer and checks
   every option (a format that needs a separator and has none fails here,
   before any work); :func:`start_release` writes ``run_config.json``, and a
   re-run must pin the same inputs.
2. :func:`build_part` encodes one corpus shard once, with
   ``Dataset.map(batched=True, num_proc=N)``, and writes from the same ids its
   Megatron pair (EOD appended to every document) and its llm.c staging pair
   (the bare ids and document lengths, under ``.work/``), then its receipt,
   last: the receipt marks the part done, so a killed build skips it on re-run.
3. :func:`finish_build` packs the llm.c token files in corpus order from the
   staging pairs (separator before every document, roll-over before the
   per-file limit), writes ``_MANIFEST.json``, ``stats.json``, the dataset
   card and, last, ``COMPLETE.json``, after checking that documents and tokens
   add up everywhere (token conservation).

Same inputs and options give byte-identical files whatever ``num_proc``,
batch size or engine.

``--out`` may be an fsspec URL: the steps above write into a local scratch
folder and publish each part, then the finish, to the URL in the same
completion order (see :mod:`hf_tokbin.remote`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import __version__, llmc, llmc_llama3, megatron
from ._io import (
    TMP_SUFFIX,
    canonical_json,
    sha256_file,
    write_json_atomic,
    write_text_atomic,
)
from .corpus_manifest import MANIFEST_NAME as CORPUS_MANIFEST_NAME
from .corpus_manifest import SPLIT_RULE_TEXT, CorpusManifest, CorpusShard
from .encoder import FAST_MODES
from .errors import BuildError, FormatError
from .records import FileEntry
from .release import (
    CARD_NAME,
    COMPLETE_NAME,
    FORMATS,
    LLMC_SPLIT,
    RUN_CONFIG_NAME,
    SPLITS,
    STATS_NAME,
    TOKENS_DIR,
    Complete,
    Receipt,
    SplitCounts,
    list_release_paths,
    pair_path,
    part_name,
    receipt_path,
    split_totals,
    stats_record,
)
from .remote import RemoteOut, check_url, is_url, scratch_key, scratch_root
from .tokenizer import TokenizerInfo

LLMC_WRITERS = {"seed000": llmc.LlmcWriter, "llama3": llmc_llama3.LlmcLlama3Writer}
WORK_DIR = ".work"
DEFAULT_BATCH_SIZE = 10_000  # documents per Dataset.map batch: larger batches amortize per-call costs (scripts/bench_build.py)
RUN_CONFIG_FORMAT = "hf_tokbin.run_config/1"


@dataclass(frozen=True)
class BuildPlan:
    """Everything a part task needs: plain values only, so it pickles to Ray workers."""

    corpus_root: str
    corpus: CorpusManifest
    corpus_manifest_sha256: str
    corpus_source: str  # "local" or the Hub repo id
    corpus_revision: str | None
    tokenizer: TokenizerInfo
    formats: tuple[str, ...]
    out: str  # an absolute local folder, or an fsspec URL (see hf_tokbin.remote)
    num_proc: int = 1
    batch_size: int = DEFAULT_BATCH_SIZE
    max_tokens_per_file: int = llmc.DEFAULT_MAX_TOKENS
    llmc_variant: str = "seed000"  # or "llama3": upstream llm.c's uint32 layout for train_llama3.py
    release_version: str = "v1"
    fast: str = "auto"  # the fast-path mode of encoder.DocumentEncoder; never changes an id
    scratch_key: str | None = None  # out is a URL: the name of the local scratch folder (remote.scratch_root)
    # The encoder after its fast-path check (prepare_encoder); not part of run_config.json.
    encoder: object = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def eod_id(self) -> int | None:
        return self.tokenizer.doc_sep_id

    @property
    def llmc_dir(self) -> str:
        return f"{TOKENS_DIR}/{self.tokenizer.tokenizer_id}/{self.corpus.name}"

    def run_config(self) -> dict:
        """``run_config.json``: pinned inputs and options. Nothing here depends on num_proc, batch size or engine."""
        return {
            "format": RUN_CONFIG_FORMAT,
            "dataset": self.corpus.name,
            "version": self.release_version,
            "corpus": {
                "name": self.corpus.name,
                "license": self.corpus.license,
                "language": list(self.corpus.language),
                "source": self.corpus_source,
                "revision": self.corpus_revision,
                "manifest_sha256": self.corpus_manifest_sha256,
                "shards": [s.to_dict() for s in self.corpus.shards],
            },
            "tokenizer": self.tokenizer.to_record(),
            "eod_id": self.eod_id if "megatron" in self.formats else None,
            "split_rule": {"name": self.corpus.split_rule, "text": SPLIT_RULE_TEXT[self.corpus.split_rule]},
            "formats": list(self.formats),
            "llmc": (
                {"variant": self.llmc_variant, "max_tokens_per_file": self.max_tokens_per_file, "doc_sep_id": self.tokenizer.doc_sep_id}
                if "llmc" in self.formats
                else None
            ),
            "megatron": {"dtype_code": megatron.dtype_code_for_vocab(self.tokenizer.vocab_size)} if "megatron" in self.formats else None,
            "versions": {"hf_tokbin": __version__, "tokenizers": _version("tokenizers")},
        }


@dataclass(frozen=True)
class BuildSummary:
    out: str
    counts: dict[str, SplitCounts]
    files: int
    total_bytes: int
    seconds: float
    parts_built: int
    parts_skipped: int
    encoder: str

    def table(self) -> str:
        lines = [f"{'split':<11}{'documents':>12}{'tokens':>15}{'bytes/token':>13}"]
        for split, c in self.counts.items():
            tokens = c.text_tokens
            bpt = c.text_bytes / tokens if tokens else 0.0
            lines.append(f"{split:<11}{c.documents:>12,}{tokens:>15,}{bpt:>13.3f}")
        lines.append(
            f"{self.files} files, {self.total_bytes / 1e6:,.1f} MB in {self.out}; "
            f"{self.parts_built} parts built, {self.parts_skipped} skipped; {self.seconds:.1f} s; encoder {self.encoder}"
        )
        return "\n".join(lines)


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


# ---------------------------------------------------------------- planning


def plan_build(
    corpus_root: str | os.PathLike,
    tokenizer: TokenizerInfo,
    out: str | os.PathLike,
    formats: tuple[str, ...] = FORMATS,
    num_proc: int = 1,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_tokens_per_file: int = llmc.DEFAULT_MAX_TOKENS,
    corpus_source: str = "local",
    corpus_revision: str | None = None,
    llmc_variant: str = "seed000",
    fast: str = "auto",
) -> BuildPlan:
    """Check every input and option before any work starts."""
    url = is_url(out)
    if url:
        check_url(out)
    if not formats or set(formats) - set(FORMATS):
        raise BuildError(out, "formats must be among llmc, megatron", got=",".join(formats) or "none")
    formats = tuple(f for f in FORMATS if f in formats)  # one canonical order
    if "megatron" in formats and tokenizer.doc_sep_id is None:
        raise BuildError(
            out,
            "the megatron format appends an EOD token to every document and this tokenizer has none",
            hint="give --doc-sep-id N, or put a generation_config.json with eos_token_id beside tokenizer.json",
        )
    if fast not in FAST_MODES:
        raise BuildError(out, "fast-path mode must be auto, never or require", got=fast)
    if llmc_variant not in LLMC_WRITERS:
        raise BuildError(out, "llm.c variant must be seed000 or llama3", got=llmc_variant)
    if num_proc < 1 or batch_size < 1:
        raise BuildError(out, "num_proc and batch_size must be at least 1", got=(num_proc, batch_size))
    if not 0 < max_tokens_per_file <= llmc.MAX_TOKENS_PER_FILE:
        raise BuildError(out, "--max-tokens-per-file out of range", expected=f"1..{llmc.MAX_TOKENS_PER_FILE}", got=max_tokens_per_file)
    tokenizer_id = tokenizer.tokenizer_id
    if not tokenizer_id or "/" in tokenizer_id or "\\" in tokenizer_id or tokenizer_id.startswith("."):
        raise BuildError(
            tokenizer.path or tokenizer.source,
            "--tokenizer-id names the folder tokens/<tokenizer_id>/",
            expected="one folder name: not empty, no '/' or '\\', not starting with '.'",
            got=repr(tokenizer_id),
        )
    llmc.version_for_vocab(tokenizer.vocab_size)
    if "megatron" in formats:
        megatron.dtype_code_for_vocab(tokenizer.vocab_size)
    corpus_root = Path(corpus_root)
    manifest = CorpusManifest.read(corpus_root)
    for shard in manifest.shards:
        if not (corpus_root / shard.path).is_file():
            raise BuildError(corpus_root / shard.path, "corpus shard listed in _MANIFEST.json is missing")
    plan = BuildPlan(
        # Absolute: Ray workers run in other folders. Never written to reproducible files.
        corpus_root=os.fspath(corpus_root.resolve()),
        corpus=manifest,
        corpus_manifest_sha256=sha256_file(corpus_root / CORPUS_MANIFEST_NAME),
        corpus_source=corpus_source,
        corpus_revision=corpus_revision,
        tokenizer=tokenizer,
        formats=formats,
        out=out.rstrip("/") if url else os.fspath(Path(out).resolve()),
        num_proc=num_proc,
        batch_size=batch_size,
        max_tokens_per_file=max_tokens_per_file,
        llmc_variant=llmc_variant,
        fast=fast,
    )
    if url:
        plan = dataclasses.replace(plan, scratch_key=scratch_key(plan.out, canonical_json(plan.run_config())))
    return plan


def local_root(plan: BuildPlan) -> Path:
    """Where this machine writes the build: ``plan.out``, or the scratch folder of a URL build."""
    return Path(plan.out) if plan.scratch_key is None else scratch_root(plan.scratch_key)


def remote_out(plan: BuildPlan) -> RemoteOut | None:
    """The URL the build publishes to, or None for a local folder."""
    return None if plan.scratch_key is None else RemoteOut(plan.out)


def start_release(plan: BuildPlan) -> None:
    """Write ``run_config.json``, or check that the folder (or URL) holds the same build."""
    out = local_root(plan)
    config_path = out / RUN_CONFIG_NAME
    text = canonical_json(plan.run_config())
    remote = remote_out(plan)
    if remote is not None:
        _start_remote(remote, text)
        # The scratch key pins this very build, so whatever the scratch folder holds is this build's.
        write_text_atomic(config_path, text)  # the card reads it at the finish
        _remove_temporaries(out)
        return
    if config_path.exists():
        if config_path.read_text(encoding="utf-8") != text:
            raise BuildError(
                config_path,
                "this folder holds a different build (inputs, tokenizer or options differ)",
                hint="use a new --out folder, or delete this one",
            )
        _remove_temporaries(out)
        return
    if out.exists() and any(p.name != WORK_DIR for p in out.iterdir()):
        raise BuildError(out, "output folder is not empty and holds no run_config.json", hint="use a new --out folder")
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(config_path, plan.run_config())


def _remove_temporaries(out: Path) -> None:
    for stale in out.rglob(f".*{TMP_SUFFIX}"):  # half-written files of a killed run
        stale.unlink()


def _start_remote(remote: RemoteOut, text: str) -> None:
    """``run_config.json`` at the URL: write it, or check that the URL holds the same build."""
    existing = remote.read_bytes(RUN_CONFIG_NAME)
    if existing is not None:
        if existing != text.encode("utf-8"):
            raise BuildError(
                remote.location(RUN_CONFIG_NAME),
                "this URL holds a different build (inputs, tokenizer or options differ)",
                hint="use a new --out URL, or delete this one",
            )
        return
    if any(name != WORK_DIR for name in remote.names()):
        raise BuildError(remote.url, "output URL is not empty and holds no run_config.json", hint="use a new --out URL")
    remote.write_bytes(RUN_CONFIG_NAME, text.encode("utf-8"))


# ---------------------------------------------------------------- one part


def staging_path(plan: BuildPlan, part: str) -> Path:
    """The llm.c staging pair of a part: its bare ids and document lengths."""
    return local_root(plan) / staging_rel(part, "bin")


def staging_rel(part: str, suffix: str) -> str:
    """``.work/llmc/<part>.<suffix>``, relative to the release root: the staging pair (bin, idx) and, at a URL, its digests (json)."""
    return f"{WORK_DIR}/llmc/{part}.{suffix}"


def build_part(plan: BuildPlan, index: int, progress: bool = True) -> tuple[Receipt, bool]:
    """Encode input shard ``index`` and write its outputs and receipt; skip it if already done.

    Returns the receipt and whether the part was built (False: skipped).
    """
    part = part_name(index)
    done = finished_receipt(plan, index)
    if done is not None:
        return done, False
    if plan.encoder is None:
        plan = prepare_encoder(plan)
    shard = plan.corpus.shards[index]
    shard_path = Path(plan.corpus_root) / shard.path
    _check_shard(shard, shard_path)
    out = local_root(plan)
    split = shard.split
    writers = []
    if "megatron" in plan.formats:
        writers.append(megatron.MegatronWriter(out / pair_path(split, part, "bin"), plan.tokenizer.vocab_size, plan.eod_id))
    if "llmc" in plan.formats:
        writers.append(megatron.MegatronWriter(staging_path(plan, part), plan.tokenizer.vocab_size, None))
    documents = text_tokens = text_bytes = 0
    try:
        for flat, lengths, n_bytes in encode_shard(plan, index, progress):
            if "llmc" in plan.formats:
                _check_fits_llmc_file(plan, shard_path, lengths, documents)
            for writer in writers:
                writer.add_documents(flat, lengths)
            documents += int(lengths.size)
            text_tokens += int(flat.size)
            text_bytes += n_bytes
        # Before close() renames anything: a part that lost documents leaves no file under a final name.
        if documents != shard.rows:
            raise BuildError(shard_path, "documents out must equal rows in (nothing lost)", expected=shard.rows, got=documents)
        pairs = [writer.close() for writer in writers]
    except BaseException:
        for writer in writers:
            writer.abort()
        raise
    _check_conserved_on_disk(writers, pairs, text_tokens, documents)
    files = []
    if "megatron" in plan.formats:
        pair = pairs[0]
        if documents == 0:  # a split with no documents has no pair
            pair.bin_path.unlink()
            pair.idx_path.unlink()
        else:
            files = [
                FileEntry(pair_path(split, part, "bin"), pair.bin_size, pair.bin_sha256),
                FileEntry(pair_path(split, part, "idx"), pair.idx_size, pair.idx_sha256),
            ]
    eod_tokens = documents if "megatron" in plan.formats else 0
    receipt = Receipt(
        part=part,
        input_shard=FileEntry(shard.path, shard.size, shard.sha256),
        splits={split: SplitCounts(documents, text_tokens, eod_tokens, text_bytes)},
        files=tuple(files),
    )
    receipt.write(out)
    remote = remote_out(plan)
    if remote is not None:
        publish_part(plan, remote, receipt)
    return receipt, True


def _check_shard(shard: CorpusShard, path: Path) -> None:
    """The shard must be the bytes the corpus manifest (and so run_config.json) pins."""
    size = path.stat().st_size
    if size != shard.size or sha256_file(path) != shard.sha256:
        raise BuildError(path, "corpus shard differs from its _MANIFEST.json entry (size or SHA-256)", expected=shard.sha256, got=f"{size} bytes")


def _check_fits_llmc_file(plan: BuildPlan, shard_path: Path, lengths: np.ndarray, first_document: int) -> None:
    """A document that no llm.c file can hold (with its separator) fails its part now, not the finish."""
    sep = 0 if plan.tokenizer.doc_sep_id is None else 1
    if not lengths.size or int(lengths.max()) + sep <= plan.max_tokens_per_file:
        return
    i = int(np.argmax(lengths + sep > plan.max_tokens_per_file))
    raise BuildError(
        shard_path,
        f"document {first_document + i} of this shard is longer than one llm.c file may hold",
        expected=f"<= {plan.max_tokens_per_file} tokens with its separator",
        got=int(lengths[i]) + sep,
        hint="files hold whole documents; raise --max-tokens-per-file",
    )


def _check_conserved_on_disk(writers: list[megatron.MegatronWriter], pairs: list[megatron.PairFiles], text_tokens: int, documents: int) -> None:
    """Each ``.bin`` on disk must hold the tokens encoded, plus one EOD per document where the writer appends it.

    The sizes are the files' own (not the writers' counters), so a short write
    is caught; on failure the pairs are removed, leaving no file under a final name.
    """
    for writer, pair in zip(writers, pairs):
        expected = text_tokens + (documents if writer.eod_id is not None else 0)
        on_disk = pair.bin_size // writer.dtype.itemsize
        if on_disk != expected:
            for written in pairs:
                written.bin_path.unlink(missing_ok=True)
                written.idx_path.unlink(missing_ok=True)
            raise BuildError(pair.bin_path, "tokens on disk must equal tokens encoded (token conservation)", expected=expected, got=on_disk)


def finished_receipt(plan: BuildPlan, index: int) -> Receipt | None:
    """The part's receipt if the part is finished and intact, else None (build it again).

    At a URL the part is finished if it is intact there, or intact in this
    machine's scratch folder (a task killed while publishing): then it is
    published again.
    """
    remote = remote_out(plan)
    if remote is None:
        return _finished_locally(plan, index)
    receipt = _finished_remotely(plan, remote, index)
    if receipt is None:
        receipt = _finished_locally(plan, index)
        if receipt is not None:
            publish_part(plan, remote, receipt)
    return receipt


def _finished_locally(plan: BuildPlan, index: int) -> Receipt | None:
    part = part_name(index)
    path = local_root(plan) / receipt_path(part)
    if not path.exists():
        return None
    try:
        receipt = Receipt.read(path)
    except FormatError:
        return None
    shard = plan.corpus.shards[index]
    if receipt.input_shard != FileEntry(shard.path, shard.size, shard.sha256):
        return None
    for entry in receipt.files:
        if not _local_matches(local_root(plan) / entry.path, entry):
            return None
    if "llmc" in plan.formats:
        counts = receipt.splits[shard.split]
        try:
            staging = megatron.MegatronPair(staging_path(plan, part))
        except (FormatError, OSError):
            return None
        if len(staging) != counts.documents or staging.n_tokens != counts.text_tokens:
            return None
    return receipt


def _finished_remotely(plan: BuildPlan, remote: RemoteOut, index: int) -> Receipt | None:
    """The part's receipt at the URL if every file it names (and the staging pair) is there with its size and SHA-256."""
    part = part_name(index)
    try:
        receipt = remote.read_record(receipt_path(part), Receipt.read)
        staging = _remote_staging_entries(remote, part) if receipt is not None and "llmc" in plan.formats else []
    except FormatError:
        return None
    shard = plan.corpus.shards[index]
    if receipt is None or staging is None or receipt.input_shard != FileEntry(shard.path, shard.size, shard.sha256):
        return None
    if not all(remote.matches(entry) for entry in (*receipt.files, *staging)):
        return None
    return receipt


def _remote_staging_entries(remote: RemoteOut, part: str) -> list[FileEntry] | None:
    """The staging pair's entries recorded at the URL, or None if the record is missing."""
    rel = staging_rel(part, "json")
    data = remote.read_bytes(rel)
    if data is None:
        return None
    try:
        files = json.loads(data.decode("utf-8"))["files"]
        return [FileEntry.from_dict(f, remote.location(rel), f"files[{i}]") for i, f in enumerate(files)]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
        raise FormatError(remote.location(rel), "staging record is not valid", got=str(e)) from None


def publish_part(plan: BuildPlan, remote: RemoteOut, receipt: Receipt) -> None:
    """Upload a part's files from the scratch folder (pair, staging pair, staging digests, the receipt last), then delete them there."""
    root = local_root(plan)
    staging = []
    if "llmc" in plan.formats:
        for suffix in ("bin", "idx"):
            rel = staging_rel(receipt.part, suffix)
            staging.append(FileEntry(rel, (root / rel).stat().st_size, sha256_file(root / rel)))
    for entry in (*receipt.files, *staging):
        remote.upload(root / entry.path, entry.path)
    if staging:
        remote.write_bytes(staging_rel(receipt.part, "json"), canonical_json({"files": [e.to_dict() for e in staging]}).encode("utf-8"))
    remote.upload(root / receipt_path(receipt.part), receipt_path(receipt.part))
    # Published: a machine's scratch folder holds one part at a time; the finish fetches what it reads.
    for rel in (*(e.path for e in receipt.files), *(e.path for e in staging), receipt_path(receipt.part)):
        (root / rel).unlink(missing_ok=True)


# ---------------------------------------------------------------- encoding


class EncodeBatch:
    """The ``Dataset.map`` function: a table of texts in, a table of id lists out.

    It pickles to worker processes as the encoder's state (the tokenizer's JSON
    and the fast-path decision); each process loads its engine once.
    """

    def __init__(self, encoder, vocab_size: int, source: str | None = None):
        self.encoder = encoder
        self.vocab_size = vocab_size
        self.source = source  # the shard, for the error message
        self.dtype = np.uint16 if vocab_size <= 65536 else np.uint32

    def __call__(self, table):
        import pyarrow as pa

        flat, lengths = self.encoder.encode_batch(table.column("text").to_pylist())
        # Before the narrowing cast: an id the width cannot hold would wrap silently.
        if flat.size and int(flat.max()) >= self.vocab_size:
            raise BuildError(self.source, "the encoder produced an id outside the tokenizer's vocabulary", expected=f"ids < {self.vocab_size}", got=int(flat.max()))
        offsets = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        ids = pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(np.asarray(flat, dtype=self.dtype)))
        return pa.table({"ids": ids})


SAMPLE_DOCS_PER_SHARD = 64
SAMPLE_DOCS = 2048


def sample_documents(plan: BuildPlan) -> list[str]:
    """The first documents of every shard: what the fast path must reproduce before it is used."""
    import pyarrow.parquet as pq

    sample = []
    for shard in plan.corpus.shards:
        if not shard.rows or len(sample) >= SAMPLE_DOCS:
            continue
        path = Path(plan.corpus_root) / shard.path
        try:
            with pq.ParquetFile(path) as file:
                batch = next(file.iter_batches(batch_size=SAMPLE_DOCS_PER_SHARD, columns=["text"]))
        except (OSError, ValueError, StopIteration) as e:  # pyarrow's errors derive from these
            raise BuildError(path, "corpus shard is not readable Parquet with a text column", got=str(e).splitlines()[0][:200]) from e
        sample.extend(batch.column(0).to_pylist())
    return sample[:SAMPLE_DOCS]


def prepare_encoder(plan: BuildPlan) -> BuildPlan:
    """Load the encoder once and check its fast path on a sample of the corpus."""
    from .encoder import encoder_for

    encoder = encoder_for(plan.tokenizer.path, plan.fast)
    encoder.check_fast_path(sample_documents(plan))
    return dataclasses.replace(plan, encoder=encoder)


@contextlib.contextmanager
def datasets_progress(enabled: bool):
    """Show or hide the progress bars of ``datasets`` for a while, then restore the setting."""
    import datasets

    before = datasets.is_progress_bar_enabled()
    (datasets.enable_progress_bars if enabled else datasets.disable_progress_bars)()
    try:
        yield
    finally:
        (datasets.enable_progress_bars if before else datasets.disable_progress_bars)()


def encode_shard(plan: BuildPlan, index: int, progress: bool = True):
    """Yield (flat ids, lengths, text bytes) for the documents of input shard ``index`` in order, encoded once with Dataset.map."""
    import datasets
    import pyarrow.compute as pc

    shard = plan.corpus.shards[index]
    if shard.rows == 0:
        return  # datasets cannot read an empty Parquet file (batch size 0); nothing to encode
    shard_path = Path(plan.corpus_root) / shard.path
    part = part_name(index)
    work = local_root(plan) / WORK_DIR / "datasets" / part
    if work.exists():
        shutil.rmtree(work)  # leftovers of a killed run: this part starts over
    work.mkdir(parents=True)
    try:
        with datasets_progress(False):  # converting the shard is quick; the encoding bar is the one to watch
            texts = datasets.Dataset.from_parquet(os.fspath(shard_path), columns=["text"], cache_dir=os.fspath(work / "cache"))
        fingerprint = hashlib.sha256(f"{shard.sha256}:{plan.tokenizer.sha256}".encode()).hexdigest()[:32]
        with datasets_progress(progress):
            encoded = texts.with_format("arrow").map(
                EncodeBatch(plan.encoder, plan.tokenizer.vocab_size, os.fspath(shard_path)),
                batched=True,
                batch_size=plan.batch_size,
                num_proc=plan.num_proc if plan.num_proc > 1 and len(texts) > 1 else None,
                remove_columns=["text"],
                cache_file_name=os.fspath(work / "encoded.arrow"),
                load_from_cache_file=False,
                new_fingerprint=fingerprint,
                desc=f"encoding {part}",
            )
        text_column = texts.data.column("text")
        first = 0
        for batch in encoded.data.to_batches():
            ids = batch.column(0)
            offsets = ids.offsets.to_numpy()
            flat = ids.values.to_numpy()[offsets[0] : offsets[-1]]
            n_bytes = pc.sum(pc.binary_length(text_column.slice(first, len(ids)))).as_py() or 0
            first += len(ids)
            yield flat, np.diff(offsets), n_bytes
        del encoded, texts
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------- finish


def finish_build(plan: BuildPlan, receipts: list[Receipt]) -> tuple[dict[str, SplitCounts], int]:
    """Pack llm.c files, write stats.json, the card and, last, COMPLETE.json (at a URL: publish them)."""
    out = local_root(plan)
    remote = remote_out(plan)
    if remote is not None:
        _fetch_parts(plan, remote, receipts)
    counts = _split_totals(plan, receipts)
    # Digests computed as the big files were written; COMPLETE.json need not hash them again.
    known = {f.path: f for r in receipts for f in r.files}
    if "llmc" in plan.formats:
        known.update((f.path, f) for f in _write_llmc(plan, counts))
    write_json_atomic(out / STATS_NAME, stats_record(plan.corpus.name, plan.tokenizer.tokenizer_id, receipts))
    _write_card(out)
    files = _list_release_files(out, known)
    if remote is not None:
        # Pairs built on other machines are at the URL only; their receipts name them.
        files = sorted({**{f.path: f for f in files}, **{f.path: f for r in receipts for f in r.files}}.values(), key=lambda f: f.path)
    complete = Complete(tuple(files))
    if remote is not None:
        _publish_finish(remote, out, complete)
        shutil.rmtree(out, ignore_errors=True)
        return counts, len(complete.files) + 1
    complete.write(out)
    shutil.rmtree(out / WORK_DIR, ignore_errors=True)
    return counts, len(complete.files) + 1


def _fetch_parts(plan: BuildPlan, remote: RemoteOut, receipts: list[Receipt]) -> None:
    """Bring what the finish reads into the scratch folder: every receipt and staging pair, and the Megatron ``.idx`` files (the card reads one's header)."""
    out = local_root(plan)
    for receipt in receipts:
        receipt.write(out)  # canonical JSON: the same bytes as the published receipt
        needed = [f for f in receipt.files if f.path.endswith(".idx")]
        if "llmc" in plan.formats:
            staging = _remote_staging_entries(remote, receipt.part)
            if staging is None:
                raise BuildError(remote.location(staging_rel(receipt.part, "json")), "staging record of a finished part is missing", hint="run the build again")
            needed.extend(staging)
        for entry in needed:
            local = out / entry.path
            if _local_matches(local, entry):
                continue
            remote.download(entry.path, local)
            if not _local_matches(local, entry):
                raise BuildError(remote.location(entry.path), "file must match its recorded size and SHA-256", expected=entry.sha256, got=f"{local.stat().st_size} bytes", hint="run the build again")


def _local_matches(path: Path, entry: FileEntry) -> bool:
    return path.is_file() and path.stat().st_size == entry.size and sha256_file(path) == entry.sha256


def _publish_finish(remote: RemoteOut, out: Path, complete: Complete) -> None:
    """Upload the finish's files, COMPLETE.json last, then remove the remote ``.work/``."""
    for entry in complete.files:
        if entry.path.startswith(f"{TOKENS_DIR}/") or entry.path in (STATS_NAME, CARD_NAME):
            remote.upload(out / entry.path, entry.path)
    remote.write_bytes(COMPLETE_NAME, complete.to_json().encode("utf-8"))
    remote.remove_tree(WORK_DIR)


def _split_totals(plan: BuildPlan, receipts: list[Receipt]) -> dict[str, SplitCounts]:
    """The receipts' counts per split, checked against the corpus rows (nothing lost)."""
    totals = split_totals(receipts)
    for split in SPLITS:
        rows, documents = plan.corpus.rows(split), totals[split].documents if split in totals else 0
        if documents != rows:
            raise BuildError(plan.out, f"{split}: documents out must equal corpus rows (nothing lost)", expected=rows, got=documents)
    return totals


def _write_llmc(plan: BuildPlan, counts: dict[str, SplitCounts]) -> list[FileEntry]:
    """Pack the llm.c token files and their manifest; return the token files as release entries."""
    out = local_root(plan)
    directory = out / plan.llmc_dir
    if directory.exists():
        shutil.rmtree(directory)  # a killed finish: pack again from the staging pairs
    entries = []
    for split in SPLITS:
        shards = [(i, s) for i, s in enumerate(plan.corpus.shards) if s.split == split and s.rows]
        if not shards:
            continue
        writer = LLMC_WRITERS[plan.llmc_variant](directory, LLMC_SPLIT[split], plan.tokenizer.vocab_size, plan.tokenizer.doc_sep_id, plan.max_tokens_per_file)
        with writer:
            for i, _ in shards:
                staging = megatron.MegatronPair(staging_path(plan, part_name(i)))
                _feed_staging(writer, staging)
        files = writer.close()
        sep = 0 if plan.tokenizer.doc_sep_id is None else 1
        c = counts[split]
        written = sum(f.n_tokens for f in files)
        if sum(f.n_docs for f in files) != c.documents or written != c.text_tokens + sep * c.documents:
            raise BuildError(directory, f"{split}: llm.c tokens must equal tokens encoded (token conservation)", expected=c.text_tokens + sep * c.documents, got=written)
        entries.extend(files)
    manifest = llmc.TokensManifest(
        tokenizer_id=plan.tokenizer.tokenizer_id,
        tokenizer_sha256=plan.tokenizer.sha256,
        vocab_size=plan.tokenizer.vocab_size,
        doc_sep_id=plan.tokenizer.doc_sep_id,
        dataset=plan.corpus.name,
        version=plan.release_version,
        corpus_manifest_sha256=plan.corpus_manifest_sha256,
        files=tuple(entries),
    )
    manifest.write(directory)
    return [FileEntry(f"{plan.llmc_dir}/{f.name}", (directory / f.name).stat().st_size, f.sha256) for f in entries]


_FEED_DOCS = 1 << 16  # documents handed to the llm.c writer per step


def _feed_staging(writer: llmc.LlmcWriter, staging: megatron.MegatronPair) -> None:
    lengths = staging.lengths
    starts = staging.pointers
    item = staging.dtype.itemsize
    for first in range(0, len(staging), _FEED_DOCS):
        chunk = np.asarray(lengths[first : first + _FEED_DOCS], dtype=np.int64)
        begin = int(starts[first]) // item
        end = begin + int(chunk.sum())
        writer.add_documents(staging.tokens[begin:end], chunk)


def _write_card(out: Path) -> None:
    """The dataset card README.md, from dataset_card/ via the card module."""
    from .card import render_release_card

    write_text_atomic(out / CARD_NAME, render_release_card(out))


def _list_release_files(out: Path, known: dict[str, FileEntry]) -> list[FileEntry]:
    """Every file of the release but COMPLETE.json; ``known`` digests are reused when the size agrees."""
    entries = []
    for rel in list_release_paths(out):
        size = (out / rel).stat().st_size
        entry = known.get(rel)
        entries.append(entry if entry is not None and entry.size == size else FileEntry(rel, size, sha256_file(out / rel)))
    return entries


# ---------------------------------------------------------------- the whole job


def build(plan: BuildPlan, engine: str = "local", ray_address: str | None = None, progress: bool = True) -> BuildSummary:
    """Run every part (skipping finished ones), then the finish. Returns a summary."""
    from tqdm.auto import tqdm

    started = time.perf_counter()
    out = local_root(plan)
    remote = remote_out(plan)
    if engine not in ("local", "ray"):
        raise BuildError(None, "engine must be local or ray", got=engine)
    if engine == "ray" and remote is not None and plan.out.startswith("memory://"):
        raise BuildError(plan.out, "--engine ray needs an --out every node can write", expected="a shared folder or a URL such as s3://, gs://, file://", got="memory:// (one process's memory)")
    if _has_complete(plan):
        start_release(plan)  # same build? (raises if not); removes stale temporaries
        # A build killed after COMPLETE.json, before its own clean-up, left the scratch folder: verify would reject it.
        if remote is not None:
            remote.remove_tree(WORK_DIR)
            shutil.rmtree(out, ignore_errors=True)
        else:
            shutil.rmtree(out / WORK_DIR, ignore_errors=True)
        receipts = [_read_receipt(plan, part_name(i)) for i in range(len(plan.corpus.shards))]
        counts = _split_totals(plan, receipts)
        complete = _read_complete(plan)
        return _summary(plan, counts, len(complete.files) + 1, started, 0, len(receipts))
    if engine == "ray":
        from .engine_ray import check_reachable

        check_reachable(ray_address)  # before the first byte is written
    start_release(plan)
    plan = prepare_encoder(plan)
    indices = list(range(len(plan.corpus.shards)))
    if engine == "local":
        results = []
        for i in tqdm(indices, desc="parts", unit="part", disable=not progress or len(indices) < 2):
            results.append(build_part(plan, i, progress))
    else:
        from .engine_ray import run_parts

        # One process per task (Ray spreads the tasks); per-part bars would only be noise from every worker.
        task = functools.partial(build_part, progress=False)
        results = run_parts(task, dataclasses.replace(plan, num_proc=1), indices, address=ray_address, progress=progress)
    receipts = [r for r, _ in results]
    built = sum(1 for _, b in results if b)
    counts, n_files = finish_build(plan, receipts)
    return _summary(plan, counts, n_files, started, built, len(results) - built)


def _has_complete(plan: BuildPlan) -> bool:
    """Whether the release (in the folder, or at the URL) has its COMPLETE.json."""
    remote = remote_out(plan)
    if remote is not None:
        return remote.read_bytes(COMPLETE_NAME) is not None
    return (Path(plan.out) / COMPLETE_NAME).exists()


def _read_complete(plan: BuildPlan) -> Complete:
    """The release's COMPLETE.json, in the folder or at the URL."""
    remote = remote_out(plan)
    if remote is None:
        return Complete.read(plan.out)
    complete = remote.read_record(COMPLETE_NAME, Complete.read)
    if complete is None:
        raise FormatError(remote.location(COMPLETE_NAME), "file is missing")
    return complete


def _read_receipt(plan: BuildPlan, part: str) -> Receipt:
    remote = remote_out(plan)
    if remote is None:
        return Receipt.read(Path(plan.out) / receipt_path(part))
    receipt = remote.read_record(receipt_path(part), Receipt.read)
    if receipt is None:
        raise FormatError(remote.location(receipt_path(part)), "file is missing")
    return receipt


def _summary(plan: BuildPlan, counts, n_files: int, started: float, built: int, skipped: int) -> BuildSummary:
    complete = _read_complete(plan)
    total = sum(f.size for f in complete.files)
    engine = plan.encoder.engine if plan.encoder is not None else "none (nothing to encode)"
    return BuildSummary(plan.out, counts, n_files, total, time.perf_counter() - started, built, skipped, engine)
