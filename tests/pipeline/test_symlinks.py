"""A release holds only regular files the build wrote: a symlink planted in the folder is never adopted, verified
or published."""

from __future__ import annotations

import os

import pytest

from hf_tokbin.corpus.write import write_tinystories_corpus
from hf_tokbin.errors import BuildError, VerificationError
from hf_tokbin.pipeline import build, plan_build
from hf_tokbin.tokenizer import resolve_tokenizer
from hf_tokbin.verify import verify_release


@pytest.fixture
def release(tmp_path):
    text = tmp_path / "train.txt"
    text.write_text("One story.\n<|endoftext|>\nAnother story.\n")
    write_tinystories_corpus(text, None, tmp_path / "corpus")
    plan = plan_build(tmp_path / "corpus", resolve_tokenizer("byte", doc_sep_id=0), tmp_path / "out")
    build(plan, progress=False)
    secret = tmp_path / "secret.txt"
    secret.write_text("the user's private file\n")
    return plan, tmp_path / "out", secret


def test_a_rerun_after_an_interruption_does_not_adopt_a_planted_symlink(release):
    plan, out, secret = release
    (out / "COMPLETE.json").unlink()  # as if the first run was killed before its last step
    os.symlink(secret, out / "NOTES.md")
    # Refused when the build takes the output, before it writes anything.
    with pytest.raises(
        BuildError,
        match="NOTES.md: hf_tokbin writes only regular files it creates, never through a symlink: got a symlink",
    ):
        build(plan, progress=False)
    assert not (out / "COMPLETE.json").exists()


def test_a_symlinked_folder_is_refused_too(release):
    plan, out, secret = release
    (out / "COMPLETE.json").unlink()
    os.symlink(secret.parent, out / "extra")
    with pytest.raises(BuildError, match="extra: .*got a symlink"):
        build(plan, progress=False)


def test_verify_refuses_a_listed_file_replaced_by_a_symlink_to_the_same_bytes(release):
    plan, out, secret = release
    card = out / "README.md"
    copy = secret.parent / "card-copy.md"
    copy.write_bytes(card.read_bytes())
    card.unlink()
    os.symlink(copy, card)  # same size and SHA-256, but outside the folder
    with pytest.raises(VerificationError, match="README.md"):
        verify_release(out)
