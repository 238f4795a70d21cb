"""The preview: load_dataset(<pushed repo>) on the Hub test server, and verify's checks of it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hf_tokbin.errors import VerificationError
from hf_tokbin.formats.preview import read_preview, write_preview
from hf_tokbin.verify import verify_release


def test_load_dataset_of_a_pushed_release_reads_the_preview(release, hub, env, tmp_path):
    push = [sys.executable, "-m", "hf_tokbin", "push", str(release), "--repo", "tester/preview", "--quiet"]
    pushed = subprocess.run(push, env=env, capture_output=True, text=True, timeout=300)
    assert pushed.returncode == 0, pushed.stderr  # the server's card validation accepted the card
    files = hub.head_files("tester/preview")
    card = files["README.md"].decode("utf-8")
    for picture in ("pictures/lengths-train.svg", "pictures/lengths-validation.svg"):
        assert files[picture] == (release / picture).read_bytes() and f"]({picture})" in card
    code = (
        "import datasets, json, sys; d = datasets.load_dataset('tester/preview', cache_dir=sys.argv[1]);"
        "print(json.dumps({s: d[s].to_dict() for s in d}))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "cache")], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.splitlines()[-1])
    for split in ("train", "validation"):
        assert loaded[split] == read_preview(release / "preview" / f"{split}.parquet")
    # The default config: one row per document, each format's ids a column of it.
    assert loaded["train"]["document"] == list(range(len(loaded["train"]["document"])))
    assert {"llmc_input_ids", "megatron_input_ids"} <= set(loaded["train"])


def test_verify_refuses_a_preview_with_a_changed_id(release):
    path = release / "preview" / "train.parquet"
    rows = read_preview(path)
    ids = rows["megatron_input_ids"]
    ids[1] = [*ids[1][:-1], (ids[1][-1] + 1) % 256]
    write_preview(path, rows)
    complete = json.loads((release / "COMPLETE.json").read_text())
    from hf_tokbin._io import sha256_file

    for entry in complete["files"]:
        if entry["path"] == "preview/train.parquet":
            entry["size"], entry["sha256"] = path.stat().st_size, sha256_file(path)
    (release / "COMPLETE.json").write_text(json.dumps(complete))
    with pytest.raises(VerificationError, match="preview/train.parquet: megatron document 1"):
        verify_release(release)


def test_the_test_server_validates_a_card_s_configs_as_datasets_loads_them(hub, release):
    import requests

    def answer(card: str) -> int:
        return requests.post(f"{hub.url}/api/validate-yaml", json={"content": card, "repoType": "dataset"}).status_code

    card = (release / "README.md").read_text(encoding="utf-8")
    assert answer(card) == 200
    broken = card.replace("- split: train\n    path: preview/train.parquet", "- split: train\n    where: preview/train.parquet")
    assert broken != card and answer(broken) == 400
    twice = card.replace("  default: true\n", "  default: true\n- config_name: other\n  data_files: x\n  default: true\n")
    assert twice != card and answer(twice) == 400
