"""Megatron-LM and megatron-core: ``pretrain_gpt.py``, ``IndexedDataset``, ``GPTDataset``.

Checked against megatron-core 0.16.1 (Megatron-LM tag core_v0.16.1,
55ac7082517c3878ae653c07c09c534b8aed49f6): ``megatron/training/arguments.py``,
``training_config.py``, ``utils.py`` ``get_blend_and_blend_per_split``,
``pretrain_gpt.py``, ``megatron/core/datasets/indexed_dataset.py`` and
``datasets/gpt_dataset.py``.

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
"""

from __future__ import annotations

import shlex
from pathlib import Path

from ..formats import megatron
from ..formats.rules import UINT16_VOCAB_LIMIT
from .base import ERROR, WARNING, Finding, LoaderSettings, RecipeRequest, Trainer, Written, quoted
from .megatron_pairs import (
    MEGATRON_SEED,
    VALIDATION_BLEND,
    ReleaseTokenizer,
    data_path,
    eod_findings,
    megatron_inputs,
    open_pair,
    read_blends,
    read_mixture,
    read_tokenizer,
    samples_per_epoch,
    train_samples,
)

MEGATRON_UINT16_BELOW = 65500  # megatron-core DType.optimal_dtype


def check_megatron(path: Path, s: LoaderSettings) -> list[Finding]:
    """megatron-core's ``IndexedDataset`` and ``GPTDataset``."""
    splits, eod_id, vocab_size = megatron_inputs(path)
    eod_id = s.eod_id if s.eod_id is not None else eod_id
    findings = eod_findings(path, eod_id, "the tokenizer's eod (GPTDatasetConfig.tokenizer.eod) to ", WARNING)
    for split, pairs in splits:
        for idx in pairs:
            pair = open_pair(idx, vocab_size, eod_id, findings, "GPTDataset's EOD masks need it")
            if pair is None:
                continue
            if pair.n_tokens == 0:
                findings.append(
                    Finding(
                        ERROR,
                        str(idx),
                        "empty-pair",
                        "0 tokens: GPTDataset._get_num_epochs adds 0 tokens per epoch and never reaches the requested "
                        "count",
                    )
                )
            elif pair.n_tokens - 1 < s.seq_len:
                findings.append(
                    Finding(
                        WARNING,
                        str(idx),
                        "short-pair",
                        f"{pair.n_tokens:,} tokens < seq_length+1 = {s.seq_len + 1:,}: no full sample per epoch, "
                        "GPTDataset repeats this pair over many epochs",
                    )
                )
            if (
                pair.header.code == megatron.CODE_UINT16
                and vocab_size is not None
                and MEGATRON_UINT16_BELOW <= vocab_size <= UINT16_VOCAB_LIMIT
            ):
                findings.append(
                    Finding(
                        WARNING,
                        str(idx),
                        "dtype-cutoff",
                        f"vocab_size {vocab_size:,}: DType.optimal_dtype picks uint16 only below "
                        f"{MEGATRON_UINT16_BELOW:,}, so Megatron's preprocess_data.py would write int32; these uint16 "
                        "files read the same",
                    )
                )
    return findings


def _megatron_tokenizer(tok: ReleaseTokenizer, eod_id: int | None) -> tuple[list[str], list[str]]:
    """The tokenizer flags whose ``eod`` is the release's EOD, and what to check about them."""
    if (
        eod_id is not None
        and tok.vocab_size is not None
        and eod_id == tok.vocab_size - 1
        and tok.source in ("byte", "local", None)
    ):
        # NullTokenizer(vocab_size=V) has eod = V and V + 1 ids: exactly this vocabulary.
        return ["--tokenizer-type", "NullTokenizer", "--vocab-size", str(eod_id)], [
            f"NullTokenizer --vocab-size {eod_id} has eod {eod_id} and {eod_id + 1} ids, this vocabulary"
        ]
    if tok.shipped is not None:
        return ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", str(tok.shipped)], [
            "--tokenizer-model is the release's own tokenizer/ (the tokenizer.json the build read, SHA-256 in "
            "run_config.json); "
            f"HuggingFaceTokenizer's eod is the id of its eos_token, which must be {eod_id}"
        ]
    if tok.source not in (None, "byte", "local"):
        model = tok.source if not tok.subfolder else f"DIR/{tok.subfolder}"
        flags = ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", model]
        notes = [f"HuggingFaceTokenizer's eod is the id of its eos_token, which must be {eod_id}"]
        if tok.revision or tok.subfolder:
            download = shlex.join(
                [
                    "hf",
                    "download",
                    tok.source,
                    *(["--revision", tok.revision] if tok.revision else []),
                    "--local-dir",
                    "DIR",
                ]
            )
            notes.append(
                f"to pin the tokenizer the release was built with: {download}, and pass "
                f"DIR{'/' + quoted(tok.subfolder) if tok.subfolder else ''} to --tokenizer-model"
            )
        return flags, notes
    if tok.source == "byte":
        return ["--tokenizer-type", "TOKENIZER_TYPE"], [
            f"the byte tokenizer has no Megatron-LM --tokenizer-type with eod {eod_id}: NullTokenizer --vocab-size N "
            "has eod N "
            f"and N + 1 ids, so build with --doc-sep-id {tok.vocab_size - 1 if tok.vocab_size else 255} to use it, or "
            f"pass a tokenizer whose eod is {eod_id}"
        ]
    name = quoted(tok.tokenizer_id) if tok.tokenizer_id else "the release's tokenizer"
    return ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", "TOKENIZER_DIR"], [
        f"TOKENIZER_DIR (this release ships no tokenizer/): the folder of {name} (tokenizer.json) the release was "
        f"built with; its eos_token must be id {eod_id}"
    ]


