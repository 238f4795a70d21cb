"""Bounded retries of transient Hub failures, a commits-per-hour cap, and Hub errors as :class:`HubError`.

Transient: a dropped or reset connection, a timeout, HTTP 408/429/500/502/503/504.
A retry waits ``Retry-After`` when the server sends it, else ``base_delay``
doubled per attempt; every wait is capped by ``max_delay`` and the number of
attempts by ``attempts``, so no loop here is unbounded.

Environment (read by :meth:`RetryPolicy.from_env`, used by the command line):
``HF_TOKBIN_HUB_ATTEMPTS`` (default 5) and ``HF_TOKBIN_HUB_BACKOFF`` (seconds, default 2).
"""

from __future__ import annotations

import collections
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, TypeVar

from ..errors import HubError

T = TypeVar("T")
TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})


def notify(message: str) -> None:
    """A line for the user on stderr that does not break progress bars."""
    from tqdm.auto import tqdm

    tqdm.write(message, file=sys.stderr)


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5  # tries per call, the first included
    base_delay: float = 2.0  # seconds before the first retry; doubles each time
    max_delay: float = 300.0  # cap on any single wait, Retry-After included
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def __post_init__(self):
        if not (isinstance(self.attempts, int) and self.attempts >= 1):
            raise HubError(None, "retry attempts must be a positive integer", got=self.attempts)
        if not self.base_delay >= 0 or not self.max_delay >= 0:
            raise HubError(None, "retry delays must be non-negative", got=(self.base_delay, self.max_delay))

    @classmethod
    def from_env(cls) -> "RetryPolicy":
        return cls(attempts=_env_number("HF_TOKBIN_HUB_ATTEMPTS", 5, int), base_delay=_env_number("HF_TOKBIN_HUB_BACKOFF", 2.0, float))

    def delay(self, attempt: int, error: BaseException) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        wait = retry_after_seconds(error)
        if wait is None:
            wait = self.base_delay * 2 ** (attempt - 1)
        return min(wait, self.max_delay)


def _env_number(name: str, default, kind: type[int] | type[float]):
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return kind(raw)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise HubError(name, f"environment variable must be {what}", expected=f"{what} such as {default}", got=repr(raw)) from None


def status_of(error: BaseException) -> int | None:
    response = getattr(error, "response", None)
    return getattr(response, "status_code", None)


def retry_after_seconds(error: BaseException) -> float | None:
    """The ``Retry-After`` of an HTTP error answer, in seconds (only the delay-seconds form)."""
    response = getattr(error, "response", None)
    value = getattr(response, "headers", {}).get("Retry-After") if response is not None else None
    if value is not None and value.strip().isdigit():
        return float(value.strip())
    return None


def is_transient(error: BaseException) -> bool:
    """Whether trying the same call again may succeed."""
    status = status_of(error)
    if status is not None:
        return status in TRANSIENT_STATUS
    if isinstance(error, (ConnectionError, TimeoutError)):
        return True
    return isinstance(error, _transport_errors())


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP library's connection/timeout/protocol errors (httpx2 for huggingface_hub 2.x, httpx for 1.x)."""
    errors = []
    for module in ("httpx2", "httpx"):
        try:
            errors.append(__import__(module).TransportError)
        except (ImportError, AttributeError):
            continue
    return tuple(errors)


def call_with_retry(policy: RetryPolicy, what: str, fn: Callable[[], T]) -> T:
    """``fn()``, retried on transient failures; the last failure (or any other) propagates."""
    for attempt in range(1, policy.attempts + 1):
        try:
            return fn()
        except Exception as error:
            if attempt == policy.attempts or not is_transient(error):
                raise
            wait = policy.delay(attempt, error)
            notify(f"{what}: {short_reason(error)}; retrying in {wait:g}s (attempt {attempt + 1}/{policy.attempts})")
            policy.sleep(wait)
    raise AssertionError("unreachable")  # the loop returns or raises


def short_reason(error: BaseException) -> str:
    """One line saying what went wrong (HTTP status, or the exception), never a header or token."""
    status = status_of(error)
    first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
    if status is not None:
        return f"HTTP {status}"
    return f"{type(error).__name__}: {first_line}" if first_line else type(error).__name__


def as_hub_error(where: str, what: str, error: BaseException) -> HubError:
    """A :class:`HubError` naming the repo/file and the failed step, with a hint for the usual causes."""
    status = status_of(error)
    hint = None
    if status in (401, 403):
        hint = "check the token (HF_TOKEN, or `hf auth login`) and its write access to this namespace"
    elif status == 404:
        hint = "check the repo id, the revision, and that the token can see a private repo"
    elif status in TRANSIENT_STATUS or is_transient(error):
        hint = "the Hub kept failing; re-run the same command: it resumes where it stopped"
    return HubError(where, f"{what} failed", got=short_reason(error), hint=hint)


def fetch_error(where: str, what: str, error: BaseException) -> HubError:
    """A :class:`HubError` for a failed download, naming which of the usual causes it is.

    The client's own messages start with a bare ``404 Client Error.`` line, which
    says nothing of whether the repo, the revision or the file is missing.
    """
    from huggingface_hub.errors import (
        EntryNotFoundError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(error, RepositoryNotFoundError):  # also a gated repo
        return HubError(where, f"cannot fetch the {what}: repo not found", hint="check the repo id NS/NAME, and the token (HF_TOKEN) if the repo is private")
    if isinstance(error, RevisionNotFoundError):
        return HubError(where, f"cannot fetch the {what}: revision not found", hint="give a branch, tag or commit id of this repo")
    if isinstance(error, LocalEntryNotFoundError):  # offline or unreachable, and not in the local cache
        return HubError(where, f"cannot fetch the {what}: the Hub cannot be reached and the local cache does not hold it", hint="run once online (without HF_HUB_OFFLINE=1) to fill the cache")
    if isinstance(error, EntryNotFoundError):
        return HubError(where, f"cannot fetch the {what}: no such file in the repo at this revision")
    return as_hub_error(where, f"fetch the {what}", error)


class CommitRateLimiter:
    """At most ``per_hour`` commits in any sliding hour: :meth:`wait_turn` sleeps until one is allowed."""

    def __init__(self, per_hour: int, clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep, window: float = 3600.0):
        if not (isinstance(per_hour, int) and per_hour >= 1):
            raise HubError(None, "commits per hour must be a positive integer", got=per_hour)
        self.per_hour, self.clock, self.sleep, self.window = per_hour, clock, sleep, window
        self._times: collections.deque[float] = collections.deque()

    def wait_turn(self) -> float:
        """Sleep until a commit is allowed; return the seconds slept (0 when none)."""
        now = self.clock()
        while self._times and self._times[0] <= now - self.window:
            self._times.popleft()
        if len(self._times) < self.per_hour:
            return 0.0
        wait = self._times[0] + self.window - now
        notify(f"commit cap of {self.per_hour} per hour reached; waiting {wait:.0f}s")
        self.sleep(wait)
        self._times.popleft()
        return wait

    def record(self) -> None:
        self._times.append(self.clock())
