"""A .txt input is one document per line; one whose lines are ``<|endoftext|>`` delimiters gets a warning naming
``corpus tinystories``, which reads that format."""

from __future__ import annotations

import pytest
from hub_server import cli

STORIES = "Once upon a time there was a cat.\nThe cat sat.\n<|endoftext|>\nA dog ran home.\n<|endoftext|>\n"


@pytest.mark.parametrize("command", ["build", "corpus import"])
def test_a_text_file_of_delimited_stories_is_warned_about(tmp_path, command):
    text = tmp_path / "stories.txt"
    text.write_text(STORIES)
    if command == "build":
        done = cli(None, "build", "--corpus", text, "--tokenizer", "byte", "--doc-sep", "0", "--out", tmp_path / "out")
    else:
        done = cli(None, "corpus", "import", text, "--out", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    warning = [line for line in done.stderr.splitlines() if "<|endoftext|>" in line]
    assert len(warning) == 1 and "warning" in warning[0] and str(text) in warning[0], done.stderr
    assert "hf-tokbin corpus tinystories" in warning[0] and "2 lines" in warning[0], done.stderr


def test_a_text_file_without_delimiter_lines_is_not_warned_about(tmp_path):
    text = tmp_path / "lines.txt"
    text.write_text("one document\nanother document, mentioning <|endoftext|> inside\n")
    done = cli(None, "corpus", "import", text, "--out", tmp_path / "out")
    assert done.returncode == 0 and "tinystories" not in done.stderr, done.stderr
