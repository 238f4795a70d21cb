"""A Hub-protocol test server: the endpoints the unmodified ``huggingface_hub`` client uses.

Standard library only (``http.server``), bound to 127.0.0.1 on a free port.
It keeps dataset repos (and, for downloads only, model repos) in memory as real snapshots: every commit has an id
(the SHA-1 of its parent, tree and message) and its own tree, so a file can
be read back at an exact commit id, as on the Hub.

Endpoints (``{repo}`` is ``NS/NAME``, ``{rev}`` a URL-quoted branch or commit id)::

    POST /api/repos/create                                  create a repo (409 if it exists)
    GET  /api/datasets/{repo}[/revision/{rev}]              repo info: sha, siblings
    POST /api/datasets/{repo}/branch/{branch}               create a branch
    POST /api/datasets/{repo}/preupload/{rev}               upload mode per file (regular / lfs)
    POST /datasets/{repo}.git/info/lfs/objects/batch        LFS batch: where to PUT each object
    PUT  /_lfs/{oid}                                        LFS object upload (basic transfer)
    POST /_lfs/{oid}/verify                                 LFS verify (size and SHA-256)
    POST /api/datasets/{repo}/commit/{rev}                  NDJSON commit, honours parentCommit (412), create_pr
    POST /api/datasets/{repo}/paths-info/{rev}              metadata of given paths (at most PATHS_INFO_LIMIT)
    GET  /api/datasets/{repo}/tree/{rev}[/{path}]           tree listing (recursive, expand), paginated (Link)
    GET  /api/datasets/{repo}/commits/{rev}                 commit history, newest first, paginated (Link)
    GET|HEAD /datasets/{repo}/resolve/{rev}/{path}          file content (ETag, X-Repo-Commit, X-Linked-*)
    POST /api/validate-yaml                                 README metadata check (the license id, the configs)
    GET  /api/models/{repo}[/revision/{rev}]                model repo info (models are seeded, never pushed)
    GET|HEAD /{repo}/resolve/{rev}/{path}                   model file content, as for datasets

No Xet: the server never offers it, and clients must run with
``HF_HUB_DISABLE_XET=1`` (huggingface_hub uploads through Xet whenever
``hf_xet`` is installed unless that variable is set before it is imported).

Where tests depend on it, it answers as the Hub does: 401 (``RepoNotFound``) for a private
or missing repo asked without a token, 404 with a token; tree and commit listings in pages
of ``HubServer.page_size`` with a ``Link: <...>; rel="next"`` header (on the origin a test sets in
``HubServer.page_origins["tree"]`` or ``["commits"]``: a server linking another host); 400 for more than
``PATHS_INFO_LIMIT`` paths in one paths-info call; 404 (``EntryNotFound``) for a commit
deleting a file that does not exist; 400 from validate-yaml for a license id the Hub
does not know or a ``configs:`` entry ``datasets`` would not load; the server's reason in the JSON ``error`` field and
the ``X-Error-Message`` header.
``HubServer.create_payloads`` keeps every create-repo request body as sent.

Faults (:class:`Faults`) are switched on by tests; each counter fires a given number of times.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

LFS_SUFFIXES = (".bin", ".idx", ".parquet", ".arrow", ".npy", ".safetensors")
LFS_SIZE_THRESHOLD = 10 * 1024 * 1024
PATHS_INFO_LIMIT = 1000  # paths per paths-info request
PAGE_SIZE = 1000  # entries per page of a tree or commit listing
# License ids the Hub accepts in a card's metadata (a subset of https://huggingface.co/docs/hub/repositories-licenses).
KNOWN_LICENSES = frozenset(
    """apache-2.0 mit openrail bigscience-openrail-m creativeml-openrail-m bigscience-bloom-rail-1.0 bigcode-openrail-m
    afl-3.0 artistic-2.0 bsl-1.0 bsd bsd-2-clause bsd-3-clause bsd-3-clause-clear c-uda cc cc0-1.0 cc-by-2.0 cc-by-2.5
    cc-by-3.0 cc-by-4.0 cc-by-sa-3.0 cc-by-sa-4.0 cc-by-nc-2.0 cc-by-nc-3.0 cc-by-nc-4.0 cc-by-nd-4.0 cc-by-nc-nd-3.0
    cc-by-nc-nd-4.0 cc-by-nc-sa-2.0 cc-by-nc-sa-3.0 cc-by-nc-sa-4.0 cdla-sharing-1.0 cdla-permissive-1.0
    cdla-permissive-2.0 wtfpl ecl-2.0 epl-1.0 epl-2.0 etalab-2.0 eupl-1.1 eupl-1.2 agpl-3.0 gfdl gpl gpl-2.0 gpl-3.0
    lgpl lgpl-2.1 lgpl-3.0 isc h-research intel-research lppl-1.3c ms-pl apple-ascl apple-amlr mpl-2.0 odc-by odbl
    openmdw-1.0 openrail++ osl-3.0 postgresql ofl-1.1 ncsa unlicense zlib pddl lgpl-lr deepfloyd-if-license
    fair-noncommercial-research-license
    llama2 llama3 llama3.1 llama3.2 llama3.3 llama4 gemma unknown other""".split()
)
GITATTRIBUTES = "".join(f"*{s} filter=lfs diff=lfs merge=lfs -text\n" for s in LFS_SUFFIXES).encode()
_DATE = "2026-01-01T00:00:00.000Z"

TOKEN = "hf_test_secret_token_0123456789"  # the token of tests/hub/conftest.py's server and client env
REPO = "tester/release"


def cli(env, *args) -> subprocess.CompletedProcess:
    """``hf-tokbin ARGS`` in a child process with ``env`` (the client environment of a test server)."""
    code = "import sys; from hf_tokbin.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)], env=env, capture_output=True, text=True, timeout=120
    )


def git_blob_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


@dataclass
class Blob:
    """A file in a commit. Metadata is fixed when the blob is stored; ``data`` is what is served."""

    data: bytes
    lfs: bool
    size: int = 0
    sha256: str = ""
    oid: str = ""

    @classmethod
    def store(cls, data: bytes, lfs: bool) -> "Blob":
        sha = hashlib.sha256(data).hexdigest()
        oid = git_blob_oid(lfs_pointer(sha, len(data))) if lfs else git_blob_oid(data)
        return cls(data, lfs, len(data), sha, oid)

    def info(self, path: str, expand: bool, last_commit: dict | None) -> dict:
        entry = {"type": "file", "path": path, "size": self.size, "oid": self.oid}
        if self.lfs:
            entry["lfs"] = {
                "oid": self.sha256,
                "size": self.size,
                "pointerSize": len(lfs_pointer(self.sha256, self.size)),
            }
        if expand and last_commit is not None:
            entry["lastCommit"] = last_commit
        return entry


@dataclass
class Commit:
    oid: str
    parent: str | None
    message: str
    tree: dict[str, Blob]
    changed: tuple[str, ...]
    description: str = ""
    created: float = field(default_factory=time.time)  # wall clock, reported as the commit's date


@dataclass
class Repo:
    repo_id: str
    private: bool
    branches: dict[str, str] = field(default_factory=dict)
    commits: dict[str, Commit] = field(default_factory=dict)

    def resolve(self, rev: str) -> Commit | None:
        oid = self.branches.get(rev, rev)
        return self.commits.get(oid)

    def add_commit(self, branch: str, message: str, tree: dict[str, Blob], changed, description: str = "") -> Commit:
        parent = self.branches.get(branch)
        listing = sorted((p, b.oid) for p, b in tree.items())
        oid = hashlib.sha1(json.dumps([parent, message, description, listing]).encode()).hexdigest()
        commit = Commit(oid, parent, message, tree, tuple(changed), description)
        self.commits[oid] = commit
        self.branches[branch] = oid
        return commit

    def history(self, branch: str = "main") -> list[Commit]:
        """Commits from the first to the head of ``branch``."""
        out, oid = [], self.branches.get(branch)
        while oid is not None:
            out.append(self.commits[oid])
            oid = self.commits[oid].parent
        return out[::-1]


@dataclass
class Faults:
    """Failures to inject; each counter is decremented when its fault fires."""

    commit_applied_then_500: int = 0  # apply the commit, answer 500
    commit_rate_limited: int = 0  # answer 429 with Retry-After before applying
    paths_info_rate_limited: int = 0
    retry_after_seconds: int = 1
    put_fails: int = 0  # answer 500 to an LFS PUT without storing it
    paths_info_resets: int = 0  # close the connection without an answer
    stale_parent: int = 0  # another writer lands a commit just before ours
    store_flipped: set[str] = field(default_factory=set)  # paths stored with their first byte flipped
    # path -> seconds each resolve of it waits, or an event it waits for (at most 60 s), outside the lock
    slow_downloads: dict[str, float | threading.Event] = field(default_factory=dict)
    commit_lands_late: int = 0  # answer 504 without applying; apply it when the next commit request arrives
    # {"remaining": r, "reset": t, "limit": q, "window": w}: a 429 with RateLimit headers
    commit_quota: dict | None = None
    validate_yaml_unavailable: int = 0  # answer 503 with an HTML page
    commit_refused: str = ""  # answer 403 to every commit with this message (e.g. a storage limit)
    echo_authorization: bool = False  # put the request's Authorization header into error messages (a careless proxy)
    # Commits wait (outside the lock, at most gate_timeout s) until gate_after_lfs_objects LFS objects are stored:
    # shows whether the next batch uploads while a commit is
    # made. gate_timed_out says whether a commit gave up waiting.
    gate_after_lfs_objects: int = 0
    gate_timeout: float = 30.0
    gate_timed_out: bool = False
    gate: threading.Event = field(default_factory=threading.Event)


class HubServer:
    """In-memory Hub. Use as a context manager; ``url`` is the endpoint to give the client."""

    def __init__(self, token: str | None = None):
        self.token = token
        self.repos: dict[str, Repo] = {}  # dataset repos
        self.models: dict[str, Repo] = {}  # model repos (a tokenizer to download)
        self.lfs_objects: dict[str, bytes] = {}
        self.faults = Faults()
        self.page_size = PAGE_SIZE
        self.page_origins: dict[str, str] = {}  # "tree" / "commits": that listing links its next page on this origin
        self.create_payloads: list[dict] = []  # every create-repo request body, as received
        self.gated: set[str] = set()  # repo ids whose files answer 403 GatedRepo
        self._late_commit = None  # (repo_id, branch, message, description, tree, changed) of a commit not yet applied
        self.requests: list[tuple[float, str, str, int]] = []  # (time, method, path, status)
        self.lock = threading.RLock()
        self.httpd = _QuietServer(("127.0.0.1", 0), _handler_for(self))
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> "HubServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- helpers for tests -------------------------------------------------
    def repo(self, repo_id: str) -> Repo:
        return self.repos[repo_id]

    def head_files(self, repo_id: str, branch: str = "main") -> dict[str, bytes]:
        return {p: b.data for p, b in self.repos[repo_id].resolve(branch).tree.items()}

    def flip_stored_byte(self, repo_id: str, path: str, branch: str = "main") -> None:
        """Bit rot in storage: the served bytes change, the recorded metadata does not."""
        blob = self.repos[repo_id].resolve(branch).tree[path]
        blob.data = bytes([blob.data[0] ^ 0xFF]) + blob.data[1:]

    def count(self, method: str, pattern: str) -> int:
        return sum(1 for _, m, p, _ in self.requests if m == method and re.search(pattern, p))

    # -- repo operations ---------------------------------------------------
    def repos_of(self, repo_type: str) -> dict[str, Repo]:
        return self.models if repo_type == "model" else self.repos

    def create_repo(self, repo_id: str, private: bool = False, repo_type: str = "dataset") -> Repo:
        repo = Repo(repo_id, private)
        repo.add_commit(
            "main", "initial commit", {".gitattributes": Blob.store(GITATTRIBUTES, False)}, [".gitattributes"]
        )
        self.repos_of(repo_type)[repo_id] = repo
        return repo

    def seed_repo(self, repo_id: str, folder, skip: tuple[str, ...] = (), repo_type: str = "dataset") -> str:
        """Publish every file of ``folder`` (but ``skip``) in one commit, bypassing the client; return its id."""
        from pathlib import Path

        folder = Path(folder)
        repo = self.repos_of(repo_type).get(repo_id) or self.create_repo(repo_id, repo_type=repo_type)
        tree = dict(repo.resolve("main").tree)
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            name = path.relative_to(folder).as_posix()
            if name not in skip:
                data = path.read_bytes()
                tree[name] = Blob.store(data, self.upload_mode(name, len(data), data[:512]) == "lfs")
        return repo.add_commit("main", f"seed {folder.name}", tree, sorted(tree)).oid

    def land_foreign_commit(self, repo_id: str, branch: str) -> None:
        """Another writer pushes to ``branch``."""
        repo = self.repos[repo_id]
        tree = dict(repo.resolve(branch).tree)
        tree["NOTES.txt"] = Blob.store(f"pushed by someone else at {len(repo.commits)}\n".encode(), False)
        repo.add_commit(branch, "someone else's commit", tree, ["NOTES.txt"])

    def upload_mode(self, path: str, size: int, sample: bytes) -> str:
        if path.endswith(LFS_SUFFIXES) or size >= LFS_SIZE_THRESHOLD or b"\0" in sample:
            return "lfs"
        return "regular"


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up mid-answer (what the hostile tests' clients do, on purpose) is no error to print: the
    default printed its traceback to stderr from a handler thread, at whatever time, into whichever test captured
    it.
    """

    def handle_error(self, request, client_address) -> None:
        import sys

        if isinstance(sys.exc_info()[1], OSError):  # BrokenPipeError, ConnectionResetError: the client went away
            return
        super().handle_error(request, client_address)


