"""Messages say things in words: no internal value (None, a tuple, an errno, a raw magic number), no "1 commits",
no server reason twice, and no blank lines from a library on stdout."""

from __future__ import annotations

import os
import re
import shutil

import pytest
from hub_server import TOKEN, HubServer, cli, client_env
from release_fixtures import build_release, stories, write_corpus

from hf_tokbin.cli.progress import DISABLING_VARIABLES

INTERNAL = re.compile(r"\bNone\b|\[Errno|\(\d+, \d+\)")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_release(tmp_path_factory.mktemp("built"))


def error_line(done) -> str:
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


def test_info_and_recipe_of_an_interrupted_build_say_what_is_missing(built, tmp_path):
    release = shutil.copytree(built, tmp_path / "release")
    (release / "COMPLETE.json").unlink()
    (release / "stats.json").unlink()
    line = error_line(cli(None, "info", release))
    assert not INTERNAL.search(line) and "stats.json" in line, line


def test_recipe_for_llmc_of_a_megatron_only_release_says_it_has_no_llmc_files(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", [("train", stories(8, 1)), ("validation", stories(4, 2))])
    release = tmp_path / "release"
    flags = ["--tokenizer", "byte", "--doc-sep", "0", "--format", "megatron", "--quiet"]
    assert cli(None, "build", "--corpus", corpus, *flags, "--out", release).returncode == 0
    line = error_line(cli(None, "recipe", release, "--for", "llmc"))
    assert not INTERNAL.search(line) and "llm.c" in line, line


def test_build_into_a_file_names_the_file(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", [("train", stories(4, 1))])
    target = tmp_path / "train.txt"
    target.write_text("mine\n")
    line = error_line(cli(None, "build", "--corpus", corpus, "--tokenizer", "byte", "--doc-sep", "0", "--out", target))
    assert not INTERNAL.search(line) and str(target) in line and "file" in line, line
    assert target.read_text() == "mine\n"


def test_num_proc_zero_names_the_option(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", [("train", stories(4, 1))])
    args = ["--tokenizer", "byte", "--doc-sep", "0", "--num-proc", "0", "--out", tmp_path / "out"]
    line = error_line(cli(None, "build", "--corpus", corpus, *args))
    assert not INTERNAL.search(line) and "--num-proc" in line and "got 0" in line, line


def test_recipe_of_a_text_file_says_it_is_no_token_file(tmp_path):
    text = tmp_path / "small.txt"
    text.write_text("hello world, a text file\n" * 100)
    line = error_line(cli(None, "recipe", text, "--for", "llmc"))
    assert "not a token file" in line and not re.search(r"\d{7,}", line), line


def test_tokenizer_train_on_a_file_of_no_input_kind_names_the_kinds_it_reads(tmp_path):
    weird = tmp_path / "small.weird"
    weird.write_text("hello world\n")
    line = error_line(cli(None, "tokenizer", "train", "--corpus", weird, "--out", tmp_path / "tok"))
    assert str(weird) in line and ".jsonl" in line and ".txt" in line and not INTERNAL.search(line), line
    assert not (tmp_path / "tok").exists()


def test_tokenizer_train_prints_no_blank_lines_on_stdout(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", [("train", stories(30, 1))])
    # Progress shown (the trainer's bars are what wrote the blank lines): no variable of an earlier --quiet run.
    env = {k: v for k, v in os.environ.items() if k not in DISABLING_VARIABLES}
    done = cli(env, "tokenizer", "train", "--corpus", corpus, "--vocab-size", "300", "--out", tmp_path / "tok")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("wrote ") and done.stdout.count("\n") == 1, repr(done.stdout)


def test_a_count_of_one_is_singular_and_the_hubs_reason_is_said_once(built, tmp_path):
    one_part = write_corpus(tmp_path / "corpus", [("train", stories(1, 1))])
    plan = cli(
        None,
        "build",
        "--corpus",
        one_part,
        "--tokenizer",
        "byte",
        "--doc-sep",
        "0",
        "--out",
        tmp_path / "o",
        "--dry-run",
    )
    assert plan.returncode == 0 and "1 documents" not in plan.stdout and "1 document" in plan.stdout, plan.stdout
    with HubServer(token=TOKEN) as hub:
        home = tmp_path / "hf-home"
        home.mkdir()
        env = {**os.environ, **client_env(hub, home, TOKEN), "HF_TOKBIN_HUB_ATTEMPTS": "1"}
        hub.seed_repo("tester/one", built, skip=("COMPLETE.json",))  # an interrupted push: one commit is left
        dry = cli(env, "push", built, "--repo", "tester/one", "--dry-run")
        assert dry.returncode == 0 and "in 1 commit," in dry.stdout, dry.stdout + dry.stderr
        line = error_line(cli(env, "pull", "tester/absent", "--out", tmp_path / "copy"))
    assert line.lower().count("repository not found") == 1, line
