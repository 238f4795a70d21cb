"""Bounded retries of transient Hub failures, a commits-per-hour cap, and Hub errors as :class:`HubError`.

Transient: a dropped or reset connection, a timeout, HTTP 408/429/500/502/503/504,
an answer that is not the JSON it should be (a proxy's 503 page). ``hf_xet``'s
"not found" and "not allowed" errors are permanent, whatever class they come as.

A retry waits what the server asks (a 429's ``RateLimit`` header, as parsed by
``huggingface_hub.utils.parse_ratelimit_headers``, plus one second; else
``Retry-After``), or else ``base_delay`` doubled per attempt, capped by
``max_delay``. When the server asks for more than ``max_delay`` (a commit quota
that resets in an hour), the call stops with "re-run after HH:MM" instead of
holding the process. The number of attempts is bounded by ``attempts``, so no
loop here is unbounded. (``huggingface_hub.utils.http_backoff`` does not fit:
it sleeps whatever ``Retry-After`` or ``RateLimit`` reset a server sends, with
no cap, so one answer of a hostile server could hold a pull for days; and it
retries single requests, where a download here must be checked as a whole.)

Error messages carry the server's reason (``X-Error-Message`` / the JSON
``error`` field, as huggingface_hub reads them), cleaned to one printable line;
a bearer credential and anything of a token's shape (``hf_`` + 34 or more letters
and digits) are masked, ordinary ``hf_…`` names are not.

Environment (read by :meth:`RetryPolicy.from_env`, used by the command line):
``HF_TOKBIN_HUB_ATTEMPTS`` (default 5) and ``HF_TOKBIN_HUB_BACKOFF`` (seconds, default 2).
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import Callable, TypeVar

from .._io import notify  # noqa: F401 - re-exported: hub modules say things through it
from ..errors import HubError

T = TypeVar("T")
TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5  # tries per call, the first included
    base_delay: float = 2.0  # seconds before the first retry; doubles each time
    max_delay: float = 300.0  # cap on a backoff wait; a server asking for longer stops the call
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def __post_init__(self):
        if not (isinstance(self.attempts, int) and self.attempts >= 1):
            raise HubError(None, "retry attempts must be a positive integer", got=self.attempts)
        if not self.base_delay >= 0 or not self.max_delay >= 0:
            raise HubError(None, "retry delays must be non-negative", got=(self.base_delay, self.max_delay))

    @classmethod
    def from_env(cls) -> "RetryPolicy":
        return cls(
            attempts=_env_number("HF_TOKBIN_HUB_ATTEMPTS", 5, int),
            base_delay=_env_number("HF_TOKBIN_HUB_BACKOFF", 2.0, float),
        )

    def delay(self, attempt: int, error: BaseException) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based).

        Raises :class:`HubError` ("re-run after HH:MM") when the server asks for more than ``max_delay``.
        """
        asked = server_wait_seconds(error)
        if asked is None:
            return min(self.base_delay * 2 ** (attempt - 1), self.max_delay)
        if asked > self.max_delay:
            resume = datetime.datetime.now() + datetime.timedelta(seconds=asked)
            when = f"{resume:%H:%M}" if asked < 20 * 3600 else f"{resume:%Y-%m-%d %H:%M}"
            raise HubError(
                None,
                f"rate limited: {short_reason(error)}; the Hub asks to wait {asked:g}s",
                hint=f"re-run after {when} (local time): the same command resumes where it stopped",
            )
        return asked

    def pause(self, what: str, attempt: int, error: BaseException, note: str = "") -> None:
        """Say why and sleep before attempt ``attempt + 1``."""
        wait = self.delay(attempt, error)
        notify(f"{what}: {short_reason(error)}{note}; retrying in {wait:g}s (attempt {attempt + 1}/{self.attempts})")
        self.sleep(wait)


def _env_number(name: str, default, kind: type[int] | type[float]):
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return kind(raw)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise HubError(
            name, f"environment variable must be {what}", expected=f"{what} such as {default}", got=repr(raw)
        ) from None


