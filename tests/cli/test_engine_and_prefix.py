"""``--engine ray`` without Ray refuses before anything is written, with a hint that works; ``--engine`` has help;
``info``/``verify`` take a Megatron pair by its prefix, as Megatron names one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hub_server import cli
from release_fixtures import build_release, stories, write_corpus

from hf_tokbin.cli import make_parser

ROOT = Path(__file__).resolve().parents[2]
WITHOUT_RAY = "import sys; sys.modules['ray'] = None; from hf_tokbin.cli import main; sys.exit(main(sys.argv[1:]))"


def test_engine_ray_without_ray_writes_nothing_and_hints_a_working_install(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", [("train", stories(4, 1))])
    out = tmp_path / "release"
    args = ["build", "--corpus", corpus, "--tokenizer", "byte", "--doc-sep", "0", "--out", out, "--engine", "ray"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_RAY, *map(str, args)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1, done.stderr
    error = done.stderr.strip().splitlines()[-1]
    assert "ray" in error and "hf_tokbin[ray]'" not in error and "pip install" in error, error
    assert not out.exists()


def test_engine_has_help():
    build = next(
        a
        for a in make_parser("build")._subparsers._group_actions[0].choices["build"]._actions
        if "--engine" in a.option_strings
    )
    assert build.help and "ray" in build.help


def test_info_and_verify_take_a_megatron_pair_by_its_prefix(tmp_path):
    release = build_release(tmp_path / "built")
    prefix = release / "shards" / "train" / "part-000000"
    info = cli(None, "info", prefix)
    assert info.returncode == 0 and "Megatron" in info.stdout, info.stderr
    verified = cli(None, "verify", prefix)
    assert verified.returncode == 0 and "OK" in verified.stdout, verified.stderr
