"""``scripts/sample_release.sh OUT``: the README's first command deletes nothing it did not write."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "sample_release.sh"


def run_script(out: Path) -> subprocess.CompletedProcess:
    # The script calls `python` and `hf-tokbin`: this interpreter's folder first on PATH.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(["bash", str(SCRIPT), str(out)], env=env, capture_output=True, text=True, timeout=600)


def test_a_folder_that_is_not_its_output_is_refused_and_kept_whole(tmp_path):
    out = tmp_path / "project"
    (out / "data").mkdir(parents=True)
    (out / "data" / "notes.txt").write_text("mine\n")
    done = run_script(out)
    assert done.returncode == 1, done.stderr
    assert (out / "data" / "notes.txt").read_text() == "mine\n"
    assert str(out) in done.stderr and "not empty" in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr


def test_a_file_given_as_out_is_refused_and_kept(tmp_path):
    out = tmp_path / "notes.txt"
    out.write_text("mine\n")
    done = run_script(out)
    assert done.returncode == 1 and out.read_text() == "mine\n", done.stderr
    assert str(out) in done.stderr, done.stderr


def test_its_own_output_is_run_again_in_place(tmp_path):
    out = tmp_path / "sample"
    first = run_script(out)
    assert first.returncode == 0, first.stderr[-3000:]
    second = run_script(out)
    assert second.returncode == 0, second.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == [".sample_release", "corpus", "release", "tokenizer"]
    assert (out / "release" / "COMPLETE.json").is_file()