def read_timeout_from_env() -> float:
    """Seconds any single read from the Hub (or its connection) may take: ``HF_TOKBIN_PULL_READ_TIMEOUT``, default 60.
    """
    return _env_number("HF_TOKBIN_PULL_READ_TIMEOUT", 60.0, float)


def bound_shared_client_reads() -> None:
    """Every request of ``huggingface_hub``'s shared client waits at most ``HF_TOKBIN_PULL_READ_TIMEOUT`` a read.

    Its client waits forever on a read, and ``HfApi``'s calls pass ``timeout=None``
    themselves (which overrides a client's default), so a server that stops
    answering held every call made through it (push's repo info, paths info,
    commits, uploads). A request hook fills in each timeout the request leaves
    unset; one a caller set is kept.
    """
    from huggingface_hub.utils import get_session

    hooks = get_session().event_hooks["request"]
    if _bound_request_timeouts not in hooks:
        hooks.append(_bound_request_timeouts)


def _bound_request_timeouts(request) -> None:
    seconds = read_timeout_from_env()
    timeouts = request.extensions.get("timeout") or {}
    request.extensions["timeout"] = {
        kind: seconds if timeouts.get(kind) is None else timeouts[kind]
        for kind in ("connect", "read", "write", "pool")
    }


def listing_timeout_from_env() -> float:
    """Seconds a repo's whole tree listing (every page) may take: ``HF_TOKBIN_LISTING_TIMEOUT``, default 600."""
    seconds = _env_number("HF_TOKBIN_LISTING_TIMEOUT", 600.0, float)
    if not seconds > 0:
        raise HubError(
            "HF_TOKBIN_LISTING_TIMEOUT", "environment variable must be a positive number of seconds", got=seconds
        )
    return seconds


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


def server_wait_seconds(error: BaseException) -> float | None:
    """How long the server asks us to wait: a 429's exhausted ``RateLimit`` (reset + 1 s), else ``Retry-After``."""
    response = getattr(error, "response", None)
    if response is not None and status_of(error) == 429:
        from huggingface_hub.utils import parse_ratelimit_headers

        info = parse_ratelimit_headers(response.headers)
        if info is not None and info.remaining == 0:
            return float(info.reset_in_seconds + 1)  # +1 s against rounding, as huggingface_hub's own backoff
    return retry_after_seconds(error)


def is_transient(error: BaseException) -> bool:
    """Whether trying the same call again may succeed."""
    status = status_of(error)
    if status is not None:
        return status in TRANSIENT_STATUS
    if never_reachable_hint(error) is not None:
        return False
    if _is_permanent_xet_error(error):
        return False
    if isinstance(error, json.JSONDecodeError):
        # An answer that should have been JSON and is not: a proxy's error page (huggingface_hub's
        # validate-yaml reads the body before the status, so a 503 surfaces as this).
        return True
    if isinstance(error, (ConnectionError, TimeoutError)):
        return True
    # a wrong --endpoint (ftp://, no scheme): no retry fixes it
    if isinstance(error, _transport_errors("UnsupportedProtocol")):
        return False
    return isinstance(error, _transport_errors())


_PERMANENT_XET_STATUS = re.compile(r"\b(400|401|403|404|409|410|413|422)\b")


def _is_permanent_xet_error(error: BaseException) -> bool:
    """``hf_xet`` errors that retrying cannot fix: not found, not allowed, refused.

    ``hf_xet`` raises its own ``XetObjectNotFoundError`` (a ``FileNotFoundError``) and
    ``XetAuthenticationError`` (a ``PermissionError``); older versions raised a bare
    ``ConnectionError`` whose text holds the HTTP status, which must not read as transient.
    """
    if not type(error).__module__.startswith("hf_xet"):
        return False
    if isinstance(error, (FileNotFoundError, PermissionError)):
        return True
    return _PERMANENT_XET_STATUS.search(str(error)) is not None


