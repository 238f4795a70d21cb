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
    jsonl.write_text("".join(json.dumps({"text": text}) + "\n" for text in stories(PARTS * 20, seed=5)), encoding="utf-8")
    corpus, out = root / "corpus", root / "release"
    assert main(["corpus", "import", str(jsonl), "--out", str(corpus), "--shard-rows", "20"]) == 0
    shuffle = ["--shuffle-seed", request.param] if request.param else []
    assert main(["build", "--corpus", str(corpus), "--tokenizer", "byte", "--doc-sep", "0", "--out", str(out), "--quiet", *shuffle]) == 0
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
    assert max(opened) - before <= 12, f"{max(opened) - before} more file descriptors open while verifying {PARTS} parts"
