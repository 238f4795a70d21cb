"""A plain Hub dataset repo (Parquet pushed with huggingface_hub.upload_folder, no hf_tokbin manifest) as a corpus.

Runs the real client in child processes against tests/hub_server.py (127.0.0.1).
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
from hub_server import PAGE_SIZE, HubServer, client_env
from tokenizers import Tokenizer

from hf_tokbin.cli import main
from hf_tokbin.formats.megatron import MegatronPair
from hf_tokbin.formats.release import Receipt

pytestmark = pytest.mark.slow  # builds from the Hub test server in child processes

TOKEN = "hf_corpus_hub_test_token_0123456789"
REPO = "tester/plain-parquet"
_CLI = "import sys; from hf_tokbin.cli import main; sys.exit(main(sys.argv[1:]))"
_UPLOAD = (
    "import sys; from huggingface_hub import HfApi; api = HfApi(); api.create_repo(sys.argv[1], repo_type='dataset', "
    "exist_ok=True); print(api.upload_folder(repo_id=sys.argv[1], folder_path=sys.argv[2], repo_type='dataset').oid)"
)


def run(env: dict, *args, code: str = _CLI) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def hub():
    with HubServer(token=TOKEN) as server:
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


def documents(split: str, shard: int) -> list[str]:
    return [
        f"{split} shard {shard} document {i}: the cat sat on the mat, caf\u00e9 {'and so on ' * (i % 5)}"
        for i in range(40 + shard)
    ]


@pytest.fixture(scope="module")
def plain_repo(hub, env, tmp_path_factory) -> dict[str, list[list[str]]]:
    """Four train shards and one validation shard, named as datasets' default patterns expect, extra columns included.
    """
    folder = tmp_path_factory.mktemp("plain")
    (folder / "data").mkdir()
    texts = {"train": [documents("train", k) for k in range(4)], "validation": [documents("validation", 0)]}
    for split, shards in texts.items():
        for k, docs in enumerate(shards):
            table = pa.table(
                {
                    "id": list(range(len(docs))),
                    "text": docs,
                    "url": [f"https://example.com/{i}" for i in range(len(docs))],
                }
            )
            pq.write_table(table, folder / "data" / f"{split}-{k:05d}-of-{len(shards):05d}.parquet", row_group_size=16)
    uploaded = run(env, REPO, folder, code=_UPLOAD)
    assert uploaded.returncode == 0, uploaded.stderr[-3000:]
    return texts


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tok") / "bpe"
    corpus = tmp_path_factory.mktemp("tokcorpus")
    (corpus / "a.jsonl").write_text(
        "".join(json.dumps({"text": t}) + "\n" for t in documents("train", 0) * 3), encoding="utf-8"
    )
    assert main(["corpus", "import", str(corpus / "a.jsonl"), "--out", str(corpus / "c")]) == 0
    assert main(["tokenizer", "train", "--corpus", str(corpus / "c"), "--vocab-size", "300", "--out", str(out)]) == 0
    return out


def whole_downloads(hub, pattern: str) -> int:
    """Complete downloads (status 200, not 206 ranges) of the files matching ``pattern`` at a commit."""
    import re

    return sum(
        1
        for _, method, path, status in hub.requests
        if method == "GET" and status == 200 and re.search(r"/resolve/[0-9a-f]{40}" + pattern, path)
    )


def build(env, tokenizer_dir, out, *extra) -> subprocess.CompletedProcess:
    return run(
        env,
        "build",
        "--corpus",
        REPO,
        "--tokenizer",
        tokenizer_dir,
        "--tokenizer-id",
        "tiny",
        "--format",
        "megatron",
        "--out",
        out,
        "--quiet",
        *extra,
    )


def test_a_plain_parquet_repo_builds_every_document_as_tokenizer_ids_plus_eod_in_file_order(
    hub, env, plain_repo, tokenizer_dir, tmp_path
):
    out = tmp_path / "release"
    built = build(env, tokenizer_dir, out)
    assert built.returncode == 0, built.stderr[-3000:]
    tokenizer = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    eod = json.loads((tokenizer_dir / "generation_config.json").read_text())["eos_token_id"]
    config = json.loads((out / "run_config.json").read_text())
    commit = hub.repo(REPO).branches["main"]
    assert (config["corpus"]["source"], config["corpus"]["revision"]) == (REPO, commit)
    shard_files = [f"data/train-{k:05d}-of-00004.parquet" for k in range(4)] + [
        "data/validation-00000-of-00001.parquet"
    ]
    assert [s["path"] for s in config["corpus"]["shards"]] == shard_files
    head = hub.head_files(REPO)
    part = 0
    for split, shards in plain_repo.items():
        for docs in shards:
            receipt = Receipt.read(out / "receipts" / f"part-{part:06d}.json")
            # The receipt names the Hub file and the SHA-256 the Hub reports for it.
            import hashlib

            assert receipt.input_shard.path == shard_files[part]
            assert receipt.input_shard.sha256 == hashlib.sha256(head[shard_files[part]]).hexdigest()
            pair = MegatronPair(out / "shards" / split / f"part-{part:06d}.idx")
            assert len(pair) == len(docs)
            for i, text in enumerate(docs):
                assert pair[i].tolist() == tokenizer.encode(text, add_special_tokens=False).ids + [eod]
            part += 1
    assert main(["verify", str(out)]) == 0


def test_a_plain_parquet_repo_is_counted_by_the_source_column_named(hub, env, plain_repo, tokenizer_dir, tmp_path):
    out = tmp_path / "release"
    built = build(env, tokenizer_dir, out, "--source-column", "url")
    assert built.returncode == 0, built.stderr[-3000:]
    tokenizer = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    expected: dict = {}
    for split, shards in plain_repo.items():
        for docs in shards:
            for i, text in enumerate(docs):
                counts = expected.setdefault(f"https://example.com/{i}", {}).setdefault(split, [0, 0])
                counts[0] += 1
                counts[1] += len(tokenizer.encode(text, add_special_tokens=False).ids)
    sources = json.loads((out / "stats.json").read_text())["sources"]
    assert {
        name: {s: [c["documents"], c["text_tokens"]] for s, c in v.items()} for name, v in sources.items()
    } == expected
    assert main(["verify", str(out)]) == 0


def test_a_build_stopped_mid_way_resumes_to_the_same_bytes_fetching_only_unfinished_shards(
    hub, env, plain_repo, tokenizer_dir, tmp_path
):
    whole = tmp_path / "whole"
    assert build(env, tokenizer_dir, whole).returncode == 0
    # Part 2's file is served corrupted: parts 0 and 1 finish, part 2 is refused by its SHA-256 check.
    bad = "data/train-00002-of-00004.parquet"
    hub.flip_stored_byte(REPO, bad)
    try:
        out = tmp_path / "resumed"
        failed = build(env, tokenizer_dir, out)
        assert failed.returncode == 1
        lines = failed.stderr.strip().splitlines()
        assert len(lines) == 1 and bad in lines[0] and "SHA-256" in lines[0], failed.stderr[-2000:]
        assert sorted(p.name for p in (out / "receipts").iterdir()) == ["part-000000.json", "part-000001.json"]
        assert not (out / "COMPLETE.json").exists()
    finally:
        hub.flip_stored_byte(REPO, bad)  # flipping again restores the stored bytes
    fetched_before = whole_downloads(hub, r"/data/train-0000[01]")
    unfinished_before = whole_downloads(hub, r"/data/train-00003")
    resumed = build(env, tokenizer_dir, out)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "2 skipped" in resumed.stdout
    # Finished shards are not downloaded again (planning reads footers and samples with range requests: 206).
    assert whole_downloads(hub, r"/data/train-0000[01]") == fetched_before
    assert whole_downloads(hub, r"/data/train-00003") == unfinished_before + 1  # the unfinished shard: once
    assert files_under(out) == files_under(whole)


def test_a_split_the_repo_does_not_have_is_one_line(env, plain_repo, tokenizer_dir, tmp_path):
    result = build(env, tokenizer_dir, tmp_path / "r", "--corpus-split", "test")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--corpus-split names a split the dataset does not have" in lines[0], result.stderr[
        -2000:
    ]


def corpus_texts(folder: Path, split: str) -> list[str]:
    manifest = json.loads((folder / "_MANIFEST.json").read_text())
    return [
        t
        for s in manifest["shards"]
        if s["split"] == split
        for t in pq.read_table(folder / s["path"]).column("text").to_pylist()
    ]


def test_corpus_import_of_a_hub_repo_id_and_of_hf_paths(hub, env, plain_repo, tmp_path):
    imported = run(env, "corpus", "import", REPO, "--out", tmp_path / "c")
    assert imported.returncode == 0, imported.stderr[-3000:]
    for split, shards in plain_repo.items():
        assert corpus_texts(tmp_path / "c", split) == [t for docs in shards for t in docs]
    manifest = json.loads((tmp_path / "c" / "_MANIFEST.json").read_text())
    assert manifest["split_rule"] == "files"
    assert [s["path"] for s in manifest["sources"]][0] == "data/train-00000-of-00004.parquet"
    # An hf:// glob at a branch: pinned to the commit, read in path order.
    globbed = run(env, "corpus", "import", f"hf://datasets/{REPO}@main/data/train-*.parquet", "--out", tmp_path / "g")
    assert globbed.returncode == 0, globbed.stderr[-3000:]
    assert corpus_texts(tmp_path / "g", "train") == [t for docs in plain_repo["train"] for t in docs]
    missing = run(env, "corpus", "import", "tester/no-such-repo", "--out", tmp_path / "m")
    assert missing.returncode == 1 and len(missing.stderr.strip().splitlines()) == 1, missing.stderr[-2000:]


def test_build_limit_takes_the_first_documents_in_corpus_order_and_reads_no_further(
    hub, env, plain_repo, tokenizer_dir, tmp_path
):
    before = whole_downloads(hub, r"/data/(train-00003|validation)")
    out = tmp_path / "first50"
    built = build(env, tokenizer_dir, out, "--limit", "50")
    assert built.returncode == 0, built.stderr[-3000:]
    tokenizer = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    expected = [t for docs in plain_repo["train"] for t in docs][:50]
    pairs = sorted((out / "shards" / "train").glob("*.idx"))
    got = [MegatronPair(p)[i].tolist()[:-1] for p in pairs for i in range(len(MegatronPair(p)))]
    assert got == [tokenizer.encode(t, add_special_tokens=False).ids for t in expected]
    assert not (out / "shards" / "validation").exists()
    assert whole_downloads(hub, r"/data/(train-00003|validation)") == before
    config = json.loads((out / "run_config.json").read_text())
    assert config["corpus"]["source"] == REPO
    # The release says what it was cut from and what each split got: validation got nothing, and the output says so.
    subset = config["corpus"]["subset"]
    assert (subset["limit"], subset["documents"], subset["checked"]) == (50, {"train": 50, "validation": 0}, True)
    assert subset["available"] == {
        "train": sum(map(len, plain_repo["train"])),
        "validation": len(plain_repo["validation"][0]),
    }
    assert subset["cut_from_manifest_sha256"] != config["corpus"]["manifest_sha256"]
    assert "validation 0 of 40 documents (none: the limit was reached before this split)" in built.stdout
    dry = build(env, tokenizer_dir, tmp_path / "dry", "--dry-run")
    assert dry.returncode == 0 and "nothing was written" in dry.stdout and not (tmp_path / "dry").exists(), dry.stderr[
        -2000:
    ]
    assert "train: 4 shards" in dry.stdout


def test_build_limit_checks_the_bytes_it_reads_against_the_listed_digest(
    hub, env, plain_repo, tokenizer_dir, tmp_path
):
    """A substituted blob under the listed SHA-256: without --limit the build refuses it; with --limit too (it used to
    take the documents from unchecked range reads and record the listed digest)."""
    bad = "data/train-00000-of-00004.parquet"
    hub.flip_stored_byte(REPO, bad)
    try:
        result = build(env, tokenizer_dir, tmp_path / "first10", "--limit", "10")
    finally:
        hub.flip_stored_byte(REPO, bad)
    assert result.returncode == 1, result.stdout + result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and bad in lines[0] and "SHA-256" in lines[0], result.stderr[-2000:]
    assert not (tmp_path / "first10").exists()


def test_corpus_import_of_hub_files_reads_only_bytes_checked_against_the_listing(hub, env, plain_repo, tmp_path):
    """Each hf:// input is fetched by the checked download (LFS SHA-256, or git blob id for a small git file) and read
    from that copy; the manifest's source digest is of the bytes read. A file served other than listed is refused."""
    import hashlib

    folder = tmp_path / "jsonl"
    folder.mkdir()
    (folder / "a.jsonl").write_text(
        "".join(json.dumps({"text": f"line {i}"}) + "\n" for i in range(5)), encoding="utf-8"
    )
    repo = "tester/jsonl-inputs"
    assert run(env, repo, folder, code=_UPLOAD).returncode == 0
    imported = run(env, "corpus", "import", f"hf://datasets/{repo}/a.jsonl", "--out", tmp_path / "c")
    assert imported.returncode == 0, imported.stderr[-3000:]
    manifest = json.loads((tmp_path / "c" / "_MANIFEST.json").read_text())
    assert manifest["sources"] == [
        {
            "path": "a.jsonl",
            "size": (folder / "a.jsonl").stat().st_size,
            "sha256": hashlib.sha256((folder / "a.jsonl").read_bytes()).hexdigest(),
        }
    ]
    for name, path in ((repo, "a.jsonl"), (REPO, "data/train-00000-of-00004.parquet")):
        hub.flip_stored_byte(name, path)
        try:
            result = run(
                env, "corpus", "import", f"hf://datasets/{name}/{path}", "--out", tmp_path / f"bad-{path.count('/')}"
            )
        finally:
            hub.flip_stored_byte(name, path)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 1 and len(lines) == 1, result.stderr[-2000:]
        assert path in lines[0] and ("SHA-256" in lines[0] or "git blob id" in lines[0]), lines[0]
        assert not (tmp_path / f"bad-{path.count('/')}").exists()


