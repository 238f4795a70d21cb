"""``scripts/bench_build.py --writes-against TREE``: each build runs the code of the tree it names."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from bench_build import io_recording_command

ROOT = Path(__file__).resolve().parents[2]


def test_the_io_recording_build_runs_the_tree_on_pythonpath_from_any_folder(tmp_path):
    # Run from a folder holding another hf_tokbin (as the bench is, from a checkout): PYTHONPATH's must win.
    (tmp_path / "hf_tokbin").mkdir()
    (tmp_path / "hf_tokbin" / "__init__.py").write_text("raise ImportError('the working folder was imported')\n")
    record = tmp_path / "io.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        io_recording_command(record, ["info", str(tmp_path / "absent.bin")]),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "the working folder was imported" not in done.stderr and "absent.bin" in done.stderr, done.stderr[-2000:]
    assert json.loads(record.read_text())["wchar"] > 0  # the command returned, and its IO was recorded
