"""The Hub parts of a build, and the whole journey, through the real huggingface_hub client and the test server.

- ``build --tokenizer NS/NAME`` with a subfolder and a pinned revision, then
  the same build from the local cache alone (server stopped, ``HF_HUB_OFFLINE=1``);
- ``build --corpus NS/NAME`` from a corpus pushed with ``hf-tokbin push``;
- corpus -> tokenizer train -> build -> push -> pull -> verify.

The reference is one local build (sample corpus, a small BPE trained on it);
every Hub variant is compared with it file by file. Commands that talk to the
Hub run the command line in a child process: huggingface_hub reads
HF_ENDPOINT, HF_HUB_OFFLINE and HF_HUB_DISABLE_XET when it is imported.
Local steps run in process.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hub_server import HubServer, client_env

import hf_tokbin
from hf_tokbin.cli import main
from hf_tokbin.formats.release import Complete

pytestmark = pytest.mark.slow  # builds from the Hub test server

TOKEN = "hf_build_test_token_0123456789"
TOKENIZER_REPO = "tester/tiny-bpe"
CORPUS_REPO = "tester/tinystories-corpus"
RELEASE_REPO = "tester/tinystories-tiny"
TOKENIZER_ID = "tiny"  # given to every build, so llm.c paths do not depend on where the tokenizer came from
SAMPLE = Path(hf_tokbin.__file__).parent / "data" / "sample"
# What a build's run_config.json names changes the card and COMPLETE.json (which lists run_config.json and the card).
RECORD_FILES = {"run_config.json", "README.md", "COMPLETE.json"}
_CLI = "import sys; from hf_tokbin.cli import main; sys.exit(main(sys.argv[1:]))"


def cli(env: dict, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", _CLI, *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def differing(a: dict[str, bytes], b: dict[str, bytes]) -> set[str]:
    assert set(a) == set(b)
    return {path for path in a if a[path] != b[path]}


def run_config(root: Path) -> dict:
    return json.loads((root / "run_config.json").read_text(encoding="utf-8"))


def error_line(result: subprocess.CompletedProcess) -> str:
    """The one line a failed command prints; anything more (a traceback, warnings) fails the test."""
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def stories(corpus: Path, split: str) -> list[str]:
    return [
        t
        for p in sorted((corpus / "data").glob(f"{split}-*.parquet"))
        for t in pq.read_table(p).column("text").to_pylist()
    ]


# -- the local journey's first steps, shared by every test ----------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("corpus") / "tinystories"
    # 200 stories a shard: three train parts and one validation part.
    assert (
        main(
            [
                "corpus",
                "tinystories",
                str(SAMPLE / "train.txt"),
                str(SAMPLE / "valid.txt"),
                "--out",
                str(out),
                "--shard-rows",
                "200",
            ]
        )
        == 0
    )
    return out


@pytest.fixture(scope="module")
def tokenizer_dir(corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tokenizer") / "bpe"
    assert main(["tokenizer", "train", "--corpus", str(corpus), "--vocab-size", "512", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def reference(corpus, tokenizer_dir, tmp_path_factory) -> Path:
    """The release built from the local corpus folder with the local tokenizer."""
    out = tmp_path_factory.mktemp("reference") / "release"
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                str(tokenizer_dir),
                "--tokenizer-id",
                TOKENIZER_ID,
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    return out


@pytest.fixture(scope="module")
def hub():
    with HubServer(token=TOKEN) as server:
        yield server


@pytest.fixture
def env(hub, tmp_path) -> dict:
    home = tmp_path / "hf-home"
    home.mkdir()
    return {**os.environ, **client_env(hub, home, TOKEN), "HF_TOKBIN_HUB_BACKOFF": "0.05"}


def tokenizer_repo_folder(tokenizer_dir: Path, dest: Path, eos_token_id: int | None = None) -> Path:
    """A model repo's files: the tokenizer in ``tokenizer/``, as many repos keep it beside the model."""
    (dest / "tokenizer").mkdir(parents=True, exist_ok=True)
    (dest / "README.md").write_text("# a tiny byte-level BPE\n", encoding="utf-8")
    shutil.copy(tokenizer_dir / "tokenizer.json", dest / "tokenizer" / "tokenizer.json")
    config = json.loads((tokenizer_dir / "generation_config.json").read_text(encoding="utf-8"))
    if eos_token_id is not None:
        config["eos_token_id"] = eos_token_id
    (dest / "tokenizer" / "generation_config.json").write_text(json.dumps(config), encoding="utf-8")
    return dest


