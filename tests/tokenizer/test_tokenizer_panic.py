"""Review (pending, fix in hf_tokbin/tokenizer/resolve.py): a tokenizer.json that makes tokenizers panic.

``tokenizers`` raises ``pyo3_runtime.PanicException`` -- a ``BaseException``, not an
``Exception`` -- on some malformed files (here: a ``continuing_subword_prefix``
longer than a merge's second part). ``load_tokenizer_json`` catches ``Exception``
only, so the CLI prints a traceback instead of one line.
"""

from __future__ import annotations

import json

from release_fixtures import write_corpus
from tokenizer_files import byte_level_bpe_json, story_texts

from hf_tokbin.cli import main

PANICKING = byte_level_bpe_json(continuing_subword_prefix="##", vocab={"a": 0, "b": 1, "ab": 2}, merges=["a b"])


def test_a_tokenizer_json_that_panics_tokenizers_gives_one_line(tmp_path, capsys):
    folder = tmp_path / "tok"
    folder.mkdir()
    (folder / "tokenizer.json").write_text(json.dumps(PANICKING))
    corpus = write_corpus(
        tmp_path / "corpus", [("train", story_texts(5, seed=1)), ("validation", story_texts(2, seed=2))]
    )
    capsys.readouterr()
    try:
        status = main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                str(folder),
                "--doc-sep",
                "0",
                "--out",
                str(tmp_path / "out"),
            ]
        )
    except BaseException as e:  # PanicException: what the user sees as a traceback
        raise AssertionError(f"{type(e).__name__} escaped the CLI: {e}") from None
    err = capsys.readouterr().err
    assert status == 1
    assert "tokenizer.json: cannot load tokenizer.json" in err
