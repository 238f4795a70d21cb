"""llm.c: ``train_gpt2.cu``, ``train_gpt2.py`` and ``train_llama3.py``.

Checked against karpathy/llm.c at f1e2ace651495b74ae22d45d1723443fd00ecd3a
(2025-05-10): ``train_gpt2.cu`` ``main()``, ``train_gpt2.py``,
``train_llama3.py``, ``llmc/dataloader.h``, ``llmc/utils.h``.

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
"""

from __future__ import annotations

import functools
from pathlib import Path

from ..errors import FormatError
from ..formats import llmc
from .base import (
    ERROR,
    WARNING,
    Finding,
    LoaderSettings,
    RecipeRequest,
    Trainer,
    Written,
    capacity,
    file_order,
    quoted,
    readable_files,
    torchrun,
)
from .llmc_files import (
    GPT2_VOCAB,
    document_start_token,
    file_tokens,
    llmc_batches,
    llmc_family,
    llmc_globs,
    llmc_inputs,
    llmc_vocab_size,
    release_vocab_size,
    written,
)

LLMC_COMMIT = "karpathy/llm.c f1e2ace651495b74ae22d45d1723443fd00ecd3a (2025-05-10)"
INT32_MAX = 2**31 - 1
LLAMA3_BEGIN_OF_TEXT = 128000  # <|begin_of_text|>: llm.c's dev/data Llama 3 files put it before each document
LLAMA3_VOCAB = 128256  # llm.c train_llama3.py LlamaConfig.vocab_size
LLMC_SCRATCH_MODEL = (
    "d12"  # llm.c: train_gpt2.py --model d12 and train_gpt2.cu -e d12 build GPT-2 124M with random weights
)

LLMC_VAL_EVERY = 250  # llm.c's own run scripts evaluate every 250 steps
LLAMA3_MODEL = "meta-llama/Meta-Llama-3.1-8B"  # train_llama3.py asserts args.model is this one


def check_llmc(path: Path, s: LoaderSettings) -> list[Finding]:
    """llm.c's C loader (``llmc/dataloader.h``) and ``train_gpt2.py``."""
    findings = []
    if s.seq_len > 1024:
        findings.append(
            Finding(
                ERROR,
                str(path),
                "seq-len",
                f"train_gpt2.py asserts 1 <= T <= 1024 (GPT-2's block_size), got T={s.seq_len}",
            )
        )
    inputs = llmc_inputs(path)
    for split, files in inputs.splits:
        findings += file_order(files, "llm.c's glob") if files else []
        where = "llm.c's dataloader_load_shard_ (and train_gpt2.py _peek_data_shard)"
        for file, tokens in readable_files(
            files,
            llmc.MAGIC,
            llmc.VERSION_UINT16,
            where,
            "uint16 ids only: a vocabulary <= 65,536; for a larger one build with --llmc-layout llama3 and train with "
            "--for llmc-llama3",
            llmc.open_tokens,
            findings,
        ):
            if tokens.size == 0:
                findings.append(Finding(ERROR, str(file), "empty-file", "dataloader_load_shard_ asserts ntok > 0"))
                continue
            findings += capacity(
                file, int(tokens.size), s, "llm.c's dataloader_init (and train_gpt2.py DistributedDataLoader)"
            )
            findings += _seek_offset(file, int(tokens.size), s)
            problem = gpt2_scratch_problem(llmc_vocab_size(file, inputs.manifest))
            if problem and not any(f.rule == "gpt2-vocab" for f in findings):  # one vocabulary: said once
                # A warning: a .bin checkpoint of this vocabulary reads them (hf-tokbin recipe prints no other line).
                findings.append(
                    Finding(
                        WARNING,
                        str(file),
                        "gpt2-vocab",
                        f"{problem}: only a .bin checkpoint of this vocabulary (-e) can train on them",
                    )
                )
    if inputs.manifest is not None and not any(files for split, files in inputs.splits if split == "val"):
        findings.append(
            Finding(
                WARNING,
                str(inputs.manifest_path),
                "no-val",
                "no val files: train_gpt2.cu's validation glob would match nothing and dataloader_init exits",
            )
        )
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
            f"the last batch starts at byte {last:,}, past 2**31-1: dataloader_load_batch seeks with (int) "
            "current_offset, so it wraps (keep files under ~1.07 billion uint16 tokens)",
        )
    ]


