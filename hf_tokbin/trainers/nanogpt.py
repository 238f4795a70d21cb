"""nanoGPT: ``train.py``.

Checked against karpathy/nanoGPT at 3adf61e154c3fe3fca428ad6bc3818b27a3b8291
(2025-11-12): ``train.py`` defaults, ``get_batch``, ``configurator.py``.

``get_batch`` with the memmap lines that ``hf-tokbin recipe --for nanogpt``
prints (``np.memmap(FILE, dtype, offset=1024)``, one file per batch, chosen in
proportion to its tokens):

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
from pathlib import Path

from ..errors import FormatError
from ..formats import llmc
from .base import (
    ERROR,
    INFO,
    Finding,
    LoaderSettings,
    RecipeRequest,
    Trainer,
    Written,
    open_or_finding,
    python_literal,
    torchrun,
)
from .llmc_files import GPT2_VOCAB, file_tokens, llmc_dtype, llmc_globs, llmc_inputs, release_vocab_size, written

NANOGPT_VOCAB = 50304  # nanoGPT train.py: "defaulting to vocab_size of GPT-2 to 50304" without meta.pkl


def check_nanogpt(path: Path, s: LoaderSettings) -> list[Finding]:
    """nanoGPT's ``train.py`` ``get_batch``, reading our files with the recipe's ``np.memmap`` lines."""
    findings = []
    inputs = llmc_inputs(path)
    vocab = inputs.manifest.vocab_size if inputs.manifest else None
    if vocab is not None and vocab > GPT2_VOCAB and (s.init_from or "").startswith("gpt2"):
        findings.append(
            Finding(
                ERROR,
                str(inputs.manifest_path),
                "vocab",
                f"init_from={s.init_from} loads OpenAI's GPT-2, vocab_size {GPT2_VOCAB:,}; this vocabulary has "
                f"{vocab:,}",
            )
        )
    elif vocab is not None and vocab > NANOGPT_VOCAB:
        findings.append(
            Finding(
                INFO,
                str(inputs.manifest_path),
                "vocab",
                f"without data_dir/meta.pkl train.py builds vocab_size={NANOGPT_VOCAB:,}; this vocabulary has "
                f"{vocab:,}: the recipe's lines write a meta.pkl with vocab_size={vocab}",
            )
        )
    opener = functools.partial(llmc.open_tokens, vocab_size=vocab)
    for split, files in inputs.splits:
        for file in files:
            tokens = open_or_finding(file, opener, findings)
            if tokens is None:
                continue
            findings.append(
                Finding(
                    INFO,
                    str(file),
                    "dtype",
                    f"np.memmap(..., dtype=np.{tokens.dtype.name}, offset={llmc.HEADER_BYTES})",
                )
            )
            if tokens.size <= s.seq_len:
                findings.append(
                    Finding(
                        ERROR,
                        str(file),
                        "min-tokens",
                        "get_batch's torch.randint(len(data) - block_size, ...) needs more than "
                        f"block_size={s.seq_len} tokens, this file has {tokens.size:,}",
                    )
                )
    return findings


def _token_data_lines(files: dict[str, str], dtype: str) -> list[str]:
    """train.py's lines reading the release's files: one file per batch, in proportion to its tokens."""
    selected = ", ".join(
        f"{python_literal(split)}: sorted(glob.glob({python_literal(p)}))" for split, p in files.items()
    )
    return [
        "# train.py: add after `data_dir = ...`, then in get_batch(split) replace both np.memmap lines by `data = "
        "token_data(split)`",
        "import glob",
        f"token_files = {{{selected}}}",
        "def token_data(split):",
        "    # one file per batch, chosen in proportion to its tokens; the 1024-byte header is skipped",
        "    files = token_files[split]",
        f"    sizes = np.array([os.path.getsize(f) - {llmc.HEADER_BYTES} for f in files], dtype=np.float64)",
        "    path = files[np.random.choice(len(files), p=sizes / sizes.sum())]",
        f"    return np.memmap(path, dtype=np.{dtype}, mode='r', offset={llmc.HEADER_BYTES})",
    ]


def _nanogpt(root: Path, globs: dict, s: LoaderSettings) -> tuple[list[list[str]], list[str], list[str]]:
    vocab = release_vocab_size(root, globs)
    scratch = s.init_from in (None, "scratch")
    if vocab > GPT2_VOCAB and (s.init_from or "").startswith("gpt2"):
        raise FormatError(
            root,
            f"init_from={s.init_from} loads OpenAI's GPT-2 (vocab_size {GPT2_VOCAB:,}) and this vocabulary has "
            f"{vocab:,}",
            hint="train from scratch (no --init-from): the recipe sizes the model to the vocabulary",
        )
    files = {split: pattern for split, (pattern, *_) in globs.items()}
    files.setdefault(
        "val", files["train"]
    )  # estimate_loss() calls get_batch('val') at step 0 whatever eval_interval is
    dtype = llmc_dtype(root, globs).name
    lines = _token_data_lines(files, dtype)
    if vocab > NANOGPT_VOCAB and scratch:
        # train.py sizes a from-scratch model by data_dir/meta.pkl, else 50304: these lines precede its meta_path line.
        lines += [
            f"# the vocabulary has {vocab:,} entries, more than train.py's default 50,304: its meta_path line reads "
            "this meta.pkl",
            "import tempfile",
            "data_dir = tempfile.mkdtemp(prefix='hf_tokbin-meta-')",
            f"with open(os.path.join(data_dir, 'meta.pkl'), 'wb') as f: pickle.dump({{'vocab_size': {vocab}}}, f)",
        ]
    # One step: gradient_accumulation_steps (divided by the world size in DDP) * world * B * T tokens, drawn at random.
    step = s.batch_size * s.seq_len * s.world_size
    steps = max(1, s.epochs * sum(file_tokens(globs, "train")) // step)
    val_iters = max(1, min(200, sum(file_tokens(globs, "val")) // (s.batch_size * s.seq_len))) if "val" in globs else 1
    args = [f"--init_from={s.init_from or 'scratch'}", f"--block_size={s.seq_len}", f"--batch_size={s.batch_size}"]
    args += [f"--gradient_accumulation_steps={s.world_size}", f"--max_iters={steps}", f"--lr_decay_iters={steps}"]
    args += [
        f"--warmup_iters={min(2000, max(1, steps // 10))}",
        f"--eval_interval={max(1, min(2000, steps))}",
        f"--eval_iters={val_iters}",
    ]
    notes = [
        f"ids are {dtype} (the header's layout), after a {llmc.HEADER_BYTES}-byte header; nanoGPT's own train.bin has "
        "neither",
        f"{steps:,} steps of {step:,} tokens drawn at random windows: the train split's tokens {s.epochs} time(s) in "
        "expectation "
        "(--gradient_accumulation_steps=world_size: one B*T batch per process per step)",
        "from scratch (init_from='scratch'); "
        + (
            "pass --init-from gpt2 to fine-tune GPT-2"
            if vocab <= GPT2_VOCAB
            else f"GPT-2 (50,257 entries) cannot be fine-tuned on this vocabulary of {vocab:,}"
        ),
        "the loss counts every token, the separator included: train.py has no EOD loss mask",
    ]
    if "val" not in globs:
        notes.append(
            "no val files: 'val' reads the train files, so estimate_loss()'s val loss is a loss on training data"
        )
    return [torchrun(s, ["train.py", *args])], lines, notes


def write_nanogpt(request: RecipeRequest) -> Written:
    globs = llmc_globs(request.root, request.findings, check_glob=request.check_glob)
    return written(*_nanogpt(request.root, globs, request.settings))


NANOGPT = Trainer(
    "nanogpt",
    "karpathy/nanoGPT 3adf61e154c3fe3fca428ad6bc3818b27a3b8291 (2025-11-12): train.py defaults, get_batch, "
    "configurator.py",
    "llmc",
    check_nanogpt,
    write_nanogpt,
    label="nanoGPT",
)
