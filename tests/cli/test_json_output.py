"""--json: the summary as one JSON line on stdout, messages and progress on stderr.

The record holds the same facts as the human summary, as fields.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hub_server import HubServer, client_env
from release_fixtures import stories, write_corpus

TOKEN = "hf_json_test_token_0123456789"
ROW = re.compile(r"^(train|validation)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d.]+)$")


def cli(*args, env=None) -> subprocess.CompletedProcess:
    code = "import sys; from hf_tokbin.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)], env=env, capture_output=True, text=True, timeout=300
    )


def one_object(result: subprocess.CompletedProcess) -> dict:
    """stdout holds exactly one JSON object, on one line."""
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\n") == 1, result.stdout
    return json.loads(result.stdout)


def table_counts(text: str) -> dict[str, dict]:
    """The split table of a human summary (counts_table's columns) as counts."""
    counts = {}
    for line in text.splitlines():
        found = ROW.match(line.strip())
        if found:
            documents, text_tokens, eod, total = (int(v.replace(",", "")) for v in found.groups()[1:5])
            counts[found.group(1)] = {
                "documents": documents,
                "text_tokens": text_tokens,
                "eod_tokens": eod,
                "total_tokens": total,
            }
    return counts


def without(record: dict, *keys) -> dict:
    return {k: v for k, v in record.items() if k not in keys}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return write_corpus(
        tmp_path_factory.mktemp("c") / "corpus",
        [("train", stories(20, 1)), ("train", stories(15, 2)), ("validation", stories(6, 3))],
    )


@pytest.fixture(scope="module")
def built(corpus, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp("r") / "release"
    flags = ["build", "--corpus", corpus, "--tokenizer", "byte", "--doc-sep", "0", "--out", out]
    human = cli(*flags)
    machine = cli(*flags, "--json")  # the complete release again: its summary read back
    return out, human, machine


def test_build_json_matches_the_build_table(built):
    out, human, machine = built
    record = one_object(machine)
    assert human.returncode == 0 and table_counts(human.stdout)
    assert {split: without(c, "text_bytes") for split, c in record["splits"].items()} == table_counts(human.stdout)
    assert f"{record['files']} files" in human.stdout and record["out"] == str(out) and record["parts_skipped"] == 3
    # The boundary line is a message: stdout for a person, stderr under --json.
    assert record["boundary_tokens"] in human.stdout and record["boundary_tokens"] in machine.stderr


def test_verify_json_matches_the_verify_summary(built):
    out = built[0]
    human, record = cli("verify", out), one_object(cli("verify", out, "--json"))
    assert record["ok"] and record["kind"] == "release"
    for split, c in record["splits"].items():
        assert re.search(
            rf"{split}\s+{c['documents']:,} documents\s+{c['text_tokens']:,} text tokens\s+{c['eod_tokens']:,} EOD",
            human.stdout,
        )
    assert f"{record['files']} files" in human.stdout and ", ".join(record["formats"]) in human.stdout


def test_info_json_matches_the_info_summary_and_the_build(built):
    out, build_human, _ = built
    human, record = cli("info", out), one_object(cli("info", out, "--json"))
    assert (
        {split: without(c, "text_bytes") for split, c in record["splits"].items()}
        == table_counts(human.stdout)
        == table_counts(build_human.stdout)
    )
    assert record["complete"] and f"release {record['dataset']}, complete" in human.stdout
    assert "{" not in human.stdout  # a summary, not stats.json


def test_info_json_of_a_token_file_has_its_fields(built):
    token_file = next((built[0] / "tokens").rglob("*.bin"))
    human, record = cli("info", token_file), one_object(cli("info", token_file, "--json"))
    assert record["kind"] == "llmc-file" and "summary" not in record
    assert record["tokens"] == int.from_bytes(token_file.read_bytes()[8:12], "little")  # header int 2: tokens
    assert record["bytes"] == token_file.stat().st_size and record["magic"] == 20240520 and record["version"] == 1
    assert f"tokens      {record['tokens']:,}" in human.stdout and f"first ids   {record['first_ids']}" in human.stdout


def test_info_json_of_a_pair_a_corpus_and_a_merge_has_their_fields(built, corpus, tmp_path):
    out = built[0]
    pair = one_object(cli("info", out / "shards" / "train" / "part-000000.idx", "--json"))
    counts = json.loads((out / "receipts" / "part-000000.json").read_text())["splits"]["train"]
    assert pair["kind"] == "megatron-pair" and pair["documents"] == counts["documents"] == 20
    assert pair["tokens"] == counts["text_tokens"] + counts["eod_tokens"] and pair["sequences"] == 20
    shards = one_object(cli("info", corpus, "--json"))["shards"]
    assert [(s["split"], s["documents"]) for s in shards] == [("train", 20), ("train", 15), ("validation", 6)]
    assert cli("merge", out, "--out", tmp_path / "m").returncode == 0
    merged = one_object(cli("info", tmp_path / "m", "--json"))
    assert merged["kind"] == "merge" and merged["splits"]["train"]["documents"] == 35


def test_push_and_pull_json_match_their_summaries(built, tmp_path):
    out = built[0]
    home = tmp_path / "home"
    home.mkdir()
    with HubServer(token=TOKEN) as hub:
        env = {**os.environ, **client_env(hub, home, TOKEN)}
        preview = one_object(cli("push", out, "--repo", "me/rel", "--dry-run", "--json", env=env))
        assert preview["dry_run"] and len(preview["add"]) > 0 and preview["keep"] == []
        pushed = one_object(cli("push", out, "--repo", "me/rel", "--json", env=env))
        assert pushed["files_uploaded"] == len(preview["add"]) and pushed["commits"] >= 1
        again = cli("push", out, "--repo", "me/rel", env=env)
        assert again.returncode == 0 and f"verified at {pushed['head']}" in again.stdout
        pulled = one_object(cli("pull", "me/rel", "--out", tmp_path / "copy", "--json", env=env))
        human = cli("pull", "me/rel", "--out", tmp_path / "copy2", env=env)
    assert pulled["commit"] == pushed["head"] and pulled["complete"] and f"{pulled['files']} files" in human.stdout
    assert f"me/rel@{pulled['commit']}" in human.stdout


def test_an_error_under_json_is_one_line_on_stderr_too(tmp_path):
    result = cli("verify", tmp_path / "missing", "--json")
    assert result.returncode == 1 and len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    "command",
    [
        ["verify", "{missing}"],
        ["info", "{missing}"],
        ["recipe", "{missing}", "--for", "llmc"],
        ["build", "--corpus", "{missing}", "--tokenizer", "byte", "--out", "{out}"],
    ],
    ids=lambda c: c[0],
)
def test_an_error_under_json_is_one_json_object_on_stdout(tmp_path, command):
    missing = tmp_path / "no-such-release"
    args = [word.format(missing=missing, out=tmp_path / "out") for word in command]
    done = cli(*args, "--json")
    assert done.returncode == 1, done.stderr
    assert done.stdout.count("\n") == 1, done.stdout
    error = json.loads(done.stdout)["error"]
    assert sorted(error) == ["message", "path", "rule"], error
    assert error["path"] == str(missing) and error["rule"] and error["rule"] in error["message"], error
    assert error["message"] in done.stderr  # the line a person reads is still there


def test_build_dry_run_json_has_the_plan_as_fields(corpus, tmp_path):
    out = tmp_path / "out"
    flags = ["build", "--corpus", corpus, "--tokenizer", "byte", "--doc-sep", "0", "--out", out, "--dry-run"]
    human, record = cli(*flags), one_object(cli(*flags, "--json"))
    assert "plan" not in record and record["dry_run"] and not out.exists()
    assert record["splits"]["train"]["documents"] == 35 and record["splits"]["train"]["shards"] == 2
    assert record["splits"]["validation"]["parts"] == ["part-000002"]
    assert record["tokenizer_id"] == "byte" and record["vocab_size"] == 256 and record["eod_id"] == 0
    train = record["splits"]["train"]
    assert (
        f"train: 2 shards (part-000000..part-000001), 35 documents, ~{train['estimated_tokens']:,} tokens"
        in human.stdout
    )


def test_corpus_json_counts_what_it_wrote(tmp_path):
    train, valid = tmp_path / "train.txt", tmp_path / "valid.txt"
    train.write_text("".join(f"story {i}\n<|endoftext|>\n" for i in range(7)))
    valid.write_text("one more\n<|endoftext|>\n")
    human = cli("corpus", "tinystories", train, valid, "--out", tmp_path / "a")
    record = one_object(cli("corpus", "tinystories", train, valid, "--out", tmp_path / "c", "--json"))
    assert record["splits"]["train"]["documents"] == 7 and record["splits"]["validation"]["documents"] == 1
    assert record["split_rule"] == "files" and record["read_bytes"] == train.stat().st_size + valid.stat().st_size
    assert record["out"] == str(tmp_path / "c") and record["warnings"] == []
    assert human.stdout == "" and "train: 7 stories in 1 shard" in human.stderr  # the human summary as it was
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"text": f"row {i}"}) + "\n" for i in range(5)))
    imported = one_object(cli("corpus", "import", rows, "--out", tmp_path / "i", "--json"))
    assert imported["splits"] == {
        "train": {"documents": 5, "shards": 1, "bytes": imported["splits"]["train"]["bytes"]},
        "validation": {"documents": 0, "shards": 0, "bytes": 0},
    }
    assert imported["warnings"] and "no validation documents" in imported["warnings"][0]


