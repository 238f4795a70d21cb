"""A Hub-protocol server that plays the attacker, and a release that passes ``hf-tokbin verify``.

:class:`HostileHub` is :class:`hub_server.HubServer` (bound to 127.0.0.1) with
its request handler subclassed; switches set by a test make it lie:

- ``reported_sha``: the commit id repo info and downloads report (``/../victim``, terminal escapes);
  requests at that "revision" are answered from the head of main, as an attacker's server would;
- ``oversize[path] = n``: serve ``n`` bytes of zeros for ``path``, without a length, until the client hangs up;
- ``ranges_ignored[path] = n``: answer a range request for
  ``path`` with 200 and ``n`` bytes of zeros, without a length;
- ``trickle[path] = s``: serve ``path`` one byte every ``s`` seconds;
- ``later_answers[path] = data``: serve ``path`` as stored to the first GET, ``data`` to every later one
  (a server that answers a second read of a file differently from the first);
- ``trickle_headers[path] = s``: send the status line and headers of ``path``'s answer one byte every ``s`` seconds;
- ``fail[path] = n``: answer the next ``n`` downloads of ``path`` with HTTP 500; ``fail_tree = n``: the next ``n``
  tree listings with HTTP 503;
- ``trickle_error[path] = s``: answer downloads of ``path`` with
  HTTP 500 whose error body comes one byte every ``s`` seconds;
- ``deny = (status, error_code, message)``: answer every repo-info call with that error;
  ``trickle_repo_info = s``: send its answer one byte every ``s`` seconds;
- ``endless_tree``: every tree page links a next one, forever; ``tree_delay = s``: each tree page waits ``s``
  seconds before it is answered; ``trickle_tree = s``: each tree page's body comes one byte every ``s`` seconds;
- ``planted_tree_entries``: entries added to every tree page, whatever folder was listed (``../x``, ``b/y``);
  ``tree_link``: the ``Link`` header of every tree page (a next page that is no URL);
- ``gate(n)``: hold downloads (but ``COMPLETE.json``'s) until ``n`` are in flight at once, then let all through;
  ``gate_opened`` says whether that happened (proves ``n`` parallel downloads without a timed assertion).

``sent[path]`` counts the bytes actually written for the streaming faults.
"""

from __future__ import annotations

import json
import threading
import time
from urllib.parse import urlencode, urlsplit

from hub_server import HubServer, _Handler, _Reply

_STREAM_CHUNK = 64 * 1024


class _Stream:
    """A body written by :meth:`_HostileHandler._send` piece by piece, outside the server lock."""

    def __init__(self, path: str, total: int, data: bytes | None = None, delay: float = 0.0, head_delay: float = 0.0):
        self.path, self.total, self.data, self.delay = path, total, data, delay
        self.head_delay = head_delay  # seconds before each byte of the status line and headers (0: sent at once)

    def pieces(self):
        if self.data is None:  # zeros, as many as asked, never held in memory at once
            sent = 0
            while sent < self.total:
                piece = b"\0" * min(_STREAM_CHUNK, self.total - sent)
                sent += len(piece)
                yield piece
        else:
            for i in range(len(self.data)):
                time.sleep(self.delay)
                yield self.data[i : i + 1]


class HostileHub(HubServer):
    def __init__(self, token: str | None = None):
        super().__init__(token=token)
        self.reported_sha: str | None = None
        self.oversize: dict[str, int] = {}
        self.ranges_ignored: dict[str, int] = {}
        self.trickle: dict[str, float] = {}
        self.trickle_headers: dict[str, float] = {}
        self.trickle_error: dict[str, float] = {}
        self.fail: dict[str, int] = {}
        self.deny: tuple[int, str | None, str] | None = None
        self._gate: int | None = None
        self._in_flight = 0
        self._gate_timeout = 0.0
        self.gate_opened = threading.Event()
        self.sent: dict[str, int] = {}
        self.fail_tree = 0  # answer the next n tree listings with HTTP 503
        self.later_answers: dict[str, bytes] = {}
        self.answered: set[str] = set()  # paths later_answers has served once
        self.endless_tree = False  # every tree page links a next one, forever
        self.tree_delay: float | None = None  # seconds each tree page waits before it is answered
        self.trickle_tree: float | None = None  # seconds before each byte of a tree page's body
        self.planted_tree_entries: list[dict] = []  # added to every tree page, whatever folder was listed
        self.tree_link: str | None = None  # the Link header of every tree page
        self.stall_repo_info: float | None = None  # seconds the repo-info call waits before it answers
        self.trickle_repo_info: float | None = None  # seconds before each byte of the repo-info answer
        self.httpd.RequestHandlerClass = type("Handler", (_HostileHandler,), {"server_hub": self})

    def gate(self, n: int, timeout: float = 20.0) -> None:
        self._gate, self._gate_timeout = n, timeout

    def _wait_at_gate(self) -> None:
        with self.lock:
            self._in_flight += 1
            if self._in_flight >= self._gate:
                self.gate_opened.set()
        self.gate_opened.wait(self._gate_timeout)  # on time-out the download goes on; gate_opened stays unset
        with self.lock:
            self._in_flight -= 1

    def downloads(self, commit: str) -> list[str]:
        """Paths fetched with GET at ``commit`` so far, in order."""
        marker = f"/resolve/{commit}/"
        return [p.split(marker, 1)[1] for _, m, p, _ in self.requests if m == "GET" and marker in p]


