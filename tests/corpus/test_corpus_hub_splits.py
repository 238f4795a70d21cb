"""A plain Hub repo's splits come from the card and listing checked once, by datasets' own rules.

``datasets.load_dataset_builder`` fetched the card again itself (unchecked, unbounded) and listed the repo again:
a server answering those second requests differently could swap the splits. The mapping is now resolved by
``datasets``' pattern functions against the checked card and listing (hf_tokbin/corpus/hub_splits.py). These
tests hold it to ``load_dataset_builder``'s answer on an honest server, layout by layout, and show that a server
changing its answers after the first cannot move a file to another split.

Runs the real client in child processes against a Hub-protocol server on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hostile_hub import HostileHub
from hub_server import client_env

pytestmark = pytest.mark.slow  # child processes against the Hub test server

TOKEN = "hf_corpus_hub_splits_token_0123456789"
# For each (repo, config): datasets' own answer (load_dataset_builder) and hf_tokbin's, as repo paths per split.
_BOTH = """
import json, sys, tempfile
from pathlib import Path
import datasets
from hf_tokbin.corpus.hub_source import data_files_by_split, hub_listing
out = []
for repo, config in json.loads(sys.argv[1]):
    commit, files = hub_listing(repo, None)
    prefix = f"hf://datasets/{repo}@{commit}/"
    try:
        builder = datasets.load_dataset_builder(repo, config, revision=commit)
        theirs = {str(s): [u.removeprefix(prefix) for u in urls] for s, urls in builder.config.data_files.items()}
    except Exception as e:
        theirs = "error: " + type(e).__name__
    try:
        with tempfile.TemporaryDirectory() as work:
            ours = data_files_by_split(repo, commit, files, config, Path(work))
    except Exception as e:
        ours = "error: " + type(e).__name__ + ": " + str(e)
    out.append([repo, config, theirs, ours])
print(json.dumps(out))
"""
_CLI = "import sys; from hf_tokbin.cli import main; sys.exit(main(sys.argv[1:]))"


def run(env: dict, *args, code: str = _CLI) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def parquet(path: Path, texts: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"text": texts}), path)


def card(yaml: str) -> str:
    return f"---\n{yaml}---\n\n# a corpus\n"


TWO_CONFIGS = """configs:
- config_name: small
  data_files:
  - split: train
    path: small/train-*.parquet
  - split: validation
    path: small/valid.parquet
- config_name: big
  default: true
  data_files:
  - split: train
    path: ["big/*.parquet", "extra/*.parquet"]