_LIST_BOTH = """
import json, sys
from huggingface_hub import HfFileSystem
from hf_tokbin.corpus.inputs import _hub_inputs, reader_of
from hf_tokbin.errors import TokbinError
fs = HfFileSystem()
for url in sys.argv[1:]:
    pinned = url.replace("@main", "")
    try:
        ours = [(f.uri.split("@", 1)[1].split("/", 1)[1], f.name, f.size) for f in _hub_inputs(url)]
    except TokbinError as e:
        ours = str(e)
    if any(c in url for c in "*?["):
        theirs = fs.glob(pinned, detail=True)
    elif fs.isdir(pinned):
        inside = pinned.removeprefix("hf://").rstrip("/")
        theirs = {
            p: i
            for p, i in fs.find(pinned, detail=True).items()
            if not any(x.startswith((".", "_")) for x in p[len(inside):].split("/"))
        }
    else:
        theirs = {pinned.removeprefix("hf://"): fs.info(pinned)}
    theirs = [
        (p.split("/", 3)[-1], p.split("/", 3)[-1], i["size"])
        for p, i in sorted(theirs.items())
        if i["type"] == "file" and reader_of(p)[0]
    ]
    print(json.dumps([url, ours, theirs]))
"""


def test_hf_paths_list_the_files_hffilesystem_would_from_the_bounded_listing(hub, env, plain_repo, tmp_path):
    """hf:// files, folders and globs are listed by the bounded tree listing, and find what HfFileSystem finds."""
    folder = tmp_path / "nested"
    for path in (
        "a/x.jsonl",
        "a/sub/y.jsonl",
        "a/sub/deeper/y2.jsonl",
        "a/.hidden/z.jsonl",
        "a/_skip/w.jsonl",
        "b.jsonl",
        "a/notes.txt",
    ):
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(json.dumps({"text": path}) + "\n")
    repo = "tester/nested-inputs"
    assert run(env, repo, folder, code=_UPLOAD).returncode == 0
    urls = [
        f"hf://datasets/{repo}@main/{p}"
        for p in ("a", "a/sub", "a/x.jsonl", "**/*.jsonl", "a/*/*.jsonl", "a/**", "a/s?b/*.jsonl", "[ab]*.jsonl", "")
    ]
    urls.append(f"hf://datasets/{REPO}/data/train-*.parquet")
    listed = run(env, *urls, code=_LIST_BOTH)
    assert listed.returncode == 0, listed.stderr[-3000:]
    for line in listed.stdout.splitlines():
        url, ours, theirs = json.loads(line)
        assert ours == theirs, url
    missing = run(env, "corpus", "import", f"hf://datasets/{repo}/a/nothing.jsonl", "--out", tmp_path / "m")
    assert (
        missing.returncode == 1
        and "input file is missing on the Hub" in missing.stderr
        and len(missing.stderr.strip().splitlines()) == 1
    ), missing.stderr[-2000:]