class _Reply(Exception):
    """Raised by route handlers to answer with an error."""

    def __init__(
        self,
        status: int,
        message: str,
        headers: dict | None = None,
        extra: dict | None = None,
        body: bytes | None = None,
    ):
        self.status, self.message, self.headers, self.extra = status, message, headers or {}, extra or {}
        self.body = body  # a raw body instead of the JSON error (e.g. a proxy's HTML page)


_REPO = r"(?P<repo>[^/]+/[^/]+)"
_ROUTES = [
    ("POST", re.compile(r"^/api/repos/create$"), "create_repo"),
    ("POST", re.compile(r"^/api/validate-yaml$"), "validate_yaml"),
    ("GET", re.compile(rf"^/api/datasets/{_REPO}(?:/revision/(?P<rev>[^/]+))?$"), "repo_info"),
    ("POST", re.compile(rf"^/api/datasets/{_REPO}/branch/(?P<branch>[^/]+)$"), "create_branch"),
    ("POST", re.compile(rf"^/api/datasets/{_REPO}/preupload/(?P<rev>[^/]+)$"), "preupload"),
    ("POST", re.compile(rf"^/datasets/{_REPO}\.git/info/lfs/objects/batch$"), "lfs_batch"),
    ("PUT", re.compile(r"^/_lfs/(?P<oid>[0-9a-f]{64})$"), "lfs_put"),
    ("POST", re.compile(r"^/_lfs/(?P<oid>[0-9a-f]{64})/verify$"), "lfs_verify"),
    ("POST", re.compile(rf"^/api/datasets/{_REPO}/commit/(?P<rev>[^/]+)$"), "commit"),
    ("POST", re.compile(rf"^/api/datasets/{_REPO}/paths-info/(?P<rev>[^/]+)$"), "paths_info"),
    ("GET", re.compile(rf"^/api/datasets/{_REPO}/tree/(?P<rev>[^/]+)(?:/(?P<path>.*))?$"), "tree"),
    ("GET", re.compile(rf"^/api/datasets/{_REPO}/commits/(?P<rev>[^/]+)$"), "commits"),
    ("GET", re.compile(rf"^/datasets/{_REPO}/resolve/(?P<rev>[^/]+)/(?P<path>.+)$"), "resolve"),
    ("HEAD", re.compile(rf"^/datasets/{_REPO}/resolve/(?P<rev>[^/]+)/(?P<path>.+)$"), "resolve"),
    # Model repos have no URL prefix; these come after the dataset routes, which they cannot match.
    ("GET", re.compile(rf"^/api/models/{_REPO}(?:/revision/(?P<rev>[^/]+))?$"), "model_info"),
    ("GET", re.compile(rf"^/api/models/{_REPO}/tree/(?P<rev>[^/]+)(?:/(?P<path>.*))?$"), "model_tree"),
    ("GET", re.compile(rf"^/{_REPO}/resolve/(?P<rev>[^/]+)/(?P<path>.+)$"), "model_resolve"),
    ("HEAD", re.compile(rf"^/{_REPO}/resolve/(?P<rev>[^/]+)/(?P<path>.+)$"), "model_resolve"),
]


