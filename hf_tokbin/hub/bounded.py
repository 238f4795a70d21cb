"""Requests to the Hub bounded in time as a whole, and the parts of an answer read bounded in size.

The HTTP client bounds each read of an answer (``read_timeout``), never a
request as a whole: a server sending its status line, its headers or its body
a byte every few seconds holds the request as long as it likes. A
:class:`Deadline` bounds the requests made inside its ``with`` block: at its
time a timer shuts down every connection they opened, which wakes a read
blocked on it at once (closing the socket would not: the read waits for the
next byte), the read fails in its own thread, and the block ends with the
caller's error saying which bound was hit.

To know which connection a request uses, these requests go through their own
client (:func:`bounded_client`), which keeps no connection open between
requests: each request opens its own, seen through httpcore's ``trace``
extension. (huggingface_hub's shared client reuses pooled connections, which
no public API names while a request waits for its headers.) The client is
set up as huggingface_hub's default one: redirects followed (the token is
dropped on a redirect to another host), proxies and certificates from the
environment, no request at all under ``HF_HUB_OFFLINE=1``.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Callable

from ..errors import HubError, shown

_ERROR_BODY_MAX = 64 * 1024  # bytes of an error answer read for its message

_client = None
_client_lock = threading.Lock()


def bounded_client():
    """The one ``httpx2.Client`` of hf_tokbin's bounded requests:
    no keep-alive, so each request opens its own connection.
    """
    global _client
    with _client_lock:
        if _client is None:
            import httpx2

            _client = httpx2.Client(
                follow_redirects=True,
                timeout=None,
                limits=httpx2.Limits(max_keepalive_connections=0),
                event_hooks={"request": [_refuse_offline]},
            )
        return _client


def _refuse_offline(request) -> None:
    from huggingface_hub import constants
    from huggingface_hub.errors import OfflineModeIsEnabled

    if constants.is_offline_mode():
        raise OfflineModeIsEnabled(f"Cannot reach {request.url}: offline mode is enabled (HF_HUB_OFFLINE)")


def _forget_client() -> None:
    """In a forked child: the parent's client (and a lock some other thread of the parent held) are not the child's."""
    global _client, _client_lock
    _client, _client_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_client)


class Deadline:
    """At most ``seconds`` for the requests made with :meth:`stream`
    inside ``with``; past it, ``too_slow()`` is raised.

    The block ends with ``too_slow()`` whenever the deadline passed in it, whatever else it raised (a read cut
    by the shutdown shows as a dropped connection, or as the end of an answer without a length). The timer is
    cancelled when the block ends, so a fast request leaves no thread behind.
    """

    def __init__(self, seconds: float, too_slow: Callable[[], HubError]):
        self.too_slow = too_slow
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(min(seconds, threading.TIMEOUT_MAX), self._expire)
        self._timer.daemon = True

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

    def __exit__(self, kind, error, traceback) -> bool:
        self._timer.cancel()
        if self.expired and (error is None or isinstance(error, Exception)):
            raise self.too_slow() from error
        return False

    def stream(self, method: str, url: str, **kwargs):
        """``httpx2.Client.stream`` on :func:`bounded_client`, every connection it opens (redirects too) watched."""
        return bounded_client().stream(method, url, extensions={"trace": self._watch}, **kwargs)

    def _watch(self, event: str, info: dict) -> None:
        # httpcore's trace: a new connection's stream is the return value of its connect (and, for TLS, of its
        # start_tls, whose socket replaces the plain one).
        if not event.endswith((".connect_tcp.complete", ".connect_unix_socket.complete", ".start_tls.complete")):
            return
        sock = info["return_value"].get_extra_info("socket")
        if sock is None:
            return
        with self._lock:
            # the closed ones (earlier pages, redirects)
            self._sockets = [s for s in self._sockets if s.fileno() != -1]
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    """Shut the connection down under a read blocked on it in another thread; that thread closes the socket."""
    try:
        # The plain socket's shutdown, also for a TLS socket (whose own shutdown would drop its TLS state under
        # the reading thread).
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:  # already closed, or not connected any more
        pass


def raise_for_status(response) -> None:
    """``hf_raise_for_status`` on a streamed answer, reading at most ``_ERROR_BODY_MAX`` bytes of an error body."""
    if response.status_code < 400:
        return
    import httpx2
    from huggingface_hub.utils import hf_raise_for_status

    body = b""
    for chunk in response.iter_raw():
        body += chunk
        if len(body) >= _ERROR_BODY_MAX:
            break
    headers = [
        (k, v)
        for k, v in response.headers.items()
        if k.lower() not in ("content-length", "transfer-encoding", "content-encoding")
    ]
    hf_raise_for_status(
        httpx2.Response(
            response.status_code, headers=headers, content=body[:_ERROR_BODY_MAX], request=response.request
        )
    )


def read_body(response, limit: int, where: str, what: str) -> bytes:
    """The whole body of a streamed answer, refused past ``limit`` bytes (by its length before a byte is read)."""
    announced = response.headers.get("Content-Length", "")
    if announced.isdigit() and int(announced) > limit:
        raise HubError(where, f"{what} may be at most {limit:,} bytes; refused before reading", got=shown(announced))
    body = bytearray()
    for chunk in response.iter_raw():
        body += chunk
        if len(body) > limit:
            raise HubError(where, f"{what} may be at most {limit:,} bytes; stopped reading", got=f"over {limit:,}")
    return bytes(body)