def gpt2_scratch_problem(vocab_size: int) -> str | None:
    """Why llm.c's from-scratch GPT-2 (``-e d12``, ``--model d12``) cannot train on ids of this vocabulary; None if
    it can."""
    if vocab_size <= GPT2_VOCAB:
        return None
    return (
        f"llm.c's from-scratch models (-e d12, --model d12) are GPT-2 with vocab_size {GPT2_VOCAB:,} and this "
        "vocabulary has "
        f"{vocab_size:,}: larger ids would index past the embedding (train_gpt2.cu does not check them)"
    )


def check_llmc_llama3(path: Path, s: LoaderSettings) -> list[Finding]:
    """llm.c's ``train_llama3.py``: ``_peek_data_shard``, ``_load_data_shard``, ``DistributedShardedDataLoader``."""
    findings = []
    if s.seq_len > 8192:
        findings.append(
            Finding(ERROR, str(path), "seq-len", f"train_llama3.py asserts 1 <= T <= 8192, got T={s.seq_len}")
        )
    inputs = llmc_inputs(path)
    vocab = inputs.manifest.vocab_size if inputs.manifest else None
    if vocab is not None and vocab > LLAMA3_VOCAB:
        findings.append(
            Finding(
                WARNING,
                str(inputs.manifest_path),
                "vocab",
                f"train_llama3.py's LlamaConfig has vocab_size {LLAMA3_VOCAB:,}; this vocabulary has {vocab:,}",
            )
        )
    for split, files in inputs.splits:
        findings += file_order(files, "sorted(glob.glob(...))") if files else []
        opener = functools.partial(llmc.open_tokens, vocab_size=vocab)
        for file, tokens in readable_files(
            files,
            llmc.LLAMA3_MAGIC,
            7,
            "train_llama3.py's _peek_data_shard",
            "build with --llmc-layout llama3",
            opener,
            findings,
        ):
            findings += capacity(file, int(tokens.size), s, "train_llama3.py's DistributedShardedDataLoader")
    if inputs.manifest is not None:
        start, what = document_start_token(path, inputs.manifest)
        if start != LLAMA3_BEGIN_OF_TEXT:
            findings.append(
                Finding(
                    WARNING,
                    str(inputs.manifest_path),
                    "begin-of-text",
                    f"llm.c's own Llama 3 files begin each document with <|begin_of_text|> {LLAMA3_BEGIN_OF_TEXT}; "
                    f"this release's {what} is {start}: "
                    "build with --llmc-layout llama3 and without --doc-sep, --bos or --llmc-sep: the build then "
                    "writes llm.c's own layout, "
                    f"{LLAMA3_BEGIN_OF_TEXT} before each document and no EOS in the llm.c files (Megatron keeps its "
                    "EOD)",
                )
            )
    return findings


def llmc_schedule(globs: dict, s: LoaderSettings) -> tuple[int, int, int]:
    """(train steps for the epochs, val steps covering the val split, val every): one step is one B*T*world batch."""
    step = s.batch_size * s.seq_len * s.world_size
    steps = s.epochs * llmc_batches(file_tokens(globs, "train"), step)
    val_steps = llmc_batches(file_tokens(globs, "val"), step)
    return steps, val_steps, max(1, min(LLMC_VAL_EVERY, steps))


def _llmc(root: Path, globs: dict, s: LoaderSettings) -> tuple[list[list[str]], list[str], list[str]]:
    # Another layout gets its own finding (use llmc-llama3), not this refusal.
    problem = gpt2_scratch_problem(release_vocab_size(root, globs)) if llmc_family(root, globs) == "gpt2" else None
    # Every -e / --model but a .bin checkpoint is a GPT-2 of 50,257 entries (dN, gpt2:dN, gpt3:cN;
    # train_gpt2.py's gpt2*): no line of ours may promise a model these ids do not fit.
    if problem and not (s.init_from or "").endswith(".bin"):
        raise FormatError(
            root,
            f"no llm.c recipe for {s.init_from or 'a model from scratch'}: {problem}",
            hint="fine-tune a .bin checkpoint of this vocabulary (--init-from model.bin), "
            "or train with --for nanogpt or megatron",
        )
    train, val = globs["train"][0], globs.get("val", (None,))[0]
    total = s.batch_size * s.seq_len * s.world_size
    steps, val_steps, every = llmc_schedule(globs, s)
    # train_gpt2.cu's -j defaults to tiny_shakespeare_val.bin and -v 0 divides by zero: without val files, -j
    # names the train files and -m 0 runs no validation batch.
    c = ["./train_gpt2cu", "-i", train, "-j", val or train, "-e", s.init_from or LLMC_SCRATCH_MODEL]
    c += ["-b", str(s.batch_size), "-t", str(s.seq_len), "-d", str(total), "-x", str(steps)]
    c += ["-v", str(every), "-m", str(val_steps if val else 0), "-s", "0"]
    py = _train_py("train_gpt2.py", s.init_from or LLMC_SCRATCH_MODEL, train, val, s, (steps, val_steps, every))
    commands = [(["mpirun", "-np", str(s.world_size)] if s.world_size > 1 else []) + c, torchrun(s, py)]
    scratch = f"from scratch: {LLMC_SCRATCH_MODEL} is GPT-2 124M with random weights"
    model = scratch if s.init_from is None else "fine-tuning " + quoted(s.init_from)
    validation = (
        f"{val_steps:,} batches, the whole val split, every {every} steps"
        if val
        else "none (no val files): train_gpt2.cu runs -m 0 batches of its -j, train_gpt2.py none"
    )
    notes = [
        f"{steps:,} steps of B*T*world_size = {total:,} tokens: every whole batch of the train split, {s.epochs} "
        "time(s) (-d / --total_batch_size is one step without gradient accumulation)",
        f"{model}; pass --init-from gpt2 (train_gpt2.py) or a .bin checkpoint (-e) to fine-tune",
        f"validation: {validation}",
        "train_gpt2.cu shuffles the file order and the B*T windows inside each file every epoch (dataloader.h, "
        "permute_train_loader); "
        "train_gpt2.py reads the files in sorted-name order, the manifest's, from start to end: documents come in the "
        "release's order",
        "train_gpt2.py calls tiktoken.get_encoding('gpt2') at start (downloaded once, then cached); its multi-process "
        "runs need CUDA (it asserts so)",
        "the loss counts every token, the separator included: llm.c has no EOD loss mask",
    ]
    return commands, [], notes


