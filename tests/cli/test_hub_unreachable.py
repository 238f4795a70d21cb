"""Hub errors that no retry can fix (offline mode, a host name that does not resolve) fail at once, with a true
hint."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
CLI = "import sys; from hf_tokbin.cli import main; sys.exit(main(sys.argv[1:]))"


def run(tmp_path, *args, **variables) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARIABLES}  # no proxy answers for the host instead
    env.update(
        HF_HOME=str(tmp_path / "hf-home"), HF_HUB_DISABLE_XET="1", HF_TOKBIN_HUB_BACKOFF="0.05", PYTHONPATH=str(ROOT)
    )
    env.update(variables)
    return subprocess.run(
        [sys.executable, "-c", CLI, *map(str, args)], env=env, capture_output=True, text=True, timeout=300
    )


COMMANDS = [
    ["pull", "tester/release", "--out", "copy"],
    ["verify", "tester/release"],
    ["push", "release", "--repo", "tester/release"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_offline_mode_is_not_retried_and_the_hint_names_it(tmp_path, monkeypatch, command):
    if command[0] == "push":
        from release_fixtures import build_release

        shutil.move(build_release(tmp_path / "built"), tmp_path / "release")
    monkeypatch.chdir(tmp_path)
    done = run(tmp_path, *command, HF_HUB_OFFLINE="1")
    assert done.returncode == 1, done.stderr
    assert "retrying" not in done.stderr and "kept failing" not in done.stderr, done.stderr
    assert "HF_HUB_OFFLINE" in done.stderr.strip().splitlines()[-1], done.stderr


@pytest.mark.parametrize("command", COMMANDS[:2], ids=lambda c: c[0])
def test_a_host_name_that_does_not_resolve_is_not_retried(tmp_path, command):
    done = run(tmp_path, *command, "--endpoint", "http://hf-tokbin-test.invalid", HF_HUB_OFFLINE="0")
    assert done.returncode == 1, done.stderr
    assert "retrying" not in done.stderr and "kept failing" not in done.stderr, done.stderr
    error = done.stderr.strip().splitlines()[-1]
    assert "hf-tokbin-test.invalid" in error and "cannot be resolved" in error, done.stderr
