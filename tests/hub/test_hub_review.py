"""Review: what a pull says about itself, and a wrong --endpoint that no retry can fix."""

from __future__ import annotations

import shutil

import pytest
from hostile_hub import HostileHub
from release_fixtures import build_release

from hf_tokbin.errors import HubError
from hf_tokbin.hub import RetryPolicy, pull_release
from hf_tokbin.hub.retry import is_transient

TOKEN = "hf_review_test_token_0123456789"
REPO = "tester/release"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_release(tmp_path_factory.mktemp("built"))


def test_a_fresh_pull_does_not_claim_files_kept_from_an_interrupted_pull(built, tmp_path):
    # It said "15 downloaded now, 1 kept from an interrupted pull" on the first pull:
    # COMPLETE.json was counted among the files but not among the downloads.
    with HostileHub(token=TOKEN) as hub:
        hub.seed_repo(REPO, shutil.copytree(built, tmp_path / "release"))
        summary = pull_release(
            REPO,
            tmp_path / "out",
            endpoint=hub.url,
            token=TOKEN,
            retry=RetryPolicy(attempts=2, base_delay=0.01),
            progress=False,
        )
    assert summary.fetched == summary.files - 1  # every file but COMPLETE.json, which comes with the record
    assert summary.kept == 0
    assert "kept from an interrupted pull" not in str(summary)


@pytest.mark.parametrize("endpoint", ["ftp://127.0.0.1:9", "not-a-url"])
def test_a_wrong_endpoint_scheme_fails_at_once_without_retries(tmp_path, endpoint):
    # UnsupportedProtocol is an httpx TransportError: it was retried five times with
    # back-off (about 30 s) before the one-line error.
    waits = []
    with pytest.raises(HubError, match="UnsupportedProtocol"):
        pull_release(
            REPO,
            tmp_path / "out",
            endpoint=endpoint,
            token=TOKEN,
            retry=RetryPolicy(attempts=5, base_delay=0.01, sleep=waits.append),
            progress=False,
        )
    assert waits == []
    assert not (tmp_path / "out").exists()


def test_connection_errors_stay_transient():
    import httpx2 as httpx

    assert is_transient(httpx.ConnectError("refused"))
    assert not is_transient(httpx.UnsupportedProtocol("ftp"))
