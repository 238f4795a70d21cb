"""Fixtures the Hub tests share: the Hub test server and a client environment for it (the push tests'; other files
override ``hub`` and ``env`` with their own server), and a real release built once per module, copied per test."""

from __future__ import annotations

import os

import pytest
from hub_server import TOKEN, HubServer, client_env


@pytest.fixture
def hub():
    with HubServer(token=TOKEN) as server:
        yield server


@pytest.fixture
def env(hub, tmp_path):
    home = tmp_path / "hf-home"
    home.mkdir()
    return {
        **os.environ,
        **client_env(hub, home, TOKEN),
        "HF_TOKBIN_HUB_BACKOFF": "0.05",
        "HF_TOKBIN_HUB_ATTEMPTS": "4",
    }
