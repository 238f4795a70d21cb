"""The preview: load_dataset(<pushed repo>, "preview") on the Hub test server, and verify's checks of it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hf_tokbin.errors import VerificationError
from hf_tokbin.formats.preview import read_preview, write_preview
from hf_tokbin.verify import verify_release


def test_load_dataset_of_a_pushed_release_reads_the_preview(release, hub, env, tmp_path):
    assert (
        subprocess.run(
            [sys.executable, "-m", "hf_tokbin", "push", str(release), "--repo", "tester/preview", "--quiet"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        ).returncode
        == 0
    )
    code = (
        "import datasets, json, sys; d = datasets.load_dataset('tester/preview', 'preview', cache_dir=sys.argv[1]);"
        "print(json.dumps({s: d[s].to_dict() for s in d}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "cache")], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.splitlines()[-1])
    for split in ("train", "validation"):
        assert loaded[split] == read_preview(release / "preview" / f"{split}.parquet")
    assert set(loaded["train"]["format"]) == {"llmc", "megatron"} and loaded["train"]["document"][0] == 0


def test_verify_refuses_a_preview_with_a_changed_id(release):
    path = release / "preview" / "train.parquet"
    rows = read_preview(path)
    rows["input_ids"][1] = [*rows["input_ids"][1][:-1], (rows["input_ids"][1][-1] + 1) % 256]
    write_preview(path, rows)
    complete = json.loads((release / "COMPLETE.json").read_text())
    from hf_tokbin._io import sha256_file

    for entry in complete["files"]:
        if entry["path"] == "preview/train.parquet":
            entry["size"], entry["sha256"] = path.stat().st_size, sha256_file(path)
    (release / "COMPLETE.json").write_text(json.dumps(complete))
    with pytest.raises(VerificationError, match="preview/train.parquet: (llmc input_ids|megatron document 1)"):
        verify_release(release)
