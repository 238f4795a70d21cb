"""The parts' llm.c ids written once: where both formats share a width, the llm.c files are packed from the
Megatron ``.bin`` (no segment ``.tokens`` written), with the bytes of the packing from segments."""

from __future__ import annotations

from pathlib import Path

import pytest
from release_fixtures import stories, write_corpus

from hf_tokbin.cli import main
from hf_tokbin.pipeline import plan as llmc_source
from hf_tokbin.pipeline import run as job

LAYOUTS = {
    "before": [],
    "before, BOS": ["--bos", "2"],
    "after": ["--llmc-sep", "after"],
    "after, BOS": ["--llmc-sep", "after", "--bos", "2"],
    "before, blocks interleaved": ["--shuffle-seed", "7"],  # ranges start inside parts, in a seeded order
    "after, blocks interleaved": ["--llmc-sep", "after", "--shuffle-seed", "7"],
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("source")
    return write_corpus(
        root / "corpus",
        [
            ("train", stories(20, seed=1)),
            ("validation", stories(6, seed=2)),
            ("train", []),
            ("train", stories(20, seed=3)),
        ],
    )


@pytest.fixture
def segments(monkeypatch) -> list[str]:
    """The names of the llm.c segment files at the output when the finish starts (it removes them)."""
    seen: list[str] = []
    finish = job.publish_release

    def recorded(plan, *args, **kwargs):
        seen.extend(sorted(p.name for p in (plan.output.work / ".work" / "llmc").iterdir()))
        return finish(plan, *args, **kwargs)

    monkeypatch.setattr(job, "publish_release", recorded)
    return seen


def build(corpus: Path, out: Path, *flags: str) -> dict[str, bytes]:
    options = ["--tokenizer", "byte", "--doc-sep", "3", "--max-tokens-per-file", "700", "--quiet", *flags]
    assert main(["build", "--corpus", str(corpus), "--out", str(out), *options]) == 0
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and ".lock" not in p.name
    }


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_llmc_files_from_the_megatron_bin_are_the_bytes_from_segments(corpus, tmp_path, monkeypatch, segments, layout):
    from_bins = build(corpus, tmp_path / "bins", *LAYOUTS[layout])
    assert segments and not [name for name in segments if name.endswith(".tokens")], segments
    # several files per split: cuts inside parts
    assert len([n for n in from_bins if n.startswith("tokens/") and n.endswith(".bin")]) > 2
    segments.clear()
    monkeypatch.setattr(llmc_source, "from_megatron", lambda plan: False)
    from_segments = build(corpus, tmp_path / "segments", *LAYOUTS[layout])
    assert [name for name in segments if name.endswith(".tokens")]
    assert from_bins == from_segments


def test_a_wider_llmc_layout_keeps_its_segments(corpus, tmp_path, segments):
    # Upstream's Llama 3 layout holds uint32 ids; the byte tokenizer's Megatron pairs hold uint16: not the same bytes.
    build(corpus, tmp_path / "llama3", "--llmc-layout", "llama3")
    assert [name for name in segments if name.endswith(".tokens")]
