"""llm.c segments: one part's documents exactly as they stand in the llm.c token files, and the cuts between files.

A part (one input shard) writes its documents once, in the token files'
layout (separator and BOS in place, the layout's dtype; see
:mod:`hf_tokbin.formats.llmc`), as two headerless files::

    <part>.tokens   the ids, document after document: n_tokens * w bytes (w = 2 or 4, the layout's)
    <part>.ends     int64 little-endian, one per document: ends[i] = the stream position (in ids) after document i

so document ``i`` is ``tokens[ends[i-1]:ends[i]]`` (``ends[-1]`` read as 0), the
segment holds ``size(.ends) / 8`` documents and ``size(.tokens) / w`` ids.

A split's llm.c stream is its segments' documents in the split's order
(:mod:`hf_tokbin.formats.llmc_order`: whole segments in part order, or with a
shuffle seed their blocks interleaved), as a sequence of document ranges
(:class:`DocumentRange`: a whole segment, or one block of it), cut into files
the way one sequential writer cuts them
(:class:`hf_tokbin.formats.llmc.LlmcWriter`): a new file begins before a
document that would take the current one past ``max_tokens``. :func:`plan_files`
finds the cuts from each range's counts, reading ``.ends`` (a few ranged
reads, by bisection) only where a file's end falls inside a range, and
describes every file as a list of byte ranges of the segments;
:func:`write_packed_file` writes one file from those ranges. So no process
needs to read every token, and each file can be written by a different one.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._io import BackgroundSha256, commit_file, naming_the_file, tmp_path_for, write_all
from ..errors import FormatError
from .ids import with_boundaries
from .llmc import HEADER_BYTES, Layout, document_boundaries, encode_header, file_name
from .llmc_order import Blocks, block_starts

ENDS_DTYPE = np.dtype("<i8")
TOKENS_SUFFIX, ENDS_SUFFIX = "tokens", "ends"
_BISECT_BLOCK = 4096  # ends read at once when the bisection has narrowed a cut to this many documents


@dataclass(frozen=True)
class SegmentFiles:
    """A finished segment: its two files' sizes and SHA-256."""

    tokens_path: Path | None  # None: no .tokens written (the ids are read from another file of the part)
    ends_path: Path
    n_documents: int
    n_tokens: int
    tokens_size: int
    tokens_sha256: str
    ends_size: int
    ends_sha256: str


class SegmentWriter:
    """Streams one part's documents into ``<stem>.tokens`` and
    ``<stem>.ends`` (temporary names, renamed at :meth:`close`).

    Ids must already be checked (``formats.ids.checked_documents``): a part checks them once for every format.
    ``write_tokens=False``: only ``.ends`` (the ids are written once, elsewhere, in the same layout's bytes).
    """

    def __init__(
        self,
        stem: str | os.PathLike,
        layout: Layout,
        doc_sep_id: int | None,
        bos_id: int | None,
        separator: str,
        write_tokens: bool = True,
    ):
        stem = Path(stem)
        self.tokens_path = stem.with_name(f"{stem.name}.{TOKENS_SUFFIX}") if write_tokens else None
        self.ends_path = stem.with_name(f"{stem.name}.{ENDS_SUFFIX}")
        self.dtype = layout.dtype
        self._before, self._after = document_boundaries(doc_sep_id, bos_id, separator)
        self.ends_path.parent.mkdir(parents=True, exist_ok=True)
        self._ends = open(tmp_path_for(self.ends_path), "wb")
        self._tokens = open(tmp_path_for(self.tokens_path), "wb") if write_tokens else None
        self._tokens_sha256, self._ends_sha256 = BackgroundSha256(), BackgroundSha256()
        self.n_documents = 0
        self.n_tokens = 0

    @property
    def boundary_tokens(self) -> int:
        """Tokens added to each document: its separator and BOS."""
        return len(self._before) + len(self._after)

    def add_checked_documents(self, flat_ids: np.ndarray, lengths: np.ndarray) -> None:
        """Append documents ``formats.ids.checked_documents`` has
        checked: one flat id array and each document's length.
        """
        with naming_the_file(self.tokens_path or self.ends_path):
            ends = np.ascontiguousarray(
                self.n_tokens + np.cumsum(np.asarray(lengths, dtype=np.int64) + self.boundary_tokens), dtype=ENDS_DTYPE
            )
            written = [(self._ends, self._ends_sha256, ends)]
            if self._tokens is not None:
                ids = np.ascontiguousarray(
                    with_boundaries(np.array(flat_ids, dtype=self.dtype), lengths, self._before, self._after)
                )
                written.append((self._tokens, self._tokens_sha256, ids))
            for file, sha, buffer in written:
                file.write(buffer)
                sha.update(buffer)
            self.n_documents += int(ends.size)
            self.n_tokens = int(ends[-1]) if ends.size else self.n_tokens

    def close(self) -> SegmentFiles:
        """Fsync and rename both files; describe the segment."""
        with naming_the_file(self.tokens_path or self.ends_path):
            for file in self._files():
                file.flush()
                os.fsync(file.fileno())
                file.close()
            digests = self._tokens_sha256.hexdigest(), self._ends_sha256.hexdigest()
            for path in (self.tokens_path, self.ends_path):
                if path is not None:
                    commit_file(tmp_path_for(path), path)
        tokens_size = self.tokens_path.stat().st_size if self.tokens_path is not None else 0
        return SegmentFiles(
            self.tokens_path,
            self.ends_path,
            self.n_documents,
            self.n_tokens,
            tokens_size,
            digests[0],
            self.ends_path.stat().st_size,
            digests[1],
        )

    def _files(self) -> list:
        return [file for file in (self._tokens, self._ends) if file is not None]

    def abort(self) -> None:
        for sha in (self._tokens_sha256, self._ends_sha256):
            sha.cancel()
        for file, path in ((self._tokens, self.tokens_path), (self._ends, self.ends_path)):
            if file is not None:
                file.close()
                tmp_path_for(path).unlink(missing_ok=True)