class _HostileHandler(_Handler):
    server_hub: HostileHub

    def route_repo_info(self, repo, rev="main", repo_type="dataset"):
        hub = self.server_hub
        if hub.stall_repo_info is not None:
            time.sleep(hub.stall_repo_info)
        if hub.deny is not None:
            status, code, message = hub.deny
            raise _Reply(status, message, {"X-Error-Code": code} if code else {})
        status, body, headers = super().route_repo_info(repo, rev, repo_type)
        if hub.reported_sha is not None:
            info = json.loads(body)
            info["sha"] = hub.reported_sha
            body = json.dumps(info).encode()
        if hub.trickle_repo_info is not None:
            return (
                status,
                _Stream("repo-info", len(body), body, hub.trickle_repo_info),
                {**headers, "Content-Type": "application/json", "Content-Length": str(len(body))},
            )
        return status, body, headers

    def route_tree(self, repo, rev, path="", repo_type="dataset"):
        hub = self.server_hub
        if hub.fail_tree > 0:
            hub.fail_tree -= 1
            raise _Reply(503, "injected: tree listing unavailable")
        if hub.endless_tree:
            cursor = int(self.query.get("cursor", ["0"])[0])
            entries = [
                {"type": "file", "path": f"junk/{cursor:09d}/{i:04d}.bin", "size": 1, "oid": "0" * 40}
                for i in range(1000)
            ]
            query = {**{k: v[0] for k, v in self.query.items()}, "cursor": str(cursor + 1)}
            status, body, headers = (
                200,
                json.dumps(entries).encode(),
                {"Link": f'<{hub.url}{urlsplit(self.path).path}?{urlencode(query)}>; rel="next"'},
            )
        else:
            status, body, headers = super().route_tree(repo, rev, path, repo_type)
        if hub.planted_tree_entries:
            body = json.dumps(json.loads(body) + hub.planted_tree_entries).encode()
        if hub.tree_link is not None:
            headers = {**headers, "Link": hub.tree_link}
        if hub.trickle_tree is not None:
            return (
                status,
                _Stream("tree", len(body), body, hub.trickle_tree),
                {**headers, "Content-Type": "application/json", "Content-Length": str(len(body))},
            )
        return status, body, headers

    def _commit(self, repo, rev):
        if rev == self.server_hub.reported_sha:
            rev = "main"
        return super()._commit(repo, rev)

    def route_resolve(self, repo, rev, path, repo_type="dataset"):
        hub = self.server_hub
        if hub.fail.get(path, 0) > 0:
            hub.fail[path] -= 1
            raise _Reply(500, "injected: storage unavailable")
        if path in hub.trickle_error:
            error = json.dumps({"error": "injected: storage unavailable " + "." * 200}).encode()
            return (
                500,
                _Stream(path, len(error), error, hub.trickle_error[path]),
                {"Content-Type": "application/json", "Content-Length": str(len(error))},
            )
        status, body, headers = super().route_resolve(repo, rev, path, repo_type)
        if hub.reported_sha is not None:
            headers["X-Repo-Commit"] = hub.reported_sha
        if path in hub.oversize:
            headers.pop("Content-Length", None)
            return status, _Stream(path, hub.oversize[path]), headers
        if path in hub.ranges_ignored and status == 206:
            headers.pop("Content-Range", None)
            return 200, _Stream(path, hub.ranges_ignored[path]), headers
        if path in hub.later_answers and self.command == "GET" and status == 200:
            if path in hub.answered:
                body = hub.later_answers[path]
                headers = {**headers, "Content-Length": str(len(body))}
            hub.answered.add(path)
        if path in hub.trickle:
            return (
                status,
                _Stream(path, len(body), body, hub.trickle[path]),
                {**headers, "Content-Length": str(len(body))},
            )
        if path in hub.trickle_headers:
            return (
                status,
                _Stream(path, len(body), body, head_delay=hub.trickle_headers[path]),
                {**headers, "Content-Length": str(len(body))},
            )
        return status, body, headers

    def _dispatch(self, method):
        hub = self.server_hub
        if (
            hub._gate is not None
            and method == "GET"
            and "/resolve/" in self.path
            and not self.path.endswith("/COMPLETE.json")
        ):
            hub._wait_at_gate()
        if hub.tree_delay is not None and method == "GET" and "/tree/" in self.path:
            time.sleep(hub.tree_delay)  # outside the server lock: other requests go on
        super()._dispatch(method)

    def _send(self, status, body, headers, head=False):
        if not isinstance(body, _Stream):
            return super()._send(status, body, headers, head)
        headers = {"Content-Type": "application/octet-stream", **headers}
        if "Content-Length" not in headers:
            headers["Connection"] = "close"  # the body ends when the connection does
        self.close_connection = True
        sent = 0
        try:
            if body.head_delay:
                lines = [
                    f"{self.protocol_version} {status} {self.responses[status][0]}",
                    *(f"{k}: {v}" for k, v in headers.items()),
                ]
                for byte in ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"):
                    time.sleep(body.head_delay)
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
            else:
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
            for piece in body.pieces():
                self.wfile.write(piece)
                self.wfile.flush()
                sent += len(piece)
        except OSError:  # the client hung up, as it should
            pass
        finally:
            self.server_hub.sent[body.path] = self.server_hub.sent.get(body.path, 0) + sent
