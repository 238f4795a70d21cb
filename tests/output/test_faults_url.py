"""``build --out URL`` whose endpoint cannot be reached: one line naming the URL, never a traceback.

The endpoints are loopback ports nothing listens on. ``hf://buckets/...``
goes through huggingface_hub (httpx2), ``http://`` through fsspec's
HTTPFileSystem (aiohttp): the two HTTP libraries whose connection errors are
neither a TokbinError nor (for httpx2) an OSError.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from release_fixtures import stories, write_corpus

from hf_tokbin.cli import main
from hf_tokbin.errors import BuildError
from hf_tokbin.output import UrlFolder
from hf_tokbin.output.url import connection_errors
from hf_tokbin.tokenizer import train_bpe

RULE = "--out URL must be reachable: expected its storage endpoint answering, got "


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("unreachable")
    train_bpe(stories(200, seed=1), 400, root / "tok")
    write_corpus(root / "corpus", [("train", stories(50, seed=2)), ("validation", stories(20, seed=3))])
    return root


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def build_args(inputs: Path, out: str) -> list[str]:
    return ["build", "--corpus", str(inputs / "corpus"), "--tokenizer", str(inputs / "tok"), "--out", out, "--quiet"]


def test_hf_bucket_url_at_a_closed_endpoint_is_one_line_naming_the_url(inputs, tmp_path):
    # huggingface_hub reads HF_ENDPOINT at import: a fresh process, as a user runs it.
    url = "hf://buckets/someone/bucket/release"
    env = {
        **os.environ,
        "HF_ENDPOINT": f"http://127.0.0.1:{closed_port()}",
        "HF_TOKEN": "hf_test",
        "HF_TOKBIN_CACHE": str(tmp_path / "cache"),
    }
    process = subprocess.run(
        [sys.executable, "-m", "hf_tokbin", *build_args(inputs, url)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert process.returncode == 1, process.stderr
    lines = process.stderr.strip().splitlines()
    assert len(lines) == 1, process.stderr
    assert lines[0].startswith(f"hf-tokbin build: error: {url}: {RULE}ConnectError: ")
    assert "(HINT: check the URL, the network and the backend's endpoint settings (e.g. HF_ENDPOINT)" in lines[0]


def test_http_url_at_a_closed_endpoint_is_one_line_naming_the_url(inputs, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKBIN_CACHE", str(tmp_path / "cache"))
    url = f"http://127.0.0.1:{closed_port()}/releases/toy"
    assert main(build_args(inputs, url)) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"hf-tokbin build: error: {url}: {RULE}ClientConnectorError: ")


def test_every_url_folder_operation_names_the_url_when_unreachable(tmp_path):
    """Each remote operation of a URL output, at a closed endpoint (fsspec's http:// backend, aiohttp)."""
    from hf_tokbin.formats.records import FileEntry

    url = f"http://127.0.0.1:{closed_port()}/r"
    folder = UrlFolder(url, str(tmp_path / "scratch"))
    (tmp_path / "scratch").mkdir()
    (tmp_path / "scratch" / "stats.json").write_text("{}\n")
    entry = FileEntry("stats.json", 3, "0" * 64)
    operations = {
        "read_bytes": lambda: folder.read_bytes("COMPLETE.json"),
        "names": folder.names,
        "matches": lambda: folder.matches(entry),
        "fetch": lambda: folder.fetch(FileEntry("receipts/part-000000.json", 3, "0" * 64)),
    }
    for name, operation in operations.items():
        with pytest.raises(BuildError) as caught:
            operation()
        assert str(caught.value).startswith(f"{url}: {RULE}"), name


def test_connection_errors_are_the_loaded_libraries_network_errors_only():
    import aiohttp
    import httpx2
    import requests

    errors = connection_errors()
    for reached in (
        httpx2.ConnectError("refused"),
        httpx2.ReadTimeout("slow"),
        aiohttp.ServerDisconnectedError(),
        requests.ConnectionError("down"),
        ConnectionRefusedError(111, "refused"),
    ):
        assert isinstance(reached, errors), type(reached)
    # An answer is not an unreachable endpoint, and a local file error is the file's.
    request = httpx2.Request("GET", "http://127.0.0.1/")
    for answered in (
        httpx2.HTTPStatusError("404", request=request, response=httpx2.Response(404, request=request)),
        FileNotFoundError("x"),
        PermissionError("x"),
        ValueError("x"),
    ):
        assert not isinstance(answered, errors), type(answered)