def _is_unreachable(error: BaseException) -> bool:
    """Whether ``error`` means the Hub could not be reached at all (offline mode, a refused or failed connection)."""
    from huggingface_hub.errors import OfflineModeIsEnabled

    return isinstance(error, (OfflineModeIsEnabled, ConnectionError, *_transport_errors("ConnectError")))


def never_reachable_hint(error: BaseException) -> str | None:
    """What to do when no retry can reach the Hub (offline mode, a host name that does not resolve), else None.

    As ``huggingface_hub`` does, these fail at once: waiting does not turn offline mode off or fix a host name.
    """
    import socket

    from huggingface_hub.errors import OfflineModeIsEnabled

    causes = list(_causes(error))
    if any(isinstance(cause, OfflineModeIsEnabled) for cause in causes):
        return "HF_HUB_OFFLINE=1 is set and this needs the Hub: run it with HF_HUB_OFFLINE=0"
    if any(isinstance(cause, socket.gaierror) for cause in causes):
        host = next(filter(None, map(_request_host, causes)), "the Hub's host")
        return (
            f"the host name {host} cannot be resolved: check the network, and the endpoint (--endpoint, HF_ENDPOINT)"
        )
    return None


def _request_host(error: BaseException) -> str | None:
    """The host an HTTP library's error was requesting, if it says."""
    try:
        return error.request.url.host or None
    except (AttributeError, RuntimeError):  # no request, or httpx's "request instance has not been set"
        return None


def _transport_errors(name: str = "TransportError") -> tuple[type[BaseException], ...]:
    """The HTTP library's connection/timeout/protocol errors (httpx2
    for huggingface_hub 2.x, httpx for 1.x), or its class ``name``.
    """
    errors = []
    for module in ("httpx2", "httpx"):
        try:
            errors.append(getattr(__import__(module), name))
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
            policy.pause(what, attempt, error)
    raise AssertionError("unreachable")  # the loop returns or raises


# A bearer credential, whatever its shape, and a Hugging Face token: "hf_" and 34 letters (the shape secret scanners
# such as gitleaks look for), taken as 34 or more letters and digits so a longer one is masked whole. Not "hf_" and
# any word: that masked hf_tokbin's own paths (/tmp/hf_***-3k2j) and left an error pointing nowhere.
_TOKEN_LIKE = re.compile(r"((?i:bearer)\s+)\S+|\bhf_[A-Za-z0-9]{34,}")
_MESSAGE_LIMIT = 300


def scrub(text: str) -> str:
    """``text`` as one printable line of bounded length, with bearer credentials and token shapes masked.

    Server messages reach the terminal: control characters (escape sequences) are dropped.
    """
    text = _TOKEN_LIKE.sub(lambda m: f"{m.group(1)}***" if m.group(1) else "hf_***", text)
    text = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 3] + "..."


def server_message(error: BaseException) -> str:
    """The server's own reason for an HTTP error (huggingface_hub
    collects it from ``X-Error-Message`` and the JSON body).
    """
    message = getattr(error, "server_message", None)
    return scrub(message) if isinstance(message, str) else ""


def short_reason(error: BaseException) -> str:
    """One line saying what went wrong (HTTP status and the server's reason, or the exception), never a token."""
    status = status_of(error)
    if status is not None:
        reason = server_message(error)
        return f"HTTP {status}: {reason}" if reason else f"HTTP {status}"
    first_line = scrub(str(error).strip().splitlines()[0]) if str(error).strip() else ""
    return f"{type(error).__name__}: {first_line}" if first_line else type(error).__name__