@dataclass(frozen=True)
class DocumentRange:
    """Documents ``first_document .. first_document + n_documents - 1`` of
    segment ``segment``: its ids ``first_token`` on, ``n_tokens`` of them.

    A whole segment is one range from 0; with a shuffle seed, each block of a segment is one
    (:mod:`hf_tokbin.formats.llmc_order`).
    """

    segment: str
    first_document: int
    n_documents: int
    first_token: int
    n_tokens: int


@dataclass(frozen=True)
class TokenRange:
    """``length`` ids of segment ``segment`` from id ``start``."""

    segment: str
    start: int
    length: int


@dataclass(frozen=True)
class FilePlan:
    """One token file to write: its name, counts and the ranges of the segments it is made of, in order."""

    name: str
    n_tokens: int
    n_docs: int
    ranges: tuple[TokenRange, ...]


ReadEnds = Callable[[str, int, int], np.ndarray]  # (segment, first document, count) -> those documents' ends


def plan_files(split: str, ranges: Iterable[DocumentRange], max_tokens: int, read_ends: ReadEnds) -> list[FilePlan]:
    """The token files of ``split``: the ranges' documents in order,
    a new file before a document that would pass ``max_tokens``.

    Every document must fit one file (the parts check it). ``read_ends`` is
    called only for a range in which a file ends, a few times per cut.
    """
    files: list[FilePlan] = []
    ranges_of_file: list[TokenRange] = []
    fill = docs = 0

    def close_file() -> None:
        nonlocal ranges_of_file, fill, docs
        files.append(FilePlan(file_name(split, len(files)), fill, docs, tuple(ranges_of_file)))
        ranges_of_file, fill, docs = [], 0, 0

    for r in ranges:
        # the next document of this range, and where it starts in the segment's stream
        first, start = r.first_document, r.first_token
        stop, end_of_range = r.first_document + r.n_documents, r.first_token + r.n_tokens
        while first < stop:
            if end_of_range - start <= max_tokens - fill:  # the rest of the range fits the current file
                ranges_of_file.append(TokenRange(r.segment, start, end_of_range - start))
                fill, docs, first, start = fill + end_of_range - start, docs + stop - first, stop, end_of_range
                continue
            fit = count_fitting(lambda i, n: read_ends(r.segment, i, n), first, stop, start + max_tokens - fill)
            if fit == 0:
                if not docs:
                    raise FormatError(
                        r.segment,
                        f"document {first} is longer than one llm.c file may hold",
                        expected=f"<= {max_tokens} tokens",
                    )
                close_file()
                continue
            end = int(read_ends(r.segment, first + fit - 1, 1)[0])
            ranges_of_file.append(TokenRange(r.segment, start, end - start))
            fill, docs, first, start = fill + end - start, docs + fit, first + fit, end
            close_file()
    if docs:
        close_file()
    return files


def ranges_in_order(
    blocks: Blocks, segments: Sequence[str], block_ends: Sequence[Sequence[int]]
) -> Iterator[DocumentRange]:
    """The document ranges of a split's stream, block after block
    (``blocks``: :func:`hf_tokbin.formats.llmc_order.llmc_order`).

    ``segments[p]`` names part p's segment, ``block_ends[p][j]`` is where its block j ends in the segment's stream
    (the last is the segment's token count): the parts recorded them, so no ``.ends`` is read here.
    """
    for p, j, first, count in zip(
        blocks.part.tolist(), blocks.block.tolist(), blocks.first.tolist(), blocks.count.tolist()
    ):
        start = int(block_ends[p][j - 1]) if j else 0
        yield DocumentRange(segments[p], first, count, start, int(block_ends[p][j]) - start)


