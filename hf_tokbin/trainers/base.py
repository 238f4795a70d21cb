"""What every trainer module shares: findings, loader settings, the trainer record and the shared rules.

A :class:`Finding` is ``(level, file, rule, message)``; ``error`` means the loader
as published stops or silently reads wrong data, ``warning`` that it runs but
loses or misplaces something (or needs a setting), ``info`` a figure or
setting worth knowing. ``verify --for`` exits 1 if any finding is an error.

Loader settings (:class:`LoaderSettings`): ``batch_size`` B and ``seq_len`` T
default to 4 and 1024, ``train_gpt2.cu``'s defaults (``int B = 4; int T =
1024;``); ``world_size`` (processes reading the same files) defaults to 1. For
modded-nanogpt, T stands for ``train_max_seq_len``; for Megatron,
``--seq-length``; for MaxText, ``max_target_length``; for nanoGPT,
``block_size``.

A :class:`Trainer` is one ``--for`` value: the upstream source its rules were
read from, its ``check`` (``verify --for``) and its ``write`` (``recipe``).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping

import numpy as np

from ..errors import FormatError
from ..formats import llmc

ERROR, WARNING, INFO = "error", "warning", "info"


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
        epochs: passes over the whole train split a recipe's step count covers. A mixture release's Megatron-LM
            and MaxText recipes train on the mixture's total tokens and refuse any other value than 1.
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
        if self.init_from is not None and not (
            isinstance(self.init_from, str) and re.fullmatch(r"[A-Za-z0-9._/:-]+", self.init_from)
        ):
            raise FormatError(None, "init_from must be a model name (letters, digits, . _ / : -)", got=self.init_from)


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(f.level == ERROR for f in findings)


@dataclass(frozen=True)
class RecipeRequest:
    """What a trainer's ``write`` reads: the release, the settings, and where to add findings of its own."""

    root: Path
    settings: LoaderSettings
    findings: list[Finding]  # the recipe's findings: ``write`` may add some (a glob that selects other files)
    index_dir: Path  # MaxText's mmap_npy index folder
    check_glob: bool  # glob the printed patterns here (False for the dataset card: no token file is read)


@dataclass(frozen=True)
class Written:
    """A trainer's recipe for a release: the lines to paste, the notes, and the lines as argv and as code."""

    lines: list[str]
    notes: list[str]
    commands: list[list[str]] = field(default_factory=list)  # the shell commands of ``lines`` as argv
    code: list[str] = field(default_factory=list)  # the lines of ``lines`` to put in the trainer's source


@dataclass(frozen=True)
class Trainer:
    """One ``--for`` value of ``verify`` and ``recipe``.

    Args:
        name: the ``--for`` value.
        checked_against: the upstream repository, commit and files the rules and recipe were read from.
        reads: the release format its loader reads, ``"llmc"`` or ``"megatron"``.
        check: ``verify --for``'s rules for a path.
        write: the recipe's lines for a release.
        label: its name in prose (the dataset card's).
        masks_eod: whether it has a switch to mask the loss at EOD tokens (``--eod-loss mask``).
        fixed_by_code: a finding's rule -> the start of the printed code line that fixes it.
        llmc_layouts: the llm.c layouts its loader reads (``run_config.json``'s ``llmc.layout``).
        record_problem: why its loader cannot read a release, from the release's records alone (no token file is
            read); None when they show none.
        reads_token_bytes: whether its recipe reads the token files themselves (where each document starts), not
            only the release's records.
    """

    name: str
    checked_against: str
    reads: str
    check: Callable[[Path, LoaderSettings], list[Finding]]
    write: Callable[[RecipeRequest], Written]
    label: str = ""
    masks_eod: bool = False
    fixed_by_code: Mapping[str, str] = field(default_factory=dict)
    llmc_layouts: tuple[str, ...] = ("gpt2", "llama3")
    record_problem: Callable[[Path], str | None] = lambda root: None
    reads_token_bytes: bool = False


# ------------------------------------------------------------------ shared rules


