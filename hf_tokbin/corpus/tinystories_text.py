r"""TinyStories text files: their stories, read in large blocks (no ``datasets``, no per-line Python).

The format (the TinyStories rules, the TinyStories V2 files)::

    ...end of a story.\n
    <|endoftext|>\n          <- a delimiter line: exactly these 13 characters, then a line end
    \n                       <- blank lines sometimes follow a delimiter
    Once upon a time...\n

Rules, exactly the TinyStories rules' ``stories()``:

- A line holding only ``<|endoftext|>`` separates stories. A line with
  anything more (even a trailing space) is story text. Lines end as in
  Python's universal newlines (``\n``, ``\r\n`` or ``\r``); the last line
  may have no end.
- A story is the text between two delimiter lines with surrounding ``\n``
  stripped (``str.strip("\n")``, nothing else). Empty stories are dropped.
  The text before the first delimiter (the truncated first story of the
  validation file) is kept, like any other story.

Choice for ``\r\n`` files: every ``\r\n`` is read as ``\n`` before the
rules apply (the reader yields ``stories(text.replace("\r\n", "\n"))``), so
a ``\r\n`` file gives exactly the stories of the same file saved with
``\n``. Applied literally to a ``\r\n`` file, the rules' code would keep
``\r\n`` inside stories and a stray ``\r`` at the end of each (``strip("\n")``
cannot remove it). A lone ``\r`` stays as it is, as in the rules.

Reading is streamed in binary blocks (``block_size``) cut after their last
``\n``, so every block starts at a line start, a UTF-8 character never
straddles two blocks, and memory does not grow with the file. A block is
decoded once (invalid UTF-8 stops with the file and byte offset) and split
with ``str.split`` (C speed) on ``"\n<|endoftext|>\n"``; only a block where
that does not account for every ``<|endoftext|>`` (or that holds ``\r``) has
each occurrence checked against the line rules in Python, once per marker,
never once per line. This reads about 1.2-1.6x faster than the rules' line
loop (scripts/bench_corpus.py).

``story_tables`` (``corpus tinystories``, the datasets builder) cuts the
same stories from the bytes, without a Python object per story. In a block
whose every marker sits on a line of its own (nearly every block), numpy
finds the delimiter lines (every ``<``, then the 14 bytes from it compared
as two words), each story's ``\n`` are stripped by moving its offsets (a
few vectorised passes, a longer run of blank lines in Python), and the
stories are copied into one Arrow string buffer by Arrow's ``take`` over a
string array of the block's own bytes (for a file under 64 MiB, by joining
memoryviews: ``take`` imports ``pyarrow.compute``, 0.04-0.09 s). Only the
story that straddles two blocks is joined and stripped as ``bytes``. A block
that is not ASCII is checked with Arrow's UTF-8 validation (the same bytes
accepted as Python's decoder; decoded only to name the bad byte). Measured
on a 200 MB TinyStories-like file (11 interleaved runs, medians, CPU time
on 2 shared cores): the cut alone takes 1.8 s of CPU per GB instead of
3.9 s with ``bytes.split``, ``strip``, ``join`` and a ``bytes`` per story
(1.9 instead of 4.6 when every block holds non-ASCII text), and the whole
``corpus tinystories`` command 16% less CPU and 15% less wall time
(20 rounds; docs/speed.md). Other blocks (``\r``, a marker with more on its
line) are cut as text, as ``read_story_batches`` does.
"""

from __future__ import annotations

import os
from typing import Iterator

from ..errors import CorpusInputError
from ..formats.arrow_columns import utf8_string_array

DELIMITER = "<|endoftext|>"
DEFAULT_BLOCK_SIZE = 1 << 20
_DELIMITER_LINE = "\n" + DELIMITER + "\n"
_DELIMITER_BYTES = DELIMITER.encode("ascii")
_LINE_ENDS = ("\n", "\r")


