"""hf_tokbin._io: a file hashed as it is written (issue 23)."""

from __future__ import annotations

import hashlib

import pyarrow as pa
import pyarrow.parquet as pq

from hf_tokbin._io import HashedFile


def test_hashed_file_digest_is_the_files(tmp_path):
    path = tmp_path / "f.bin"
    chunks = [b"a" * 10, b"", bytes(range(256)) * 5000, memoryview(b"tail")]
    with HashedFile(path) as file:
        for chunk in chunks:
            assert file.write(chunk) == len(chunk)
    assert file.closed
    data = path.read_bytes()
    assert data == b"".join(bytes(c) for c in chunks)
    assert file.sha256() == hashlib.sha256(data).hexdigest()


def test_a_parquet_writer_writes_the_same_bytes_through_it(tmp_path):
    table = pa.table({"text": pa.array([f"story {i}" for i in range(50_000)])})
    pq.write_table(table, tmp_path / "plain.parquet", compression="zstd")
    with HashedFile(tmp_path / "hashed.parquet") as file:
        pq.write_table(table, file, compression="zstd")
    plain = (tmp_path / "plain.parquet").read_bytes()
    assert (tmp_path / "hashed.parquet").read_bytes() == plain
    assert file.sha256() == hashlib.sha256(plain).hexdigest()
