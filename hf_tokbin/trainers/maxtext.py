"""MaxText: its Grain ``mmap`` and ``mmap_npy`` file types.

Checked against maxtext 0.2.5 from PyPI (Python >= 3.12):
``input_pipeline/_mmap_datasource.py``, ``_mmap_index_utils.py``,
``configs/base.yml``. MaxText's git main at e591f30cbbf2 (2026-08-22) has no
Megatron reader.

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
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from ..formats.release import SHARDS_DIR
from .base import ERROR, WARNING, Finding, LoaderSettings, RecipeRequest, Trainer, Written, quoted
from .megatron_pairs import (
    MEGATRON_SEED,
    VALIDATION_BLEND,
    Mixture,
    blend_weights,
    eod_findings,
    megatron_inputs,
    open_pair,
    read_blends,
    read_mixture,
    read_tokenizer,
    samples_per_epoch,
    train_samples,
)

GRAIN_SEPARATORS = "|:;,"  # MaxText grain_train_files syntax


def _part_number(name: str) -> int | None:
    match = re.fullmatch(r"part-(\d+)\.idx", name)
    return int(match.group(1)) if match else None


def check_maxtext(path: Path, s: LoaderSettings) -> list[Finding]:
    """MaxText's Grain ``mmap`` / ``mmap_npy`` file types."""
    splits, eod_id, vocab_size = megatron_inputs(path)
    eod_id = s.eod_id if s.eod_id is not None else eod_id
    findings = eod_findings(path, eod_id, "mmap_eod_id=", WARNING)
    for split, pairs in splits:
        folder = pairs[0].parent
        if any(c in str(folder.resolve()) for c in GRAIN_SEPARATORS):
            findings.append(
                Finding(
                    WARNING,
                    str(folder),
                    "path-chars",
                    f"grain_train_files uses {' '.join(GRAIN_SEPARATORS)} as separators; this path contains one: move "
                    "or link the files",
                )
            )
        numbers = [_part_number(p.name) for p in pairs]
        stray = [p.name for p, n in zip(pairs, numbers) if n is None]
        if stray:
            findings.append(
                Finding(
                    WARNING,
                    str(folder),
                    "stray-idx",
                    f"resolve_shard_prefixes reads every *.idx in the folder, including {stray[:3]}",
                )
            )
        elif numbers != sorted(numbers):
            findings.append(
                Finding(
                    WARNING,
                    str(folder),
                    "file-order",
                    "resolve_shard_prefixes sorts prefixes as strings, which is not the part order here",
                )
            )
        total = 0
        for idx in pairs:
            pair = open_pair(
                idx, vocab_size, eod_id, findings, "mmap_split_sentences=false and check_eod_presence need it"
            )
            total += pair.n_tokens if pair is not None else 0
        if total // s.seq_len == 0:
            findings.append(
                Finding(
                    ERROR,
                    str(folder),
                    "no-samples",
                    f"{total:,} tokens < max_target_length={s.seq_len}: MMapSampleIndexDataSource has total_tokens // "
                    "seq_length = 0 samples",
                )
            )
    return findings


# maxtext >= 0.2.5's pre-training entry point and its base config, found where pip put the package (no release
# text in it).
MAXTEXT_LAUNCHER = (
    "python -m maxtext.trainers.pre_train.train "
    "\"$(python -c 'import maxtext, os; "
    'print(os.path.join(os.path.dirname(maxtext.__file__), "configs", "base.yml"))\')"'
)


