"""Errors of hf_tokbin.

Every error is a :class:`TokbinError`. Messages read ``PATH: RULE: expected X,
got Y`` (with a ``HINT:`` where one helps), so the command line can print the
message alone, on one line, never a traceback.
"""

from __future__ import annotations

import os


class TokbinError(Exception):
    """Base class of every error hf_tokbin raises on purpose."""


def _message(path: str | os.PathLike | None, rule: str, expected=None, got=None, hint: str | None = None) -> str:
    parts = []
    if path is not None:
        parts.append(f"{os.fspath(path)}: ")
    parts.append(rule)
    if expected is not None:
        parts.append(f": expected {expected}, got {got}")
    elif got is not None:
        parts.append(f": got {got}")
    if hint:
        parts.append(f" (HINT: {hint})")
    return "".join(parts)


class _LocatedError(TokbinError):
    """An error about one place (a file, a row, a byte offset) breaking one rule."""

    def __init__(self, path, rule: str, expected=None, got=None, hint: str | None = None):
        self.path = None if path is None else os.fspath(path)
        self.rule = rule
        self.expected = expected
        self.got = got
        self.hint = hint
        super().__init__(_message(path, rule, expected, got, hint))

    def __reduce__(self):
        # Rebuild from the fields, not from the message: errors cross process
        # boundaries (Ray tasks, the build's worker processes) by pickling.
        return type(self), (self.path, self.rule, self.expected, self.got, self.hint)


class FormatError(_LocatedError):
    """A token file, index or record does not follow its on-disk format."""


class VerificationError(_LocatedError):
    """A release disagrees with its own receipts, manifest or ``COMPLETE.json``."""


class CorpusInputError(_LocatedError):
    """Raw corpus input is unusable (bad UTF-8, missing column, unknown split...)."""


class TokenizerError(_LocatedError):
    """A tokenizer cannot be loaded or does not fit the requested output."""


class BuildError(_LocatedError):
    """A build cannot proceed or its counts do not add up."""


class HubError(_LocatedError):
    """Publishing to or fetching from the Hub failed in a way a user must act on."""


class MissingDependencyError(TokbinError):
    """An optional dependency is needed for this feature."""

    def __init__(self, package: str, extra: str, feature: str):
        self.package = package
        self.extra = extra
        self.feature = feature
        super().__init__(f"{feature} needs {package}: pip install 'hf_tokbin[{extra}]'")

    def __reduce__(self):
        return type(self), (self.package, self.extra, self.feature)
