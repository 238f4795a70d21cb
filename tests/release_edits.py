"""Small releases to tamper with, and the edits the verify
tests make to them (shared by tests/verify/ and tests/cards/).

The fixtures built from them (``both``, ``llmc_bos``, and per-test copies) are in tests/conftest.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from release_fixtures import write_corpus

from hf_tokbin._io import sha256_file, write_json_atomic
from hf_tokbin.cli import main
from hf_tokbin.errors import TokbinError
from hf_tokbin.formats.records import FileEntry
from hf_tokbin.formats.release import Complete, Receipt
from hf_tokbin.verify.release import verify_release

TEXTS = ["one line of text", "two lines\nof text", "three", "four and more words here", "five"]


def build(root: Path, *flags: str) -> Path:
    corpus = write_corpus(root / "corpus", [("train", TEXTS), ("validation", TEXTS[:2])])
    out = root / "release"
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                "byte",
                "--doc-sep",
                "3",
                "--out",
                str(out),
                "--quiet",
                *flags,
            ]
        )
        == 0
    )
    return out


def refused(root: Path, *fragments: str) -> str:
    with pytest.raises(TokbinError) as info:
        verify_release(root)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    return message


def reseal(root: Path) -> None:
    """Rewrite COMPLETE.json (and receipts) so only the deeper rule is broken."""
    for receipt_path in sorted((root / "receipts").glob("*.json")):
        receipt = Receipt.read(receipt_path)
        files = tuple(
            FileEntry(f.path, (root / f.path).stat().st_size, sha256_file(root / f.path)) for f in receipt.files
        )
        Receipt(receipt.part, receipt.input_shard, receipt.splits, files, receipt.sources).write(root)
    reseal_complete(root)


def reseal_complete(root: Path) -> None:
    """Rewrite COMPLETE.json alone (the receipts as they are, even ones no Receipt would read)."""
    entries = [
        FileEntry(p.relative_to(root).as_posix(), p.stat().st_size, sha256_file(p))
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "COMPLETE.json"
    ]
    Complete(tuple(sorted(entries, key=lambda e: e.path))).write(root)


def edit_json(path: Path, change) -> None:
    obj = json.loads(path.read_text())
    change(obj)
    write_json_atomic(path, obj)