def test_tokenizer_train_json_names_the_file_and_its_size(corpus, tmp_path):
    out = tmp_path / "tok"
    flags = ["tokenizer", "train", "--corpus", corpus, "--vocab-size", 300, "--quiet", "--json"]
    record = one_object(cli(*flags, "--out", out))
    assert record["tokenizer"] == str(out / "tokenizer.json") and record["vocab_size"] == 300
    texts = stories(20, 1) + stories(15, 2)
    assert record["characters"] == sum(map(len, texts)) and record["documents"] == 35
    human = cli(*flags[:-1], "--out", tmp_path / "again")
    assert f"trained on the first {record['characters']:,} characters of train" in human.stdout


def test_merge_json_counts_each_merged_split(built, tmp_path):
    out = built[0]
    human = cli("merge", out, "--out", tmp_path / "a")
    record = one_object(cli("merge", out, "--out", tmp_path / "m", "--json"))
    assert record["splits"]["train"]["documents"] == 35 and record["splits"]["validation"]["documents"] == 6
    assert record["splits"]["train"]["parts"] == 2 and record["splits"]["train"]["prefix"] == f"{tmp_path / 'm'}/train"
    tokens = record["splits"]["validation"]["tokens"]
    assert f"/validation: 6 documents, {tokens:,} tokens from 1 part(s)" in human.stdout


