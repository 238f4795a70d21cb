"""A part's closing runs while the next part is encoded (the local engine).

Closing a part (each file fsynced and hashed, the ``.idx`` written, the receipt
published) is mostly waiting on the disk: about 1 s over the 9 parts of a
2.2 GB build. ``encode_parts`` hands it to a thread of its own; one
closing at most runs while the next part is written, every closing has ended
when the parts stage returns or raises, and the release is the same bytes.
"""

from __future__ import annotations

import errno
import threading
from pathlib import Path

import pytest
from release_fixtures import stories, write_corpus

from hf_tokbin.errors import BuildError
from hf_tokbin.formats import llmc_segments, megatron, release
from hf_tokbin.pipeline import build, plan_build
from hf_tokbin.pipeline import encode as part
from hf_tokbin.tokenizer import resolve_tokenizer
from hf_tokbin.verify.release import verify_release

WAIT = 60  # seconds: reached only if the closing does not overlap the next part (the test then fails)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    return write_corpus(
        root, [("train", stories(60, seed=11)), ("train", stories(50, seed=12)), ("validation", stories(30, seed=13))]
    )


def _build(corpus: Path, out: Path):
    return build(plan_build(corpus, resolve_tokenizer("byte", doc_sep_id=0), out), progress=False)


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _closing_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("hf_tokbin-close")]


def _when_writing(monkeypatch, index: int, action) -> None:
    """Run ``action()`` as part ``index`` starts writing its documents."""
    write_documents = part._write_documents

    def writing(plan, i, *args, **kwargs):
        if i == index:
            action()
        return write_documents(plan, i, *args, **kwargs)

    monkeypatch.setattr(part, "_write_documents", writing)


def test_a_parts_closing_runs_while_the_next_part_is_encoded(tmp_path, corpus, monkeypatch):
    next_part_writing = threading.Event()
    seen = []
    close = megatron.MegatronWriter.close

    def close_after_the_next_part_started(self):
        if "part-000000" in self.bin_path.name:  # part 0's pair: closed only once part 1 is being written
            seen.append(next_part_writing.wait(WAIT))
        return close(self)

    _when_writing(monkeypatch, 1, next_part_writing.set)
    monkeypatch.setattr(megatron.MegatronWriter, "close", close_after_the_next_part_started)
    summary = _build(corpus, tmp_path / "r")
    assert seen == [True]
    assert summary.parts_built == 3 and not _closing_threads()
    monkeypatch.undo()
    _build(corpus, tmp_path / "plain")
    assert _tree(tmp_path / "r") == _tree(tmp_path / "plain")
    assert verify_release(tmp_path / "r").splits["train"].documents == 110


def test_a_closing_that_fails_stops_the_build_and_a_rerun_completes_it(tmp_path, corpus, monkeypatch):
    close = megatron.MegatronWriter.close

    def disk_full_on_part_0(self):
        if "part-000000" in self.bin_path.name:
            raise OSError(errno.ENOSPC, "No space left on device", str(self.idx_path))
        return close(self)

    monkeypatch.setattr(megatron.MegatronWriter, "close", disk_full_on_part_0)
    out = tmp_path / "r"
    with pytest.raises(OSError, match="No space left"):
        _build(corpus, out)
    assert not _closing_threads()
    assert not (out / "COMPLETE.json").exists() and not (out / "receipts/part-000000.json").exists()
    # Its pair removed, temporaries too; and the part encoded meanwhile was not finished after it: removed as well.
    assert not [p for p in out.rglob("*part-00000[01]*") if "shards" in p.parts or "receipts" in p.parts]
    monkeypatch.undo()
    assert _build(corpus, out).parts_built == 3  # the re-run builds every part (none finished)
    _build(corpus, tmp_path / "plain")
    assert _tree(out) == _tree(tmp_path / "plain")


def test_a_part_that_fails_while_the_one_before_closes_leaves_that_one_finished(tmp_path, corpus, monkeypatch):
    def fail():
        raise BuildError("part-000001", "a part's own failure, while part 0 is closed")

    _when_writing(monkeypatch, 1, fail)
    out = tmp_path / "r"
    with pytest.raises(BuildError, match="own failure"):
        _build(corpus, out)
    assert not _closing_threads()
    assert (out / "receipts/part-000000.json").exists()  # its closing ran to the end: a re-run skips it
    assert not (out / "receipts/part-000001.json").exists() and not (out / "COMPLETE.json").exists()
    monkeypatch.undo()
    summary = _build(corpus, out)
    assert (summary.parts_built, summary.parts_skipped) == (2, 1)
    _build(corpus, tmp_path / "plain")
    assert _tree(out) == _tree(tmp_path / "plain")


def _full_disk(path) -> OSError:
    return OSError(errno.ENOSPC, "No space left on device", str(path))


def _fail_closing_the_segment(monkeypatch) -> None:
    close = llmc_segments.SegmentWriter.close

    def close_after_the_pair(self):  # the Megatron pair is closed first: renamed by now
        if self.ends_path.name.startswith("part-000000"):
            raise _full_disk(self.ends_path)
        return close(self)

    monkeypatch.setattr(llmc_segments.SegmentWriter, "close", close_after_the_pair)


def _fail_writing_the_segment_record(monkeypatch) -> None:
    write = part.write_text_atomic

    def write_but_part_0s_record(path, text):
        if Path(path).name == "part-000000.json":
            raise _full_disk(path)
        return write(path, text)

    monkeypatch.setattr(part, "write_text_atomic", write_but_part_0s_record)


def _fail_writing_the_receipt(monkeypatch) -> None:
    write = release.Receipt.write

    def write_but_part_0s(self, root):
        if self.part == "part-000000":
            raise _full_disk(root)
        return write(self, root)

    monkeypatch.setattr(release.Receipt, "write", write_but_part_0s)


FAILED_STEPS = {
    "closing the llm.c segment": _fail_closing_the_segment,
    "writing the segment record": _fail_writing_the_segment_record,
    "writing the receipt": _fail_writing_the_receipt,
}


@pytest.mark.parametrize("step", list(FAILED_STEPS))
def test_a_closing_that_fails_after_the_pair_was_renamed_leaves_no_file_of_the_part(
    tmp_path, corpus, monkeypatch, step
):
    FAILED_STEPS[step](monkeypatch)
    out = tmp_path / "r"
    with pytest.raises(OSError, match="No space left"):
        _build(corpus, out)
    assert not _closing_threads()
    # A pair under its final name without a receipt looks like a finished part to a trainer reading the folder.
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*part-00000[01]*")) == []
    monkeypatch.undo()
    assert _build(corpus, out).parts_built == 3
    _build(corpus, tmp_path / "plain")
    assert _tree(out) == _tree(tmp_path / "plain")


def test_a_writer_that_cannot_open_leaves_no_file_nor_thread_of_the_writers_opened_before_it(
    tmp_path, corpus, monkeypatch
):
    # The Megatron pair opens first; the llm.c segment then fails (a full disk): the pair's temporaries go too.
    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(part, "SegmentWriter", no_space)
    before = {t.ident for t in threading.enumerate()}
    with pytest.raises(OSError, match="No space left"):
        _build(corpus, tmp_path / "r")
    leftovers = [
        p.relative_to(tmp_path).as_posix() for p in (tmp_path / "r").rglob("*") if p.is_file() and "tmp" in p.name
    ]
    assert leftovers == []
    assert [t.name for t in threading.enumerate() if t.ident not in before and t.name.startswith("hf_tokbin")] == []