def error_text(e: Exception) -> str:
    """An error's message without its leading ``PATH: `` (the finding names the file)."""
    text = str(e)
    path = getattr(e, "path", None) or getattr(e, "filename", None)
    prefix = f"{path}: " if path else ""
    return text[len(prefix) :] if prefix and text.startswith(prefix) else text


def open_or_finding(file: Path, opener: Callable[[Path], object], findings: list[Finding]):
    """``opener(file)``, or None with an error finding when our own reader refuses the file."""
    try:
        return opener(file)
    except (FormatError, OSError) as e:
        findings.append(Finding(ERROR, str(file), "format", error_text(e)))
        return None


def raw_header(file: Path) -> np.ndarray | None:
    with open(file, "rb") as f:
        raw = f.read(llmc.HEADER_BYTES)
    return np.frombuffer(raw, "<i4") if len(raw) == llmc.HEADER_BYTES else None


def readable_files(
    files: list[Path], magic: int, version: int, where: str, hint: str, opener, findings: list[Finding]
):
    """Yield (file, tokens) for each file with the loader's magic and version that our reader accepts.

    The others become error findings: the loader would refuse them too.
    """
    for file in files:
        problem = magic_version(file, magic, version, where, hint)
        if problem:
            findings.append(problem)
            continue
        tokens = open_or_finding(file, opener, findings)
        if tokens is not None:
            yield file, tokens


def magic_version(file: Path, magic: int, version: int, where: str, hint: str) -> Finding | None:
    header = raw_header(file)
    got = (
        "a file shorter than the 1024-byte header"
        if header is None
        else f"magic {int(header[0])} version {int(header[1])}"
    )
    if header is not None and header[0] == magic and header[1] == version:
        return None
    return Finding(
        ERROR, str(file), "magic-version", f"{where} accepts magic {magic} version {version} only, got {got} ({hint})"
    )


def capacity(file: Path, n_tokens: int, s: LoaderSettings, where: str) -> list[Finding]:
    need = s.world_size * s.batch_size * s.seq_len + 1
    largest = max(0, n_tokens - 1) // s.world_size
    findings = [
        Finding(
            INFO,
            str(file),
            "capacity",
            f"{n_tokens:,} tokens: the largest B*T this file supports is {largest:,} at world size {s.world_size}",
        )
    ]
    if n_tokens < need:
        findings.append(
            Finding(
                ERROR,
                str(file),
                "min-tokens",
                f"{where} needs world_size*B*T+1 = {need:,} tokens in every file, this one has {n_tokens:,}",
            )
        )
    return findings


def file_order(files: list[Path], where: str) -> list[Finding]:
    names = [f.name for f in files]
    if names == sorted(names):
        return []
    return [
        Finding(
            WARNING,
            str(files[0].parent),
            "file-order",
            f"{where} reads files in sorted name order {sorted(names)[:3]}..., not the release's order {names[:3]}...",
        )
    ]


# ------------------------------------------------------------------ printed lines


def quoted(value: object) -> str:
    """A value from the release, as it may appear in a note: shell-quoted."""
    return shlex.quote(str(value))


def torchrun(s: LoaderSettings, script: list[str]) -> list[str]:
    """``torchrun --standalone --nproc_per_node=N SCRIPT ARGS`` (torchrun runs the script itself), or ``python SCRIPT
    ARGS``."""
    if s.world_size == 1:
        return ["python", *script]
    return ["torchrun", "--standalone", f"--nproc_per_node={s.world_size}", *script]


def python_literal(text: str) -> str:
    """``text`` as a Python string literal that a shell, if the line is pasted there by mistake, reads as inert text.

    Always single-quoted, with ``'`` and ``\\`` escaped (``\\x27``, ``\\x5c``):
    ``repr()`` switches to double quotes for a text holding ``'``, and inside
    double quotes bash runs ``$(...)`` and backticks. The folder names in these
    lines come from the release (``tokens/<tokenizer_id>/<dataset>/``).
    """
    return "'" + text.replace("\\", "\\x5c").replace("'", "\\x27") + "'"