def story_tables(
    files,
    split: str,
    block_size: int = DEFAULT_BLOCK_SIZE,
    progress: bool = False,
    keep_empty: bool = False,
    chunks=None,
):
    """Yield ``((file_index, batch_index), table)`` for the files of one split: a ``text`` table per block's stories.

    ``progress``: a tqdm bar of bytes read (hidden when stderr is not a terminal).
    ``chunks(data)`` is called with every chunk of bytes read, in order (to hash the bytes the stories came from).
    """
    import pyarrow as pa

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(
            total=sum(os.path.getsize(path) for path in files),
            unit="B",
            unit_scale=True,
            desc=f"read {split}",
            disable=None,
        )
    try:
        for file_index, path in enumerate(files):
            for batch_index, texts in enumerate(
                _story_arrays(path, block_size, None if bar is None else bar.update, keep_empty, chunks)
            ):
                yield (file_index, batch_index), pa.table({"text": texts})
    finally:
        if bar is not None:
            bar.close()


def _story_arrays(path, block_size: int, progress, keep_empty: bool, chunks):
    r"""The stories of one file as ``pa.string()`` chunked arrays,
    a block at a time (never empty): ``_story_batches``'s stories.

    A block whose every marker sits on a line of its own (nearly every block)
    is cut by offsets: its delimiter lines found with numpy, each story's
    ``\n`` stripped by moving its offsets, and the stories gathered from the
    block into one buffer by Arrow's ``take`` (by joining memoryviews in a file
    under ``_TAKE_FROM_BYTES``): no Python object per story. Only the story
    that straddles two blocks is joined and stripped as ``bytes``. Any other
    block is decoded and cut as text (``_split_on_delimiter_lines``).
    """
    import pyarrow as pa

    # Arrow's take needs pyarrow.compute, whose import (0.04-0.09 s) a small file's reading does not pay back.
    gather = _taken if os.path.getsize(path) >= _TAKE_FROM_BYTES else _joined
    pending: list[bytes] = []  # pieces of the story that runs past the blocks read so far
    first = True  # the next story is the text before the file's first delimiter
    for handed, final, offset in _read_byte_blocks(path, block_size, progress, chunks):
        data = handed.pop()
        cuts = None if b"\r" in data or len(data) >= 1 << 31 else _delimiter_line_cuts(data)
        if cuts is None:
            text = _decode(data, path, offset)
            del data
            if "\r" in text:
                text = text.replace("\r\n", "\n")
            pieces = [piece.encode("utf-8") for piece in _split_on_delimiter_lines(text, final)]
            del text
            head, tail = pieces[0], pieces[-1]
            middle = [story for story in (piece.strip(b"\n") for piece in pieces[1:-1]) if story or keep_empty]
            middle = utf8_string_array(middle) if middle else None
            delimited = len(pieces) > 1
        else:
            if not data.isascii() and not _is_utf8(data):
                _decode(data, path, offset)  # invalid UTF-8 stops the read, with the file and byte offset
            starts, ends = cuts
            head, tail = data[: ends[0]], data[starts[-1] :]
            middle = _gathered_stories(data, starts[1:-1], ends[1:-1], keep_empty, gather)
            delimited = len(starts) > 1
        pending.append(head)
        arrays = []
        if delimited:
            story = b"".join(pending).strip(b"\n")
            pending = [tail]
            if story or (keep_empty and not first):
                arrays += _chunks(utf8_string_array([story]))
            first = False
            if middle is not None:
                arrays.append(middle)
        if final:
            story = b"".join(pending).strip(b"\n")
            if story:  # the text after the file's last delimiter, or the whole file: never an empty story
                arrays += _chunks(utf8_string_array([story]))
        if arrays:
            yield pa.chunked_array(arrays, pa.string())


def _chunks(array) -> list:
    """An array's chunks: a story of 2 GiB or more comes as a chunked array (``pyarrow.array``'s)."""
    return list(array.chunks) if hasattr(array, "chunks") else [array]