def test_an_hf_glob_whose_listing_links_another_host_sends_it_no_request(hub, env, plain_repo, tmp_path):
    hub.page_size = 2
    try:
        with HubServer(token=TOKEN) as elsewhere:
            hub.page_origins["tree"] = elsewhere.url
            result = run(env, "corpus", "import", f"hf://datasets/{REPO}/data/*.parquet", "--out", tmp_path / "c")
            assert elsewhere.requests == []
    finally:
        hub.page_size, hub.page_origins = PAGE_SIZE, {}
    assert result.returncode == 1 and "links its next page on another host" in result.stderr, result.stderr[-2000:]
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "c").exists()


def test_an_hf_input_asks_for_the_repos_info_once_by_the_bounded_request(hub, env, plain_repo, tmp_path):
    """HfFileSystem.resolve_path asked for it again, bounded in neither bytes nor time, for the URL and for each file
    fetched; the URL is parsed without a request, and the revision resolved once (hub.revision.resolve_commit)."""
    info = rf"^/api/datasets/{REPO}(/revision/[^/]+)?$"
    before = hub.count("GET", info)
    result = run(env, "corpus", "import", f"hf://datasets/{REPO}/data/train-*.parquet", "--out", tmp_path / "c")
    assert result.returncode == 0, result.stderr[-2000:]
    assert hub.count("GET", info) - before == 1


