"""A document that makes an engine panic is one line naming the shard and the row, on every path.

``tokenizers`` runs a ``Split`` pre-tokenizer's regex with Oniguruma, which
gives up past its retry limit; ``tokenizers`` then panics (pyo3's
``PanicException``, a ``BaseException``) and Rust's panic hook prints its
report (a backtrace with ``RUST_BACKTRACE=1``). The pattern ``(a+)+b|.``
backtracks exponentially on a run of ``a`` without a ``b``: 40 of them pass
the limit. The document sits in the fast-path check's sample (row 10) or
past it (row 70); the build runs with ``--fast auto`` and ``--fast never``,
in this process and in a pool of two workers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from release_fixtures import write_corpus
from tokenizer_files import byte_level_bpe_json, story_texts
from tokenizers import Tokenizer
from tokenizers.pre_tokenizers import ByteLevel

BACKTRACKING_PATTERN = "(a+)+b|."
PANICKING_TEXT = "x " + "a" * 40


def backtracking_tokenizer(folder: Path) -> Path:
    """A byte-level BPE (the 256 byte symbols, no merges) whose Split regex backtracks exponentially on 'aaaa...'."""
    config = byte_level_bpe_json(vocab={c: i for i, c in enumerate(sorted(ByteLevel.alphabet()))})
    config["pre_tokenizer"] = {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": BACKTRACKING_PATTERN}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
        ],
    }
    folder.mkdir(parents=True)
    (folder / "tokenizer.json").write_text(json.dumps(config))
    return folder


def test_the_fixture_makes_tokenizers_panic(tmp_path):
    tokenizer = Tokenizer.from_file(str(backtracking_tokenizer(tmp_path / "tok") / "tokenizer.json"))
    assert len(tokenizer.encode("x " + "a" * 10).ids) == 12  # short runs are fine
    with pytest.raises(BaseException, match="retry-limit-in-match") as caught:
        tokenizer.encode(PANICKING_TEXT)
    assert type(caught.value).__name__ == "PanicException"


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory) -> Path:
    return backtracking_tokenizer(tmp_path_factory.mktemp("tokenizer") / "tok")


@pytest.mark.parametrize("row", [10, 70])
@pytest.mark.parametrize("fast", ["auto", "never"])
@pytest.mark.parametrize("num_proc", ["1", "2"])
def test_a_panicking_document_is_one_line_naming_shard_and_row(tmp_path, tokenizer, row, fast, num_proc):
    texts = story_texts(100, seed=1)
    texts[row] = PANICKING_TEXT
    corpus = write_corpus(tmp_path / "corpus", [("train", texts), ("validation", story_texts(5, seed=2))])
    command = [
        sys.executable,
        "-m",
        "hf_tokbin",
        "build",
        "--corpus",
        str(corpus),
        "--tokenizer",
        str(tokenizer),
        "--doc-sep",
        "0",
        "--out",
        str(tmp_path / "out"),
        "--fast",
        fast,
        "--num-proc",
        num_proc,
        "--quiet",
    ]
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=600, env={**os.environ, "RUST_BACKTRACE": "1"}
    )
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr[-3000:]
    shard = corpus / "data" / "train-00000.parquet"
    assert lines[0].startswith(f"hf-tokbin build: error: {shard}: row {row}: ")
    assert "retry-limit-in-match" in lines[0]
    assert not (tmp_path / "out" / "COMPLETE.json").exists()


# ---------------------------------------------------------------- a shipped tokenizer that panics on the preview's text


@pytest.fixture(scope="module")
def panicking_preview(tmp_path_factory, tokenizer) -> Path:
    """A release of the backtracking tokenizer whose first preview row's text panics it (COMPLETE.json resealed)."""
    import pyarrow.parquet as pq
    from release_edits import reseal_complete

    from hf_tokbin.cli import main

    root = tmp_path_factory.mktemp("panicking_preview")
    corpus = write_corpus(
        root / "corpus", [("train", story_texts(20, seed=3)), ("validation", story_texts(3, seed=4))]
    )
    out = root / "release"
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                str(tokenizer),
                "--doc-sep",
                "0",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    path = out / "preview" / "train.parquet"
    table = pq.read_table(path)
    texts = [
        PANICKING_TEXT if document == 0 else text
        for text, document in zip(table.column("text").to_pylist(), table.column("document").to_pylist())
    ]
    pq.write_table(table.set_column(table.schema.get_field_index("text"), "text", [texts]), path)
    reseal_complete(out)
    return out


def test_verify_of_a_preview_text_the_shipped_tokenizer_panics_on_is_one_line(panicking_preview):
    command = [sys.executable, "-m", "hf_tokbin", "verify", str(panicking_preview)]
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=600, env={**os.environ, "RUST_BACKTRACE": "1"}
    )
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr[-3000:]
    assert (
        "preview/train.parquet: row 0: " in lines[0] and "panicked" in lines[0] and "retry-limit-in-match" in lines[0]
    )


def test_pull_of_a_release_whose_shipped_tokenizer_panics_is_one_error(panicking_preview, tmp_path):
    from hostile_hub import HostileHub

    from hf_tokbin.errors import TokbinError
    from hf_tokbin.hub import RetryPolicy, pull_release

    token = "hf_panicking_preview_test_0123456789"
    with HostileHub(token=token) as hub:
        hub.seed_repo("tester/panics", panicking_preview)
        with pytest.raises(TokbinError, match=r"preview/train\.parquet: row 0: .*panicked"):
            pull_release(
                "tester/panics",
                tmp_path / "pulled",
                endpoint=hub.url,
                token=token,
                retry=RetryPolicy(attempts=2, base_delay=0.01),
                progress=False,
            )
    assert not (tmp_path / "pulled").exists()
