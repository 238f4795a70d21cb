"""verify: a preview row's text is its document's text (the release's own tokenizer encodes it to the row's ids).

The ids of every row were already checked against the token files; the text is
what a reader of the preview (the Hub's viewer, ``load_dataset(repo,
"preview")``) sees, and was not: a release whose preview showed other text than
its tokens hold passed ``verify``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from release_edits import TEXTS, refused, reseal_complete
from release_fixtures import write_corpus
from tokenizer_files import story_texts

from hf_tokbin.cli import main
from hf_tokbin.formats.preview import read_preview, write_preview
from hf_tokbin.tokenizer import train_bpe
from hf_tokbin.verify.release import verify_release


def _edit_text(release: Path, split: str, document: int, change) -> None:
    """Change one document's text in every format's row (so the rows still agree with each other), then reseal."""
    path = release / "preview" / f"{split}.parquet"
    rows = read_preview(path)
    for i, number in enumerate(rows["document"]):
        if number == document:
            rows["text"][i] = change(rows["text"][i])
    write_preview(path, rows)
    reseal_complete(release)


def test_a_byte_release_s_preview_text_must_be_the_bytes_of_its_ids(copy):
    verify_release(copy)
    _edit_text(copy, "train", 2, lambda text: text.replace("three", "thr33"))
    refused(copy, "preview/train.parquet", "row 2", "text must be the document's text")


@pytest.fixture(scope="module")
def bpe_release(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bpe")
    tokenizer = train_bpe(story_texts(300, seed=2), 600, root / "bpe")
    texts = [*TEXTS, "She said <|endoftext|> and left.", "café ½ naïve"]  # special-token text is ordinary text here
    corpus = write_corpus(root / "corpus", [("train", texts), ("validation", texts[:3])])
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
    return out


def test_a_bpe_release_s_preview_text_is_encoded_with_its_shipped_tokenizer(bpe_release, tmp_path):
    import shutil

    verify_release(bpe_release)  # special-token text, non-ASCII: the same ids as the build's
    release = Path(shutil.copytree(bpe_release, tmp_path / "release"))
    _edit_text(release, "validation", 1, lambda text: text + " ")
    refused(release, "preview/validation.parquet", "row 1", "text must be the document's text")


def test_a_changed_text_that_happens_to_give_the_same_length_is_still_refused(copy):
    _edit_text(copy, "validation", 0, lambda text: text.upper())
    refused(copy, "preview/validation.parquet", "row 0", "text must be the document's text")