def test_an_hf_glob_within_one_folder_lists_that_folder_alone(hub, env, tmp_path):
    """``data/*.jsonl`` needs the folder's own entries, as HfFileSystem.glob lists them (fsspec: a depth of one); every
    file under the folder was listed instead (a root glob listed the whole repo: past 300,000 files, one error where
    HfFileSystem found the files)."""
    repo = "tester/wide"
    folder = tmp_path / "wide"
    for path in ["top.jsonl", "data/x.jsonl", *(f"data/deep/{i}/n.jsonl" for i in range(20))]:
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(json.dumps({"text": path}) + "\n")
    hub.seed_repo(repo, folder)
    tree = rf"^/api/datasets/{repo}/tree/"
    hub.page_size = 2
    try:
        for glob, found in (("*.jsonl", 1), ("data/*.jsonl", 1), ("data/*/*/n.jsonl", 20)):
            listed = run(env, f"hf://datasets/{repo}/{glob}", code=_LIST_BOTH)
            assert listed.returncode == 0, listed.stderr[-3000:]
            url, ours, theirs = json.loads(listed.stdout)
            assert len(ours) == found and ours == theirs, url
            before = hub.count("GET", tree)
            imported = run(
                env,
                "corpus",
                "import",
                f"hf://datasets/{repo}/{glob}",
                "--out",
                tmp_path / f"c{found}-{glob.count('/')}",
            )
            assert imported.returncode == 0, imported.stderr[-2000:]
            pages = hub.count("GET", tree) - before
            # one folder's own entries: 2 pages, not 22 files' and folders'
            assert pages <= 2 if found == 1 else pages > 10, (glob, pages)
    finally:
        hub.page_size = PAGE_SIZE


