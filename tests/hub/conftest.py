"""Fixtures the pull, hostile-server and remote-verify tests share: a real release built once per module, copied per test."""

from __future__ import annotations

import shutil

import pytest
from hostile_hub import build_release


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A real release (verify accepts it), built once per module; tests take copies."""
    return build_release(tmp_path_factory.mktemp("built"))


@pytest.fixture
def release(built, tmp_path):
    return shutil.copytree(built, tmp_path / "release")