def _delimiter_line_cuts(data: bytes):
    r"""``(starts, ends)``: the pieces of a block between its
    delimiter lines, if each marker sits on a line of its own.

    Every marker must have a ``\n`` (or the block's start) before it and a
    ``\n`` after it, no two delimiter lines sharing a ``\n``: the rules then
    cut where ``bytes.split`` on ``"\n<|endoftext|>\n"`` does. ``None``
    otherwise (the line rules are then checked by ``_split_on_delimiter_lines``).
    A marker at the block's start (a line start) is a delimiter line too.
    """
    import numpy as np

    block = np.frombuffer(data, dtype=np.uint8)
    size = block.size
    if data.find(_DELIMITER_BYTES, size - len(_DELIMITER_BYTES)) >= 0:
        return None  # the block ends in a marker: no line end after it
    found = np.flatnonzero(block == 0x3C)  # every "<": each marker starts with one
    found = found[: np.searchsorted(found, size - len(_DELIMITER_BYTES))]  # those that could start a marker
    at = found
    if found.size:
        # Each "<" and the 13 bytes after it as two (unaligned) little-endian words: "<|endoft" and "ftext|>\n".
        words = np.ndarray((size - 7,), dtype="<u8", buffer=data, strides=(1,))
        lead, rest = words[found], words[found + 6]
        if not ((lead == _LINE_WORDS[0]) & (rest == _LINE_WORDS[1])).all():  # some "<" is not a delimiter line's
            marker = (lead == _LINE_WORDS[0]) & (rest & _SEVEN_BYTES == _LINE_WORDS[1] & _SEVEN_BYTES)
            if not (rest[marker] == _LINE_WORDS[1]).all():
                return None  # a marker with more on its line
            at = found[marker]
    if at.size and not ((block[at - 1] == 0x0A) | (at == 0)).all():
        return None  # a marker after other text on its line
    if at.size > 1 and np.diff(at).min() <= len(_DELIMITER_BYTES) + 1:
        return None  # two delimiter lines sharing a line end: a marker line's end is the next one's start
    starts = np.empty(at.size + 1, dtype=np.int64)
    ends = np.empty(at.size + 1, dtype=np.int64)
    starts[0], ends[-1] = 0, size
    starts[1:] = at + len(_DELIMITER_BYTES) + 1
    ends[:-1] = np.maximum(at - 1, 0)
    return starts, ends


_MARKER_LINE_BYTES = _DELIMITER_BYTES + b"\n"
_LINE_WORDS = (int.from_bytes(_MARKER_LINE_BYTES[:8], "little"), int.from_bytes(_MARKER_LINE_BYTES[6:], "little"))
_SEVEN_BYTES = (1 << 56) - 1  # the marker's own bytes of the second word, without the line end
_TAKE_FROM_BYTES = 64 << 20  # from this file size, the stories are gathered by Arrow's take (see _story_arrays)
_STRIP_PASSES = 4  # vectorised passes of strip("\n") (blank lines at a delimiter); the rest of a longer run in Python


def _gathered_stories(data: bytes, starts, ends, keep_empty: bool, gather):
    r"""The pieces ``data[starts[i]:ends[i]]`` stripped of ``\n`` as one ``pa.string()`` array.

    ``None`` if none is kept.
    """
    import numpy as np

    block = np.frombuffer(data, dtype=np.uint8)
    starts, ends = starts.copy(), ends.copy()
    for moving, step in ((starts, 1), (ends, -1)):
        edge = 0 if step == 1 else -1
        todo = np.arange(starts.size)
        for _ in range(_STRIP_PASSES):
            todo = todo[(starts[todo] < ends[todo]) & (block[moving[todo] + edge] == 0x0A)]
            if not todo.size:
                break
            moving[todo] += step
        else:  # a longer run of blank lines: the rest of it found in Python, one piece at a time
            for i in todo.tolist():
                piece = data[starts[i] : ends[i]]
                if step == 1:
                    starts[i] += len(piece) - len(piece.lstrip(b"\n"))
                else:
                    ends[i] -= len(piece) - len(piece.rstrip(b"\n"))
    if not keep_empty:
        kept = starts < ends
        if not kept.all():
            starts, ends = starts[kept], ends[kept]
    if not starts.size:
        return None
    return gather(data, starts, ends)


