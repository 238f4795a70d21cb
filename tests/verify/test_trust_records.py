"""JSON records are read with one line naming the file, whatever they hold, and never read whole beyond a
bound.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hf_tokbin._io import RECORD_MAX_BYTES, read_json, sha256_file
from hf_tokbin.errors import FormatError, TokbinError, TokenizerError, VerificationError
from hf_tokbin.formats.records import FileEntry
from hf_tokbin.formats.release import Complete
from hf_tokbin.tokenizer.resolve import read_eos_token, read_eos_token_id

NESTED = "[" * 200_000 + "]" * 200_000  # beyond Python's recursion limit
HUGE_INT = '{"eos_token_id": 1' + "0" * 10_000 + "}"  # beyond Python's int digit limit (4,300)
HOSTILE = {"nested": NESTED, "huge int": HUGE_INT, "nested object": '{"a":' * 100_000 + "1" + "}" * 100_000}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_read_json_gives_one_line_naming_the_file(tmp_path, text):
    path = tmp_path / "record.json"
    path.write_text(text)
    with pytest.raises(FormatError) as error:
        read_json(path, FormatError)
    assert str(error.value).startswith(f"{path}: ") and "\n" not in str(error.value)


def test_a_record_over_the_bound_is_refused_without_being_read(tmp_path):
    path = tmp_path / "COMPLETE.json"
    with open(path, "wb") as file:  # sparse: no disk; read whole it would be zeros, "not valid JSON"
        file.truncate(RECORD_MAX_BYTES + 1)
    with pytest.raises(FormatError, match=f"larger than {RECORD_MAX_BYTES:,}"):
        read_json(path, FormatError)


def test_a_record_that_is_a_folder_or_a_fifo_is_refused(tmp_path):
    (tmp_path / "folder.json").mkdir()
    os.mkfifo(tmp_path / "fifo.json")  # open() would wait for a writer forever
    for name in ("folder.json", "fifo.json"):
        with pytest.raises(VerificationError, match="regular file"):
            read_json(tmp_path / name, VerificationError)


@pytest.mark.parametrize("name", ["run_config.json", "stats.json", "COMPLETE.json", "receipts/part-000000.json"])
@pytest.mark.parametrize("text", [NESTED, HUGE_INT], ids=["nested", "huge int"])
def test_verify_names_the_record_in_one_line(both, tmp_path, name, text):  # noqa: F811
    copy = Path(shutil.copytree(both, tmp_path / "release"))
    (copy / name).write_text(text)
    if name != "COMPLETE.json":  # vouch for the new bytes, so the record itself is read
        complete = Complete.read(copy)
        files = tuple(
            FileEntry(f.path, (copy / f.path).stat().st_size, sha256_file(copy / f.path)) if f.path == name else f
            for f in complete.files
        )
        Complete(files).write(copy)
    # The CLI in a child process: a traceback or an abort would show in stderr or the exit status.
    result = subprocess.run(
        [sys.executable, "-m", "hf_tokbin", "verify", str(copy)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    lines = (result.stderr + result.stdout).strip().splitlines()
    assert len(lines) == 1 and name.split("/")[-1] in lines[0], lines


@pytest.mark.parametrize("reader", [read_eos_token_id, read_eos_token])
@pytest.mark.parametrize("text", [NESTED, HUGE_INT], ids=["nested", "huge int"])
def test_tokenizer_configs_name_the_file(tmp_path, reader, text):
    path = tmp_path / "generation_config.json"
    path.write_text(text)
    with pytest.raises(TokenizerError) as error:
        reader(path)
    assert str(error.value).startswith(f"{path}: ")


def test_a_plain_record_still_reads(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"a": [1, 2, {"b": null}]}')
    assert read_json(path, TokbinError) == {"a": [1, 2, {"b": None}]}