def _maxtext(root: Path, s: LoaderSettings, index_dir: Path) -> tuple[list[str], list[str]]:
    blends = read_blends(root)
    mixture = read_mixture(root, blends["train"])
    tok = read_tokenizer(root)
    eod_id = s.eod_id if s.eod_id is not None else tok.eod_id

    def files(split: str) -> str:
        # MaxText's blend syntax: IDX_k|prefix_k,weight_k;... A lone spec takes no weight: without ';' the ',W'
        # would be part of the path.
        blend = blends[split]
        weights = blend_weights(blend, mixture if split == "train" else None)
        specs = [(f"{index_dir / f'{split}-{k}'}|{pair.prefix}", w) for k, (pair, w) in enumerate(zip(blend, weights))]
        return specs[0][0] if len(specs) == 1 else ";".join(f"{spec},{w}" for spec, w in specs)

    global_batch = s.batch_size * s.world_size
    steps = max(1, train_samples(root, blends["train"], s, mixture) // global_batch)
    # train.py evaluates only when eval_interval > 0; each evaluation draws eval_steps global batches.
    eval_steps = samples_per_epoch(blends.get("validation", []), s.seq_len) // global_batch
    args = ["dataset_type=grain", "grain_file_type=mmap_npy", f"grain_train_files={files('train')}"]
    if eval_steps:
        args += [
            f"grain_eval_files={files('validation')}",
            f"eval_interval={max(1, min(1000, steps))}",
            f"eval_steps={eval_steps}",
        ]
    args += [
        f"mmap_eod_id={eod_id if eod_id is not None else 'EOD_ID'}",
        "mmap_split_sentences=false",
        f"max_target_length={s.seq_len}",
        f"per_device_batch_size={s.batch_size}",
        f"steps={steps}",
        f"data_shuffle_seed={MEGATRON_SEED}",
        "reset_attention_mask=true",
        f"eod_mask_loss={'true' if s.eod_loss == 'mask' else 'false'}",
        "packing_max_segments_per_sample=0",
    ]
    if tok.shipped is not None:
        args += ["tokenizer_type=huggingface", f"tokenizer_path={tok.shipped}"]
    lines = [MAXTEXT_LAUNCHER + " \\", *(shlex.quote(a) + " \\" for a in args)]
    lines[-1] = lines[-1][:-2]
    notes = _maxtext_notes(root, s, index_dir, tok.shipped is not None, steps, eval_steps, eod_id, mixture)
    return lines, notes


def _maxtext_notes(
    root: Path,
    s: LoaderSettings,
    index_dir: Path,
    shipped: bool,
    steps: int,
    eval_steps: int,
    eod_id: int | None,
    mixture: Mixture | None,
) -> list[str]:
    global_batch = s.batch_size * s.world_size
    length = (
        f"the train split {s.epochs} time(s)"
        if mixture is None
        else f"the mixture's {mixture.total:,} train tokens // max_target_length, in whole global batches"
    )
    notes = [
        "needs maxtext >= 0.2.5 (Python >= 3.12); MaxText's git main at the commit checked has no mmap/mmap_npy "
        "reader",
        f"steps={steps:,} x per_device_batch_size x devices ({global_batch:,} at world size {s.world_size}) samples: "
        f"{length}",
        *([] if mixture is None else [mixture.shares_note(), VALIDATION_BLEND]),
        "the sample order equals Megatron's (hf-tokbin recipe --for megatron with the same -B -T --world-size "
        "--epochs): same prefixes, weights, "
        "seed, seq length and sample count (steps * global batch); the folder form "
        "grain_train_files='IDX|DIR/shards/train' does not when a split has several pairs",
        f"{quoted(index_dir)} must be writable: MaxText builds the document/sample/shuffle .npy indices there on "
        "first use",
        f"grain_file_type=mmap with grain_train_files={quoted(root / SHARDS_DIR / 'train')} also reads every pair "
        "(sorted *.idx), in its own order",
        f"EOD loss: {'masked' if s.eod_loss == 'mask' else 'trained on'} (eod_mask_loss), as in every recipe here "
        "with the same --eod-loss",
        "add the model: model_name=... (or base_emb_dim/base_num_decoder_layers/...) and vocab_size >= the release's, "
        "and base_output_directory=...",
        "from scratch: no run_name is given, so MaxText names the run {model_name}_{date and minute}, a new one each "
        "run; "
        "MaxText resumes from base_output_directory/run_name/checkpoints whenever a checkpoint is there, so a "
        "run_name you add must be a new one",
    ]
    if not shipped:
        notes.append(
            "this release ships no tokenizer/: set tokenizer_type and tokenizer_path to the tokenizer it was built "
            "with"
        )
    if eval_steps:
        notes.append(
            f"validation: eval_steps={eval_steps:,} x {global_batch:,} samples, the validation split once, every "
            f"{max(1, min(1000, steps)):,} steps "
            "(MaxText's eval_interval default -1 never evaluates)"
        )
    else:
        notes.append(
            "no validation split (or none of one global batch): no grain_eval_files, MaxText evaluates nothing "
            "(eval_interval stays -1)"
        )
    if eod_id is None:
        notes.append("EOD_ID unknown (no run_config.json eod_id): pass --eod-id")
    return notes


def write_maxtext(request: RecipeRequest) -> Written:
    lines, notes = _maxtext(request.root, request.settings, request.index_dir)
    return Written(lines, notes)


MAXTEXT = Trainer(
    "maxtext",
    "maxtext 0.2.5 from PyPI (Python >= 3.12): input_pipeline/_mmap_datasource.py, configs/base.yml; "
    "MaxText's git main at e591f30cbbf2 (2026-08-22) has no Megatron reader",
    "megatron",
    check_maxtext,
    write_maxtext,
    label="MaxText",
    masks_eod=True,
)