def _taken(data: bytes, starts, ends):
    """``data[starts[i]:ends[i]]`` as one ``pa.string()`` array, copied into one buffer by Arrow's ``take`` (C++).

    The pieces, with the gaps between them, are the even entries of a string
    array over the block's own bytes (no copy) whose offsets run
    ``starts[0], ends[0], starts[1], ends[1], ...``.
    """
    import numpy as np
    import pyarrow as pa

    bounds = np.empty(2 * starts.size, dtype=np.int32)
    bounds[0::2], bounds[1::2] = starts, ends
    spans = pa.StringArray.from_buffers(bounds.size - 1, pa.py_buffer(bounds), pa.py_buffer(data))
    picks = np.arange(0, bounds.size - 1, 2, dtype=np.int32)
    return spans.take(pa.Array.from_buffers(pa.int32(), picks.size, [None, pa.py_buffer(picks)]))


def _joined(data: bytes, starts, ends):
    """The same array as :func:`_taken`, its buffer joined from memoryviews of the pieces: no ``pyarrow.compute``."""
    import numpy as np
    import pyarrow as pa

    view = memoryview(data)
    values = b"".join(map(view.__getitem__, map(slice, starts.tolist(), ends.tolist())))
    offsets = np.zeros(starts.size + 1, dtype=np.int32)
    np.cumsum(ends - starts, out=offsets[1:])
    return pa.StringArray.from_buffers(starts.size, pa.py_buffer(offsets), pa.py_buffer(values))


def read_story_batches(
    path: str | os.PathLike, block_size: int = DEFAULT_BLOCK_SIZE, progress=None, keep_empty: bool = False
) -> Iterator[list[str]]:
    """Yield the stories of one file, a block's worth at a time (lists, never empty).

    ``progress(n)`` is called with the number of bytes read after each block.
    ``keep_empty`` keeps empty stories (as ``""``) for the caller to count:
    those between two delimiter lines. Nothing before a file's first
    delimiter, or after its last, is not a story at all, and is never kept.
    """
    yield from _story_batches(_story_pieces(path, block_size, progress), keep_empty)


def _story_batches(blocks, keep_empty: bool):
    """The stories of one file's blocks of pieces (see ``_story_pieces``), a block at a time."""
    pending: list[str] = []  # pieces of the story that runs past the blocks read so far
    first = True  # the next story is the text before the file's first delimiter
    for pieces, final in blocks:
        pending.append(pieces[0])
        stories: list[str] = []
        if len(pieces) > 1:
            stories.append("".join(pending))
            stories.extend(pieces[1:-1])
            pending = [pieces[-1]]
        if final:
            stories.append("".join(pending))
        stories = [s.strip("\n") for s in stories]
        edges = {0} if first and stories else set()
        if final and stories:
            edges.add(len(stories) - 1)
        first = first and not stories
        batch = (
            stories
            if all(stories)
            else [story for i, story in enumerate(stories) if story or (keep_empty and i not in edges)]
        )
        if batch:
            yield batch


def _story_pieces(path, block_size: int, progress):
    """``(pieces between delimiter lines, final)`` of each block of the file, as text."""
    for handed, final, offset in _read_byte_blocks(path, block_size, progress):
        text = _decode(handed.pop(), path, offset)
        if "\r" in text:
            text = text.replace("\r\n", "\n")
        yield _split_on_delimiter_lines(text, final), final


