"""``verify`` checks every run_config.json field a consumer reads to learn the layout against the files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from release_edits import edit_json, refused, reseal

from hf_tokbin.formats import llmc
from hf_tokbin.verify.release import verify_release


def manifest_of(root: Path) -> Path:
    return next((root / "tokens").rglob(llmc.MANIFEST_NAME))


def test_the_fixtures_verify(both, llmc_bos):
    verify_release(both)
    verify_release(llmc_bos)


def test_max_tokens_per_file_below_a_files_tokens_is_refused(copy):
    largest = max(f["n_tokens"] for f in json.loads(manifest_of(copy).read_text())["files"])
    edit_json(copy / "run_config.json", lambda c: c["llmc"].update(max_tokens_per_file=largest - 1))
    reseal(copy)
    refused(copy, "run_config.json", "max_tokens_per_file", str(largest))


@pytest.mark.parametrize("value", [0, -1, "40", None, llmc.MAX_TOKENS_PER_FILE + 1])
def test_max_tokens_per_file_must_be_a_count_in_range(copy, value):
    edit_json(copy / "run_config.json", lambda c: c["llmc"].update(max_tokens_per_file=value))
    reseal(copy)
    refused(copy, "run_config.json", "llmc.max_tokens_per_file")


def test_megatron_dtype_code_must_be_the_idx_files_code(copy):
    edit_json(copy / "run_config.json", lambda c: c["megatron"].update(dtype_code=4))
    reseal(copy)
    refused(copy, "run_config.json", "megatron.dtype_code")


def test_megatron_dtype_code_is_required_with_the_megatron_format(copy):
    edit_json(copy / "run_config.json", lambda c: c.update(megatron=None))
    reseal(copy)
    refused(copy, "run_config.json", "megatron")


def test_a_format_not_built_has_no_record(llmc_copy):
    edit_json(llmc_copy / "run_config.json", lambda c: c.update(megatron={"dtype_code": 8}))
    reseal(llmc_copy)
    refused(llmc_copy, "run_config.json", "megatron", "null")


def test_separator_id_differing_from_every_file_is_refused(copy):
    # run_config.json and the manifest both say 7; every file holds 3.
    edit_json(copy / "run_config.json", lambda c: c["doc_sep"].update(id=7))
    edit_json(manifest_of(copy), lambda m: m.update(doc_sep_id=7))
    reseal(copy)
    refused(copy, "7")


def test_separator_id_differing_in_run_config_only_is_refused(copy):
    edit_json(copy / "run_config.json", lambda c: c["doc_sep"].update(id=7))
    reseal(copy)
    refused(copy, "doc_sep_id", "7")


def test_bos_id_differing_from_an_llmc_only_release_is_refused(llmc_copy):
    # No Megatron pair to compare with: the BOS must still be where the layout puts it.
    edit_json(llmc_copy / "run_config.json", lambda c: c["bos"].update(id=5))
    reseal(llmc_copy)
    refused(llmc_copy, "BOS", "5")


def test_llmc_only_release_with_bos_missing_from_a_file_is_refused(llmc_copy):
    # Rewrite the first train file with every BOS (2) turned into 4: counts and digests resealed.
    manifest = manifest_of(llmc_copy)
    obj = json.loads(manifest.read_text())
    entry = obj["files"][0]
    path = manifest.parent / entry["name"]
    ids = llmc.open_tokens(path).copy()
    ids[ids == 2] = 4
    llmc.write_tokens(path, ids, obj["vocab_size"])
    from hf_tokbin._io import sha256_file

    entry["sha256"] = sha256_file(path)
    manifest.write_text(json.dumps(obj))
    reseal(llmc_copy)
    refused(llmc_copy, entry["name"], "BOS")
