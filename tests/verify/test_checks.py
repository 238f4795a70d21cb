"""verify.checks.check_files: files hashed side by side, the first broken entry (in the record's order)
reported.
"""

from __future__ import annotations

import hashlib
import threading

import pytest

from hf_tokbin.errors import VerificationError
from hf_tokbin.formats.records import FileEntry
from hf_tokbin.verify import checks


def _entries(root, contents: dict[str, bytes]) -> list[FileEntry]:
    for name, data in contents.items():
        (root / name).write_bytes(data)
    return [FileEntry(name, len(data), hashlib.sha256(data).hexdigest()) for name, data in contents.items()]


def test_files_are_hashed_on_several_threads(tmp_path, monkeypatch):
    entries = _entries(tmp_path, {f"f{i}.bin": bytes([i]) * 1000 for i in range(8)})
    threads, sha256_file = set(), checks.sha256_file
    both = threading.Barrier(2, timeout=30)  # the first two files are hashed at the same time, or this breaks

    def recorded(path):
        threads.add(threading.current_thread().name)
        if path.name in ("f0.bin", "f1.bin"):
            both.wait()
        return sha256_file(path)

    monkeypatch.setattr(checks, "sha256_file", recorded)
    monkeypatch.setattr(checks.os, "cpu_count", lambda: 2)
    checks.check_files(tmp_path, entries, "COMPLETE.json", progress=False)
    assert len(threads) == 2 and threading.current_thread().name not in threads


def test_the_first_broken_entry_in_order_is_reported(tmp_path):
    entries = _entries(tmp_path, {"a.bin": b"a" * 100, "b.bin": b"b" * 100, "c.bin": b"c" * 100})
    (tmp_path / "b.bin").write_bytes(b"x" * 100)  # same size, other bytes
    (tmp_path / "c.bin").unlink()
    with pytest.raises(VerificationError, match=r"b\.bin: SHA-256 differs from COMPLETE\.json"):
        checks.check_files(tmp_path, entries, "COMPLETE.json", progress=False)