# -- --tokenizer NS/NAME ----------------------------------------------------------------------------


def test_hub_tokenizer_at_a_pinned_revision_builds_the_reference_and_rebuilds_offline(
    corpus, tokenizer_dir, reference, tmp_path
):
    home = tmp_path / "hf-home"
    home.mkdir()
    args = [
        "build",
        "--corpus",
        corpus,
        "--tokenizer",
        TOKENIZER_REPO,
        "--tokenizer-subfolder",
        "tokenizer",
        "--tokenizer-id",
        TOKENIZER_ID,
        "--quiet",
    ]
    with HubServer() as tokenizer_hub:
        pinned = tokenizer_hub.seed_repo(
            TOKENIZER_REPO, tokenizer_repo_folder(tokenizer_dir, tmp_path / "model"), repo_type="model"
        )
        # A later commit on main changes the separator: only the pin keeps the reference's ids.
        head = tokenizer_hub.seed_repo(
            TOKENIZER_REPO, tokenizer_repo_folder(tokenizer_dir, tmp_path / "model", eos_token_id=1), repo_type="model"
        )
        assert head != pinned
        env = {**os.environ, **client_env(tokenizer_hub, home)}
        online = cli(env, *args, "--tokenizer-revision", pinned, "--out", tmp_path / "online")
        assert online.returncode == 0, online.stderr
        fetched = [
            path for _, method, path, status in tokenizer_hub.requests if method == "GET" and "/resolve/" in path
        ]
        assert fetched == [
            f"/{TOKENIZER_REPO}/resolve/{pinned}/tokenizer/{name}"
            for name in ("tokenizer.json", "generation_config.json")
        ]

    released = files_under(tmp_path / "online")
    # The release ships the config files the build read: the local tokenizer folder also holds tokenizer_config.json.
    local = files_under(reference)
    assert set(local) - set(released) == {"tokenizer/tokenizer_config.json"}
    del local["tokenizer/tokenizer_config.json"]
    # the repo's copy, written anew
    assert differing(released, local) == RECORD_FILES | {"tokenizer/generation_config.json"}
    # the pinned one
    assert json.loads(released["tokenizer/generation_config.json"]) == json.loads(
        local["tokenizer/generation_config.json"]
    )
    # config_files pins the config files this build read: the repo's generation_config.json alone.
    pinned_configs = {
        "generation_config.json": hashlib.sha256(released["tokenizer/generation_config.json"]).hexdigest()
    }
    expected_tokenizer = {
        **run_config(reference)["tokenizer"],
        "source": TOKENIZER_REPO,
        "revision": pinned,
        "subfolder": "tokenizer",
        "config_files": pinned_configs,
    }
    assert run_config(tmp_path / "online")["tokenizer"] == expected_tokenizer
    assert {k: v for k, v in run_config(tmp_path / "online").items() if k != "tokenizer"} == {
        k: v for k, v in run_config(reference).items() if k != "tokenizer"
    }

    # The server is gone: the cache alone gives the same bytes.
    offline = cli({**env, "HF_HUB_OFFLINE": "1"}, *args, "--tokenizer-revision", pinned, "--out", tmp_path / "offline")
    assert offline.returncode == 0, offline.stderr
    assert files_under(tmp_path / "offline") == released

    # Offline with an empty cache: one line saying what to do.
    empty = tmp_path / "empty-home"
    empty.mkdir()
    line = error_line(
        cli(
            {**env, "HF_HUB_OFFLINE": "1", "HF_HOME": str(empty)},
            *args,
            "--tokenizer-revision",
            pinned,
            "--out",
            tmp_path / "nothing",
        )
    )
    assert line.startswith(f"hf-tokbin build: error: {TOKENIZER_REPO}: no local file or folder of this name"), line
    assert "HF_HUB_OFFLINE=1 is set" in line, line
    assert "HF_HUB_OFFLINE=0" in line  # what to do: allow the Hub
    assert not (tmp_path / "nothing").exists()


