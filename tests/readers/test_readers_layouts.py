"""Review: document-aligned windows start at a document start with the separator after each document too.

With ``--llmc-sep after`` (the TinyStories rules' ``[bos] + story + [eos]``) the separator
ends each document, so a window starting at a separator starts on the last
token of the previous document, one off.
"""

from __future__ import annotations

import pickle
import shutil

import numpy as np
import pytest
from release_fixtures import write_corpus
from tokenizer_files import story_texts

from hf_tokbin.cli import main
from hf_tokbin.formats.megatron import MegatronPair
from hf_tokbin.readers import LlmcSplit


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    """The same corpus built with the separator before and after each document, with a BOS."""
    root = tmp_path_factory.mktemp("sep_after")
    corpus = write_corpus(
        root / "corpus", [("train", story_texts(40, seed=11)), ("validation", story_texts(6, seed=12))]
    )
    tokenizer = root / "tok"
    assert (
        main(
            [
                "tokenizer",
                "train",
                "--corpus",
                str(corpus),
                "--vocab-size",
                "400",
                "--special-tokens",
                "<|bos|>,<|eos|>",
                "--out",
                str(tokenizer),
            ]
        )
        == 0
    )
    out = {}
    for position in ("before", "after"):
        out[position] = root / position
        argv = [
            "build",
            "--corpus",
            str(corpus),
            "--tokenizer",
            str(tokenizer),
            "--bos",
            "<|bos|>",
            "--doc-sep",
            "<|eos|>",
            "--llmc-sep",
            position,
            "--out",
            str(out[position]),
            "--quiet",
        ]
        assert main(argv) == 0
    return out


def megatron_document_starts(release) -> list[int]:
    """Where each document starts in the llm.c stream, from the Megatron pair's sequence lengths.

    [sep] + [bos] + ids (before) and [bos] + ids + [sep] (after) are both as long as [bos] + ids + [eod].
    """
    pair = MegatronPair(release / "shards/train/part-000000.idx")
    lengths = [int(n) for n in pair.lengths]
    return np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(int).tolist()


@pytest.mark.parametrize("position", ["before", "after"])
def test_document_starts_are_where_documents_start(releases, position):
    release = releases[position]
    split = LlmcSplit.open(release, "train")
    assert len(split.parts) == 1
    starts = split.document_starts(0).tolist()
    assert starts == megatron_document_starts(release)
    tokens = split.parts[0]
    first = [int(tokens[s]) for s in starts]
    # BOS is id 0 and the separator id 1: after, every document starts with its BOS; before, with the separator.
    assert set(first) == ({0} if position == "after" else {1})
    windows = split.windows(16, seed=5, aligned=True)
    assert all(int(windows[i][0]) == first[0] for i in range(len(windows)))
    # The same from the token folder alone (no run_config.json: read from the files) and after pickling.
    folder = release / "tokens"
    [manifest_dir] = [p.parent for p in folder.glob("*/*/_MANIFEST.json")]
    alone = release.parent / f"{position}-alone"
    shutil.copytree(manifest_dir, alone)
    assert LlmcSplit.open(alone, "train").document_starts(0).tolist() == starts
    assert pickle.loads(pickle.dumps(split)).document_starts(0).tolist() == starts