# How the Megatron command is broken into continued lines: after the launcher, then before each of these flags.
EOD_TRAINED = "trained on, as every recipe here does (--eod-loss mask: --eod-mask-loss)"
MEGATRON_GROUPS = (
    "--train-data-path",
    "--valid-data-path",
    "--seq-length",
    "--eval-iters",
    "--tokenizer-type",
    "--reset-position-ids",
)


def _continued(argv: list[str], breaks: tuple[str, ...]) -> list[str]:
    """``argv`` as shell lines ending in `` \\``, a new line before each flag of ``breaks``."""
    groups = [[]]
    for arg in argv:
        if arg in breaks:
            groups.append([])
        groups[-1].append(arg)
    lines = [shlex.join(g) + " \\" for g in groups if g]
    lines[-1] = lines[-1][:-2]
    return lines


def _megatron(root: Path, s: LoaderSettings) -> tuple[list[list[str]], list[str]]:
    blends = read_blends(root)
    mixture = read_mixture(root, blends["train"])
    tok = read_tokenizer(root)
    eod_id = s.eod_id if s.eod_id is not None else tok.eod_id
    tok_flags, notes = _megatron_tokenizer(tok, eod_id)
    global_batch = s.batch_size * s.world_size
    samples = train_samples(root, blends["train"], s, mixture)
    val_samples = samples_per_epoch(blends.get("validation", []), s.seq_len)
    eval_iters = max(1, val_samples // global_batch) if val_samples else 0
    argv = ["torchrun", "--standalone", f"--nproc_per_node={s.world_size}", "pretrain_gpt.py"]
    argv += ["--train-data-path", *data_path(blends["train"], mixture)]
    if eval_iters:
        argv += ["--valid-data-path", *data_path(blends["validation"])]
    argv += ["--seq-length", str(s.seq_len), "--micro-batch-size", str(s.batch_size)]
    argv += ["--global-batch-size", str(global_batch)]
    argv += ["--train-samples", str(samples), "--seed", str(MEGATRON_SEED)]
    argv += ["--eval-iters", str(eval_iters)]
    if eval_iters:
        argv += ["--eval-interval", str(max(1, min(1000, samples // global_batch)))]
    argv += tok_flags
    argv += ["--reset-position-ids", "--reset-attention-mask"] + (["--eod-mask-loss"] if s.eod_loss == "mask" else [])
    length = (
        f"--train-samples {samples:,}: every pair's (tokens - 1) // seq_length samples, {s.epochs} time(s)"
        if mixture is None
        else f"--train-samples {samples:,}: the mixture's {mixture.total:,} train tokens // seq_length"
    )
    if mixture is None:
        weights = ["weights are each pair's tokens, so every pair is drawn in proportion to its size"]
    else:
        weights = [mixture.shares_note(), VALIDATION_BLEND]
    weights[0] += "; prefixes carry no .bin/.idx"
    notes = notes + [
        f"{length}; Megatron-LM then wants the schedule in samples too (--lr-decay-samples, --lr-warmup-samples, "
        "not the *-iters)",
        (
            f"--eval-iters {eval_iters} x global batch {global_batch} = the validation split's {val_samples:,} samples"
            if eval_iters
            else "no validation split: --eval-iters 0, Megatron-LM evaluates nothing"
        ),
        "add the model and optimizer: --num-layers --hidden-size --num-attention-heads --max-position-embeddings (>= "
        "--seq-length) --lr "
        "(Megatron-LM requires them; it trains from scratch unless --load names a checkpoint)",
        *weights,
        f"or one blend with a split: --data-path {shlex.join(data_path(blends['train'], mixture))} --split 100,0,0 "
        "(the release's validation split stays out)",
        "EOD loss: "
        f"{'masked (--eod-mask-loss)' if s.eod_loss == 'mask' else EOD_TRAINED}; "
        "--reset-position-ids --reset-attention-mask restart attention and positions after each EOD",
        "GPTDataset shuffles documents and samples with --seed; samples never cross from one pair into another",
        "megatron-core used directly (BlendedMegatronDatasetBuilder) needs torch.distributed initialised when a blend "
        "of several pairs has a path_to_cache "
        "(BlendedDataset._build_indices calls torch.distributed.get_rank()): init_process_group('gloo', world_size=1) "
        "in one process",
        "one pair per split instead: hf-tokbin merge RELEASE --out DIR, then DIR/<split> is the only prefix"
        + ("" if mixture is None else " (its train pair is no mixture: every document once)"),
    ]
    return [argv], notes


def write_megatron(request: RecipeRequest) -> Written:
    commands, notes = _megatron(request.root, request.settings)
    return Written(_continued(commands[0], MEGATRON_GROUPS), notes, commands)


MEGATRON_LM = Trainer(
    "megatron",
    "megatron-core 0.16.1 (Megatron-LM tag core_v0.16.1, 55ac7082517c3878ae653c07c09c534b8aed49f6): "
    "megatron/training/arguments.py, training_config.py, utils.py get_blend_and_blend_per_split, pretrain_gpt.py",
    "megatron",
    check_megatron,
    write_megatron,
    label="Megatron-LM",
    masks_eod=True,
)