@pytest.fixture(scope="module")
def tokenizer_commit(hub, tokenizer_dir, tmp_path_factory) -> str:
    return hub.seed_repo(
        TOKENIZER_REPO, tokenizer_repo_folder(tokenizer_dir, tmp_path_factory.mktemp("model")), repo_type="model"
    )


@pytest.mark.parametrize(
    "tokenizer_args, where, rule",
    [
        # A name that is neither a local path nor a Hub repo: both readings are said.
        (
            ["--tokenizer", "tester/no-such-repo"],
            "tester/no-such-repo: no local file or folder of this name",
            "repo not found",
        ),
        (
            ["--tokenizer", TOKENIZER_REPO, "--tokenizer-revision", "f" * 40],
            f"{TOKENIZER_REPO}@{'f' * 40}/tokenizer.json: cannot fetch the tokenizer: ",
            "revision not found",
        ),
        (
            ["--tokenizer", TOKENIZER_REPO, "--tokenizer-revision", "v9"],
            f"{TOKENIZER_REPO}@v9/tokenizer.json: cannot fetch the tokenizer: ",
            "revision not found",
        ),
        (
            ["--tokenizer", TOKENIZER_REPO, "--tokenizer-subfolder", "tokenizers"],
            f"{TOKENIZER_REPO}@main/tokenizers/tokenizer.json: cannot fetch the tokenizer: ",
            "no such file in the repo",
        ),
    ],
    ids=["missing-repo", "missing-commit", "missing-branch", "wrong-subfolder"],
)
def test_a_tokenizer_the_hub_does_not_have_is_one_clear_line(
    hub, env, tokenizer_commit, corpus, tmp_path, tokenizer_args, where, rule
):
    line = error_line(cli(env, "build", "--corpus", corpus, *tokenizer_args, "--out", tmp_path / "release"))
    assert line.startswith(f"hf-tokbin build: error: {where}") and rule in line, line
    assert TOKEN not in line
    assert not (tmp_path / "release").exists()


# -- --corpus NS/NAME -------------------------------------------------------------------------------