def _handler_for(hub: HubServer):
    class Handler(_Handler):
        server_hub = hub

    return Handler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes
    server_hub: HubServer

    def log_message(self, *args) -> None:  # keep test output quiet
        pass

    def do_GET(self):
        self._dispatch("GET")

    def do_HEAD(self):
        self._dispatch("HEAD")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    # -- plumbing ----------------------------------------------------------
    def _dispatch(self, method: str) -> None:
        hub = self.server_hub
        split = urlsplit(self.path)
        self.query = parse_qs(split.query)
        self.body = self._read_body()
        for route_method, pattern, name in _ROUTES:
            match = pattern.match(split.path)
            if route_method == method and match:
                params = {k: unquote(v) for k, v in match.groupdict().items() if v is not None}
                # a slow file; other requests go on
                if name == "resolve" and params["path"] in hub.faults.slow_downloads:
                    hold = hub.faults.slow_downloads[params["path"]]
                    hold.wait(60) if isinstance(hold, threading.Event) else time.sleep(hold)
                if (
                    name == "commit"
                    and hub.faults.gate_after_lfs_objects
                    and not hub.faults.gate.wait(hub.faults.gate_timeout)
                ):
                    hub.faults.gate_timed_out = True
                try:
                    with hub.lock:
                        status, body, headers = getattr(self, f"route_{name}")(**params)
                except _Reply as reply:
                    status, headers, message = reply.status, reply.headers, reply.message
                    if hub.faults.echo_authorization:
                        message += f" (request had Authorization: {self.headers.get('Authorization')})"
                    body = (
                        reply.body
                        if reply.body is not None
                        else json.dumps({"error": message, **reply.extra}).encode()
                    )
                    if reply.body is None:
                        headers.setdefault("X-Error-Message", message)
                except _Drop:
                    hub.requests.append((time.monotonic(), method, split.path, 0))
                    self.close_connection = True
                    self.connection.close()
                    return
                hub.requests.append((time.monotonic(), method, split.path, status))
                self._send(status, body, headers, head=method == "HEAD")
                return
        hub.requests.append((time.monotonic(), method, split.path, 404))
        self._send(404, json.dumps({"error": f"no route {method} {split.path}"}).encode(), {})

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()  # the empty line after the last chunk
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, body: bytes, headers: dict, head: bool = False) -> None:
        self.send_response(status)
        headers = {"Content-Type": "application/json", **headers}
        headers.setdefault("Content-Length", str(len(body)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _json(self) -> dict:
        return json.loads(self.body or b"{}")

    def _authorized(self) -> bool:
        token = self.server_hub.token
        return token is None or self.headers.get("Authorization") == f"Bearer {token}"

    def _require_write(self) -> None:
        if not self._authorized():
            raise _Reply(401, "Invalid credentials in Authorization header")

    def _repo(self, repo_id: str, repo_type: str = "dataset") -> Repo:
        repo = self.server_hub.repos_of(repo_type).get(repo_id)
        if repo is None or (repo.private and not self._authorized()):
            # As the Hub: without a token, a private or missing repo is a 401; with one, a 404.
            status = 404 if self.headers.get("Authorization") else 401
            raise _Reply(status, "Repository not found", {"X-Error-Code": "RepoNotFound"})
        return repo

    def _page(self, entries: list, kind: str) -> tuple[int, bytes, dict]:
        """One page of a listing, with the Hub's ``Link: <next>; rel="next"`` header when more follow."""
        start = int(self.query.get("cursor", ["0"])[0])
        size = self.server_hub.page_size
        headers = {}
        if start + size < len(entries):
            query = {k: v[0] for k, v in self.query.items()}
            query["cursor"] = str(start + size)
            headers["Link"] = (
                f"<{self.server_hub.page_origins.get(kind, self.server_hub.url)}"
                f"{urlsplit(self.path).path}?{urlencode(query)}>; "
                'rel="next"'
            )
        return 200, json.dumps(entries[start : start + size]).encode(), headers

    def _commit(self, repo: Repo, rev: str) -> Commit:
        commit = repo.resolve(rev)
        if commit is None:
            raise _Reply(404, f"Invalid rev id: {rev}", {"X-Error-Code": "RevisionNotFound"})
        return commit

    @staticmethod
    def _ok(obj) -> tuple[int, bytes, dict]:
        return 200, json.dumps(obj).encode(), {}

    def _last_commit(self, commit: Commit) -> dict:
        return {"id": commit.oid, "title": commit.message, "date": _DATE}

    # -- routes ------------------------------------------------------------
    def route_create_repo(self):
        self._require_write()
        payload = self._json()
        self.server_hub.create_payloads.append(payload)
        repo_id = f"{payload.get('organization')}/{payload['name']}"
        if payload.get("type") != "dataset":
            raise _Reply(400, "this test server holds dataset repos only")
        if repo_id in self.server_hub.repos:
            raise _Reply(
                409,
                "You already created this dataset repo",
                extra={"url": f"{self.server_hub.url}/datasets/{repo_id}"},
            )
        private = payload.get("visibility") == "private" or bool(payload.get("private"))
        self.server_hub.create_repo(repo_id, private)
        return self._ok({"url": f"{self.server_hub.url}/datasets/{repo_id}", "name": repo_id})

    def route_validate_yaml(self):
        faults = self.server_hub.faults
        if faults.validate_yaml_unavailable > 0:
            faults.validate_yaml_unavailable -= 1
            raise _Reply(
                503,
                "unavailable",
                {"Content-Type": "text/html"},
                body=b"<html><body>503 Service Temporarily Unavailable</body></html>",
            )
        content = self._json().get("content", "")
        license_id = _card_license(content)
        if license_id is not None and license_id not in KNOWN_LICENSES:
            message = f'"license" must be one of the Hub\'s license ids (got "{license_id}")'
            return 400, json.dumps({"errors": [{"message": message}], "warnings": []}).encode(), {}
        configs_error = _card_configs_error(content)
        if configs_error is not None:
            return 400, json.dumps({"errors": [{"message": configs_error}], "warnings": []}).encode(), {}
        return self._ok({"errors": [], "warnings": []})

    def route_repo_info(self, repo, rev="main", repo_type="dataset"):
        r = self._repo(repo, repo_type)
        commit = self._commit(r, rev)
        siblings = [{"rfilename": p} for p in sorted(commit.tree)]
        return self._ok(
            {
                "id": repo,
                "sha": commit.oid,
                "private": r.private,
                "siblings": siblings,
                "tags": [],
                "lastModified": _DATE,
            }
        )

    def route_create_branch(self, repo, branch):
        self._require_write()
        r = self._repo(repo)
        if branch in r.branches:
            raise _Reply(409, "Reference already exists")
        start = self._commit(r, self._json().get("startingPoint") or "main")
        r.branches[branch] = start.oid
        return self._ok({})

    def route_preupload(self, repo, rev):
        self._require_write()
        r = self._repo(repo)
        commit = self._commit(r, rev)
        files = []
        for f in self._json()["files"]:
            sample = base64.b64decode(f["sample"])
            mode = self.server_hub.upload_mode(f["path"], f["size"], sample)
            existing = commit.tree.get(f["path"])
            oid = None if existing is None else (existing.sha256 if existing.lfs else existing.oid)
            files.append({"path": f["path"], "uploadMode": mode, "shouldIgnore": False, "oid": oid})
        return self._ok({"files": files, "commitOid": commit.oid})

    def route_lfs_batch(self, repo):
        self._require_write()
        self._repo(repo)
        payload = self._json()
        if "basic" not in payload.get("transfers", ["basic"]):
            raise _Reply(400, "only the basic transfer is offered")
        objects = []
        for obj in payload["objects"]:
            entry = {"oid": obj["oid"], "size": obj["size"], "authenticated": True}
            if obj["oid"] not in self.server_hub.lfs_objects:
                href = f"{self.server_hub.url}/_lfs/{obj['oid']}"
                entry["actions"] = {
                    "upload": {"href": href, "header": {}},
                    "verify": {"href": f"{href}/verify", "header": {}},
                }
            objects.append(entry)
        return self._ok({"transfer": "basic", "objects": objects})

    def route_lfs_put(self, oid):
        faults = self.server_hub.faults
        if faults.put_fails > 0:
            faults.put_fails -= 1
            raise _Reply(500, "injected: storage write failed")
        self.server_hub.lfs_objects[oid] = self.body
        if faults.gate_after_lfs_objects and len(self.server_hub.lfs_objects) >= faults.gate_after_lfs_objects:
            faults.gate.set()
        return 200, b"", {"ETag": '"stored"'}

    def route_lfs_verify(self, oid):
        data = self.server_hub.lfs_objects.get(oid)
        payload = self._json()
        if data is None or hashlib.sha256(data).hexdigest() != oid or len(data) != payload.get("size"):
            self.server_hub.lfs_objects.pop(oid, None)
            raise _Reply(422, f"LFS object {oid} does not match its size or sha256")
        return self._ok({})

    def route_commit(self, repo, rev):
        self._require_write()
        hub, faults = self.server_hub, self.server_hub.faults
        r = self._repo(repo)
        if rev not in r.branches:
            raise _Reply(404, f"Invalid rev id: {rev}", {"X-Error-Code": "RevisionNotFound"})
        if faults.commit_refused:
            raise _Reply(403, faults.commit_refused)
        if faults.commit_rate_limited > 0:
            faults.commit_rate_limited -= 1
            raise _Reply(429, "injected: too many commits", {"Retry-After": str(faults.retry_after_seconds)})
        if faults.commit_quota is not None:
            q = faults.commit_quota
            faults.commit_quota = None
            headers = {
                "RateLimit": f'"commits";r={q["remaining"]};t={q["reset"]}',
                "RateLimit-Policy": f'"fixed window";"commits";q={q["limit"]};w={q["window"]}',
            }
            raise _Reply(429, "You have exceeded the rate limit for repository commits", headers)
        if hub._late_commit is not None:
            late, hub._late_commit = hub._late_commit, None
            hub.repos[late[0]].add_commit(*late[1:])
        lines = [json.loads(line) for line in self.body.splitlines() if line.strip()]
        header = next(line["value"] for line in lines if line["key"] == "header")
        if faults.stale_parent > 0:
            faults.stale_parent -= 1
            hub.land_foreign_commit(repo, rev)
        head = r.branches[rev]
        if header.get("parentCommit") not in (None, head):
            raise _Reply(
                412,
                "A commit has happened since. Please refresh and try again. "
                f"(expected parent {header['parentCommit']}, head is {head})",
            )
        tree, changed = dict(r.commits[head].tree), []
        for line in lines:
            key, value = line["key"], line["value"]
            if key == "file":
                data = base64.b64decode(value["content"])
                tree[value["path"]] = Blob.store(self._maybe_flip(value["path"], data), False)
            elif key == "lfsFile":
                data = hub.lfs_objects.get(value["oid"])
                if data is None:
                    raise _Reply(422, f"LFS object {value['oid']} of {value['path']} was never uploaded")
                tree[value["path"]] = Blob.store(self._maybe_flip(value["path"], data), True)
            elif key == "deletedFile":
                if value["path"] not in tree:
                    raise _Reply(
                        404, f"A file with this name doesn't exist: {value['path']}", {"X-Error-Code": "EntryNotFound"}
                    )
                del tree[value["path"]]
            elif key == "deletedFolder":
                prefix = value["path"].rstrip("/") + "/"
                tree = {p: b for p, b in tree.items() if not p.startswith(prefix)}
            elif key != "header":
                raise _Reply(400, f"unknown commit operation {key}")
            if key != "header":
                changed.append(value["path"])
        summary, description = header.get("summary", ""), header.get("description", "")
        if faults.commit_lands_late > 0:
            faults.commit_lands_late -= 1
            hub._late_commit = (repo, rev, summary, tree, changed, description)
            raise _Reply(504, "Gateway Timeout")
        pr_url = None
        if self.query.get("create_pr", ["0"])[0] in ("1", "true", "True"):
            number = 1 + sum(1 for b in r.branches if b.startswith("refs/pr/"))
            rev = f"refs/pr/{number}"
            r.branches[rev] = head
            pr_url = f"{hub.url}/datasets/{repo}/discussions/{number}"
        commit = r.add_commit(rev, summary, tree, changed, description)
        if faults.commit_applied_then_500 > 0:
            faults.commit_applied_then_500 -= 1
            raise _Reply(500, "injected: internal error after the commit was applied")
        url = f"{hub.url}/datasets/{repo}/commit/{commit.oid}"
        return self._ok({"commitUrl": url, "commitOid": commit.oid, "pullRequestUrl": pr_url, "success": True})

    def _maybe_flip(self, path: str, data: bytes) -> bytes:
        flipped = self.server_hub.faults.store_flipped
        if path in flipped and data:
            return bytes([data[0] ^ 0xFF]) + data[1:]
        return data

    def route_paths_info(self, repo, rev):
        faults = self.server_hub.faults
        if faults.paths_info_resets > 0:
            faults.paths_info_resets -= 1
            raise _Drop()
        if faults.paths_info_rate_limited > 0:
            faults.paths_info_rate_limited -= 1
            raise _Reply(429, "injected: slow down", {"Retry-After": str(faults.retry_after_seconds)})
        commit = self._commit(self._repo(repo), rev)
        form = parse_qs(self.body.decode())
        expand = form.get("expand", ["False"])[0].lower() == "true"
        if len(form.get("paths", [])) > PATHS_INFO_LIMIT:
            raise _Reply(400, f"Too many paths: at most {PATHS_INFO_LIMIT} per request")
        out = []
        for path in form.get("paths", []):
            if path in commit.tree:
                out.append(commit.tree[path].info(path, expand, self._last_commit(commit)))
            elif any(p.startswith(path.rstrip("/") + "/") for p in commit.tree):
                out.append({"type": "directory", "path": path.rstrip("/"), "oid": _tree_oid(commit, path)})
        return self._ok(out)

    def route_tree(self, repo, rev, path="", repo_type="dataset"):
        commit = self._commit(self._repo(repo, repo_type), rev)
        recursive = self.query.get("recursive", ["false"])[0].lower() == "true"
        expand = self.query.get("expand", ["false"])[0].lower() == "true"
        prefix = path.strip("/") + "/" if path.strip("/") else ""
        if prefix and not any(p.startswith(prefix) for p in commit.tree):
            raise _Reply(404, f"{path} does not exist", {"X-Error-Code": "EntryNotFound"})
        files, folders = [], set()
        for p in sorted(commit.tree):
            if not p.startswith(prefix):
                continue
            rest = p[len(prefix) :].split("/")
            for depth in range(1, len(rest)):
                if recursive or depth == 1:
                    folders.add(prefix + "/".join(rest[:depth]))
            if recursive or len(rest) == 1:
                files.append(commit.tree[p].info(p, expand, self._last_commit(commit)))
        entries = [{"type": "directory", "path": f, "oid": _tree_oid(commit, f)} for f in sorted(folders)]
        return self._page(entries + files, "tree")

    def route_commits(self, repo, rev):
        r = self._repo(repo)
        oid = self._commit(r, rev).oid
        history = []
        while oid is not None:
            c = r.commits[oid]
            date = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(c.created)) + f".{int(c.created % 1 * 1000):03d}Z"
            history.append(
                {
                    "id": c.oid,
                    "authors": [{"user": "tester"}],
                    "date": date,
                    "title": c.message,
                    "message": c.description,
                }
            )
            oid = c.parent
        return self._page(history, "commits")

    def route_model_info(self, repo, rev="main"):
        return self.route_repo_info(repo, rev, "model")

    def route_model_tree(self, repo, rev, path=""):
        return self.route_tree(repo, rev, path, "model")

    def route_model_resolve(self, repo, rev, path):
        return self.route_resolve(repo, rev, path, "model")

    def route_resolve(self, repo, rev, path, repo_type="dataset"):
        if repo in self.server_hub.gated:
            raise _Reply(
                403, "Access to this repo is restricted: ask for access on its page", {"X-Error-Code": "GatedRepo"}
            )
        commit = self._commit(self._repo(repo, repo_type), rev)
        blob = commit.tree.get(path)
        if blob is None:
            raise _Reply(
                404, f"Entry not found: {path}", {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": commit.oid}
            )
        headers = {"X-Repo-Commit": commit.oid, "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
        if blob.lfs:
            headers.update(
                {"ETag": f'"{blob.sha256}"', "X-Linked-Etag": f'"{blob.sha256}"', "X-Linked-Size": str(blob.size)}
            )
        else:
            headers["ETag"] = f'"{blob.oid}"'
        data, status = blob.data, 200
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if match:
            start = int(match.group(1))
            end = int(match.group(2)) if match.group(2) else len(data) - 1
            data, status = data[start : end + 1], 206
            headers["Content-Range"] = f"bytes {start}-{start + len(data) - 1}/{len(blob.data)}"
        return status, data, headers


def _card_license(content: str) -> str | None:
    """The ``license:`` of a card's YAML front matter, when it has one (a plain ``key: value`` line)."""
    match = re.match(r"---\n(.*?)\n---", content, re.S)
    if match is None:
        return None
    for line in match.group(1).splitlines():
        if line.startswith("license:"):
            return line.split(":", 1)[1].strip().strip("'\"")
    return None


def _card_configs_error(content: str) -> str | None:
    """Why the card's ``configs:`` would not load, by ``datasets``' own rule for them (a name per config, data_files
    as a pattern, a list of them or split/path pairs, one default at most); None when it has none or they load."""
    import yaml
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCardData

    match = re.match(r"---\n(.*?)\n---", content, re.S)
    metadata = yaml.safe_load(match.group(1)) if match else None
    if not isinstance(metadata, dict) or "configs" not in metadata:
        return None
    try:
        MetadataConfigs.from_dataset_card_data(DatasetCardData(**metadata))
    except (ValueError, TypeError, AttributeError) as e:
        return f'"configs": {str(e).strip().splitlines()[0]}'
    defaults = [c for c in metadata["configs"] if isinstance(c, dict) and c.get("default")]
    return '"configs": at most one config may be the default' if len(defaults) > 1 else None


class _Drop(Exception):
    """Raised by a route to drop the connection without answering (a connection reset)."""


def _tree_oid(commit: Commit, folder: str) -> str:
    prefix = folder.rstrip("/") + "/"
    listing = sorted((p, b.oid) for p, b in commit.tree.items() if p.startswith(prefix))
    return hashlib.sha1(json.dumps(listing).encode()).hexdigest()


def client_env(server: HubServer, home, token: str | None = None) -> dict[str, str]:
    """Environment for a process running the real client against ``server``."""
    env = {
        "HF_ENDPOINT": server.url,
        "HF_HOME": str(home),
        "HF_HUB_DISABLE_XET": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "HF_DATASETS_CACHE": str(home / "datasets"),
        "HF_HUB_OFFLINE": "0",
        "HF_DATASETS_OFFLINE": "0",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    if token is not None:
        env["HF_TOKEN"] = token
    return env


# -- fixtures: tiny releases and corpora, written with the project's own writers -------------------


def make_verified_release(root, parts: int = 3, card: bool = True, seed: int = 0):
    """A release ``verify`` accepts (push runs every verify rule first): a byte-tokenizer build of ``parts`` train
    shards (part N is shards/train/part-00000N), without its card unless ``card``; ``seed`` varies the stories."""
    from pathlib import Path

    from release_fixtures import stories, write_corpus

    from hf_tokbin.pipeline import build, plan_build
    from hf_tokbin.tokenizer import resolve_tokenizer

    root = Path(root)
    shards = [("train", stories(4 + i, seed=seed * 100 + i)) for i in range(parts)]
    corpus = write_corpus(root.parent / f".{root.name}-corpus", shards, name="tinystories-mini")
    build(plan_build(corpus, resolve_tokenizer("byte", tokenizer_id="byte-test", doc_sep_id=0), root), progress=False)
    if not card:
        (root / "README.md").unlink()
        write_complete(root)
    return root


def make_release(
    root,
    parts: int = 3,
    vocab_size: int = 300,
    eod_id: int = 0,
    card: bool = True,
    seed: int = 0,
    corpus_source: str = "local",
):
    """A small Megatron release: ``parts`` parts (part 1 has no validation pair), receipts, stats,
    run_config.json (written by the build's own BuildPlan.run_config; the corpus came from
    ``corpus_source``), the dataset card (when ``card``) and COMPLETE.json listing every other file."""
    import random
    from pathlib import Path

    from hf_tokbin._io import write_json_atomic
    from hf_tokbin.cards.release import render_release_card
    from hf_tokbin.formats.megatron import MegatronWriter
    from hf_tokbin.formats.records import FileEntry
    from hf_tokbin.formats.release import Receipt, SplitCounts, pair_path, part_name

    root = Path(root)
    rng = random.Random(seed)
    totals: dict[str, dict[str, int]] = {}
    for index in range(parts):
        part = part_name(index)
        splits, files = {}, []
        for split in ("train", "validation"):
            if split == "validation" and index == 1:
                continue  # a part with no validation document has no validation pair
            docs = [
                [rng.randrange(1, vocab_size) for _ in range(rng.randrange(1, 40))] for _ in range(rng.randrange(2, 6))
            ]
            writer = MegatronWriter(root / pair_path(split, part, "bin"), vocab_size, eod_id)
            for doc in docs:
                writer.add_document(doc)
            pair = writer.close()
            files += [
                FileEntry(pair_path(split, part, "bin"), pair.bin_size, pair.bin_sha256),
                FileEntry(pair_path(split, part, "idx"), pair.idx_size, pair.idx_sha256),
            ]
            counts = SplitCounts(len(docs), sum(map(len, docs)), len(docs))
            splits[split] = counts
            row = totals.setdefault(split, {})
            for key, value in counts.to_dict().items():
                row[key] = row.get(key, 0) + value
        shard = FileEntry(f"data/train-{index:05d}.parquet", 1000 + index, f"{index:064x}")
        Receipt(part, shard, splits, tuple(sorted(files, key=lambda f: f.path))).write(root)
    for row in totals.values():
        row["total_tokens"] = row["text_tokens"] + row["eod_tokens"]
    write_json_atomic(root / "stats.json", {"splits": totals, "sources": {"tinystories": totals}})
    write_json_atomic(root / "run_config.json", _release_run_config(root, parts, vocab_size, eod_id, corpus_source))
    if card:
        (root / "README.md").write_text(render_release_card(root), encoding="utf-8")
    write_complete(root)
    return root


def _release_run_config(root, parts: int, vocab_size: int, eod_id: int, corpus_source: str) -> dict:
    """run_config.json as a Megatron build of a ``parts``-shard corpus with a byte-like tokenizer writes it."""
    from hf_tokbin.formats.corpus_manifest import CorpusManifest, CorpusShard
    from hf_tokbin.pipeline import BuildOptions, BuildPlan
    from hf_tokbin.tokenizer import TokenizerInfo

    shards = tuple(CorpusShard(f"data/train-{i:05d}.parquet", "train", 5, 1000 + i, f"{i:064x}") for i in range(parts))
    corpus = CorpusManifest("tinystories-mini", "sha256", (), shards, "cdla-sharing-1.0", ("en",))
    tokenizer = TokenizerInfo("byte-test", "ab" * 32, vocab_size, eod_id, "local", None, None, None)
    revision = None if corpus_source == "local" else "c0" * 20
    plan = BuildPlan(
        corpus_root="corpus",
        corpus=corpus,
        corpus_manifest_sha256="cd" * 32,
        corpus_source=corpus_source,
        corpus_revision=revision,
        tokenizer=tokenizer,
        out=str(root),
        options=BuildOptions(formats=("megatron",)),
    )
    return plan.run_config()


def write_complete(root) -> None:
    """(Re)write COMPLETE.json from the files in ``root``."""
    from pathlib import Path

    from hf_tokbin._io import sha256_file
    from hf_tokbin.formats.records import FileEntry
    from hf_tokbin.formats.release import COMPLETE_NAME, Complete

    root = Path(root)
    paths = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and p.name != COMPLETE_NAME)
    Complete(tuple(FileEntry(p, (root / p).stat().st_size, sha256_file(root / p)) for p in paths)).write(root)


def make_corpus(root, name: str = "mini"):
    """A raw corpus folder: two Parquet shards, _MANIFEST.json and a card whose configs load both splits."""
    from pathlib import Path

    import pyarrow as pa
    import pyarrow.parquet as pq

    from hf_tokbin._io import sha256_file
    from hf_tokbin.formats.corpus_manifest import CorpusManifest, CorpusShard

    root = Path(root)
    (root / "data").mkdir(parents=True)
    rows = {"train": [f"story {i}: once upon a time" for i in range(7)], "validation": ["the end", "another end"]}
    shards = []
    for split, texts in rows.items():
        path = f"data/{split}-00000.parquet"
        pq.write_table(pa.table({"text": texts, "split": [split] * len(texts)}), root / path)
        shards.append(CorpusShard(path, split, len(texts), (root / path).stat().st_size, sha256_file(root / path)))
    CorpusManifest(name, "files", (), tuple(shards)).write(root)
    (root / "README.md").write_text(
        "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: data/train-*.parquet\n"
        "  - split: validation\n    path: data/validation-*.parquet\n---\n\n# mini corpus\n",
        encoding="utf-8",
    )
    return root, rows


__all__ = [
    "HubServer",
    "Faults",
    "Blob",
    "client_env",
    "git_blob_oid",
    "make_release",
    "make_corpus",
    "write_complete",
]