def _split_on_delimiter_lines(text: str, final: bool) -> list[str]:
    r"""The text between delimiter lines of one block (which starts at a line start).

    The first piece continues the story of the previous block and the last one
    runs on into the next. A piece may keep ``\n`` next to a delimiter line:
    stories are stripped of them afterwards.
    """
    # Fast path, nearly every block: each marker sits on a line of its own
    # between two "\n", so one C-level split finds every delimiter.
    pieces = text.split(_DELIMITER_LINE)
    if "\r" not in text and text.count(DELIMITER) == len(pieces) - 1:
        return pieces
    # Otherwise check every place the marker occurs against the line rules.
    parts = text.split(DELIMITER)
    last = len(parts) - 1
    pieces = []
    current = [parts[0]]
    for i in range(1, len(parts)):
        before, part = parts[i - 1], parts[i]
        # A delimiter line: a line ends just before the marker (or the block
        # starts there: blocks start at line starts) and a line end, or the
        # end of the file, follows it.
        line_start = before.endswith(_LINE_ENDS) or (i == 1 and not before)
        line_end = part.startswith(_LINE_ENDS) or (final and i == last and not part)
        if line_start and line_end:
            pieces.append("".join(current))
            # The delimiter line's own line end: a "\n" goes with strip("\n")
            # later; a "\r" (alone or before "\n") would not.
            current = [part[1:] if part.startswith("\r") else part]
        else:
            current += (DELIMITER, part)
    pieces.append("".join(current))
    return pieces


def read_stories(path: str | os.PathLike, block_size: int = DEFAULT_BLOCK_SIZE) -> Iterator[str]:
    """Yield the stories of one file, one at a time."""
    for batch in read_story_batches(path, block_size):
        yield from batch


def _read_byte_blocks(path, block_size: int, progress=None, chunks=None) -> Iterator[tuple[list[bytes], bool, int]]:
    r"""Yield ``([data], is_last, file offset)``: the file block by block, each block ending after a ``\n``.

    (``\r\n`` is read as ``\n`` after decoding, see the module docstring.) A block with no
    ``\n`` at all is kept and the next one read, so a single line longer
    than ``block_size`` is held whole, as a line-based reader would. Only the
    newest block is searched for its last ``\n`` and the pieces are joined
    once: linear in a line's length (growing one buffer and searching all of
    it again per block was quadratic: a 1 GiB line took 10 minutes).
    """
    offset = 0  # file offset of the first pending byte
    pending: list[bytes] = []  # blocks (and the tail of the last one) not yet yielded
    with open(path, "rb") as file:
        while True:
            chunk = file.read(block_size)
            if progress is not None and chunk:
                progress(len(chunk))
            if chunks is not None and chunk:
                chunks(chunk)
            final = not chunk
            cut = len(chunk) if final else chunk.rfind(b"\n") + 1
            if cut == 0 and not final:
                pending.append(chunk)
                continue
            pending.append(chunk[:cut])
            data = b"".join(pending)
            pending = [chunk[cut:]]
            offset, start = offset + len(data), offset
            handed = [data]  # the consumer empties it: while this waits at yield, only the consumer holds the bytes
            del data
            yield handed, final, start
            if final:
                return


def _is_utf8(data: bytes) -> bool:
    """Whether ``data`` is valid UTF-8, by Arrow's check (C++: 4-5x faster than decoding text that is not ASCII).

    It accepts exactly what Python's strict decoder does (tests/corpus/test_builders.py); :func:`_decode` then names
    the first bad byte.
    """
    import numpy as np
    import pyarrow as pa

    try:
        pa.StringArray.from_buffers(
            1, pa.py_buffer(np.array([0, len(data)], dtype=np.int32)), pa.py_buffer(data)
        ).validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _decode(data: bytes, path, offset: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CorpusInputError(
            path,
            "invalid UTF-8",
            expected="UTF-8 text",
            got=f"byte {data[e.start]:#04x} at byte offset {offset + e.start}",
        ) from None
