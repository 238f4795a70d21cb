"""A pushed corpus folder read from a Hub that lies about its range requests (corpus/hub_source.py).

``build --dry-run`` reads the footer and first rows of each shard by range
requests; a server that answers one with 200 and a body of any size must not
make the client read that body.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from hostile_hub import HostileHub
from hub_server import client_env, make_corpus

pytestmark = pytest.mark.slow  # a dry run against the test server in a child process

_CLI = "import sys; from hf_tokbin.cli import main; sys.exit(main(sys.argv[1:]))"
_HUGE = 256 * 1024 * 1024  # far beyond any footer or row group of the test corpus, and any socket buffer


def streams_ended(hub, paths) -> dict[str, int]:
    """``hub.sent`` once the server has recorded every stream it began of ``paths``: it records one when it sees the
    client gone, on a thread of its own that a busy machine may run after the child has exited. Waits at most a
    minute: a bound on a wait, not a timed assertion."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        begun = {p for p in paths for _, method, path, _ in hub.requests if method == "GET" and path.endswith("/" + p)}
        if begun <= set(hub.sent):
            break
        time.sleep(0.05)
    return dict(hub.sent)


def test_a_range_request_answered_with_200_and_a_huge_body_is_refused_without_reading_it(tmp_path):
    with HostileHub() as hub:
        corpus, _ = make_corpus(tmp_path / "corpus")
        hub.seed_repo("tester/corpus", corpus)
        shards = [p for p in hub.head_files("tester/corpus") if p.endswith(".parquet")]
        for path in shards:
            hub.ranges_ignored[path] = _HUGE
        home = tmp_path / "home"
        home.mkdir()
        env = {**os.environ, **client_env(hub, home)}
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                _CLI,
                "build",
                "--corpus",
                "tester/corpus",
                "--tokenizer",
                "byte",
                "--doc-sep",
                "0",
                "--out",
                str(tmp_path / "out"),
                "--dry-run",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        sent = streams_ended(hub, shards)
    assert result.returncode == 1, result.stdout + result.stderr
    # The client hung up at the answer's status: no more than what the sockets' buffers took.
    assert sent and max(sent.values()) < 32 * 1024 * 1024, sent
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "a range request must be answered with 206" in lines[0], result.stderr
