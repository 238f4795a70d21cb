"""``hf-tokbin verify --for TARGET``: what each real loader would trip on.

A file can follow our format to the byte and still stop a trainer: llm.c's
loader takes only uint16, modded-nanogpt hard-codes its BOS id, MaxText reads
every ``*.idx`` in a folder in string order. Each target below lists the rules
of that loader as its source has them (file and function named), checked
against a release folder, an llm.c token folder, one token file, or a folder of
Megatron pairs. Every file is first opened with our own validating readers
(:mod:`hf_tokbin.readers`); a broken file is an ``error`` finding ("format").

A :class:`Finding` is ``(level, file, rule, message)``; ``error`` means the loader
as published stops or silently reads wrong data, ``warning`` that it runs but
loses or misplaces something (or needs a setting), ``info`` a figure or
setting worth knowing. The command exits 1 if any finding is an error.

Loader settings (:class:`LoaderSettings`): ``batch_size`` B and ``seq_len`` T
default to 4 and 1024, ``train_gpt2.cu``'s defaults (``int B = 4; int T =
1024;``); ``world_size`` (processes reading the same files) defaults to 1. For
modded-nanogpt, T stands for ``train_max_seq_len``; for Megatron,
``--seq-length``; for MaxText, ``max_target_length``; for nanoGPT,
``block_size``.

Targets and rules
-----------------

``llmc`` -- llm.c's C loader (``llmc/dataloader.h``) and ``train_gpt2.py``:

- magic-version (error): ``dataloader_load_shard_`` exits unless header[0] is
  20240520 and header[1] is 1; ``train_gpt2.py`` ``_peek_data_shard`` asserts
  the same. Only uint16 files (vocabularies <= 65,536) load.
- empty-file (error): ``dataloader_load_shard_`` asserts ``ntok > 0``.
- min-tokens (error), capacity (info): ``dataloader_init`` asserts
  ``shard_ntok >= num_processes * B * T + 1`` for every file, as does
  ``train_gpt2.py`` ``DistributedDataLoader.__init__``; the info line gives the
  largest B*T each file supports, ``(ntok - 1) // world_size``.
- seek-offset (error): ``dataloader_load_batch`` seeks with
  ``fseekCheck(file, (int) current_offset, SEEK_SET)``, and ``fseek_check``
  (``llmc/utils.h``) takes a ``long`` (32 bits on Windows). A batch starting at
  byte 2**31 or beyond wraps; with uint16 ids that is a file past about 1.07
  billion tokens (our writer rolls over at 100 million).
- seq-len (error): ``train_gpt2.py`` asserts ``1 <= T <= 1024``.
- gpt2-vocab (warning): llm.c's models but a ``.bin`` checkpoint (``-e d12``,
  ``--model d12``, ``gpt2``) are GPT-2 with ``vocab_size=50257``
  (``train_gpt2.py`` ``GPTConfig``, ``train_gpt2.cu``
  ``gpt2_build_from_descriptor``); larger ids index past the embedding, and
  ``train_gpt2.cu`` does not check them. ``hf-tokbin recipe --for llmc``
  prints no line then, but for ``--init-from`` a ``.bin`` checkpoint.
- file-order (warning): the loaders read ``glob`` order (C ``glob``, sorted;
  Python ``sorted(glob.glob(...))``), which must be the manifest's order.
- no-val (warning): ``train_gpt2.cu`` globs the validation pattern too and
  ``dataloader_init`` exits when nothing matches.

``modded-nanogpt`` -- ``train_gpt.py`` (``_load_data_shard``, ``Shard``,
``distributed_data_generator``):

- magic-version (error): ``_load_data_shard`` asserts 20240520 and version 1.
- bos-id (error): ``BOS_ID = 50256`` is hard-coded; the release's separator
  (manifest ``doc_sep_id``) must be 50256, or no window is ever aligned.
- no-bos (error): ``Shard.next_batch`` starts every sequence at a BOS position;
  a file without one raises ``StopIteration`` at once and is skipped whole.
- bos-first (warning): tokens before a file's first BOS are never read.
- long-docs (warning): ``Shard.next_batch`` ends a sequence at
  ``cur + max_seq_len``; the rest of a longer document is never trained on.
- vocab (error): the model is built with ``GPT(vocab_size=50257, ...)``.
- single-file (error): with ``align_to_bos`` (the train loader's default),
  ``distributed_data_generator`` preloads the next shard with
  ``next(file_iter)`` right after the first; one train file raises
  ``StopIteration`` inside the generator (a ``RuntimeError``).
- file-order (warning): ``sorted(glob.glob(filename_pattern))``.
- documents-per-micro-batch (error): ``distributed_data_generator`` copies a
  micro-batch's document starts into ``TRAIN_MAX_NUM_DOCS[num_tokens_local]`` slots.
- val-tokens (error, warning), val-documents-per-micro-batch (error): the val
  loader (``align_to_bos=False``) needs a file holding one val micro-batch, and
  as many slots as its micro-batches hold documents
  (``TRAIN_MAX_NUM_DOCS.get(n, next_multiple_of_n(n // 300, n=128))``).

``llmc-llama3`` -- ``train_llama3.py`` (``_peek_data_shard``,
``_load_data_shard``, ``DistributedShardedDataLoader``):

- magic-version (error): magic 20240801 and version 7 (uint32), the layout of
  :mod:`hf_tokbin.formats.llmc` (``--llmc-layout llama3``); seed-000 files are refused.
- min-tokens (error), capacity (info): ``shard_ntok >= num_processes * B * T + 1``.
- seq-len (error): ``assert 1 <= T <= 8192``.
- vocab (warning): ``LlamaConfig.vocab_size = 128256``.
- begin-of-text (warning): llm.c's own Llama 3 data (``dev/data/fineweb.py``
  ``tokenize_llama``) begins every document with ``<|begin_of_text|>`` 128000
  and has no EOS; ``build --llmc-layout llama3`` writes that by default.
- file-order (warning): ``sorted(glob.glob(...))``.

``megatron`` -- megatron-core ``datasets/indexed_dataset.py`` and
``datasets/gpt_dataset.py``:

- format (error): ``_IndexReader`` asserts the ``MMIDIDX`` magic and version 1.
- one-document-per-sequence (error): with the EOD id known (``run_config.json``
  ``doc_sep`` or ``--eod-id``), every sequence must end with it, or
  ``GPTDatasetConfig``'s ``reset_position_ids``, ``reset_attention_mask`` and
  ``eod_mask_loss`` (``_get_ltor_masks_and_position_ids``) find no boundaries.
- eod (info): the tokenizer's ``eod`` that ``GPTDatasetConfig.tokenizer`` must have.
- empty-pair (error): ``GPTDataset._get_num_epochs`` adds the pair's tokens
  per epoch until the requested count is reached, which never happens with 0.
- short-pair (warning): fewer than T + 1 tokens gives no full sample per epoch
  (``(tokens - add_extra_token_to_sequence) // sequence_length`` in
  ``_build_document_sample_shuffle_indices``); Megatron repeats it for epochs.
- dtype-cutoff (warning): ``DType.optimal_dtype`` picks uint16 only below
  65,500, our contract up to 65,536; a vocabulary in 65,500..65,536 is read
  fine from our uint16 files (the dtype code is in the ``.idx``), but Megatron's
  own ``preprocess_data.py`` would write int32: bytes differ from its output.

``maxtext`` -- MaxText's Grain ``mmap``/``mmap_npy`` file types
(``src/maxtext/input_pipeline/_mmap_datasource.py``, ``_mmap_index_utils.py``):

- format (error): ``MMapIndexedDataset._read_index`` (magic, version, sizes,
  no multimodal ``sequence_modes``).
- one-document-per-sequence (error): ``mmap_split_sentences=false`` requires
  documents == sequences (``MegatronNpyDataSource._check_split_sentences_consistency``),
  and sequences must end with ``mmap_eod_id`` (``check_eod_presence``:
  "MaxText does not insert EOD tokens").
- eod (info): the ``mmap_eod_id=`` to set.
- file-order (warning), stray-idx (warning): a shard directory is read as
  ``sorted(glob(dir/*.idx))`` (``resolve_shard_prefixes``), string order, every
  ``.idx`` in it.
- path-chars (warning): ``grain_train_files`` uses ``|``, ``:``, ``;`` and ``,``
  as separators (``<npy_index_dir>|<prefix>[:<prefix>...]``, ``prefix,weight;...``).
- no-samples (error): ``mmap`` mode has ``total_tokens // seq_length`` samples
  (``MMapSampleIndexDataSource``); a split below T tokens has none.

``nanogpt`` -- nanoGPT's ``train.py`` ``get_batch`` with the memmap lines that
``hf-tokbin recipe --for nanogpt`` prints (``np.memmap(FILE, dtype, offset=1024)``,
one file per batch, chosen in proportion to its tokens):

- dtype (info): the ``np.memmap`` dtype the file's header calls for (train.py
  hard-codes ``np.uint16`` and no header, so the printed lines replace it).
- min-tokens (error): ``torch.randint(len(data) - block_size, ...)`` needs more
  than T (``block_size``) tokens in every file.
- vocab (info from scratch, error fine-tuning GPT-2): without
  ``data_dir/meta.pkl`` a from-scratch model has ``vocab_size=50304``, so a
  larger vocabulary needs ``meta.pkl`` with its size (the recipe's lines write
  one); ``init_from='gpt2*'`` loads OpenAI's GPT-2, ``vocab_size=50257``.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from ..errors import FormatError
from ..formats import llmc, megatron
from ..formats.release import PARTIAL_NAME, RUN_CONFIG_NAME, SHARDS_DIR, SPLITS
from ..formats.rules import UINT16_VOCAB_LIMIT
from ..formats.run_config import RunConfig
from ..formats.sniff import sniff
from ..readers.views import find_llmc_folder, find_megatron_pairs, scan_positions

ERROR, WARNING, INFO = "error", "warning", "info"
INT32_MAX = 2**31 - 1
GPT2_VOCAB = 50257  # llm.c train_gpt2.py GPTConfig, modded-nanogpt GPT(vocab_size=50257)
MODDED_NANOGPT_BOS = 50256  # modded-nanogpt train_gpt.py BOS_ID
# train_gpt.py TRAINING_STAGES: tokens per process per micro-batch (batch_size / 8, whatever the world size:
# grad_accum_steps = 8 // world_size), train_max_seq_len, and TRAIN_MAX_NUM_DOCS[tokens] (documents per micro-batch + 1).
MODDED_NANOGPT_STAGES = ((16384, 896, 64), (32768, 2048, 96), (49152, 2048, 128))
MODDED_NANOGPT_VAL_BATCH = 4 * 64 * 1024 * 8  # train_gpt.py Hyperparameters.val_batch_size
MODDED_NANOGPT_VAL_TOKENS = 10485760  # train_gpt.py Hyperparameters.val_tokens
LLAMA3_BEGIN_OF_TEXT = 128000  # <|begin_of_text|>: llm.c's dev/data Llama 3 files put it before each document
LLAMA3_VOCAB = 128256  # llm.c train_llama3.py LlamaConfig.vocab_size
MEGATRON_UINT16_BELOW = 65500  # megatron-core DType.optimal_dtype
GRAIN_SEPARATORS = "|:;,"  # MaxText grain_train_files syntax
NANOGPT_VOCAB = 50304  # nanoGPT train.py: "defaulting to vocab_size of GPT-2 to 50304" without meta.pkl


@dataclass(frozen=True)
class Finding:
    level: str
    file: str
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.level}: {self.file}: {self.rule}: {self.message}"


EOD_LOSS_POLICIES = ("train", "mask")  # recipe --eod-loss: the loss at EOD positions is trained on, or masked


@dataclass(frozen=True)
class LoaderSettings:
    """How the trainer reads a release, for ``verify --for`` and ``recipe``.

    Args:
        batch_size: micro-batch size B per process.
        seq_len: sequence length T.
        world_size: processes (GPUs) reading the same files.
        eod_id: the EOD id (default: ``run_config.json``'s).
        epochs: passes over the whole train split a recipe's step count covers.
        eod_loss: ``"train"`` (the loss counts the EOD token, as every llm.c-family
            trainer does: none of them can mask it) or ``"mask"`` (Megatron's
            ``--eod-mask-loss``, MaxText's ``eod_mask_loss``; an error for the
            trainers without such a switch).
        init_from: a pretrained model to fine-tune (llm.c ``-e``/``--model``,
            nanoGPT ``init_from``); None trains from scratch.
    """

    batch_size: int = 4
    seq_len: int = 1024
    world_size: int = 1
    eod_id: int | None = None
    epochs: int = 1
    eod_loss: str = "train"
    init_from: str | None = None

    def __post_init__(self):
        for name in ("batch_size", "seq_len", "world_size", "epochs"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise FormatError(None, f"{name} must be a positive integer", got=value)
        if self.eod_id is not None and (not isinstance(self.eod_id, int) or self.eod_id < 0):
            raise FormatError(None, "eod_id must be a non-negative integer", got=self.eod_id)
        if self.eod_loss not in EOD_LOSS_POLICIES:
            raise FormatError(None, "eod_loss must be one of " + ", ".join(EOD_LOSS_POLICIES), got=self.eod_loss)
        if self.init_from is not None and not (isinstance(self.init_from, str) and re.fullmatch(r"[A-Za-z0-9._/:-]+", self.init_from)):
            raise FormatError(None, "init_from must be a model name (letters, digits, . _ / : -)", got=self.init_from)


def check(path: str | os.PathLike, target: str, settings: LoaderSettings = LoaderSettings()) -> list[Finding]:
    """Every finding of ``target``'s rules for ``path``, in file order."""
    if target not in TARGETS:
        raise FormatError(None, "unknown target", expected=", ".join(TARGETS), got=target)
    path = Path(path)
    if not path.exists():
        raise FormatError(path, "no such file or folder")
    return TARGETS[target](path, settings)


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(f.level == ERROR for f in findings)


# ------------------------------------------------------------------ inputs


@dataclass(frozen=True)
class _LlmcInputs:
    """Files per split (manifest order), or one lone file under split None."""

    splits: list[tuple[str | None, list[Path]]]
    manifest: llmc.TokensManifest | None
    manifest_path: Path | None


def _llmc_inputs(path: Path) -> _LlmcInputs:
    if path.is_file():
        sniff(path)  # a file that is no token file (a .txt) is named as such, before its bytes are read as a header
        return _LlmcInputs([(None, [path])], None, None)
    folder = find_llmc_folder(path)
    manifest_path = folder / llmc.MANIFEST_NAME
    manifest = llmc.TokensManifest.read(manifest_path)
    splits = [(s, [folder / f.name for f in manifest.files if f.split == s]) for s in llmc.SPLITS]
    if (path / PARTIAL_NAME).is_file():  # a copy from pull --include: the files it holds (hf-tokbin verify checked them)
        splits = [(s, [f for f in files if f.is_file()]) for s, files in splits]
    return _LlmcInputs(splits, manifest, manifest_path)


def _document_start_token(path: Path, manifest: llmc.TokensManifest) -> tuple[int | None, str]:
    """The id that begins every llm.c document, and what it is: by run_config.json's layout in a release, else the manifest's separator (seed 000: before)."""
    if path.is_dir() and (path / RUN_CONFIG_NAME).is_file():
        config = RunConfig.read(path / RUN_CONFIG_NAME)
        if config.llmc_separator == "after" or config.llmc_sep is None:
            return config.bos_id, "BOS (each document's first token; the separator follows documents)" if config.bos is not None else "first token of each document: text (no BOS, no separator before)"
    return manifest.doc_sep_id, "separator"


def _megatron_inputs(path: Path) -> tuple[list[tuple[str | None, list[Path]]], int | None, int | None]:
    """Pairs per split, and the EOD id and vocab size of ``run_config.json`` when ``path`` is a release."""
    if (path / SHARDS_DIR).is_dir():
        splits = [(s, find_megatron_pairs(path, s)) for s in SPLITS if (path / SHARDS_DIR / s).is_dir()]
        eod_id, vocab_size = _run_config_ids(path / RUN_CONFIG_NAME)
        return splits, eod_id, vocab_size
    return [(None, find_megatron_pairs(path))], None, None


def _run_config_ids(run_config: Path) -> tuple[int | None, int | None]:
    """The EOD id and vocab size of a release's ``run_config.json`` (read by :class:`RunConfig`, the one reader)."""
    if not run_config.is_file():
        return None, None
    config = RunConfig.read(run_config)
    return config.eod_id, config.vocab_size


# ------------------------------------------------------------------ shared rules


def _problem(e: Exception) -> str:
    """An error's message without its leading ``PATH: `` (the finding names the file)."""
    text = str(e)
    path = getattr(e, "path", None) or getattr(e, "filename", None)
    prefix = f"{path}: " if path else ""
    return text[len(prefix) :] if prefix and text.startswith(prefix) else text


def _open(file: Path, opener: Callable[[Path], object], findings: list[Finding]):
    """``opener(file)``, or None with an error finding when our own reader refuses the file."""
    try:
        return opener(file)
    except (FormatError, OSError) as e:
        findings.append(Finding(ERROR, str(file), "format", _problem(e)))
        return None


def llmc_vocab_size(file: Path, manifest: llmc.TokensManifest | None) -> int:
    """The vocabulary an llm.c file's ids come from: its manifest's, else (a lone file) its header's (slot 3, as we
    write it); 0 if neither says. The manifest first: a URL build's card is written where no token file is."""
    if manifest is not None:
        return manifest.vocab_size
    header = _raw_header(file)
    return int(header[3]) if header is not None else 0


def gpt2_scratch_problem(vocab_size: int) -> str | None:
    """Why llm.c's from-scratch GPT-2 (``-e d12``, ``--model d12``) cannot train on ids of this vocabulary; None if it can."""
    if vocab_size <= GPT2_VOCAB:
        return None
    return (
        f"llm.c's from-scratch models (-e d12, --model d12) are GPT-2 with vocab_size {GPT2_VOCAB:,} and this vocabulary has "
        f"{vocab_size:,}: larger ids would index past the embedding (train_gpt2.cu does not check them)"
    )


def _raw_header(file: Path) -> np.ndarray | None:
    with open(file, "rb") as f:
        raw = f.read(llmc.HEADER_BYTES)
    return np.frombuffer(raw, "<i4") if len(raw) == llmc.HEADER_BYTES else None


def _readable_files(files: list[Path], magic: int, version: int, where: str, hint: str, opener, findings: list[Finding]):
    """Yield (file, tokens) for each file with the loader's magic and version that our reader accepts.

    The others become error findings: the loader would refuse them too.
    """
    for file in files:
        problem = _magic_version(file, magic, version, where, hint)
        if problem:
            findings.append(problem)
            continue
        tokens = _open(file, opener, findings)
        if tokens is not None:
            yield file, tokens


def _magic_version(file: Path, magic: int, version: int, where: str, hint: str) -> Finding | None:
    header = _raw_header(file)
    got = "a file shorter than the 1024-byte header" if header is None else f"magic {int(header[0])} version {int(header[1])}"
    if header is not None and header[0] == magic and header[1] == version:
        return None
    return Finding(ERROR, str(file), "magic-version", f"{where} accepts magic {magic} version {version} only, got {got} ({hint})")


def _capacity(file: Path, n_tokens: int, s: LoaderSettings, where: str) -> list[Finding]:
    need = s.world_size * s.batch_size * s.seq_len + 1
    largest = max(0, n_tokens - 1) // s.world_size
    findings = [Finding(INFO, str(file), "capacity", f"{n_tokens:,} tokens: the largest B*T this file supports is {largest:,} at world size {s.world_size}")]
    if n_tokens < need:
        findings.append(
            Finding(ERROR, str(file), "min-tokens", f"{where} needs world_size*B*T+1 = {need:,} tokens in every file, this one has {n_tokens:,}")
        )
    return findings


def _file_order(files: list[Path], where: str) -> list[Finding]:
    names = [f.name for f in files]
    if names == sorted(names):
        return []
    return [Finding(WARNING, str(files[0].parent), "file-order", f"{where} reads files in sorted name order {sorted(names)[:3]}..., not the release's order {names[:3]}...")]


# ------------------------------------------------------------------ llm.c


def check_llmc(path: Path, s: LoaderSettings) -> list[Finding]:
    """llm.c's C loader (``llmc/dataloader.h``) and ``train_gpt2.py``."""
    findings = []
    if s.seq_len > 1024:
        findings.append(Finding(ERROR, str(path), "seq-len", f"train_gpt2.py asserts 1 <= T <= 1024 (GPT-2's block_size), got T={s.seq_len}"))
    inputs = _llmc_inputs(path)
    for split, files in inputs.splits:
        findings += _file_order(files, "llm.c's glob") if files else []
        where = "llm.c's dataloader_load_shard_ (and train_gpt2.py _peek_data_shard)"
        for file, tokens in _readable_files(files, llmc.MAGIC, llmc.VERSION_UINT16, where, "uint16 ids only: a vocabulary <= 65,536; for a larger one build with --llmc-layout llama3 and train with --for llmc-llama3", llmc.open_tokens, findings):
            if tokens.size == 0:
                findings.append(Finding(ERROR, str(file), "empty-file", "dataloader_load_shard_ asserts ntok > 0"))
                continue
            findings += _capacity(file, int(tokens.size), s, "llm.c's dataloader_init (and train_gpt2.py DistributedDataLoader)")
            findings += _seek_offset(file, int(tokens.size), s)
            problem = gpt2_scratch_problem(llmc_vocab_size(file, inputs.manifest))
            if problem and not any(f.rule == "gpt2-vocab" for f in findings):  # one vocabulary: said once
                # A warning: a .bin checkpoint of this vocabulary reads them (hf-tokbin recipe prints no other line).
                findings.append(Finding(WARNING, str(file), "gpt2-vocab", f"{problem}: only a .bin checkpoint of this vocabulary (-e) can train on them"))
    if inputs.manifest is not None and not any(files for split, files in inputs.splits if split == "val"):
        findings.append(Finding(WARNING, str(inputs.manifest_path), "no-val", "no val files: train_gpt2.cu's validation glob would match nothing and dataloader_init exits"))
    return findings


def _seek_offset(file: Path, n_tokens: int, s: LoaderSettings) -> list[Finding]:
    """dataloader_load_batch casts the batch's byte offset to int before fseekCheck."""
    step = s.world_size * s.batch_size * s.seq_len
    samples = (n_tokens - 1) // step
    if samples < 1:
        return []
    last = llmc.HEADER_BYTES + ((samples - 1) * step + (s.world_size - 1) * s.batch_size * s.seq_len) * 2
    if last <= INT32_MAX:
        return []
    return [
        Finding(
            ERROR,
            str(file),
            "seek-offset",
            f"the last batch starts at byte {last:,}, past 2**31-1: dataloader_load_batch seeks with (int) current_offset, so it wraps (keep files under ~1.07 billion uint16 tokens)",
        )
    ]


def check_modded_nanogpt(path: Path, s: LoaderSettings) -> list[Finding]:
    """modded-nanogpt's ``train_gpt.py``: ``_load_data_shard``, ``Shard.next_batch``, ``distributed_data_generator``."""
    findings = []
    inputs = _llmc_inputs(path)
    manifest = inputs.manifest
    if manifest is not None:
        start, what = _document_start_token(path, manifest)
        if start != MODDED_NANOGPT_BOS:
            findings.append(Finding(ERROR, str(inputs.manifest_path), "bos-id", f"train_gpt.py aligns sequences on BOS_ID = {MODDED_NANOGPT_BOS}; this release's {what} is {start}"))
    for split, files in inputs.splits:
        if split == "train" and len(files) == 1:
            findings.append(
                Finding(ERROR, str(files[0]), "single-file", "distributed_data_generator preloads the next shard with next(file_iter) after the first: one train file raises StopIteration inside the generator")
            )
        findings += _file_order(files, "sorted(glob.glob(...))") if files else []
        for file, tokens in _readable_files(files, llmc.MAGIC, llmc.VERSION_UINT16, "modded-nanogpt's _load_data_shard", "uint16 ids only", llmc.open_tokens, findings):
            vocab = int(_raw_header(file)[3]) or (manifest.vocab_size if manifest else 0)
            if vocab > GPT2_VOCAB:
                findings.append(Finding(ERROR, str(file), "vocab", f"the model is GPT(vocab_size={GPT2_VOCAB}); this vocabulary has {vocab:,}"))
            findings += _bos_rules(file, tokens, s.seq_len)
            if split == "train":
                findings += _documents_per_micro_batch(file, tokens)
    findings += _modded_val_tokens(inputs, s)
    return findings


def most_documents_per_micro_batch(tokens: np.ndarray, num_tokens_local: int, max_seq_len: int) -> int:
    """The most BOS-aligned pieces ``Shard.next_batch`` can put in one micro-batch of this file.

    A micro-batch takes documents from a BOS, each cut at ``max_seq_len``, until
    ``num_tokens_local + 1`` tokens are gathered; every start is tried.
    """
    bos = scan_positions(tokens, MODDED_NANOGPT_BOS)
    if bos.size == 0:
        return 0
    pieces = np.minimum(np.diff(np.append(bos, tokens.size)), max_seq_len)
    ends = np.concatenate([[0], np.cumsum(pieces)])
    last = np.searchsorted(ends, ends[:-1] + num_tokens_local + 1, side="left")
    whole = last < ends.size  # a start without enough documents after it ends the shard instead
    return int((last - np.arange(pieces.size))[whole].max()) if whole.any() else 0


MODDED_NANOGPT_STAGE_DURATIONS = (1 / 3, 1 / 3, 1 / 3)  # train_gpt.py TRAINING_STAGES duration; then the extension stage (the last's sizes)
MODDED_NANOGPT_EXTENSION_STEPS = 15  # Hyperparameters.num_extension_iterations default


class ModdedTrainLoader:
    """train_gpt.py's train loader over the release's train files, call by call, as its code reads them.

    ``distributed_data_generator`` reads the files in order once; each call takes, for every
    process in turn, ``Shard.next_batch``'s windows: one per BOS, cut at ``train_max_seq_len``
    and at ``num_tokens_local + 1`` tokens (the rest of that document is skipped); when the
    file has too few BOS ahead, the call is served from the next file, and past the last file
    the generator fails (``next_shard_getter`` is None). A step is ``8 // world_size`` calls.
    """

    def __init__(self, files: list[np.ndarray], world_size: int):
        self.bos = [scan_positions(t, MODDED_NANOGPT_BOS) for t in files]
        self.sizes = [int(t.size) for t in files]
        self.world_size = world_size
        self._window_ends = {}  # (file, max_seq_len) -> the windows' cumulative lengths, from 0

    def serves(self, scheduled: int, extension: int) -> bool:
        """Whether every call of ``scheduled`` + ``extension`` steps is served (TrainingSchedule's stage boundaries).

        The generator starts with the first stage's sizes; the training loop sends a stage's sizes when they
        differ from the step before's (TrainingManager starts from step 0's stage), as train_gpt.py does.
        """
        ends = [0, *[round(c * scheduled) for c in itertools.accumulate(MODDED_NANOGPT_STAGE_DURATIONS[:-1])], scheduled, scheduled + extension]
        stages = [*MODDED_NANOGPT_STAGES, MODDED_NANOGPT_STAGES[-1]]
        sizes = stages[0][:2]
        previous = stages[next(k for k, end in enumerate(ends[1:]) if 0 < end)][:2] if ends[-1] else sizes
        f, i = 0, 0
        for step in range(ends[-1]):
            stage = stages[next(k for k, end in enumerate(ends[1:]) if step < end)][:2]
            sizes, previous = (stage, stage) if stage != previous else (sizes, previous)
            for _ in range(8 // self.world_size):
                while (taken := self._take(f, i, *sizes)) is None:
                    f, i = f + 1, 0
                    if f == len(self.bos):
                        return False
                i = taken
        return True

    def _take(self, f: int, i: int, tokens_local: int, max_seq_len: int) -> int | None:
        """The BOS index after one call from BOS index ``i`` of file ``f``, or None if the file cannot serve it."""
        key = (f, max_seq_len)
        if key not in self._window_ends:
            lengths = np.minimum(np.diff(np.append(self.bos[f], self.sizes[f])), max_seq_len)
            self._window_ends[key] = np.concatenate(([0], np.cumsum(lengths)))
        ends = self._window_ends[key]
        for _ in range(self.world_size):
            i = int(np.searchsorted(ends, ends[i] + tokens_local + 1, side="left"))
            if i >= ends.size:
                return None
        return i


def modded_train_schedule(files: list[np.ndarray], world_size: int) -> tuple[int, int]:
    """(num_scheduled_iterations, num_extension_iterations): the most scheduled steps the train loader serves, with
    the default 15 extension steps when at least 3 scheduled ones remain, else none. (0, 0) if not one step."""
    loader = ModdedTrainLoader(files, world_size)
    for extension in (MODDED_NANOGPT_EXTENSION_STEPS, 0):
        # Binary search between a count served (lo) and one not (hi): the loader reads fewer tokens than the files hold.
        lo, hi = 0, max(1, sum(loader.sizes) // (MODDED_NANOGPT_STAGES[0][0] * 8))
        if not loader.serves(lo, extension):
            continue
        while loader.serves(hi, extension):
            lo, hi = hi, hi * 2
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if loader.serves(mid, extension) else (lo, mid)
        if extension == 0 or lo >= 3:
            return lo, extension
    return 0, 0


def modded_default_max_num_docs(num_tokens_local: int) -> int:
    """``distributed_data_generator``'s slots for a micro-batch size ``TRAIN_MAX_NUM_DOCS`` lacks (the val loader's):
    ``next_multiple_of_n(num_tokens_local // 300, n=128)``."""
    return -(-(num_tokens_local // 300) // 128) * 128


def most_documents_per_val_micro_batch(files: list[np.ndarray], val_batch_size: int, world_size: int) -> int:
    """The most BOS in one process's micro-batch of the val loader (``align_to_bos=False``: fixed windows of
    ``val_batch_size // 8`` tokens from each file's start, while ``pos + num_tokens + 1 < len(tokens)``)."""
    num_tokens = val_batch_size // max(1, 8 // world_size)
    local = num_tokens // world_size
    most = 0
    for tokens in files:
        bos = scan_positions(tokens, MODDED_NANOGPT_BOS)
        calls = np.arange(0, max(0, tokens.size - num_tokens - 1), num_tokens, dtype=np.int64)
        starts = (calls[:, None] + np.arange(world_size, dtype=np.int64)[None, :] * local).ravel()
        if starts.size:
            most = max(most, int((np.searchsorted(bos, starts + local) - np.searchsorted(bos, starts)).max()))
    return most


def modded_max_num_docs(train: list[np.ndarray], val: list[np.ndarray], val_batch_size: int, world_size: int) -> dict[int, int] | None:
    """``TRAIN_MAX_NUM_DOCS`` with room for the most documents of every train and val micro-batch (slots = documents + 1,
    rounded up to 32); None when train_gpt.py's own table and default serve."""
    table = {n: slots for n, _, slots in MODDED_NANOGPT_STAGES}
    needed = {n: 1 + max([most_documents_per_micro_batch(t, n, cap) for t in train] or [0]) for n, cap, _ in MODDED_NANOGPT_STAGES}
    if val_batch_size:
        local = val_batch_size // 8
        needed[local] = max(needed.get(local, 0), 1 + most_documents_per_val_micro_batch(val, val_batch_size, world_size))
    if all(k <= table.get(n, modded_default_max_num_docs(n)) for n, k in needed.items()):
        return None
    fixed = {n: max(slots, -(-needed[n] // 32) * 32) for n, slots in table.items()}
    fixed.update({n: -(-k // 32) * 32 for n, k in needed.items() if n not in table and k > modded_default_max_num_docs(n)})
    return fixed


def _documents_per_micro_batch(file: Path, tokens: np.ndarray) -> list[Finding]:
    """``distributed_data_generator`` copies a micro-batch's document starts into ``TRAIN_MAX_NUM_DOCS[tokens]`` slots."""
    needed = {n: most_documents_per_micro_batch(tokens, n, cap) for n, cap, _ in MODDED_NANOGPT_STAGES}
    over = [(n, k, slots) for (n, _, slots), k in zip(MODDED_NANOGPT_STAGES, needed.values()) if k + 1 > slots]
    if not over:
        return []
    fix = {n: max(slots, -(-(needed[n] + 1) // 32) * 32) for n, _, slots in MODDED_NANOGPT_STAGES}
    n, k, slots = over[0]
    return [
        Finding(
            ERROR,
            str(file),
            "documents-per-micro-batch",
            f"a {n:,}-token micro-batch can hold {k} documents here, TRAIN_MAX_NUM_DOCS gives {slots - 1} "
            f"(the first micro-batch fails: 'The expanded size of the tensor'): set TRAIN_MAX_NUM_DOCS = {fix} (hf-tokbin recipe prints it)",
        )
    ]


def modded_val_batch(val_files_tokens: list[int], world_size: int) -> tuple[int, int]:
    """The ``val_batch_size`` and ``val_tokens`` the validation files can serve, (0, 0) when none.

    The val loader (``align_to_bos=False``) reads ``val_batch_size // grad_accum_steps``
    tokens (+1) per micro-batch inside one file and moves to the next file when
    ``pos + num_tokens + 1 >= len(tokens)``. The default batch, else the largest
    power-of-two fraction of it (at least 2,048 tokens per process), that fits.
    """
    grad_accum = max(1, 8 // world_size)
    batch = MODDED_NANOGPT_VAL_BATCH
    while batch >= 2048 * 8:
        micro = batch // grad_accum
        micro_batches = sum(max(0, n - 2) // micro for n in val_files_tokens)
        usable = micro_batches // grad_accum * batch
        if usable:
            return batch, min(usable, MODDED_NANOGPT_VAL_TOKENS)
        batch //= 2
    return 0, 0


def _modded_val_tokens(inputs: _LlmcInputs, s: LoaderSettings) -> list[Finding]:
    files = dict(inputs.splits).get("val") or []
    if inputs.manifest is None:
        return []
    if not files:
        return [Finding(WARNING, str(inputs.manifest_path), "no-val", "no val files: train_gpt.py validates at its last step at least; the recipe points val_files at the train files")]
    sizes = [llmc.read_header(f).n_tokens for f in files]
    batch, _ = modded_val_batch(sizes, s.world_size)
    if batch == 0:
        return [Finding(ERROR, str(files[0].parent), "val-tokens", f"no val file holds one val micro-batch of {2048 * 8 // max(1, 8 // s.world_size):,}+2 tokens: the val loader raises StopIteration")]
    findings = _val_documents_per_micro_batch(files, batch, s.world_size)
    if batch != MODDED_NANOGPT_VAL_BATCH:
        return findings + [Finding(WARNING, str(files[0].parent), "val-tokens", f"the val split ({sum(sizes):,} tokens) is below one default val batch of {MODDED_NANOGPT_VAL_BATCH:,} per file: set val_batch_size = {batch} and val_tokens as the recipe prints")]
    return findings


def _val_documents_per_micro_batch(files: list[Path], batch: int, world_size: int) -> list[Finding]:
    """The val loader copies a micro-batch's BOS positions into ``TRAIN_MAX_NUM_DOCS.get(val_batch_size // 8, default)`` slots."""
    local = batch // 8
    most = most_documents_per_val_micro_batch([llmc.open_tokens(f) for f in files], batch, world_size)
    slots = {n: k for n, _, k in MODDED_NANOGPT_STAGES}.get(local, modded_default_max_num_docs(local))
    if most + 1 <= slots:
        return []
    return [
        Finding(
            ERROR,
            str(files[0].parent),
            "val-documents-per-micro-batch",
            f"a {local:,}-token val micro-batch (val_batch_size {batch:,}) holds {most} documents here, train_gpt.py gives {slots - 1} "
            f"(the first validation fails: 'The expanded size of the tensor'): add {local}: {-(-(most + 1) // 32) * 32} to TRAIN_MAX_NUM_DOCS (hf-tokbin recipe prints it)",
        )
    ]


def _bos_rules(file: Path, tokens: np.ndarray, max_seq_len: int) -> list[Finding]:
    bos = scan_positions(tokens, MODDED_NANOGPT_BOS)
    if bos.size == 0:
        return [Finding(ERROR, str(file), "no-bos", f"no BOS ({MODDED_NANOGPT_BOS}) in the file: Shard.next_batch raises StopIteration at once and the file is skipped")]
    findings = []
    if bos[0] > 0:
        findings.append(Finding(WARNING, str(file), "bos-first", f"the first {int(bos[0]):,} tokens come before the first BOS and are never read"))
    lengths = np.diff(np.append(bos, tokens.size))
    long_docs = int(np.count_nonzero(lengths > max_seq_len))
    if long_docs:
        findings.append(
            Finding(WARNING, str(file), "long-docs", f"{long_docs:,} of {lengths.size:,} documents are longer than max_seq_len={max_seq_len}: Shard.next_batch cuts each there, the rest is never trained on")
        )
    return findings


def check_llmc_llama3(path: Path, s: LoaderSettings) -> list[Finding]:
    """llm.c's ``train_llama3.py``: ``_peek_data_shard``, ``_load_data_shard``, ``DistributedShardedDataLoader``."""
    findings = []
    if s.seq_len > 8192:
        findings.append(Finding(ERROR, str(path), "seq-len", f"train_llama3.py asserts 1 <= T <= 8192, got T={s.seq_len}"))
    inputs = _llmc_inputs(path)
    vocab = inputs.manifest.vocab_size if inputs.manifest else None
    if vocab is not None and vocab > LLAMA3_VOCAB:
        findings.append(Finding(WARNING, str(inputs.manifest_path), "vocab", f"train_llama3.py's LlamaConfig has vocab_size {LLAMA3_VOCAB:,}; this vocabulary has {vocab:,}"))
    for split, files in inputs.splits:
        findings += _file_order(files, "sorted(glob.glob(...))") if files else []
        opener = functools.partial(llmc.open_tokens, vocab_size=vocab)
        for file, tokens in _readable_files(files, llmc.LLAMA3_MAGIC, 7, "train_llama3.py's _peek_data_shard", "build with --llmc-layout llama3", opener, findings):
            findings += _capacity(file, int(tokens.size), s, "train_llama3.py's DistributedShardedDataLoader")
    if inputs.manifest is not None:
        start, what = _document_start_token(path, inputs.manifest)
        if start != LLAMA3_BEGIN_OF_TEXT:
            findings.append(
                Finding(
                    WARNING,
                    str(inputs.manifest_path),
                    "begin-of-text",
                    f"llm.c's own Llama 3 files begin each document with <|begin_of_text|> {LLAMA3_BEGIN_OF_TEXT}; this release's {what} is {start}: "
                    "build with --llmc-layout llama3 and without --doc-sep, --bos or --llmc-sep: the build then writes llm.c's own layout, "
                    f"{LLAMA3_BEGIN_OF_TEXT} before each document and no EOS in the llm.c files (Megatron keeps its EOD)",
                )
            )
    return findings


# ------------------------------------------------------------------ Megatron pairs


def _open_pair(idx: Path, vocab_size: int | None, eod_id: int | None, findings: list[Finding], where: str) -> megatron.MegatronPair | None:
    pair = _open(idx, lambda f: megatron.MegatronPair(f, vocab_size), findings)
    if pair is None:
        return None
    try:
        pair.check_one_document_per_sequence(eod_id)
    except FormatError as e:
        findings.append(Finding(ERROR, str(idx), "one-document-per-sequence", f"{where}: {_problem(e)}"))
    return pair


def _eod_findings(path: Path, eod_id: int | None, setting: str, level_if_unknown: str) -> list[Finding]:
    if eod_id is None:
        return [Finding(level_if_unknown, str(path), "eod", "EOD id unknown (no run_config.json doc_sep): pass --eod-id to check that sequences end with it")]
    return [Finding(INFO, str(path), "eod", f"set {setting}{eod_id}")]


def check_megatron(path: Path, s: LoaderSettings) -> list[Finding]:
    """megatron-core's ``IndexedDataset`` and ``GPTDataset``."""
    splits, eod_id, vocab_size = _megatron_inputs(path)
    eod_id = s.eod_id if s.eod_id is not None else eod_id
    findings = _eod_findings(path, eod_id, "the tokenizer's eod (GPTDatasetConfig.tokenizer.eod) to ", WARNING)
    for split, pairs in splits:
        for idx in pairs:
            pair = _open_pair(idx, vocab_size, eod_id, findings, "GPTDataset's EOD masks need it")
            if pair is None:
                continue
            if pair.n_tokens == 0:
                findings.append(Finding(ERROR, str(idx), "empty-pair", "0 tokens: GPTDataset._get_num_epochs adds 0 tokens per epoch and never reaches the requested count"))
            elif pair.n_tokens - 1 < s.seq_len:
                findings.append(
                    Finding(WARNING, str(idx), "short-pair", f"{pair.n_tokens:,} tokens < seq_length+1 = {s.seq_len + 1:,}: no full sample per epoch, GPTDataset repeats this pair over many epochs")
                )
            if pair.header.code == megatron.CODE_UINT16 and vocab_size is not None and MEGATRON_UINT16_BELOW <= vocab_size <= UINT16_VOCAB_LIMIT:
                findings.append(
                    Finding(WARNING, str(idx), "dtype-cutoff", f"vocab_size {vocab_size:,}: DType.optimal_dtype picks uint16 only below {MEGATRON_UINT16_BELOW:,}, so Megatron's preprocess_data.py would write int32; these uint16 files read the same")
                )
    return findings


def _part_number(name: str) -> int | None:
    match = re.fullmatch(r"part-(\d+)\.idx", name)
    return int(match.group(1)) if match else None


def check_maxtext(path: Path, s: LoaderSettings) -> list[Finding]:
    """MaxText's Grain ``mmap`` / ``mmap_npy`` file types."""
    splits, eod_id, vocab_size = _megatron_inputs(path)
    eod_id = s.eod_id if s.eod_id is not None else eod_id
    findings = _eod_findings(path, eod_id, "mmap_eod_id=", WARNING)
    for split, pairs in splits:
        folder = pairs[0].parent
        if any(c in str(folder.resolve()) for c in GRAIN_SEPARATORS):
            findings.append(Finding(WARNING, str(folder), "path-chars", f"grain_train_files uses {' '.join(GRAIN_SEPARATORS)} as separators; this path contains one: move or link the files"))
        numbers = [_part_number(p.name) for p in pairs]
        stray = [p.name for p, n in zip(pairs, numbers) if n is None]
        if stray:
            findings.append(Finding(WARNING, str(folder), "stray-idx", f"resolve_shard_prefixes reads every *.idx in the folder, including {stray[:3]}"))
        elif numbers != sorted(numbers):
            findings.append(Finding(WARNING, str(folder), "file-order", "resolve_shard_prefixes sorts prefixes as strings, which is not the part order here"))
        total = 0
        for idx in pairs:
            pair = _open_pair(idx, vocab_size, eod_id, findings, "mmap_split_sentences=false and check_eod_presence need it")
            total += pair.n_tokens if pair is not None else 0
        if total // s.seq_len == 0:
            findings.append(Finding(ERROR, str(folder), "no-samples", f"{total:,} tokens < max_target_length={s.seq_len}: MMapSampleIndexDataSource has total_tokens // seq_length = 0 samples"))
    return findings


def check_nanogpt(path: Path, s: LoaderSettings) -> list[Finding]:
    """nanoGPT's ``train.py`` ``get_batch``, reading our files with the recipe's ``np.memmap`` lines."""
    findings = []
    inputs = _llmc_inputs(path)
    vocab = inputs.manifest.vocab_size if inputs.manifest else None
    if vocab is not None and vocab > GPT2_VOCAB and (s.init_from or "").startswith("gpt2"):
        findings.append(Finding(ERROR, str(inputs.manifest_path), "vocab", f"init_from={s.init_from} loads OpenAI's GPT-2, vocab_size {GPT2_VOCAB:,}; this vocabulary has {vocab:,}"))
    elif vocab is not None and vocab > NANOGPT_VOCAB:
        findings.append(Finding(INFO, str(inputs.manifest_path), "vocab", f"without data_dir/meta.pkl train.py builds vocab_size={NANOGPT_VOCAB:,}; this vocabulary has {vocab:,}: the recipe's lines write a meta.pkl with vocab_size={vocab}"))
    opener = functools.partial(llmc.open_tokens, vocab_size=vocab)
    for split, files in inputs.splits:
        for file in files:
            tokens = _open(file, opener, findings)
            if tokens is None:
                continue
            findings.append(Finding(INFO, str(file), "dtype", f"np.memmap(..., dtype=np.{tokens.dtype.name}, offset={llmc.HEADER_BYTES})"))
            if tokens.size <= s.seq_len:
                findings.append(Finding(ERROR, str(file), "min-tokens", f"get_batch's torch.randint(len(data) - block_size, ...) needs more than block_size={s.seq_len} tokens, this file has {tokens.size:,}"))
    return findings


TARGETS: dict[str, Callable[[Path, LoaderSettings], list[Finding]]] = {
    "llmc": check_llmc,
    "modded-nanogpt": check_modded_nanogpt,
    "llmc-llama3": check_llmc_llama3,
    "megatron": check_megatron,
    "maxtext": check_maxtext,
    "nanogpt": check_nanogpt,
}
