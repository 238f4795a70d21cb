"""One way through a build: ``hf-tokbin build`` runs ``build_release``, and a build takes its output's lock once."""

from __future__ import annotations

import argparse

import pytest

import hf_tokbin.api
from hf_tokbin.cli import build as build_command
from hf_tokbin.corpus.write import write_tinystories_corpus
from hf_tokbin.output import local


@pytest.fixture
def corpus(tmp_path):
    text = tmp_path / "train.txt"
    text.write_text("One story.\n<|endoftext|>\nAnother story.\n<|endoftext|>\nA third one.\n")
    write_tinystories_corpus(text, None, tmp_path / "corpus")
    return tmp_path / "corpus"


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    build_command.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_the_command_line_runs_build_release_with_its_flags(tmp_path, corpus, monkeypatch):
    calls = []

    def recorded(*args, **kwargs):
        calls.append((args, kwargs))
        return real(*args, **kwargs)

    real = hf_tokbin.api.build_release
    monkeypatch.setattr(hf_tokbin.api, "build_release", recorded)
    out = tmp_path / "out"
    flags = ("--corpus", str(corpus), "--tokenizer", "byte", "--doc-sep", "0", "--out", str(out), "--quiet")
    assert build_command.run(_args(*flags, "--format", "megatron", "--num-proc", "1")) == 0
    [(positional, keywords)] = calls
    assert positional == (str(corpus), "byte", str(out))
    assert keywords["doc_sep"] == 0 and keywords["options"].formats == ("megatron",)
    assert (out / "COMPLETE.json").is_file()


def test_a_build_takes_its_output_lock_once(tmp_path, corpus, monkeypatch):
    taken = []
    real = local.folder_lock

    def counted(work, location):
        taken.append(work)
        return real(work, location)

    monkeypatch.setattr(local, "folder_lock", counted)
    summary = hf_tokbin.api.build_release(corpus, "byte", tmp_path / "out", doc_sep=0, progress=False)
    assert summary.build.parts_built == 1
    assert taken == [tmp_path / "out"]


def test_a_dry_run_takes_no_lock_and_writes_nothing(tmp_path, corpus, monkeypatch):
    taken = []
    monkeypatch.setattr(local, "folder_lock", lambda *args: taken.append(args))
    summary = hf_tokbin.api.build_release(corpus, "byte", tmp_path / "out", doc_sep=0, progress=False, dry_run=True)
    assert "nothing was written" in summary.table() and summary.build is None
    assert taken == [] and not (tmp_path / "out").exists()