"""
# repo name -> {path: texts or card text}
LAYOUTS: dict[str, dict[str, list[str] | str]] = {
    "t/sharded-names": {
        "data/train-00000-of-00002.parquet": ["a"],
        "data/train-00001-of-00002.parquet": ["b"],
        "data/validation-00000-of-00001.parquet": ["c"],
        "data/test-00000-of-00001.parquet": ["d"],
    },
    "t/folders": {
        "train/x.parquet": ["a"],
        "train/y.parquet": ["b"],
        "valid/z.parquet": ["c"],
        ".cache/train/w.parquet": ["hidden"],
    },
    "t/file-names": {
        "train.parquet": ["a"],
        "dev.parquet": ["b"],
        "notes.txt": ["not data"],
        "__pycache__/train.parquet": ["special"],
    },
    "t/mixed-formats": {
        "data/train-1.parquet": ["a"],
        "data/train-2.parquet": ["b"],
        "data/train-3.csv": ["c"],
        "data/validation.parquet": ["d"],
    },
    "t/two-configs": {
        "README.md": card(TWO_CONFIGS),
        "small/train-0.parquet": ["a"],
        "small/train-1.parquet": ["b"],
        "small/valid.parquet": ["c"],
        "big/0.parquet": ["d"],
        "big/1.parquet": ["e"],
        "extra/2.parquet": ["f"],
    },
    "t/data-dir": {
        "README.md": card("configs:\n- config_name: default\n  data_dir: en\n"),
        "en/train-00000-of-00001.parquet": ["a"],
        "en/validation-00000-of-00001.parquet": ["b"],
        "fr/train-00000-of-00001.parquet": ["c"],
    },
    "t/standalone-yaml": {
        "README.md": card("license: mit\n"),
        ".huggingface.yaml": (
            "configs:\n- config_name: default\n  data_files:\n  - split: train\n    path: b/*.parquet\n"
        ),
        "a/train.parquet": ["a"],
        "b/1.parquet": ["b"],
    },
}
ASKED = [
    ("t/sharded-names", None),
    ("t/folders", None),
    ("t/file-names", None),
    ("t/mixed-formats", None),
    ("t/two-configs", None),
    ("t/two-configs", "small"),
    ("t/two-configs", "nope"),
    ("t/data-dir", None),
    ("t/standalone-yaml", None),
]


@pytest.fixture(scope="module")
def hub():
    with HostileHub(token=TOKEN) as server:
        yield server


@pytest.fixture(scope="module")
def env(hub, tmp_path_factory) -> dict:
    home = tmp_path_factory.mktemp("hf-home")
    return {
        **os.environ,
        **client_env(hub, home, TOKEN),
        "HF_TOKBIN_HUB_BACKOFF": "0.05",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }


def upload(hub, repo: str, files: dict[str, list[str] | str], root: Path) -> None:
    folder = root / repo.replace("/", "--")
    for path, content in files.items():
        if isinstance(content, str):
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text(content, encoding="utf-8")
        else:
            parquet(folder / path, content)
    hub.seed_repo(repo, folder)


def test_the_split_mapping_is_load_dataset_s_layout_by_layout(hub, env, tmp_path):
    for repo, files in LAYOUTS.items():
        upload(hub, repo, files, tmp_path)
    answered = run(env, json.dumps(ASKED), code=_BOTH)
    assert answered.returncode == 0, answered.stderr[-3000:]
    results = json.loads(answered.stdout)
    for repo, config, theirs, ours in results:
        if isinstance(theirs, str):  # datasets refuses: so do we, in one located line
            assert isinstance(ours, str) and ours.startswith("error: CorpusInputError"), (repo, config, theirs, ours)
        else:
            assert ours == theirs, (repo, config)
    by_key = {(repo, config): ours for repo, config, _, ours in results}
    # What the layouts are for, spelled out (so an agreement on nothing would fail too).
    assert by_key[("t/two-configs", None)] == {"train": ["big/0.parquet", "big/1.parquet", "extra/2.parquet"]}
    assert by_key[("t/two-configs", "small")] == {
        "train": ["small/train-0.parquet", "small/train-1.parquet"],
        "validation": ["small/valid.parquet"],
    }
    assert by_key[("t/folders", None)] == {
        "train": ["train/x.parquet", "train/y.parquet"],
        "validation": ["valid/z.parquet"],
    }
    assert by_key[("t/data-dir", None)] == {
        "train": ["en/train-00000-of-00001.parquet"],
        "validation": ["en/validation-00000-of-00001.parquet"],
    }
    assert by_key[("t/standalone-yaml", None)] == {"train": ["b/1.parquet"]}
    assert "csv" not in json.dumps(by_key[("t/mixed-formats", None)])


SPLIT_CARD = (
    "configs:\n- config_name: default\n  data_files:\n  - split: train\n    "
    "path: data/a-*.parquet\n  - split: validation\n    path: data/b-*.parquet\n"
)


def test_a_card_served_differently_the_second_time_cannot_swap_the_splits(hub, env, tmp_path):
    repo = "t/swap"
    upload(
        hub,
        repo,
        {
            "README.md": card(SPLIT_CARD),
            "data/a-0.parquet": ["train text"] * 3,
            "data/b-0.parquet": ["validation text"],
        },
        tmp_path,
    )
    # Every answer after the first gives the card with a and b swapped (same length, same listing).
    hub.later_answers["README.md"] = card(
        SPLIT_CARD.replace("a-*", "@-*").replace("b-*", "a-*").replace("@-*", "b-*")
    ).encode()
    out = tmp_path / "release"
    try:
        built = run(
            env,
            "build",
            "--corpus",
            repo,
            "--tokenizer",
            "byte",
            "--doc-sep",
            "0",
            "--format",
            "megatron",
            "--out",
            out,
            "--quiet",
        )
    finally:
        hub.later_answers.clear()
    assert built.returncode == 0, built.stderr[-3000:]
    shards = json.loads((out / "run_config.json").read_text())["corpus"]["shards"]
    assert [(s["path"], s["split"]) for s in shards] == [
        ("data/a-0.parquet", "train"),
        ("data/b-0.parquet", "validation"),
    ]
    commit = hub.repo(repo).branches["main"]
    assert hub.downloads(commit).count("README.md") == 1  # the card is read once, checked; never again


def test_a_card_that_is_not_yaml_is_one_located_line(hub, env, tmp_path):
    repo = "t/bad-card"
    upload(hub, repo, {"README.md": "---\nconfigs: [unclosed\n---\n", "data/train-0.parquet": ["x"]}, tmp_path)
    built = run(
        env, "build", "--corpus", repo, "--tokenizer", "byte", "--doc-sep", "0", "--out", tmp_path / "r", "--quiet"
    )
    lines = built.stderr.strip().splitlines()
    assert built.returncode == 1 and len(lines) == 1 and repo in lines[0] and "YAML" in lines[0], built.stderr[-2000:]



def test_a_transient_listing_failure_is_retried(hub, env, tmp_path):
    repo = "t/flaky-listing"
    upload(hub, repo, {"data/train-0.parquet": ["x"], "data/validation-0.parquet": ["y"]}, tmp_path)
    hub.fail_tree = 1
    try:
        planned = run(
            env,
            "build",
            "--corpus",
            repo,
            "--tokenizer",
            "byte",
            "--doc-sep",
            "0",
            "--out",
            tmp_path / "r",
            "--dry-run",
        )
    finally:
        hub.fail_tree = 0
    assert planned.returncode == 0, planned.stderr[-2000:]


def _one_card_case(path: str) -> str:
    return card(f"configs:\n- config_name: default\n  data_files:\n  - split: train\n    path: {path}\n")


@pytest.mark.parametrize(
    ("name", "readme", "rule"),
    [
        ("other-repo", _one_card_case("hf://datasets/t/other/*.parquet"), "must be a path in the repo"),
        ("local-disk", _one_card_case("/etc/*.parquet"), "must be a path in the repo"),
        ("file-url", _one_card_case("file:///etc/*.parquet"), "must be a path in the repo"),
        ("any-host", _one_card_case("ftp://127.0.0.1:1/*.parquet"), "must be a path in the repo"),
        ("chained", _one_card_case("zip://*.parquet::data/a.zip"), "must be a path in the repo"),
        ("no-match", _one_card_case("nomatch/*.parquet"), "match no file of the repo"),
        ("configs-not-mappings", card("configs: [config_name]\n"), "cannot find the dataset's data files"),
        ("deep-yaml", "---\nconfigs: " + "[" * 20000 + "\n---\n", "YAML"),
    ],
)
def test_a_card_naming_anything_but_the_repo_s_files_is_one_line_and_no_request(
    hub, env, tmp_path, name, readme, rule
):
    # resolve_pattern hands a pattern to whatever file system it names: another repo, the local disk, any host.
    repo = f"t/card-{name}"
    upload(hub, repo, {"README.md": readme, "data/train-0.parquet": ["x"]}, tmp_path)
    before = len(hub.requests)
    planned = run(
        env, "build", "--corpus", repo, "--tokenizer", "byte", "--doc-sep", "0", "--out", tmp_path / "r", "--dry-run"
    )
    lines = planned.stderr.strip().splitlines()
    assert planned.returncode == 1 and len(lines) == 1 and repo in lines[0] and rule in lines[0], planned.stderr[
        -2000:
    ]
    assert all(repo in path for _, _, path, _ in hub.requests[before:]), hub.requests[before:]  # no other repo asked
    imported = run(env, "corpus", "import", repo, "--out", tmp_path / "c")
    assert imported.returncode == 1 and len(imported.stderr.strip().splitlines()) == 1, imported.stderr[-2000:]


def test_corpus_import_of_an_hf_path_from_a_server_that_stops_answering_times_out(tmp_path):
    # HfFileSystem globs through huggingface_hub's shared client,
    # whose reads waited forever (list_repo_tree has no timeout).
    import time

    with HostileHub(token=TOKEN) as stalled:
        upload(stalled, "t/stalled", {"data/train-0.parquet": ["x"]}, tmp_path)
        # each listing page: the client gives up (about 31 s), or this test's subprocess (100 s)
        stalled.tree_delay = 120.0
        home = tmp_path / "home"
        home.mkdir()
        env = {
            **os.environ,
            **client_env(stalled, home, TOKEN),
            "HF_TOKBIN_HUB_ATTEMPTS": "1",
            "HF_TOKBIN_PULL_READ_TIMEOUT": "1",
            "PYTHONPATH": os.pathsep.join(sys.path),
        }
        started = time.monotonic()
        imported = subprocess.run(
            [
                sys.executable,
                "-c",
                _CLI,
                "corpus",
                "import",
                "hf://datasets/t/stalled/data/*.parquet",
                "--out",
                str(tmp_path / "c"),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=100,
            check=False,
        )
        seconds = time.monotonic() - started
    # huggingface_hub retries the page itself (five times, warning each time): then one error line, no traceback.
    last = imported.stderr.strip().splitlines()[-1]
    assert (
        imported.returncode == 1 and last.startswith("hf-tokbin corpus: error:") and "Traceback" not in imported.stderr
    ), imported.stderr[-2000:]
    assert seconds < 100, seconds