def test_hub_corpus_builds_the_reference_and_loads_with_datasets(hub, env, corpus, tokenizer_dir, reference, tmp_path):
    pushed = cli(env, "push", corpus, "--repo", CORPUS_REPO)
    assert pushed.returncode == 0, pushed.stderr
    commit = hub.repo(CORPUS_REPO).branches["main"]
    remote = hub.head_files(CORPUS_REPO)
    remote.pop(".gitattributes")
    assert remote == files_under(corpus)

    out = tmp_path / "release"
    built = cli(
        env,
        "build",
        "--corpus",
        CORPUS_REPO,
        "--tokenizer",
        tokenizer_dir,
        "--tokenizer-id",
        TOKENIZER_ID,
        "--out",
        out,
        "--quiet",
    )
    assert built.returncode == 0, built.stderr
    released, local = files_under(out), files_under(reference)
    assert differing(released, local) == RECORD_FILES
    # run_config.json differs only in where the corpus came from; the card names that source.
    config, local_config = run_config(out), run_config(reference)
    assert (config["corpus"]["source"], config["corpus"]["revision"]) == (CORPUS_REPO, commit)
    assert config == {**local_config, "corpus": {**local_config["corpus"], "source": CORPUS_REPO, "revision": commit}}
    assert CORPUS_REPO in released["README.md"].decode() and CORPUS_REPO not in local["README.md"].decode()
    listed = {f.path: f for f in Complete.read(out).files}
    listed_locally = {f.path: f for f in Complete.read(reference).files}
    assert {path for path in listed if listed[path] != listed_locally[path]} == {"run_config.json", "README.md"}

    # The raw corpus on the Hub is a plain dataset: load_dataset reads the stories with no custom code.
    code = (
        f"import json, datasets; d = datasets.load_dataset({CORPUS_REPO!r}); "
        f"print(json.dumps({{k: list(d[k]['text']) for k in d}}))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    by_split = json.loads(loaded.stdout.strip().splitlines()[-1])
    assert by_split == {split: stories(corpus, split) for split in ("train", "validation")}
    # One story per <|endoftext|> line of the sample files.
    for split, name in (("train", "train.txt"), ("validation", "valid.txt")):
        delimiters = sum(
            1 for line in (SAMPLE / name).read_text(encoding="utf-8").splitlines() if line.strip() == "<|endoftext|>"
        )
        assert len(by_split[split]) == delimiters


def test_a_corpus_the_hub_does_not_have_is_one_clear_line(env, tokenizer_dir, tmp_path):
    line = error_line(
        cli(
            env,
            "build",
            "--corpus",
            "tester/no-such-corpus",
            "--tokenizer",
            tokenizer_dir,
            "--out",
            tmp_path / "release",
        )
    )
    # Neither a local folder nor a Hub repo: both readings are said.
    assert line.startswith("hf-tokbin build: error: tester/no-such-corpus: no local file or folder of this name"), line
    assert "repo not found" in line, line
    assert not (tmp_path / "release").exists()


# -- the whole journey ------------------------------------------------------------------------------


def test_push_pull_verify_gives_back_every_byte_of_the_release(hub, env, reference, tmp_path, capsys):
    assert main(["verify", str(reference)]) == 0  # the build's own output passes first
    pushed = cli(env, "push", reference, "--repo", RELEASE_REPO)
    assert pushed.returncode == 0, pushed.stderr
    assert "COMPLETE.json verified at " + hub.repo(RELEASE_REPO).branches["main"] in pushed.stdout

    pulled_dir = tmp_path / "fresh" / "release"
    pulled = cli(env, "pull", RELEASE_REPO, "--out", pulled_dir)
    assert pulled.returncode == 0, pulled.stderr
    assert pulled.stdout.startswith(f"pulled {RELEASE_REPO}@")

    capsys.readouterr()
    assert main(["verify", str(pulled_dir)]) == 0
    assert files_under(pulled_dir) == files_under(reference)
    assert TOKEN not in pushed.stdout + pushed.stderr + pulled.stdout + pulled.stderr


def _whole_downloads(hub, suffix: str) -> int:
    """Complete downloads (status 200, not 206 ranges) of files ending in ``suffix``."""
    return sum(
        1
        for _, method, path, status in hub.requests
        if method == "GET" and status == 200 and "/resolve/" in path and path.endswith(suffix)
    )


def test_a_dry_run_of_a_hub_corpus_folder_downloads_no_shard_and_the_build_fetches_each_once(
    hub, env, corpus, tokenizer_dir, reference, tmp_path
):
    """``build --dry-run`` on a pushed corpus folder plans from its checked manifest and the listing: no shard is
    downloaded (its sample is the first rows of the shards, by range requests); the build fetches each shard once."""
    repo = "tester/corpus-planned"
    pushed = cli(env, "push", corpus, "--repo", repo)
    assert pushed.returncode == 0, pushed.stderr
    shards = [p for p in hub.head_files(repo) if p.endswith(".parquet")]
    before = len(hub.requests)
    planned = cli(
        env,
        "build",
        "--corpus",
        repo,
        "--tokenizer",
        tokenizer_dir,
        "--tokenizer-id",
        TOKENIZER_ID,
        "--out",
        tmp_path / "release",
        "--dry-run",
    )
    assert planned.returncode == 0, planned.stderr
    assert f"{len(shards)} input shards" in planned.stdout and "documents" in planned.stdout
    during = hub.requests[before:]
    shard_gets = [(m, s) for _, m, p, s in during if "/resolve/" in p and p.endswith(".parquet") and m == "GET"]
    # The sample the estimate comes from: range reads of each shard's footer and first rows, never a download.
    assert shard_gets and all(status == 206 for _, status in shard_gets), shard_gets
    assert not (tmp_path / "release").exists()
    before = _whole_downloads(hub, ".parquet")
    built = cli(
        env,
        "build",
        "--corpus",
        repo,
        "--tokenizer",
        tokenizer_dir,
        "--tokenizer-id",
        TOKENIZER_ID,
        "--out",
        tmp_path / "release",
        "--quiet",
    )
    assert built.returncode == 0, built.stderr
    assert _whole_downloads(hub, ".parquet") == before + len(shards)
    assert {p: b for p, b in files_under(tmp_path / "release").items() if p.startswith(("tokens/", "shards/"))} == {
        p: b for p, b in files_under(reference).items() if p.startswith(("tokens/", "shards/"))
    }
