"""``verify``: the driver decides from records; every token file is read by a task."""

from __future__ import annotations

import json

import pytest
from driver_reads import on_the_driver, recording_token_reads
from release_edits import edit_json, refused, reseal

from hf_tokbin._io import sha256_file
from hf_tokbin.formats import llmc
from hf_tokbin.verify.release import verify_release

LLMC_DIR = "tokens/byte/toy"


@pytest.mark.parametrize("num_proc", [1, 2])
def test_the_driver_opens_no_token_file(copy, num_proc):
    with recording_token_reads() as seen:
        verify_release(copy, num_proc=num_proc)
    assert on_the_driver(seen) == []
    read = {path.rsplit("/", 1)[-1] for _, path in seen}
    assert {"train-00000.bin", "part-000000.bin", "part-000000.idx"} <= read  # the tasks did read them


def test_a_tampered_llmc_id_with_every_count_intact_is_found(copy):
    directory = copy / LLMC_DIR
    manifest = json.loads((directory / llmc.MANIFEST_NAME).read_text())
    name = [f["name"] for f in manifest["files"] if f["split"] == "train"][1]
    path = directory / name
    header = llmc.read_header(path)
    data = bytearray(path.read_bytes())
    at = llmc.HEADER_BYTES + 2 * header.dtype.itemsize  # a text id (token 0 is the separator)
    old = int.from_bytes(data[at : at + 2], "little")
    data[at : at + 2] = (old + 1 if old + 1 != 3 else old + 2).to_bytes(2, "little")
    path.write_bytes(bytes(data))
    edit_json(
        directory / llmc.MANIFEST_NAME,
        lambda m: next(f for f in m["files"] if f["name"] == name).update(sha256=sha256_file(path)),
    )
    reseal(copy)
    refused(copy, name, "token 2: llm.c ids must be the Megatron documents in part order")
