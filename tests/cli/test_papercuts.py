"""CLI papercuts a new user meets: a closed pipe, sizes and counts in words."""

from __future__ import annotations

import json
import subprocess
import sys

from release_fixtures import stories, write_corpus

CLI = "import sys; from hf_tokbin.cli import main; sys.exit(main(sys.argv[1:]))"


def test_a_closed_pipe_exits_quietly(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", [("train", stories(1500, 1))])
    out = tmp_path / "release"
    assert subprocess.run([sys.executable, "-c", CLI, "build", "--corpus", str(corpus), "--tokenizer", "byte", "--doc-sep", "0", "--out", str(out), "--quiet"], capture_output=True, timeout=300).returncode == 0
    # show prints every token (far more than a pipe's 64 KiB buffer); the reader takes one byte and closes the pipe.
    tokens = json.loads((out / "stats.json").read_text())["splits"]["train"]["total_tokens"]
    assert tokens > 200_000
    shown = subprocess.Popen([sys.executable, "-c", CLI, "show", str(out), "--window", "0", "--len", str(tokens)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    shown.stdout.read(1)
    shown.stdout.close()
    err = shown.stderr.read().decode()
    assert shown.wait(timeout=120) in (0, 141) and "Traceback" not in err and "BrokenPipe" not in err


def test_the_corpus_summary_counts_shards_and_small_sizes_in_words(tmp_path):
    (tmp_path / "in.jsonl").write_text('{"text": "one small document"}\n', encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", CLI, "corpus", "import", str(tmp_path / "in.jsonl"), "--out", str(tmp_path / "c"), "--all-train"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "in 1 shard (" in done.stderr and "bytes)" in done.stderr and "0.0 MB)" not in done.stderr
