"""Where gigatoken cannot be used, ``--fast auto`` builds with ``tokenizers`` (one line says so); ``--fast require``
refuses in one line.

gigatoken is optional: a platform may have no wheel, an install may be broken.
Each case runs the real command in a subprocess whose ``sitecustomize`` takes
gigatoken away in one way, before hf_tokbin is imported:

- ``absent``: neither the module nor its metadata can be found (no wheel);
- ``unimportable``: the metadata is there, ``import gigatoken`` raises (a
  broken extension module);
- ``no-metadata``: the module imports, its metadata is gone (a dist-info
  deleted by hand): its version, which the proof is keyed by, is unknown.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from release_fixtures import write_corpus
from tokenizer_files import gpt2_tokenizer_json, story_texts

# Put first on sys.path as sitecustomize.py; MODE is replaced by the case's name.
WITHOUT_GIGATOKEN = r'''
import importlib.metadata as metadata
import sys

MODE = {mode!r}


class _Absent:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.partition(".")[0] == "gigatoken":
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


class _Broken:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name == "gigatoken":
            raise ImportError("libgigatoken.so: cannot open shared object file: No such file or directory")
        return None


_discover = metadata.Distribution.discover.__func__


def _discover_without_gigatoken(cls, **kwargs):
    # Every finder's distributions (awkward adds importlib_metadata's own finder), gigatoken's left out.
    return (d for d in _discover(cls, **kwargs) if (d.metadata["Name"] or "").lower() != "gigatoken")


if MODE in ("absent", "no-metadata"):
    metadata.Distribution.discover = classmethod(_discover_without_gigatoken)
if MODE in ("absent", "unimportable"):
    sys.meta_path.insert(0, _Absent if MODE == "absent" else _Broken)
'''

MODES = ("absent", "unimportable", "no-metadata")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    return write_corpus(root / "toy", [("train", story_texts(40, seed=1)), ("validation", story_texts(5, seed=2))])


def _build(tmp_path: Path, corpus: Path, out: Path, fast: str, mode: str | None) -> subprocess.CompletedProcess:
    env = {**os.environ, "TQDM_DISABLE": "1"}
    if mode is not None:
        site = tmp_path / f"site-{mode}"
        site.mkdir(exist_ok=True)
        (site / "sitecustomize.py").write_text(WITHOUT_GIGATOKEN.format(mode=mode))
        env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [env.get("PYTHONPATH")])])
    command = [
        sys.executable,
        "-m",
        "hf_tokbin",
        "build",
        "--corpus",
        str(corpus),
        "--tokenizer",
        str(gpt2_tokenizer_json()),
        "--out",
        str(out),
        "--fast",
        fast,
        "--quiet",
    ]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def reference(tmp_path_factory, corpus) -> dict[str, bytes]:
    """The release as gigatoken's own environment builds it (default --fast auto)."""
    folder = tmp_path_factory.mktemp("reference")
    result = _build(folder, corpus, folder / "out", "auto", None)
    assert result.returncode == 0, result.stderr
    return _tree(folder / "out")


@pytest.mark.parametrize("mode", MODES)
def test_auto_falls_back_to_tokenizers_with_one_line(tmp_path, corpus, reference, mode):
    result = _build(tmp_path, corpus, tmp_path / "out", "auto", mode)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "gigatoken" in lines[0] and "tokenizers" in lines[0] and "Traceback" not in lines[0]
    assert "encoder tokenizers" in result.stdout
    assert _tree(tmp_path / "out") == reference  # the same release, byte for byte


@pytest.mark.parametrize("mode", MODES)
def test_require_refuses_in_one_line(tmp_path, corpus, mode):
    result = _build(tmp_path, corpus, tmp_path / "out", "require", mode)
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert (
        line.startswith("hf-tokbin build: error: ")
        and "fast path required but unavailable" in line
        and "gigatoken" in line
    )
    assert not (tmp_path / "out" / "COMPLETE.json").exists()
