"""A build SIGKILLed at six moments leaves temporaries; the next run removes them (ours only) and ends with the same
bytes.

Each kill is deterministic, not timed: a driver process wraps one function
of the build so that the process SIGKILLs itself at that moment (mid
encoding, while a part's pair is being closed, between parts, while the llm.c files are packed, in the finish
before the card, while ``COMPLETE.json`` is being renamed into place), then
runs the real command line. What the kill left is recorded, the same command
runs again, and the release must equal an uninterrupted build's, byte for
byte, with no temporary file, no ``.work/`` cache and nothing outside
``--out`` touched.

A mixture of three corpora (``tests/mixture_fixtures.py``) is killed the same
way while it encodes and while it packs its llm.c files: its llm.c train files
are cut from a schedule the publish step draws again on the re-run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from mixture_fixtures import SEPARATOR, write_mixture_corpora
from release_fixtures import stories, write_corpus

from hf_tokbin.cli import main
from hf_tokbin.tokenizer import train_bpe

pytestmark = pytest.mark.slow  # SIGKILLed builds

OPTIONS = ["--quiet", "--batch-size", "50"]  # several batches per part
MIXTURE = ["--mix", "en=0.5,fr=0.3,code=0.2", "--tokens", "130000", "--max-epochs", "2"]
MIXTURE_FILE_TOKENS = 30_000  # five llm.c train files: a kill after the first leaves the others unpacked

DRIVER = r'''
import os, signal, sys

moment = sys.argv[1]


def killed_at(call, when="before"):
    """``call`` wrapped: the process SIGKILLs itself before (or after) the first call."""
    def wrapper(*args, **kwargs):
        if when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        result = call(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)
        return result
    return wrapper


if moment == "encoding":  # the third batch: the pairs' temporaries (and the llm.c segment's) are open
    from hf_tokbin.pipeline import encode
    real = encode.EncodeBatch.encode
    calls = []
    def third_batch(self, texts):
        if str(self.source).startswith("the sampled documents"):  # the plan's estimate, before any part
            return real(self, texts)
        calls.append(1)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(self, texts)
    encode.EncodeBatch.encode = third_batch
elif moment == "closing_pair":
    from hf_tokbin.formats import megatron
    megatron.MegatronWriter.close = killed_at(megatron.MegatronWriter.close)
elif moment == "between_parts":
    from hf_tokbin.pipeline import encode as part
    part._publish_part = killed_at(part._publish_part, when="after")
elif moment == "packing":  # the first llm.c file written by its pack task, the others not yet
    from hf_tokbin.pipeline import publish as pack
    pack.write_packed_file = killed_at(pack.write_packed_file, when="after")
elif moment == "finish":
    from hf_tokbin.pipeline import publish as finish
    finish._write_card = killed_at(finish._write_card)
elif moment == "complete_json":
    from hf_tokbin import _io
    real_commit = _io.commit_file
    def commit(tmp, final):
        if os.path.basename(final) == "COMPLETE.json":
            os.kill(os.getpid(), signal.SIGKILL)
        return real_commit(tmp, final)
    _io.commit_file = commit

from hf_tokbin.cli import main

sys.exit(main(sys.argv[2:]))
'''


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("killed")
    train_bpe(stories(300, seed=1), 500, root / "tok")
    write_corpus(
        root / "corpus", [("train", stories(400, seed=2, max_words=120)), ("validation", stories(100, seed=3))]
    )
    write_mixture_corpora(root / "mixture")
    (root / "driver.py").write_text(DRIVER, encoding="utf-8")
    return root


def build_args(inputs: Path, out: Path, build: str = "corpus") -> list[str]:
    """The command line of a ``corpus`` build (one corpus, a trained BPE) or a ``mixture`` build (three corpora)."""
    if build == "mixture":
        corpora = [x for name in ("en", "fr", "code") for x in ("--corpus", str(inputs / "mixture" / name))]
        source = [*corpora, *MIXTURE, "--tokenizer", "byte", "--doc-sep", str(SEPARATOR)]
        source += ["--max-tokens-per-file", str(MIXTURE_FILE_TOKENS)]
    else:
        source = ["--corpus", str(inputs / "corpus"), "--tokenizer", str(inputs / "tok")]
    return ["build", *source, "--out", str(out), *OPTIONS]


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (hidden ones too), with its bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.fixture(scope="module")
def reference(inputs, tmp_path_factory):
    """A build's uninterrupted release (``reference(build)``), built when a test first asks for it."""
    built: dict[str, dict[str, bytes]] = {}

    def release(build: str) -> dict[str, bytes]:
        if build not in built:
            out = tmp_path_factory.mktemp(f"reference-{build}") / "release"
            assert main(build_args(inputs, out, build)) == 0
            built[build] = tree(out)
        return built[build]

    return release


def leftovers(out: Path) -> list[str]:
    """What no release holds: temporaries and the work folder."""
    return sorted(
        path
        for path in tree(out)
        if path.startswith(".work/") or any(part.startswith(".") for part in path.split("/"))
    )


# moment -> a leftover the kill must leave (proof that it landed there)
MOMENTS = {
    "encoding": ".work/llmc/.part-000000.ends",  # both formats: the segment is its .ends (the ids are the .bin's)
    "closing_pair": "shards/train/.part-000000.bin.tmp",
    "between_parts": "receipts/part-000000.json",
    # the segments and pairs stay until COMPLETE.json: a re-run packs from them
    "packing": ".work/llmc/part-000000.ends",
    "finish": "tokens/",
    "complete_json": ".COMPLETE.json.tmp",
}


# A mixture: a kill mid encoding, and one in the publish step once the first llm.c train file is packed.
MIXTURE_MOMENTS = {
    "encoding": MOMENTS["encoding"],
    "packing": "tokens/byte/en-fr-code/train-",
}
CASES = [("corpus", moment) for moment in MOMENTS] + [("mixture", moment) for moment in MIXTURE_MOMENTS]


@pytest.mark.parametrize("build, moment", CASES)
def test_a_rerun_after_sigkill_cleans_our_temporaries_only_and_gives_the_same_bytes(
    inputs, reference, tmp_path, build, moment
):
    expected = reference(build)
    out = tmp_path / "release"
    killed = subprocess.run(
        [sys.executable, str(inputs / "driver.py"), moment, *build_args(inputs, out, build)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    left = tree(out)
    landed = (MIXTURE_MOMENTS if build == "mixture" else MOMENTS)[moment]
    assert any(path.startswith(landed) for path in left), sorted(left)
    assert "COMPLETE.json" not in left
    # Someone else's files beside --out, named like ours: a re-run must not touch them.
    neighbour = tmp_path / "neighbour"
    (neighbour / ".work" / "datasets" / "part-000000").mkdir(parents=True)
    (neighbour / ".work" / "datasets" / "part-000000" / "cache.arrow").write_bytes(b"theirs")
    (neighbour / ".part-000000.bin.tmp").write_bytes(b"theirs")
    (tmp_path / ".release.tmp").write_bytes(b"theirs")
    before = tree(tmp_path / "neighbour"), (tmp_path / ".release.tmp").read_bytes()

    assert main(build_args(inputs, out, build)) == 0
    assert leftovers(out) == []
    assert tree(out) == expected
    assert (tree(tmp_path / "neighbour"), (tmp_path / ".release.tmp").read_bytes()) == before
    assert not os.path.exists(out / ".work")
