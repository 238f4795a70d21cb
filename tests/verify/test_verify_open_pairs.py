"""verify rule 7 (the llm.c files are the Megatron documents in the llm.c order) holds a bounded number of pairs open.

A release has one pair per input shard, thousands at scale; each open pair holds four memory maps and so four file
descriptors. A check that opened every pair of a split at once would stop at the process's limit of open files
(often 1,024: about 250 parts).
"""

from __future__ import annotations

import json
import os

import pytest
from release_fixtures import stories

from hf_tokbin.cli import main
from hf_tokbin.formats import megatron
from hf_tokbin.verify.release import verify_release

PARTS = 16


@pytest.fixture(scope="module", params=[None, "3"], ids=["part-order", "interleaved"])
def release(tmp_path_factory, request):
    root = tmp_path_factory.mktemp("release")
    jsonl = root / "rows.jsonl"
    jsonl.write_text(
        "".join(json.dumps({"text": text}) + "\n" for text in stories(PARTS * 20, seed=5)), encoding="utf-8"
    )
    corpus, out = root / "corpus", root / "release"
    assert main(["corpus", "import", str(jsonl), "--out", str(corpus), "--shard-rows", "20"]) == 0
    shuffle = ["--shuffle-seed", request.param] if request.param else []
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                "byte",
                "--doc-sep",
                "0",
                "--out",
                str(out),
                "--quiet",
                *shuffle,
            ]
        )
        == 0
    )
    assert len(list((out / "receipts").glob("*.json"))) == PARTS
    return out


def test_verify_keeps_few_pairs_open_whatever_the_number_of_parts(release, monkeypatch):
    opened = []
    real = megatron.MegatronPair

    class Counted(real):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            opened.append(len(os.listdir("/proc/self/fd")))  # the file descriptors open once this pair is

    monkeypatch.setattr(megatron, "MegatronPair", Counted)
    before = len(os.listdir("/proc/self/fd"))
    verify_release(release)
    assert opened, "verify opened the pairs"
    # All 16 pairs open at once would hold 64 more; one or two at a time hold 8 or fewer.
    assert max(opened) - before <= 12, (
        f"{max(opened) - before} more file descriptors open while verifying {PARTS} parts"
    )


@pytest.mark.slow  # a Llama 3 tokenizer
def test_an_interleaved_llama3_layout_release_verifies_and_its_blocks_out_of_order_fail(tmp_path):
    # llm.c's Llama 3 layout reads each Megatron EOD (128001) as llm.c's separator (128000): rule 7 swaps them
    # block by block, from each block's own pointers.
    from release_fixtures import write_corpus
    from tokenizer_files import llama3_tokenizer_json, story_texts

    from hf_tokbin.errors import VerificationError

    shards = [("train", story_texts(30, seed=s)) for s in range(4)] + [("validation", story_texts(8, seed=9))]
    corpus, out = write_corpus(tmp_path / "corpus", shards), tmp_path / "release"
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                str(llama3_tokenizer_json()),
                "--llmc-layout",
                "llama3",
                "--shuffle-seed",
                "4",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    assert verify_release(out).warnings == []
    config = json.loads((out / "run_config.json").read_text())
    config["shuffle"]["seed"] = 5  # another block order: the same ids, the llm.c files no longer in it
    (out / "run_config.json").write_text(json.dumps(config))
    from hf_tokbin._io import sha256_file

    complete = json.loads((out / "COMPLETE.json").read_text())
    for entry in complete["files"]:
        if entry["path"] == "run_config.json":
            entry["size"], entry["sha256"] = (
                (out / "run_config.json").stat().st_size,
                sha256_file(out / "run_config.json"),
            )
    (out / "COMPLETE.json").write_text(json.dumps(complete))
    with pytest.raises(VerificationError, match="seeded block order"):
        verify_release(out)