def test_a_mixture_reads_a_hub_repo_and_a_local_corpus_each_where_it_is(
    hub, env, plain_repo, tokenizer_dir, tmp_path
):
    from release_fixtures import stories, write_corpus

    shards = [("train", stories(120, seed=4)), ("validation", stories(10))]
    local = write_corpus(tmp_path / "stories", shards, "stories")
    out = tmp_path / "release"
    mix = ["--corpus", REPO, "--corpus", str(local), "--mix", "plain-parquet=0.7,stories=0.3"]
    built = run(env, "build", *mix, "--tokenizer", tokenizer_dir, "--tokenizer-id", "tiny", "--out", out, "--quiet")
    assert built.returncode == 0, built.stderr[-3000:]
    config = json.loads((out / "run_config.json").read_text())
    commit = hub.repo(REPO).branches["main"]
    hub_source, local_source = config["mix"]["sources"]
    assert (hub_source["corpus"]["source"], hub_source["corpus"]["revision"]) == (REPO, commit)
    assert (local_source["corpus"]["source"], local_source["corpus"]["revision"]) == ("local", None)
    # each part names its shard under its source, and counts its documents there
    receipt = Receipt.read(out / "receipts" / "part-000000.json")
    assert receipt.input_shard.path == "plain-parquet/data/train-00000-of-00004.parquet"
    assert list(receipt.sources) == ["plain-parquet"]
    shares = json.loads((out / "stats.json").read_text())["mixture"]["sources"]
    assert abs(shares["plain-parquet"]["llmc"]["share"] - 0.7) < 0.01
    assert main(["verify", str(out)]) == 0
