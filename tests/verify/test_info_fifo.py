"""Review (pending, fix in hf_tokbin/_io.py ``read_json``): a record that is a named pipe blocks forever.

``hf-tokbin info RELEASE`` reads ``stats.json`` with ``read_json``, which opens
whatever the path is: a named pipe there blocks the command forever (verify
refuses it earlier, through ``list_release_paths``; info does not). Proposed:
``read_json`` refuses a path that is not a regular file (``os.stat`` +
``stat.S_ISREG``) with ``error_type(path, "not a regular file")``, before ``open``.
"""

from __future__ import annotations

import os
import subprocess
import sys

from hf_tokbin.formats.release import STATS_NAME

_CLI = "import sys; from hf_tokbin.cli import main; sys.exit(main(sys.argv[1:]))"


def test_info_of_a_release_whose_stats_json_is_a_pipe_is_one_line(tmp_path):
    release = tmp_path / "release"
    release.mkdir()
    (release / "run_config.json").write_text("{}")
    os.mkfifo(release / STATS_NAME)
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CLI, "info", str(release)], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        raise AssertionError("hf-tokbin info blocked on a named pipe") from None
    assert done.returncode == 1 and "stats.json" in done.stderr and "Traceback" not in done.stderr