def check_block_ends(where, block_ends: Sequence[int] | None, n_documents: int, n_tokens: int) -> list[int]:
    """A part's recorded block ends (:func:`block_token_ends`): one
    per block, never decreasing, the last at the segment's end.
    """
    blocks = block_starts(n_documents).size - 1
    ends = list(block_ends) if block_ends is not None else []
    if (
        block_ends is None
        or len(ends) != blocks
        or any(a > b for a, b in zip(ends, ends[1:]))
        or (blocks and ends[-1] != n_tokens)
    ):
        raise FormatError(
            where,
            "a shuffled part's record must give where each of its blocks ends",
            expected=f"{blocks} non-decreasing ends, the last {n_tokens}",
            got=None if block_ends is None else f"{len(ends)} ends",
        )
    return ends


def block_token_ends(ends_path: str | os.PathLike, n_documents: int, interleaved: bool) -> list[int]:
    """Where each block of a finished segment ends in its stream
    (read from its ``.ends`` at the blocks' last documents).
    """
    last = block_starts(n_documents, interleaved)[1:] - 1
    if not last.size:
        return []
    ends = np.memmap(ends_path, dtype=ENDS_DTYPE, mode="r", shape=(n_documents,))
    return [int(x) for x in ends[last]]


def count_fitting(read: Callable[[int, int], np.ndarray], first: int, n: int, limit: int) -> int:
    """How many documents from ``first`` on end at or before stream position ``limit`` (``ends`` is non-decreasing).

    Bisects with single reads down to a block of :data:`_BISECT_BLOCK`, then reads that block.
    """
    low, high = first, n  # ends[j] <= limit for every j < low; ends[j] > limit for every j >= high
    while high - low > _BISECT_BLOCK:
        middle = (low + high) // 2
        if int(read(middle, 1)[0]) <= limit:
            low = middle + 1
        else:
            high = middle
    block = read(low, high - low) if high > low else np.zeros(0, dtype=ENDS_DTYPE)
    return low - first + int(np.searchsorted(block, limit, side="right"))


CopyRange = Callable[[TokenRange, int], None]  # (range, destination fd): append the range's bytes to the open file


def write_packed_file(
    path: str | os.PathLike, plan: FilePlan, layout: Layout, vocab_size: int, copy_range: CopyRange
) -> int:
    """Write token file ``path``: the header of ``plan.n_tokens`` ids, then every range; atomically. Returns its size.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path_for(path)
    expected = HEADER_BYTES + plan.n_tokens * layout.dtype.itemsize
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        with naming_the_file(path):
            write_all(fd, encode_header(plan.n_tokens, vocab_size, layout))
            for token_range in plan.ranges:
                copy_range(token_range, fd)
            os.fsync(fd)
            size = os.fstat(fd).st_size
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    if size != expected:
        tmp.unlink(missing_ok=True)
        raise FormatError(
            path,
            "a packed token file must hold the ids its plan counts (token conservation)",
            expected=f"{expected} bytes",
            got=f"{size} bytes",
        )
    commit_file(tmp, path)
    return size


def copy_file_range_into(source: str | os.PathLike, offset: int, length: int, fd: int) -> None:
    """Append ``length`` bytes of ``source`` from ``offset`` to the open
    file ``fd``: in the kernel where it can (``os.copy_file_range``).
    """
    with open(source, "rb") as file:
        src = file.fileno()
        if os.fstat(src).st_size < offset + length:
            raise FormatError(
                source,
                "segment is shorter than the range a token file needs",
                expected=f">= {offset + length} bytes",
                got=f"{os.fstat(src).st_size} bytes",
            )
        while length:
            try:
                done = os.copy_file_range(src, fd, length, offset)
            except AttributeError:  # no copy_file_range on this platform
                done = _copy_through_memory(src, fd, offset, length)
            except OSError as e:
                if e.errno not in _NO_KERNEL_COPY:
                    raise
                done = _copy_through_memory(src, fd, offset, length)
            if done <= 0:
                raise FormatError(
                    source,
                    "segment ended before the range a token file needs",
                    expected=f"{length} more bytes",
                    got="end of file",
                )
            offset, length = offset + done, length - done


# copy_file_range refused for these files (another filesystem on
# old kernels, a filesystem without it): copy through memory.
_NO_KERNEL_COPY = frozenset({errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP})


def _copy_through_memory(src: int, fd: int, offset: int, length: int) -> int:
    data = os.pread(src, min(length, 1 << 24), offset)
    write_all(fd, data)
    return len(data)



def ends_of(data: bytes, where) -> np.ndarray:
    """``.ends`` bytes as an array; an error naming ``where`` if they are not whole int64 values."""
    if len(data) % ENDS_DTYPE.itemsize:
        raise FormatError(where, "segment ends must be whole int64 values", got=f"{len(data)} bytes")
    return np.frombuffer(data, dtype=ENDS_DTYPE)


def stream_totals(files: Iterable[FilePlan]) -> tuple[int, int]:
    """(documents, ids) over ``files``."""
    files = list(files)
    return sum(f.n_docs for f in files), sum(f.n_tokens for f in files)
