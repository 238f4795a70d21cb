"""Errors of hf_tokbin.

Every error is a :class:`TokbinError`. Messages read ``PATH: RULE: expected X,
got Y`` (with a ``HINT:`` where one helps), so the command line can print the
message alone, on one line, never a traceback.
"""

from __future__ import annotations

import os
import re


class TokbinError(Exception):
    """Base class of every error hf_tokbin raises on purpose."""


_SHOWN_MAX = 500  # characters of a foreign string (a server's, a record's) shown in a message
# Where a URL's authority starts, and where it ends (urllib.parse.urlsplit's netloc: at the first "/", "?" or "#").
_URL_AUTHORITY = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_AUTHORITY_END = re.compile(r"[/?#]")
# The query parameters that carry a credential (signed URLs, API keys).
_SECRET_PARAMETER = re.compile(
    r"(?P<name>[?&;](?:[A-Za-z0-9_.-]*[-_.])?(?:token|sig|signature|key|secret|password|passwd|pwd|credential|auth|authorization|access_token|sas)"
    r"(?:[-_.][A-Za-z0-9_.-]*)?=)(?P<value>[^&;#:,)\s'\"]+)",
    re.IGNORECASE,
)
MASK = "***"


def mask_secrets(text: str) -> str:
    """``text`` with every URL's userinfo and every credential query parameter replaced by ``***``.

    The one rule for what hf_tokbin prints or records of a URL a user gave
    (``ftp://user:PASSWORD@host/x`` is shown as ``ftp://***@host/x``,
    ``s3://b/x?X-Amz-Signature=abc`` as ``s3://b/x?X-Amz-Signature=***``):
    every error message passes through it.
    """
    return _SECRET_PARAMETER.sub(lambda m: f"{m['name']}{MASK}", _mask_userinfo(text))


def _mask_userinfo(text: str) -> str:
    """Each URL's userinfo as the URL parser reads it: its authority runs to the first "/", "?" or "#", and the
    userinfo is what comes before the authority's last "@" (a password may hold "@", ":", spaces, any letter)."""
    pieces, done = [], 0
    for start in (m.end() for m in _URL_AUTHORITY.finditer(text)):
        if start <= done:
            continue  # inside a userinfo already masked
        end = _AUTHORITY_END.search(text, start)
        userinfo, at, _ = text[start : end.start() if end else len(text)].rpartition("@")
        if at:
            pieces.append(f"{text[done:start]}{MASK}")
            done = start + len(userinfo)
    return "".join(pieces) + text[done:]


def shown(value) -> str:
    """``value`` as text safe to print: non-printable characters escaped, at most ``_SHOWN_MAX`` characters.

    For strings that came from elsewhere (a server, a record): a newline,
    terminal escape or bidi control cannot reach the user's terminal.
    """
    text = value if isinstance(value, str) else repr(value)
    safe = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return safe if len(safe) <= _SHOWN_MAX else safe[:_SHOWN_MAX] + f"... ({len(safe)} characters)"


def _message(path: str | os.PathLike | None, rule: str, expected=None, got=None, hint: str | None = None) -> str:
    return mask_secrets(_unmasked_message(path, rule, expected, got, hint))


def _unmasked_message(
    path: str | os.PathLike | None, rule: str, expected=None, got=None, hint: str | None = None
) -> str:
    parts = []
    if path is not None:
        parts.append(f"{os.fspath(path)}: ")
    parts.append(rule)
    if expected is not None:
        parts.append(f": expected {expected}" if got is None else f": expected {expected}, got {got}")
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

    @property
    def detail(self) -> str:
        """The message without its path: the rule, what was expected and found, the hint."""
        return _message(None, self.rule, self.expected, self.got, self.hint)

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
        # hf_tokbin is installed from a checkout (it is not on PyPI): its extra works there, the package anywhere.
        hint = f"pip install {package}, or pip install -e '.[{extra}]' in the hf_tokbin checkout"
        super().__init__(f"{feature} needs {package} (HINT: {hint})")

    def __reduce__(self):
        return type(self), (self.package, self.extra, self.feature)
