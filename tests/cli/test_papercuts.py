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
    assert (
        subprocess.run(
            [
                sys.executable,
                "-c",
                CLI,
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                "byte",
                "--doc-sep",
                "0",
                "--out",
                str(out),
                "--quiet",
            ],
            capture_output=True,
            timeout=300,
        ).returncode
        == 0
    )
    # show prints every token (far more than a pipe's 64 KiB buffer); the reader takes one byte and closes the pipe.
    tokens = json.loads((out / "stats.json").read_text())["splits"]["train"]["total_tokens"]
    assert tokens > 200_000
    shown = subprocess.Popen(
        [sys.executable, "-c", CLI, "show", str(out), "--window", "0", "--len", str(tokens)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
    )
    shown.stdout.read(1)
    shown.stdout.close()
    err = shown.stderr.read().decode()
    assert shown.wait(timeout=120) in (0, 141) and "Traceback" not in err and "BrokenPipe" not in err


def test_the_corpus_summary_counts_shards_and_small_sizes_in_words(tmp_path):
    (tmp_path / "in.jsonl").write_text('{"text": "one small document"}\n', encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            CLI,
            "corpus",
            "import",
            str(tmp_path / "in.jsonl"),
            "--out",
            str(tmp_path / "c"),
            "--all-train",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "in 1 shard (" in done.stderr and "bytes)" in done.stderr and "0.0 MB)" not in done.stderr


def _cli(*argv, cwd=None):
    return subprocess.run(
        [sys.executable, "-c", CLI, *map(str, argv)], capture_output=True, text=True, timeout=300, cwd=cwd
    )


def _jsonl_shards(folder, shards: int = 2, rows: int = 30):
    import gzip

    folder.mkdir(parents=True)
    for shard in range(shards):
        with gzip.open(folder / f"s{shard}.jsonl.gz", "wt", encoding="utf-8") as f:
            for row in range(rows):
                f.write(json.dumps({"text": f"document {shard} {row} says hello"}) + "\n")
    return folder


def test_build_corpus_takes_files_folders_and_globs_as_build_release_does(tmp_path):
    shards = _jsonl_shards(tmp_path / "shards")
    documents = {}
    for name, corpus in {"glob": shards / "*.jsonl.gz", "folder": shards, "file": shards / "s0.jsonl.gz"}.items():
        done = _cli(
            "build", "--corpus", corpus, "--tokenizer", "byte", "--doc-sep", "0", "--out", tmp_path / name, "--quiet"
        )
        assert done.returncode == 0, done.stderr
        documents[name] = json.loads((tmp_path / name / "stats.json").read_text())["splits"]["train"]["documents"]
    assert documents == {"glob": 60, "folder": 60, "file": 30}


def test_a_different_build_in_the_output_names_the_fields_that_differ(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", [("train", stories(20, 1))])
    out = tmp_path / "release"
    assert (
        _cli("build", "--corpus", corpus, "--tokenizer", "byte", "--doc-sep", "0", "--out", out, "--quiet").returncode
        == 0
    )
    again = _cli(
        "build",
        "--corpus",
        corpus,
        "--tokenizer",
        "byte",
        "--doc-sep",
        "0",
        "--out",
        out,
        "--quiet",
        "--format",
        "llmc",
    )
    assert again.returncode == 1 and "different build" in again.stderr
    assert "formats" in again.stderr and "corpus" not in again.stderr.split("different build")[1].split("HINT")[0]


def test_quiet_on_corpus_and_tokenizer_train_and_no_cursor_escapes_in_a_log(tmp_path):
    shards = _jsonl_shards(tmp_path / "shards")
    (tmp_path / "stories.txt").write_text("Once upon a time.\n<|endoftext|>\nThe end.\n", encoding="utf-8")
    for argv in (
        ("corpus", "import", shards, "--out", tmp_path / "c", "--all-train", "--shard-rows", "10", "--quiet"),
        ("corpus", "tinystories", tmp_path / "stories.txt", "--out", tmp_path / "t", "--quiet"),
        (
            "tokenizer",
            "train",
            "--corpus",
            tmp_path / "c",
            "--vocab-size",
            "300",
            "--out",
            tmp_path / "tok",
            "--quiet",
        ),
    ):
        done = _cli(*argv)
        assert done.returncode == 0, done.stderr
        assert "it/s" not in done.stderr and "%|" not in done.stderr, argv
    # Not a terminal: bars are plain lines, no cursor movement (ESC [ A) or carriage returns redrawing a line.
    logged = _cli(
        "build",
        "--corpus",
        tmp_path / "c",
        "--tokenizer",
        "byte",
        "--doc-sep",
        "0",
        "--out",
        tmp_path / "r",
        "--num-proc",
        "2",
    )
    assert logged.returncode == 0, logged.stderr
    assert "\x1b[" not in logged.stderr and "\r" not in logged.stderr


def test_a_mistyped_flag_shows_the_subcommands_usage(tmp_path):
    done = _cli("build", "--corpus", tmp_path, "--tokenizer", "byte", "--out", tmp_path / "r", "--qiuet")
    assert done.returncode == 2
    assert done.stderr.startswith("usage: hf-tokbin build ") and "unrecognized arguments: --qiuet" in done.stderr


def test_a_missing_tokenizer_says_no_such_file_not_got_none(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", [("train", stories(5, 1))])
    done = _cli("build", "--corpus", corpus, "--tokenizer", tmp_path / "nope", "--out", tmp_path / "r")
    assert done.returncode == 1 and "tokenizer not found" in done.stderr and str(tmp_path / "nope") in done.stderr
    assert "got None" not in done.stderr


def test_a_tokenizer_without_eos_names_the_tokenizer_not_the_output(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", [("train", stories(50, 1))])
    assert (
        _cli("tokenizer", "train", "--corpus", corpus, "--vocab-size", "300", "--out", tmp_path / "tok").returncode
        == 0
    )
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "tokenizer.json").write_bytes((tmp_path / "tok" / "tokenizer.json").read_bytes())
    done = _cli(
        "build", "--corpus", corpus, "--tokenizer", tmp_path / "bare" / "tokenizer.json", "--out", tmp_path / "r"
    )
    assert done.returncode == 1 and "EOD" in done.stderr
    assert done.stderr.split(": error: ")[1].startswith(str(tmp_path / "bare" / "tokenizer.json") + ":")


def test_merge_paths_have_no_double_slash(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", [("train", stories(20, 1)), ("train", stories(20, 2))])
    assert (
        _cli(
            "build",
            "--corpus",
            corpus,
            "--tokenizer",
            "byte",
            "--doc-sep",
            "0",
            "--out",
            tmp_path / "r",
            "--quiet",
            "--format",
            "megatron",
        ).returncode
        == 0
    )
    done = _cli("merge", tmp_path / "r", "--out", f"{tmp_path / 'merged'}/")
    assert done.returncode == 0, done.stderr
    assert "merged/train" in done.stdout and "//" not in done.stdout


def test_build_of_a_saved_dataset_with_input_ids_writes_its_ids_and_check_ids_samples_them(tmp_path):
    import datasets

    import hf_tokbin

    texts = stories(30, 3)
    raw = datasets.Dataset.from_dict({"text": texts})
    raw.map(hf_tokbin.tokenize("byte"), batched=True).save_to_disk(tmp_path / "mapped")
    wrong = raw.map(hf_tokbin.tokenize("byte"), batched=True)
    ids = list(wrong["input_ids"])
    ids[7] = [*ids[7][:-1], (ids[7][-1] + 1) % 256]
    wrong.remove_columns("input_ids").add_column("input_ids", ids).save_to_disk(tmp_path / "wrong")
    raw.save_to_disk(tmp_path / "raw")
    built = {}
    for name, extra in {"raw": (), "mapped": ("--check-ids", "sample:5")}.items():
        done = _cli(
            "build",
            "--corpus",
            tmp_path / name,
            "--tokenizer",
            "byte",
            "--doc-sep",
            "0",
            "--out",
            tmp_path / f"r-{name}",
            "--quiet",
            *extra,
        )
        assert done.returncode == 0, done.stderr
        built[name] = json.loads((tmp_path / f"r-{name}" / "run_config.json").read_text())
    assert built["mapped"]["ids"]["checked"] == "sample:5" and "ids" not in built["raw"]
    assert (tmp_path / "r-mapped/shards/train/part-000000.bin").read_bytes() == (
        tmp_path / "r-raw/shards/train/part-000000.bin"
    ).read_bytes()
    refused = _cli(
        "build",
        "--corpus",
        tmp_path / "wrong",
        "--tokenizer",
        "byte",
        "--doc-sep",
        "0",
        "--out",
        tmp_path / "r-wrong",
        "--quiet",
    )
    assert refused.returncode == 1 and "input_ids" in refused.stderr and "Traceback" not in refused.stderr


def _leaf_parsers(parser, name="hf-tokbin"):
    import argparse

    nested = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not nested:
        yield name, parser
    for action in nested:
        for word, sub in action.choices.items():
            yield from _leaf_parsers(sub, f"{name} {word}")


def test_every_command_takes_quiet():
    from hf_tokbin.cli import make_parser

    leaves = dict(_leaf_parsers(make_parser()))
    assert {"hf-tokbin build", "hf-tokbin corpus import", "hf-tokbin tokenizer train", "hf-tokbin merge"} <= set(
        leaves
    )
    assert [name for name, parser in leaves.items() if "--quiet" not in parser._option_string_actions] == []
