"""Every trainer by its ``--for`` name: ``verify --for``'s :func:`check` and ``recipe``'s :func:`recipe`.

A release can pass ``verify`` and still be read wrongly by a trainer started
with the wrong glob, a Megatron blend without weights, a tokenizer whose EOD is
not the release's, or MaxText's folder form where only its blend form gives
Megatron's order. :func:`recipe` writes, from the release's own files, what to
pass to each trainer, names the version of the trainer's source it was checked
against (:data:`CHECKED_AGAINST`), and carries every finding of
``verify --for`` (each trainer's ``check``) that is a warning or an error.

Every path printed is absolute, shell lines are quoted with :func:`shlex.quote`
and Python lines with :func:`repr`, so the lines can be pasted as they are.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from ..errors import FormatError
from .base import ERROR, WARNING, Finding, LoaderSettings, RecipeRequest, Trainer, has_errors
from .llmc import LLMC, LLMC_LLAMA3
from .maxtext import MAXTEXT
from .megatron_lm import MEGATRON_LM
from .modded_nanogpt import MODDED_NANOGPT
from .nanogpt import NANOGPT

TRAINERS: dict[str, Trainer] = {t.name: t for t in (LLMC, LLMC_LLAMA3, MODDED_NANOGPT, MEGATRON_LM, MAXTEXT, NANOGPT)}
TARGETS = tuple(TRAINERS)
# What each recipe was read from: the trainer's source at this version.
CHECKED_AGAINST = {name: trainer.checked_against for name, trainer in TRAINERS.items()}


def check(path: str | os.PathLike, target: str, settings: LoaderSettings = LoaderSettings()) -> list[Finding]:
    """Every finding of ``target``'s rules for ``path``, in file order."""
    if target not in TRAINERS:
        raise FormatError(None, "unknown target", expected=", ".join(TARGETS), got=target)
    path = Path(path)
    if not path.exists():
        raise FormatError(path, "no such file or folder")
    return TRAINERS[target].check(path, settings)


@dataclass(frozen=True)
class Recipe:
    """What to pass to one trainer for one release, and what ``verify --for`` found.

    Every line and note is refused (:class:`FormatError`) if it holds a control
    character: a value from a release (a revision, a source) must not end a
    ``# note:`` line and start a command when the text is pasted into a shell.
    """

    target: str
    release: Path
    lines: tuple[str, ...]  # the command or config lines, to paste as they are
    notes: tuple[str, ...]  # settings the lines cannot carry (tokenizer, order, versions)
    findings: tuple[Finding, ...] = field(default=())  # warnings and errors of verify --for
    commands: tuple[tuple[str, ...], ...] = field(default=())  # the shell commands of ``lines`` as argv
    code: tuple[str, ...] = field(default=())  # the lines of ``lines`` to put in the trainer's source (Python)

    def __post_init__(self):
        for text in (*self.lines, *self.notes, *map(str, self.findings)):
            if not text.isprintable():
                raise FormatError(
                    self.release,
                    "a value taken from the release holds a control character: no recipe is printed for it",
                    got=text[:120],
                )

    @property
    def checked_against(self) -> str:
        return CHECKED_AGAINST[self.target]

    def has_errors(self) -> bool:
        return has_errors(self.findings)

    def text(self) -> str:
        out = [
            f"# hf-tokbin recipe --for {self.target}: {shlex.quote(str(self.release))}",
            f"# checked against {self.checked_against}",
            *self.lines,
        ]
        out += [f"# note: {n}" for n in self.notes]
        out += [f"# {f}" for f in self.findings]
        return "\n".join(out) + "\n"

    def to_record(self) -> dict:
        """What ``recipe --json`` prints."""
        return {
            "target": self.target,
            "release": str(self.release),
            "checked_against": self.checked_against,
            "commands": [list(c) for c in self.commands],
            "lines": list(self.lines),
            "code": list(self.code),
            "notes": list(self.notes),
            "findings": [
                {"level": f.level, "file": f.file, "rule": f.rule, "message": f.message} for f in self.findings
            ],
        }


def recipe(
    path: str | os.PathLike,
    target: str,
    settings: LoaderSettings = LoaderSettings(),
    index_dir: str | os.PathLike | None = None,
    *,
    with_findings: bool = True,
) -> Recipe:
    """The recipe of ``target`` for the release (or token folder) at ``path``.

    ``index_dir`` is where MaxText's ``mmap_npy`` builds its index files
    (default ``RELEASE/.maxtext-index``: hidden, so no part of the release).
    ``with_findings=False`` skips ``verify --for`` (the dataset card's recipes:
    the build has just checked every byte, and scanning them again costs).
    """
    if target not in TRAINERS:
        raise FormatError(None, "unknown recipe target", expected=", ".join(TARGETS), got=target)
    trainer = TRAINERS[target]
    root = Path(path).resolve()
    if not root.exists():
        raise FormatError(root, "no such file or folder")
    findings = [f for f in trainer.check(root, settings) if f.level in (ERROR, WARNING)] if with_findings else []
    if settings.eod_loss == "mask" and not trainer.masks_eod:
        findings.append(
            Finding(
                ERROR,
                str(root),
                "eod-loss",
                f"{target} has no switch to mask the loss at EOD tokens: use --eod-loss train",
            )
        )
    index = Path(index_dir).resolve() if index_dir else root / ".maxtext-index"
    written = trainer.write(RecipeRequest(root, settings, findings, index, with_findings))
    findings, notes = _fixed_by_the_code(findings, written.notes, written.code, trainer.fixed_by_code)
    return Recipe(
        target,
        root,
        tuple(written.lines),
        tuple(notes),
        tuple(findings),
        tuple(tuple(c) for c in written.commands),
        tuple(written.code),
    )


def _fixed_by_the_code(
    findings: list[Finding], notes: list[str], code: list[str], fixed_by_code: Mapping[str, str]
) -> tuple[list[Finding], list[str]]:
    """The findings no printed line fixes, and the notes with one more for each rule a line fixes.

    Pasted as printed, the recipe trains: what it changed is a note, not an error.
    """
    kept, fixed = [], {}  # rule -> (the fixing line's setting, its findings)
    for finding in findings:
        prefix = fixed_by_code.get(finding.rule)
        line = next((line for line in code if prefix and line.startswith(prefix)), None)
        if line is None:
            kept.append(finding)
        else:
            setting = line.strip().split(" ")[0].rstrip(":")
            fixed.setdefault(finding.rule, (setting, []))[1].append(finding)
    changed = [
        f"changed {setting} (the line above) for {rule} ({len(found)} finding(s) of verify --for): {found[0].message}"
        for rule, (setting, found) in fixed.items()
    ]
    return kept, [*notes, *changed]
