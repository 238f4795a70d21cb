"""Megatron IndexedDataset v1 ``.bin``/``.idx`` pairs (the Megatron release layout).

``.bin`` is a contiguous little-endian stream of token ids (uint16 or int32).
``.idx`` describes its sequences; all integers little-endian::

    offset        size        field
    0             9           magic b"MMIDIDX\\x00\\x00"
    9             8           version, uint64 = 1
    17            1           dtype code, uint8: 8 = uint16 (vocab <= 65,536), 4 = int32 (above)
    18            8           sequence count S, uint64
    26            8           document count D, uint64 (= documents + 1)
    34            4 * S       sequence lengths, int32 (tokens)
    34 + 4S       8 * S       sequence pointers, int64 (byte offsets into .bin)
    34 + 12S      8 * D       document indices, int64: [0, ..., S]

Here one document is one sequence that ends with one EOD token (the Megatron release layout) and,
when a BOS is given, begins with it: ``[bos] + ids + [eod]``, both counted in
its length, so the document indices are ``[0, 1, ..., S]``. Pointers start at 0
and are contiguous: ``pointer[i+1] = pointer[i] + length[i] * itemsize``, and
the last sequence ends exactly at the end of ``.bin``. The layout is the one
megatron-core's ``_IndexWriter`` writes (``megatron/core/datasets/
indexed_dataset.py``), byte for byte.

The reader checks all of that before it returns a view, so a forged ``.idx``
downloaded from a stranger gives a :class:`FormatError`, never an
out-of-bounds read. Checks run in chunks: memory stays flat on huge indices.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._io import BackgroundSha256, commit_file, create_file, fsync_dir, naming_the_file, sha256_file, tmp_path_for
from ..errors import FormatError
from .ids import check_ids_below, checked_documents, with_boundaries
from .rules import fits_uint16

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
HEADER_BYTES = 34
DTYPE_CODES = {
    1: np.dtype(np.uint8),
    2: np.dtype(np.int8),
    3: np.dtype("<i2"),
    4: np.dtype("<i4"),
    5: np.dtype("<i8"),
    6: np.dtype("<f8"),
    7: np.dtype("<f4"),
    8: np.dtype("<u2"),
}
CODE_UINT16 = 8
CODE_INT32 = 4
_CHUNK = 1 << 22  # index entries or ids handled per step


def dtype_code_for_vocab(vocab_size: int) -> int:
    """8 (uint16) when every id fits 16 bits, 4 (int32) above (Megatron has no uint32)."""
    if vocab_size <= 0:
        raise FormatError(None, "vocab_size must be positive", got=vocab_size)
    if vocab_size > 2**31:
        raise FormatError(None, "vocab_size too large for Megatron's int32 ids", expected="<= 2**31", got=vocab_size)
    return CODE_UINT16 if fits_uint16(vocab_size) else CODE_INT32


def idx_path_for(bin_path: str | os.PathLike) -> Path:
    return Path(bin_path).with_suffix(".idx")


def idx_path_for_prefix(prefix: str | os.PathLike) -> Path:
    """The ``.idx`` of a pair named by its prefix (Megatron's ``--data-path`` names pairs so): ``PREFIX.idx``."""
    return Path(f"{os.fspath(prefix)}.idx")


def bin_path_for(idx_path: str | os.PathLike) -> Path:
    return Path(idx_path).with_suffix(".bin")


@dataclass(frozen=True)
class PairFiles:
    """What a finished pair holds, for receipts."""

    bin_path: Path
    idx_path: Path
    n_documents: int
    n_tokens: int
    bin_size: int
    bin_sha256: str
    idx_size: int
    idx_sha256: str


class MegatronWriter:
    """Streams documents into one ``.bin``/``.idx`` pair, one sequence per document.

    Ids go to the ``.bin`` as they come and lengths to a scratch file, so a
    hundred million documents need no hundred million Python objects; the
    ``.idx`` is composed from the scratch file in chunks at :meth:`close`.
    The ``.bin`` is hashed as it streams, on a worker thread, so close does
    not re-read it. Both files are written under temporary names and renamed
    at the end.
    """

    def __init__(self, bin_path: str | os.PathLike, vocab_size: int, eod_id: int | None, bos_id: int | None = None):
        # Each document is written as [bos_id] + ids + [eod_id]; None leaves that token out
        # (both None: the documents as they are, the build's llm.c staging pairs).
        for name, value in (("eod_id", eod_id), ("bos_id", bos_id)):
            if value is not None and not 0 <= value < vocab_size:
                raise FormatError(
                    bin_path, f"{name} must be a valid id", expected=f"0 <= id < {vocab_size}", got=value
                )
        self.bin_path = Path(bin_path)
        self.idx_path = idx_path_for(self.bin_path)
        self.vocab_size = vocab_size
        self.eod_id = eod_id
        self.bos_id = bos_id
        self.code = dtype_code_for_vocab(vocab_size)
        self.dtype = DTYPE_CODES[self.code]
        self.bin_path.parent.mkdir(parents=True, exist_ok=True)
        self._lengths_path = self.idx_path.with_name(f".{self.idx_path.name}.lengths.tmp")
        self._bin = create_file(tmp_path_for(self.bin_path))
        try:
            self._lengths = create_file(self._lengths_path)
        except BaseException:
            self._bin.close()
            raise
        self._bin_sha256 = BackgroundSha256()
        self.n_documents = 0
        self.n_tokens = 0
        self._closed: PairFiles | None = None

    def add_document(self, ids) -> None:
        ids = np.asarray(ids)
        self.add_documents(ids, np.array([ids.size], dtype=np.int64))

    def add_documents(self, flat_ids: np.ndarray, lengths: np.ndarray) -> None:
        """Append documents given as one flat id array (without BOS or EOD) and each one's length."""
        self.add_checked_documents(*checked_documents(flat_ids, lengths, self.vocab_size, self.bin_path))

    def add_checked_documents(self, flat_ids: np.ndarray, lengths: np.ndarray) -> None:
        """:meth:`add_documents` for documents ``formats.ids.checked_documents``
        has already checked (a build checks once for every format).
        """
        seq_lengths = lengths + self.boundary_tokens  # BOS and EOD count in each sequence's length
        if seq_lengths.size and int(seq_lengths.max()) > np.iinfo(np.int32).max:
            raise FormatError(self.bin_path, "a sequence length must fit int32", got=int(seq_lengths.max()))
        if self.boundary_tokens:
            ids = with_boundaries(
                flat_ids.astype(self.dtype, copy=False), lengths, _present(self.bos_id), _present(self.eod_id)
            )
        else:
            # A copy: the caller may reuse its array while the hash is still pending.
            ids = np.array(flat_ids, dtype=self.dtype)
        ids = np.ascontiguousarray(ids)
        self._bin.write(ids)  # the buffer itself, no bytes copy
        self._bin_sha256.update(ids)
        self._lengths.write(seq_lengths.astype("<i4").tobytes())
        self.n_documents += lengths.size
        self.n_tokens += ids.size

    @property
    def boundary_tokens(self) -> int:
        """Tokens the writer adds to each document: the BOS and the EOD it was given."""
        return (self.bos_id is not None) + (self.eod_id is not None)

    def close(self) -> PairFiles:
        """Finish ``.bin`` then ``.idx`` (each fsynced, renamed) and describe the pair; a second call returns the same.
        """
        with naming_the_file(self.idx_path):
            return self._close()

    def _close(self) -> PairFiles:
        if self._closed is not None:
            return self._closed
        for file in (self._bin, self._lengths):
            file.flush()
            os.fsync(file.fileno())
            file.close()
        bin_tmp, idx_tmp = tmp_path_for(self.bin_path), tmp_path_for(self.idx_path)
        lengths = _memmap(self._lengths_path, "<i4", 0, self.n_documents)
        write_index(idx_tmp, self.code, lengths)
        del lengths
        os.unlink(self._lengths_path)
        bin_sha, idx_sha = self._bin_sha256.hexdigest(), sha256_file(idx_tmp)
        bin_size, idx_size = bin_tmp.stat().st_size, idx_tmp.stat().st_size
        os.replace(bin_tmp, self.bin_path)
        commit_file(idx_tmp, self.idx_path)
        self._closed = PairFiles(
            self.bin_path, self.idx_path, self.n_documents, self.n_tokens, bin_size, bin_sha, idx_size, idx_sha
        )
        return self._closed

    def abort(self) -> None:
        self._bin_sha256.cancel()
        for file in (self._bin, self._lengths):
            file.close()
        # The .idx temporary too: close() may fail while writing it (a full disk).
        for path in (tmp_path_for(self.bin_path), tmp_path_for(self.idx_path), self._lengths_path):
            path.unlink(missing_ok=True)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        # As LlmcWriter: a clean exit commits the pair, an exception drops it.
        if exc_type is None:
            self.close()
        else:
            self.abort()


def _present(token: int | None) -> tuple[int, ...]:
    return () if token is None else (token,)


def write_index(path: str | os.PathLike, code: int, lengths: np.ndarray) -> None:
    """Write an ``.idx`` for one document per sequence, with the given lengths, and fsync it.

    ``lengths`` may be a memmap: it is read in chunks, so memory stays flat.
    """
    itemsize = DTYPE_CODES[code].itemsize
    n = int(lengths.size)
    with create_file(path) as file:
        file.write(MAGIC + struct.pack("<Q", VERSION) + struct.pack("<B", code) + struct.pack("<QQ", n, n + 1))
        for start in range(0, n, _CHUNK):
            file.write(np.ascontiguousarray(lengths[start : start + _CHUNK], dtype="<i4").tobytes())
        carry = 0
        for start in range(0, n, _CHUNK):
            chunk = lengths[start : start + _CHUNK].astype("<i8") * itemsize
            pointers = np.cumsum(chunk) - chunk + carry
            carry += int(chunk.sum())
            file.write(pointers.astype("<i8").tobytes())
        for start in range(0, n + 1, _CHUNK):
            file.write(np.arange(start, min(start + _CHUNK, n + 1), dtype="<i8").tobytes())
        file.flush()
        os.fsync(file.fileno())
    fsync_dir(Path(path).parent)


@dataclass(frozen=True)
class IndexHeader:
    code: int
    sequence_count: int
    document_count: int

    @property
    def dtype(self) -> np.dtype:
        return DTYPE_CODES[self.code]

    @property
    def idx_size(self) -> int:
        return HEADER_BYTES + 12 * self.sequence_count + 8 * self.document_count


def read_index_header(idx_path: str | os.PathLike) -> IndexHeader:
    idx_path = Path(idx_path)
    size = idx_path.stat().st_size
    if size < HEADER_BYTES:
        raise FormatError(idx_path, "truncated header", expected=f"at least {HEADER_BYTES} bytes", got=f"{size} bytes")
    with open(idx_path, "rb") as file:
        raw = file.read(HEADER_BYTES)
    if raw[:9] != MAGIC:
        raise FormatError(idx_path, "wrong magic", expected=repr(MAGIC), got=repr(raw[:9]))
    (version,) = struct.unpack("<Q", raw[9:17])
    if version != VERSION:
        raise FormatError(idx_path, "unknown version", expected=VERSION, got=version)
    code = raw[17]
    if code not in DTYPE_CODES:
        raise FormatError(idx_path, "unknown dtype code", expected=sorted(DTYPE_CODES), got=code)
    if code not in (CODE_UINT16, CODE_INT32):
        raise FormatError(idx_path, "token dtype code must be 8 (uint16) or 4 (int32)", got=code)
    sequence_count, document_count = struct.unpack("<QQ", raw[18:34])
    header = IndexHeader(code, sequence_count, document_count)
    if document_count < 1:
        raise FormatError(idx_path, "document count must be at least 1 (indices start at 0)", got=document_count)
    if size != header.idx_size:
        rule = "truncated index" if size < header.idx_size else "trailing bytes after the document indices"
        raise FormatError(
            idx_path,
            f"{rule}: size must be 34 + 12 * sequences + 8 * documents",
            expected=f"{header.idx_size} bytes",
            got=f"{size} bytes",
        )
    return header


def read_sequence_lengths(idx_path: str | os.PathLike, count: int | None = None) -> np.ndarray:
    """The first ``count`` (default: every) sequence lengths of an
    ``.idx``, read from it alone: the ``.bin`` need not be here.
    """
    header = read_index_header(idx_path)
    n = header.sequence_count if count is None else min(count, header.sequence_count)
    return np.fromfile(idx_path, dtype="<i4", count=n, offset=HEADER_BYTES).astype(np.int64)


class MegatronPair:
    """A validated, zero-copy view of one ``.bin``/``.idx`` pair.

    ``len(pair)`` is the number of sequences, ``pair[i]`` the ids of sequence i
    (a memmap slice), ``pair.tokens`` the whole stream.
    """

    def __init__(self, path: str | os.PathLike, vocab_size: int | None = None):
        path = Path(path)
        if path.suffix == ".idx":
            self.idx_path = path
        else:
            self.idx_path = idx_path_for(path) if path.suffix == ".bin" else idx_path_for_prefix(path)
        self.bin_path = bin_path_for(self.idx_path)
        for p in (self.idx_path, self.bin_path):
            if not p.exists():
                raise FormatError(
                    p,
                    "the other half of the pair is missing",
                    hint="a Megatron dataset is a .bin and an .idx with the same prefix",
                )
        self.header = read_index_header(self.idx_path)
        s, d = self.header.sequence_count, self.header.document_count
        self.dtype = self.header.dtype
        self.lengths = _memmap(self.idx_path, "<i4", HEADER_BYTES, s)
        self.pointers = _memmap(self.idx_path, "<i8", HEADER_BYTES + 4 * s, s)
        self.document_indices = _memmap(self.idx_path, "<i8", HEADER_BYTES + 12 * s, d)
        self.bin_size = self.bin_path.stat().st_size
        self._check_index()
        self.tokens = _memmap(self.bin_path, self.dtype, 0, self.bin_size // self.dtype.itemsize)
        if vocab_size is not None:
            self.check_ids(vocab_size)

    def _check_index(self) -> None:
        idx, itemsize = self.idx_path, self.dtype.itemsize
        if self.bin_size % itemsize:
            raise FormatError(
                self.bin_path, f"size must be a multiple of the dtype size {itemsize}", got=f"{self.bin_size} bytes"
            )
        expected_next = 0
        for start in range(0, len(self.lengths), _CHUNK):
            lengths = self.lengths[start : start + _CHUNK].astype(np.int64)
            pointers = self.pointers[start : start + _CHUNK]
            if lengths.size and int(lengths.min()) < 0:
                i = start + int(np.argmax(lengths < 0))
                raise FormatError(idx, f"sequence {i}: length must not be negative", got=int(self.lengths[i]))
            expected = np.cumsum(lengths * itemsize) - lengths * itemsize + expected_next
            bad = np.flatnonzero(pointers != expected)
            if bad.size:
                i = start + int(bad[0])
                raise FormatError(
                    idx,
                    f"sequence {i}: pointer must follow the previous sequence",
                    expected=int(expected[bad[0]]),
                    got=int(self.pointers[i]),
                )
            expected_next = int(expected[-1] + lengths[-1] * itemsize) if lengths.size else expected_next
        if expected_next != self.bin_size:
            rule = (
                "sequences end past the end of .bin"
                if expected_next > self.bin_size
                else "bytes in .bin after the last sequence"
            )
            raise FormatError(self.bin_path, rule, expected=f"{expected_next} bytes", got=f"{self.bin_size} bytes")
        docs = self.document_indices
        if int(docs[0]) != 0:
            raise FormatError(idx, "document index 0 must be 0", got=int(docs[0]))
        if int(docs[-1]) != self.header.sequence_count:
            raise FormatError(
                idx,
                "the last document index must be the sequence count",
                expected=self.header.sequence_count,
                got=int(docs[-1]),
            )
        for start in range(0, len(docs) - 1, _CHUNK):
            chunk = docs[start : start + _CHUNK + 1]
            bad = np.flatnonzero(np.diff(chunk) < 0)
            if bad.size:
                i = start + int(bad[0]) + 1
                raise FormatError(
                    idx, f"document index {i} must not decrease", expected=f">= {int(docs[i - 1])}", got=int(docs[i])
                )

    def check_ids(self, vocab_size: int | None = None) -> None:
        """Raise if an id is >= ``vocab_size`` or negative (int32 files can hold negatives; no tokenizer has one).

        Without ``vocab_size`` (a bare pair names none) only the sign is checked.
        """
        if vocab_size is None:
            vocab_size = 1 << (8 * self.dtype.itemsize)
        check_ids_below(self.bin_path, self.tokens, vocab_size)

    def check_one_document_per_sequence(self, eod_id: int | None = None, bos_id: int | None = None) -> None:
        """The release rule: document indices are [0..S]; with ``eod_id``
        every sequence ends with it, with ``bos_id`` begins with it.
        """
        s = self.header.sequence_count
        if self.header.document_count != s + 1:
            raise FormatError(
                self.idx_path, "document count must be sequences + 1", expected=s + 1, got=self.header.document_count
            )
        for start in range(0, s + 1, _CHUNK):
            chunk = self.document_indices[start : start + _CHUNK]
            bad = np.flatnonzero(chunk != np.arange(start, start + chunk.size))
            if bad.size:
                i = start + int(bad[0])
                raise FormatError(
                    self.idx_path,
                    f"document index {i} must be {i} (one document per sequence)",
                    got=int(chunk[bad[0]]),
                )
        minimum = (eod_id is not None) + (bos_id is not None)
        if not minimum:
            return
        item = self.dtype.itemsize
        for start in range(0, s, _CHUNK):
            lengths = self.lengths[start : start + _CHUNK].astype(np.int64)
            if lengths.size and int(lengths.min()) < minimum:
                i = start + int(np.argmax(lengths < minimum))
                raise FormatError(
                    self.idx_path,
                    f"sequence {i} must hold at least its "
                    f"{'BOS and EOD tokens' if minimum == 2 else 'boundary token'}",
                    got=int(lengths[i - start]),
                )
            first = self.pointers[start : start + _CHUNK] // item
            for token, positions, rule in (
                (eod_id, first + lengths - 1, "end with EOD"),
                (bos_id, first, "begin with BOS"),
            ):
                if token is None:
                    continue
                bad = np.flatnonzero(self.tokens[positions] != token)
                if bad.size:
                    i = start + int(bad[0])
                    raise FormatError(
                        self.bin_path,
                        f"sequence {i} must {rule}",
                        expected=token,
                        got=int(self.tokens[positions[bad[0]]]),
                    )

    def __len__(self) -> int:
        return self.header.sequence_count

    def __getitem__(self, i: int) -> np.ndarray:
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"sequence {i} out of range for {n} sequences")
        i %= n
        start = int(self.pointers[i]) // self.dtype.itemsize
        return self.tokens[start : start + int(self.lengths[i])]

    @property
    def n_tokens(self) -> int:
        return int(self.tokens.size)


def token_range(bin_path: str | os.PathLike, dtype, start: int, count: int) -> np.ndarray:
    """Ids ``start .. start + count - 1`` of a ``.bin`` (a memory
    map of that range alone, no index read): a checked pair's span.
    """
    dtype = np.dtype(dtype)
    return _memmap(Path(bin_path), dtype, start * dtype.itemsize, count)


def sequence_pointers(idx_path: str | os.PathLike, first: int, count: int) -> np.ndarray:
    """Pointers (byte offsets in the ``.bin``) of sequences ``first ..
    first + count - 1`` of an ``.idx``: a memory map of them alone.
    """
    header = read_index_header(idx_path)
    return _memmap(Path(idx_path), "<i8", HEADER_BYTES + 4 * header.sequence_count + 8 * first, count)


def _memmap(path: Path, dtype, offset: int, count: int) -> np.ndarray:
    if count == 0:
        return np.zeros(0, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=(count,))
