"""The output interface: a lock per output, so two builds never destroy each other's files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hf_tokbin import __version__
from hf_tokbin.corpus.write import write_tinystories_corpus
from hf_tokbin.errors import BuildError
from hf_tokbin.output.local import LOCK_NAME
from hf_tokbin.pipeline import build, plan_build
from hf_tokbin.tokenizer import resolve_tokenizer

CONSOLE_SCRIPT = Path(sys.executable).with_name("hf-tokbin")


@pytest.fixture
def corpus(tmp_path):
    text = tmp_path / "train.txt"
    text.write_text("One story.\n<|endoftext|>\nAnother story.\n")
    write_tinystories_corpus(text, None, tmp_path / "corpus")
    return tmp_path / "corpus"


def test_a_second_build_into_the_same_output_refuses_naming_the_holder(tmp_path, corpus, hold_lock):
    plan = plan_build(corpus, resolve_tokenizer("byte", doc_sep_id=0), tmp_path / "out")
    first = hold_lock(tmp_path / "out" / LOCK_NAME, "pid 1 on elsewhere")  # the first build, still running
    with pytest.raises(BuildError, match=r"another build is writing this output: got 'pid 1 on elsewhere'"):
        build(plan, progress=False)
    assert not (tmp_path / "out" / "run_config.json").exists()  # the second wrote nothing
    first.release()
    summary = build(plan, progress=False)  # the lock is released: the build runs
    assert summary.parts_built == 1
    assert not (tmp_path / "out" / ".work").exists()


def test_the_process_holding_the_lock_takes_it_again(tmp_path, corpus):
    plan = plan_build(corpus, resolve_tokenizer("byte", doc_sep_id=0), tmp_path / "out")
    with plan.output.lock():  # as the command line does, before it loads the inputs
        summary = build(plan, progress=False)
    assert summary.parts_built == 1


def test_cli_refuses_a_locked_output_in_one_line(tmp_path, corpus, hold_lock):
    hold_lock(tmp_path / "out" / LOCK_NAME, "pid 1 on elsewhere")
    result = subprocess.run(
        [
            str(CONSOLE_SCRIPT),
            "build",
            "--corpus",
            str(corpus),
            "--tokenizer",
            "byte",
            "--doc-sep-id",
            "0",
            "--out",
            str(tmp_path / "out"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1 and "another build is writing this output" in result.stderr


def test_version():
    result = subprocess.run([str(CONSOLE_SCRIPT), "--version"], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout.strip()) == (0, f"hf-tokbin {__version__}")
