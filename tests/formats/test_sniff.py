"""Review: ``info``/``verify`` of a named pipe called ``x.bin`` blocked forever reading its magic."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from hf_tokbin.errors import FormatError
from hf_tokbin.formats import llmc
from hf_tokbin.formats.sniff import sniff

_CLI = "import sys; from hf_tokbin.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.mark.parametrize("name", ["x.bin", "x.idx"])
def test_a_named_pipe_is_refused_not_read(tmp_path, name):
    os.mkfifo(tmp_path / name)
    with pytest.raises(FormatError, match="not a regular file"):
        sniff(tmp_path / name)
    for command in ("info", "verify"):
        # A child process with a timeout: the old code blocks in open() and never returns (TimeoutExpired).
        done = subprocess.run(
            [sys.executable, "-c", _CLI, command, str(tmp_path / name)], capture_output=True, text=True, timeout=60
        )
        assert (
            done.returncode == 1 and "not a regular file" in done.stderr and len(done.stderr.strip().splitlines()) == 1
        )


def test_a_pair_whose_other_half_is_a_pipe_is_refused(tmp_path):
    llmc.write_tokens(tmp_path / "x.bin", np.arange(10), 256)  # a regular .bin, and a pipe as its .idx
    os.mkfifo(tmp_path / "x.idx")
    with pytest.raises(FormatError, match="x.idx: not a regular file"):
        sniff(tmp_path / "x.bin")
    assert sniff_ok(tmp_path)


def sniff_ok(tmp_path) -> bool:
    os.unlink(tmp_path / "x.idx")
    return sniff(tmp_path / "x.bin") == "llmc-file"