def _train_py(script: str, model: str, train: str, val: str | None, s: LoaderSettings, schedule) -> list[str]:
    """llm.c's PyTorch reference (train_gpt2.py, train_llama3.py): the same flags, on the train (and val) files."""
    steps, val_steps, every = schedule
    total = s.batch_size * s.seq_len * s.world_size
    py = [script, "--input_bin", train] + (["--input_val_bin", val] if val else [])
    py += ["--model", model, "--overfit_single_batch", "0", "--write_tensors", "0"]
    py += ["--batch_size", str(s.batch_size), "--sequence_length", str(s.seq_len), "--total_batch_size", str(total)]
    py += ["--num_iterations", str(steps), "--val_loss_every", str(every if val else 0)]
    return py + ["--val_max_steps", str(val_steps if val else 1)]


def _llmc_llama3(root: Path, globs: dict, s: LoaderSettings) -> tuple[list[list[str]], list[str], list[str]]:
    train, val = globs["train"][0], globs.get("val", (None,))[0]
    total = s.batch_size * s.seq_len * s.world_size
    steps, val_steps, every = llmc_schedule(globs, s)
    py = _train_py("train_llama3.py", LLAMA3_MODEL, train, val, s, (steps, val_steps, every))
    notes = [
        f"train_llama3.py only fine-tunes {LLAMA3_MODEL} (it asserts --model is that one; gated weights from the Hub, "
        "or --use_hf 0 "
        "--ckpt_dir/--tokenizer_path for Meta's) and only on CUDA (it asserts so): there is no from-scratch option",
        f"{steps:,} steps of B*T*world_size = {total:,} tokens: every whole batch of the train split, {s.epochs} "
        "time(s)",
        "validation: "
        f"{f'{val_steps:,} batches, the whole val split, every {every} steps' if val else 'none (no val files)'}",
        "files are read in sorted-name order, the manifest's, from start to end: documents come in the release's "
        "order",
        "the loss counts every token, the separator included: train_llama3.py has no EOD loss mask",
    ]
    return [torchrun(s, py)], [], notes


def write_llmc(request: RecipeRequest) -> Written:
    globs = llmc_globs(request.root, request.findings, check_glob=request.check_glob)
    return written(*_llmc(request.root, globs, request.settings))


def write_llmc_llama3(request: RecipeRequest) -> Written:
    globs = llmc_globs(request.root, request.findings, check_glob=request.check_glob)
    return written(*_llmc_llama3(request.root, globs, request.settings))


LLMC = Trainer(
    "llmc",
    f"{LLMC_COMMIT}: train_gpt2.cu main(), train_gpt2.py, llmc/dataloader.h",
    "llmc",
    check_llmc,
    write_llmc,
    label="llm.c",
    llmc_layouts=("gpt2",),
)
LLMC_LLAMA3 = Trainer(
    "llmc-llama3",
    f"{LLMC_COMMIT}: train_llama3.py",
    "llmc",
    check_llmc_llama3,
    write_llmc_llama3,
    label="llm.c",
    llmc_layouts=("llama3",),
)
