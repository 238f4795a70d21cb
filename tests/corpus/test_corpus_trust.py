"""Corpus folders are handled safely: overwrite deletes only our corpus
folders, killed runs are cleaned up, names and cards are safe.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
import yaml

from hf_tokbin.cli import main
from hf_tokbin.corpus.builders.tinystories import read_story_batches
from hf_tokbin.corpus.write import import_corpus
from hf_tokbin.errors import CorpusInputError


def jsonl(path: Path, texts) -> Path:
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    return path


def one_line_error(capsys, *args) -> str:
    assert main(list(args)) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_overwrite_refuses_an_llmc_token_folder_and_keeps_every_file(tmp_path):
    tokens = tmp_path / "tokens"
    tokens.mkdir()
    (tokens / "_MANIFEST.json").write_text(json.dumps({"format": "llmc-tokens/1", "files": []}), encoding="utf-8")
    (tokens / "train-00000.bin").write_bytes(b"\x00" * 1024)
    with pytest.raises(CorpusInputError, match=r"--overwrite replaces only a corpus folder.*format 'llmc-tokens/1'"):
        import_corpus([jsonl(tmp_path / "a.jsonl", ["x"])], tokens, name="c", overwrite=True)
    assert sorted(p.name for p in tokens.iterdir()) == ["_MANIFEST.json", "train-00000.bin"]


def test_overwrite_refuses_a_corpus_folder_holding_a_file_it_does_not_list(tmp_path):
    source = jsonl(tmp_path / "a.jsonl", ["x", "y"])
    import_corpus([source], tmp_path / "c", overwrite=False)
    (tmp_path / "c" / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(
        CorpusInputError,
        match=r"notes\.txt: --overwrite replaces only a corpus folder holding nothing but its own files",
    ):
        import_corpus([source], tmp_path / "c", overwrite=True)
    assert (tmp_path / "c" / "notes.txt").read_text(encoding="utf-8") == "mine"
    (tmp_path / "c" / "notes.txt").unlink()
    assert import_corpus([jsonl(tmp_path / "b.jsonl", ["z"])], tmp_path / "c", overwrite=True).rows("train") == 1


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait(timeout=60)
    return process.pid


def test_a_killed_runs_temporary_folder_is_removed_by_the_next_run_and_nothing_else(tmp_path):
    stale = tmp_path / ".c.tmp-abcd1234"
    stale.mkdir()
    (stale / ".owner").write_text(f"{dead_pid()} {socket.gethostname()}\n", encoding="utf-8")
    (stale / "data").mkdir()
    running = tmp_path / ".c.tmp-live0000"
    running.mkdir()
    (running / ".owner").write_text(f"{os.getpid()} {socket.gethostname()}\n", encoding="utf-8")
    others = [tmp_path / ".c.tmp-short", tmp_path / ".other.tmp-abcd1234", tmp_path / ".c.tmp-nobody00"]
    for path in others:
        path.mkdir()
    import_corpus([jsonl(tmp_path / "a.jsonl", ["x"])], tmp_path / "c")
    assert not stale.exists()
    assert running.exists() and all(p.exists() for p in others)


def test_a_killed_corpus_run_leaves_a_folder_the_next_run_removes(tmp_path):
    """The real thing: a run killed by SIGKILL while writing, then a second run."""
    big = jsonl(tmp_path / "big.jsonl", [f"document {i} " * 50 for i in range(200_000)])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen(
        [sys.executable, "-m", "hf_tokbin", "corpus", "import", str(big), "--out", str(tmp_path / "c")],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):  # wait (at most 60 s) for its temporary folder to appear
            # Its owner record, not just the folder: killed between the two, the folder names no owner to check.
            if any(p.name.startswith(".c.tmp-") and (p / ".owner").is_file() for p in tmp_path.iterdir()):
                break
            try:
                process.wait(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                pass
    finally:
        process.kill()
        process.wait(timeout=60)
    left = [p for p in tmp_path.iterdir() if p.name.startswith(".c.tmp-")]
    # The folder appears at the start of a run that takes seconds: it is killed long before it ends.
    assert left, "the run finished before it could be killed (make the input larger)"
    import_corpus([jsonl(tmp_path / "small.jsonl", ["x"])], tmp_path / "c", overwrite=True)
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".c.")] == []


@pytest.mark.parametrize(
    "args, flag",
    [
        (["--out", "{tmp}/.."], "--out"),
        (["--out", "{tmp}/c", "--name", ".."], "--name"),
        (["--out", "{tmp}/c", "--name", "a/b"], "--name"),
    ],
)
def test_a_corpus_named_dot_dot_or_with_a_slash_fails_at_once_naming_the_flag(tmp_path, capsys, args, flag):
    source = jsonl(tmp_path / "a.jsonl", ["x"])
    line = one_line_error(capsys, "corpus", "import", str(source), *[a.format(tmp=tmp_path) for a in args])
    assert f"{flag}: the corpus name must be one folder name" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl"]


def front_matter(card: str) -> dict:
    assert card.startswith("---\n")
    return yaml.safe_load(card[4 : card.index("\n---\n", 4)])


def test_language_no_stays_a_string_in_the_corpus_card(tmp_path):
    import_corpus([jsonl(tmp_path / "a.jsonl", ["hei"])], tmp_path / "c", language=["no", "nn"])
    meta = front_matter((tmp_path / "c" / "README.md").read_text(encoding="utf-8"))
    assert meta["language"] == ["no", "nn"]
    assert meta["configs"][0]["data_files"] == [{"split": "train", "path": "data/train-*.parquet"}]


def test_a_license_cannot_inject_yaml_and_ids_are_checked_against_the_hub_list(tmp_path, capsys):
    source = jsonl(tmp_path / "a.jsonl", ["x"])
    line = one_line_error(
        capsys, "corpus", "import", str(source), "--out", str(tmp_path / "c"), "--license", "mit\nconfigs:\n-\n---"
    )
    assert "--license: not a license id" in line and not (tmp_path / "c").exists()
    line = one_line_error(
        capsys, "corpus", "import", str(source), "--out", str(tmp_path / "c"), "--license", "my-license"
    )
    assert "not a Hub license id" in line and "--any-license" in line
    assert (
        main(
            ["corpus", "import", str(source), "--out", str(tmp_path / "c"), "--license", "my-license", "--any-license"]
        )
        == 0
    )
    capsys.readouterr()
    assert front_matter((tmp_path / "c" / "README.md").read_text(encoding="utf-8"))["license"] == "my-license"
    line = one_line_error(
        capsys, "corpus", "import", str(source), "--out", str(tmp_path / "d"), "--language", "en,Not A Code"
    )
    assert "--language: not an ISO 639 language code" in line


def test_tinystories_reader_is_linear_in_a_lines_length(tmp_path):
    """A 64 MiB line: memory about two copies of the line (the bytes and the text), and work linear in it.

    The old reader grew one buffer and searched all of it again per block:
    three copies at its peak, and quadratic time (a 1 GiB line: 10 minutes).
    The time is bounded only generously (a subprocess with 4 KiB blocks gets
    120 s; linear reading takes well under a second, quadratic many minutes).
    """
    size = 64 << 20
    path = tmp_path / "long.txt"
    with open(path, "wb") as f:
        f.write(b"x" * size)
        f.write(b"\n<|endoftext|>\nshort story\n")
    tracemalloc.start()
    try:
        stories = [len(s) for batch in read_story_batches(path, block_size=1 << 20) for s in batch]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert stories == [size, len("short story")]
    assert peak < 2.5 * size, f"peak {peak / size:.2f}x the line"
    code = (
        "import sys; from hf_tokbin.corpus.builders.tinystories import "
        "read_stories; print(sum(len(s) for s in read_stories(sys.argv[1], 4096)))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.stdout.strip() == str(size + len("short story"))


def test_a_corpus_name_cannot_turn_the_cards_python_line_into_other_code(tmp_path):
    # The card's load_dataset line is pasted into Python: a name holding a quote must stay inside the string.
    import ast

    text = tmp_path / "train.txt"
    text.write_text("Once.\n<|endoftext|>\nTwice.\n", encoding="utf-8")
    name = 'x"); print("ran"); ("'
    assert main(["corpus", "tinystories", str(text), "--out", str(tmp_path / "c"), "--name", name, "--quiet"]) == 0
    card = (tmp_path / "c" / "README.md").read_text(encoding="utf-8")
    line = next(line for line in card.splitlines() if "load_dataset(" in line)
    call = ast.parse(line.split("=", 1)[1].split("  #", 1)[0].strip(), mode="eval").body
    assert isinstance(call, ast.Call) and call.func.id == "load_dataset" and len(call.args) == 1 and not call.keywords
    assert ast.literal_eval(call.args[0]) == f"path/or/namespace/{name}"