def test_show_json_has_the_pieces_and_the_decoded_text(built):
    out = built[0]
    record = one_object(cli("show", out, "--doc", 3, "--json"))
    assert record["documents"] == [3] and record["split"] == "train" and record["format"] == "megatron"
    text = "".join(p["text"] for p in record["pieces"] if p["role"] is None)
    assert text == stories(20, 1)[3]  # the byte tokenizer decodes to the document itself
    assert [p["role"] for p in record["pieces"]] == [None, "EOD"] and record["pieces"][1]["ids"] == [0]


def test_recipe_json_is_one_line_with_commands_as_argv_lists(built):
    out = built[0]
    done = cli("recipe", out, "--for", "llmc", "--batch-size", 2, "--seq-len", 16, "--json")
    record = one_object(done)
    assert record["target"] == "llmc" and record["release"] == str(out)
    assert record["commands"][0][0] == "./train_gpt2cu" and f"{out}/tokens/byte/toy/val-*.bin" in record["commands"][0]


def test_verify_json_of_a_token_file_and_a_pair_has_their_fields(built):
    out = built[0]
    token_file = next((out / "tokens").rglob("val-*.bin"))
    record = one_object(cli("verify", token_file, "--json"))
    assert record["ok"] and record["kind"] == "llmc-file" and "summary" not in record
    assert record["tokens"] == int.from_bytes(token_file.read_bytes()[8:12], "little") and record["version"] == 1
    pair = one_object(cli("verify", out / "shards" / "validation" / "part-000002.bin", "--json"))
    assert pair["ok"] and pair["kind"] == "megatron-pair" and pair["documents"] == 6
