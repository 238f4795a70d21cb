"""``hf-tokbin build --out URL``: a release published to an
fsspec URL is the local release, byte for byte, and resumes.
"""

from __future__ import annotations

import functools
import itertools
import shutil
from pathlib import Path

import fsspec
import pytest
from fsspec.core import url_to_fs
from release_fixtures import stories, write_corpus

from hf_tokbin.cli import main
from hf_tokbin.errors import BuildError
from hf_tokbin.output import UrlFolder
from hf_tokbin.pipeline import build, plan_build
from hf_tokbin.pipeline import encode as build_module
from hf_tokbin.tokenizer import resolve_tokenizer, train_bpe

pytestmark = pytest.mark.slow  # builds through fsspec URLs, one on Ray

OPTIONS = {"max_tokens_per_file": 4000}  # several llm.c files per split: the finish rolls over
_unique = itertools.count()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fsspec")
    train_bpe(stories(300, seed=1), 500, root / "tok")
    shards = [("train", stories(150, seed=50 + i)) for i in range(4)] + [
        ("validation", stories(80, seed=60)),
        ("train", []),
    ]
    write_corpus(root / "corpus", shards)
    return root


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch) -> Path:
    """A scratch cache of the test's own: every URL build's local writes go here."""
    monkeypatch.setenv("HF_TOKBIN_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def remote_bytes(url: str) -> dict[str, bytes]:
    """Every file under ``url``, read back through fsspec."""
    fs, root = url_to_fs(url)
    root = root.rstrip("/")
    return {path[len(root) + 1 :]: fs.cat_file(path) for path in sorted(fs.find(root))}


def make_plan(inputs: Path, out, **options):
    return plan_build(inputs / "corpus", resolve_tokenizer(str(inputs / "tok")), out, **{**OPTIONS, **options})


@pytest.fixture(scope="module")
def local_release(inputs, tmp_path_factory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("local") / "release"
    build(make_plan(inputs, out), progress=False)
    return tree_bytes(out)


def memory_url() -> str:
    return f"memory://releases/x{next(_unique)}"  # the memory filesystem lives as long as the test process


def test_memory_url_build_equals_local_build(inputs, local_release, cache):
    url = memory_url()
    summary = build(make_plan(inputs, url), progress=False)
    assert remote_bytes(url) == local_release
    assert summary.out == url and summary.parts_built == 6 and summary.parts_skipped == 0
    assert list((cache / "out").iterdir()) == [], "the scratch folder must be removed"


def test_file_url_build_equals_local_build_through_the_cli(inputs, local_release, tmp_path, capsys):
    target = tmp_path / "remote" / "release"
    url = target.as_uri()
    args = [
        "build",
        "--corpus",
        str(inputs / "corpus"),
        "--tokenizer",
        str(inputs / "tok"),
        "--max-tokens-per-file",
        "4000",
        "--quiet",
        "--out",
        url,
    ]
    assert main(args) == 0
    assert tree_bytes(target) == local_release  # no .work/ left either
    assert url in capsys.readouterr().out
    # Run again on a complete release: nothing is built, the bytes stay.
    assert main(args) == 0
    assert "0 parts built, 6 skipped" in capsys.readouterr().out
    assert tree_bytes(target) == local_release


class Interrupted(Exception):
    pass


def _fail_on_call(number: int, function):
    """``function``, raising :class:`Interrupted` instead on its ``number``-th call."""
    calls = itertools.count(1)

    def wrapper(*args, **kwargs):
        if next(calls) == number:
            raise Interrupted
        return function(*args, **kwargs)

    return wrapper


def _fail_on_receipt_of_part_2(upload):
    def wrapper(self, rel):
        if rel == "receipts/part-000002.json":
            raise Interrupted
        return upload(self, rel)

    return wrapper


def _fail_on_complete(write_bytes):
    def wrapper(self, rel, data):
        if rel == "COMPLETE.json":
            raise Interrupted
        return write_bytes(self, rel, data)

    return wrapper


# moment -> (what to patch, how, whether the scratch folder is lost too, parts skipped on the re-run)
MOMENTS = {
    "before publishing the third part": (build_module, "_publish_part", functools.partial(_fail_on_call, 3), False, 3),
    "before publishing the third part, scratch lost": (
        build_module,
        "_publish_part",
        functools.partial(_fail_on_call, 3),
        True,
        2,
    ),
    "uploading the third receipt": (UrlFolder, "_upload", _fail_on_receipt_of_part_2, False, 3),
    "uploading COMPLETE.json": (UrlFolder, "write_text", _fail_on_complete, False, 6),
}


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_interrupted_url_build_resumes_to_the_same_bytes(inputs, local_release, tmp_path, cache, monkeypatch, moment):
    owner, name, wrap, lose_scratch, skipped = MOMENTS[moment]
    target = tmp_path / "remote"
    url = target.as_uri()
    with monkeypatch.context() as patch:
        patch.setattr(owner, name, wrap(getattr(owner, name)))
        with pytest.raises(Interrupted):
            build(make_plan(inputs, url), progress=False)
    assert not (target / "COMPLETE.json").exists(), "an interrupted build must not look complete"
    if lose_scratch:
        shutil.rmtree(cache)
    summary = build(make_plan(inputs, url), progress=False)
    assert (summary.parts_built, summary.parts_skipped) == (6 - skipped, skipped)
    assert tree_bytes(target) == local_release


def test_a_changed_part_at_the_url_is_built_again(inputs, local_release, tmp_path):
    target = tmp_path / "remote"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(UrlFolder, "write_text", _fail_on_complete(UrlFolder.write_text))
        with pytest.raises(Interrupted):
            build(make_plan(inputs, target.as_uri()), progress=False)
    pair = target / "shards" / "train" / "part-000001.bin"
    data = bytearray(pair.read_bytes())
    data[10] ^= 1  # same size, other bytes: only the digest tells
    pair.write_bytes(bytes(data))
    summary = build(make_plan(inputs, target.as_uri()), progress=False)
    assert (summary.parts_built, summary.parts_skipped) == (1, 5)
    assert tree_bytes(target) == local_release


def test_url_without_an_installed_backend_fails_before_any_work(inputs, tmp_path, cache, monkeypatch, capsys):
    def no_backend(protocol):
        raise ImportError("Install s3fs to access S3")

    monkeypatch.setattr(fsspec, "get_filesystem_class", no_backend)
    missing_corpus = tmp_path / "no-such-corpus"  # reading it would be work, and a different error
    with pytest.raises(BuildError) as error:
        plan_build(missing_corpus, resolve_tokenizer(str(inputs / "tok")), "s3://bucket/x")
    assert str(error.value).startswith("s3://bucket/x: --out URL needs an installed fsspec filesystem")
    assert "Install s3fs" in str(error.value)
    code = main(["build", "--corpus", str(inputs / "corpus"), "--tokenizer", str(inputs / "tok"), "--quiet", "--out", "s3://bucket/x"])
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1 and "s3://bucket/x" in err
    assert not cache.exists()


def test_unknown_url_scheme_is_one_error():
    with pytest.raises(BuildError, match=r"^nosuchfs://b/x: --out URL needs .*Protocol not known: nosuchfs"):
        plan_build(Path("unused"), None, "nosuchfs://b/x")


def test_url_holding_another_build_is_refused(inputs):
    url = memory_url()
    build(make_plan(inputs, url), progress=False)
    with pytest.raises(BuildError, match="this output holds a different build"):
        build(make_plan(inputs, url, formats=("megatron",)), progress=False)


def test_url_holding_other_files_is_refused(inputs):
    url = memory_url()
    UrlFolder(url).write_text("notes.txt", "mine")
    with pytest.raises(BuildError, match="output is not empty and holds no run_config.json"):
        build(make_plan(inputs, url), progress=False)
    assert remote_bytes(url) == {"notes.txt": b"mine"}


def test_memory_url_is_refused_for_the_ray_engine(inputs):
    url = memory_url()
    with pytest.raises(BuildError, match="--engine ray needs an --out every node can write"):
        build(make_plan(inputs, url), engine="ray", progress=False)
    assert remote_bytes(url) == {}


RAY_DRIVER = r"""
import os, subprocess, sys

os.environ["HF_TOKBIN_CACHE"] = {driver_cache!r}  # the driver's scratch: another machine's disk than the nodes'
command = ["hf-tokbin", "build", "--corpus", {corpus!r}, "--tokenizer", {tok!r}, "--max-tokens-per-file", "4000",
           "--quiet", "--out", {url!r}, "--engine", "ray", "--ray-address", os.environ["RAY_ADDRESS"]]
result = subprocess.run(command, capture_output=True, text=True)
sys.stdout.write(result.stdout)
sys.stderr.write(result.stderr)
sys.exit(result.returncode)
"""


def test_ray_build_to_a_file_url_equals_local_build(inputs, local_release, tmp_path, cache):
    """Two Ray nodes publish their parts through fsspec; the
    driver, with a scratch folder of its own, fetches and finishes.
    """
    from ray_cluster import run_in_ray_namespace

    target = tmp_path / "remote"
    driver_cache = tmp_path / "driver-cache"
    code = RAY_DRIVER.format(
        driver_cache=str(driver_cache), corpus=str(inputs / "corpus"), tok=str(inputs / "tok"), url=target.as_uri()
    )
    (tmp_path / "driver").mkdir()
    # The nodes inherit HF_TOKBIN_CACHE=cache. The default timeout:
    # a fresh cluster's start-up takes minutes on a loaded machine.
    process = run_in_ray_namespace(code, tmp_path / "driver")
    assert process.returncode == 0, process.stderr[-4000:]
    assert "6 parts built, 0 skipped" in process.stdout
    assert tree_bytes(target) == local_release
    assert (cache / "out").is_dir(), "the nodes wrote in their own scratch folder"
    assert [p for p in cache.rglob("*") if p.is_file()] == [], "a node keeps no part once it is published"
    # (the fast-path proof keeps nothing: it runs in every build, see docs/speed.md)
    assert [p for p in (driver_cache / "out").rglob("*") if p.is_file()] == [], (
        "the finish removes the driver's scratch folder"
    )