def as_hub_error(where: str, what: str, error: BaseException, access: str = "write") -> HubError:
    """A :class:`HubError` naming the repo/file, the failed step and the server's reason, with a hint.

    ``access`` is what the operation needs of the token: ``"write"`` (push) or ``"read"`` (pull, fetch).
    """
    from huggingface_hub.errors import GatedRepoError

    status = status_of(error)
    hint = None
    if isinstance(error, GatedRepoError):
        hint = (
            "the repo is gated: ask for access on its page on the Hub, then use a token "
            "(HF_TOKEN, `hf auth login` or --token) of the account that was granted it"
        )
    elif status in (401, 403):
        hint = f"check the token (HF_TOKEN, `hf auth login` or --token) and its {access} access to this repo"
        if access == "read":
            hint += "; a private repo needs a token that can see it"
    elif status == 404:
        hint = "check the repo id, the revision, and that the token can see a private repo"
    elif never_reachable_hint(error) is not None:
        hint = never_reachable_hint(error)
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
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(error, GatedRepoError):  # a RepositoryNotFoundError too: ask for access, not for the id
        return as_hub_error(where, f"fetch the {what}", error, access="read")
    if isinstance(error, RepositoryNotFoundError):
        return HubError(
            where,
            f"cannot fetch the {what}: repo not found",
            hint="check the repo id NS/NAME, and the token (HF_TOKEN) if the repo is private",
        )
    if isinstance(error, RevisionNotFoundError):
        return HubError(
            where, f"cannot fetch the {what}: revision not found", hint="give a branch, tag or commit id of this repo"
        )
    if isinstance(error, LocalEntryNotFoundError):  # offline or unreachable, and not in the local cache
        return HubError(
            where,
            f"cannot fetch the {what}: the Hub cannot be reached and the local cache does not hold it",
            hint="run once online (without HF_HUB_OFFLINE=1) to fill the cache",
        )
    if isinstance(error, EntryNotFoundError):
        return HubError(where, f"cannot fetch the {what}: no such file in the repo at this revision")
    return as_hub_error(where, f"fetch the {what}", error, access="read")


def _causes(error: BaseException):
    """``error`` and the exceptions it was raised from (``__cause__``, else ``__context__``), outermost first."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def _repo_absent_or_unreachable(error: BaseException) -> str | None:
    """What the Hub said of a repo it does not hold or could not be asked about, or None for any other failure."""
    from huggingface_hub.errors import GatedRepoError, LocalEntryNotFoundError, RepositoryNotFoundError

    for cause in _causes(error):
        if isinstance(cause, RepositoryNotFoundError) and not isinstance(cause, GatedRepoError):
            return "no Hub repo of this name (repo not found)"
        if isinstance(cause, LocalEntryNotFoundError):  # offline, or unreachable, and not in the local cache
            return "the Hub could not be asked for a repo of this name, and the local cache holds none"
        if _is_unreachable(cause):
            return f"the Hub could not be asked for a repo of this name ({short_reason(cause)})"
    return None


@contextlib.contextmanager
def path_or_repo(given: str):
    """Read ``given`` as a Hub repo, a name that is no local path but reads NS/NAME (``out/corpus``).

    Such a name is as likely a path typed from the wrong folder: when the repo
    is not found, or the Hub cannot be asked, the error says both readings.
    """
    try:
        yield
    except HubError as error:
        hub_reading = _repo_absent_or_unreachable(error)
        if hub_reading is None:
            raise
        rule = f"no local file or folder of this name in {os.getcwd()}, and {hub_reading}"
        hub_hint = never_reachable_hint(error) or "a private Hub repo needs a token (HF_TOKEN)"
        hint = f"run from the folder that holds the path, or give it whole; {hub_hint}"
        raise HubError(given, rule, hint=hint) from error


class CommitRateLimiter:
    """At most ``per_hour`` commits in any sliding hour: :meth:`wait_turn` sleeps until one is allowed."""

    def __init__(
        self,
        per_hour: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        window: float = 3600.0,
    ):
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

    def seed(self, ages: list[float]) -> None:
        """Count commits made ``ages`` seconds ago (by earlier runs, or anyone) as if this limiter had made them."""
        now = self.clock()
        self._times = collections.deque(sorted(now - age for age in ages if 0 <= age < self.window))
