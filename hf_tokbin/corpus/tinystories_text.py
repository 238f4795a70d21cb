r"""TinyStories text files: their stories, read in large blocks (no ``datasets``, no per-line Python).

The format (seed 002, the TinyStories V2 files)::

    ...end of a story.\n
    <|endoftext|>\n          <- a delimiter line: exactly these 13 characters, then a line end
    \n                       <- blank lines sometimes follow a delimiter
    Once upon a time...\n

Rules, exactly seed 002's ``stories()``:

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
``\n``. Applied literally to a ``\r\n`` file, the seed's code would keep
``\r\n`` inside stories and a stray ``\r`` at the end of each (``strip("\n")``
cannot remove it). A lone ``\r`` stays as it is, as in the seed.

Reading is streamed in binary blocks (``block_size``) cut after their last
``\n``, so every block starts at a line start, a UTF-8 character never
straddles two blocks, and memory does not grow with the file. A block is
decoded once (invalid UTF-8 stops with the file and byte offset) and split
with ``str.split`` (C speed) on ``"\n<|endoftext|>\n"``; only a block where
that does not account for every ``<|endoftext|>`` (or that holds ``\r``) has
each occurrence checked against the line rules in Python, once per marker,
never once per line. This reads about 1.2-1.6x faster than the seed's line
loop (scripts/bench_corpus.py).
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
_DELIMITER_LINE_BYTES = _DELIMITER_LINE.encode("ascii")
_LINE_ENDS = ("\n", "\r")


def story_tables(files, split: str, block_size: int = DEFAULT_BLOCK_SIZE, progress: bool = False, keep_empty: bool = False, chunks=None):
    """Yield ``((file_index, batch_index), table)`` for the files of one split: a ``text`` table per block's stories.

    ``progress``: a tqdm bar of bytes read (hidden when stderr is not a terminal).
    ``chunks(data)`` is called with every chunk of bytes read, in order (to hash the bytes the stories came from).
    """
    import pyarrow as pa

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=sum(os.path.getsize(path) for path in files), unit="B", unit_scale=True, desc=f"read {split}", disable=None)
    try:
        for file_index, path in enumerate(files):
            # The stories as UTF-8 bytes, cut from the blocks as read: no story is decoded and encoded again.
            blocks = _story_pieces(path, block_size, None if bar is None else bar.update, as_bytes=True, chunks=chunks)
            for batch_index, stories in enumerate(_story_batches(blocks, b"\n", keep_empty)):
                yield (file_index, batch_index), pa.table({"text": utf8_string_array(stories)})
    finally:
        if bar is not None:
            bar.close()


def read_story_batches(path: str | os.PathLike, block_size: int = DEFAULT_BLOCK_SIZE, progress=None, keep_empty: bool = False) -> Iterator[list[str]]:
    """Yield the stories of one file, a block's worth at a time (lists, never empty).

    ``progress(n)`` is called with the number of bytes read after each block.
    ``keep_empty`` keeps empty stories (as ``""``) for the caller to count:
    those between two delimiter lines. Nothing before a file's first
    delimiter, or after its last, is not a story at all, and is never kept.
    """
    yield from _story_batches(_story_pieces(path, block_size, progress), "\n", keep_empty)


def _story_batches(blocks, newline, keep_empty: bool):
    """The stories of one file's blocks of pieces (``str``, or UTF-8 ``bytes`` with ``newline`` ``b"\\n"``), a block at a time."""
    pending: list = []  # pieces of the story that runs past the blocks read so far
    first = True  # the next story is the text before the file's first delimiter
    for pieces, final in blocks:
        pending.append(pieces[0])
        stories: list = []
        if len(pieces) > 1:
            stories.append(newline[:0].join(pending))
            stories.extend(pieces[1:-1])
            pending = [pieces[-1]]
        if final:
            stories.append(newline[:0].join(pending))
        stories = [s.strip(newline) for s in stories]
        edges = {0} if first and stories else set()
        if final and stories:
            edges.add(len(stories) - 1)
        first = first and not stories
        batch = stories if all(stories) else [story for i, story in enumerate(stories) if story or (keep_empty and i not in edges)]
        if batch:
            yield batch


def _story_pieces(path, block_size: int, progress, as_bytes: bool = False, chunks=None):
    """``(pieces between delimiter lines, final)`` of each block of the file: ``str``, or with ``as_bytes`` UTF-8 ``bytes``.

    As bytes, a block whose every marker sits on a line of its own between two
    ``\\n`` (nearly every block) is split as bytes, the same cuts as the text's
    (UTF-8 never holds an ASCII byte inside another character); it is still
    decoded once, so invalid UTF-8 stops the read as it does for text.
    """
    for handed, final, offset in _read_byte_blocks(path, block_size, progress, chunks):
        data = handed.pop()
        if as_bytes and b"\r" not in data:
            pieces = data.split(_DELIMITER_LINE_BYTES)
            if data.count(_DELIMITER_BYTES) == len(pieces) - 1:
                _decode(data, path, offset)
                yield pieces, final
                continue
        text = _decode(data, path, offset)
        del data
        if "\r" in text:
            text = text.replace("\r\n", "\n")
        pieces = _split_on_delimiter_lines(text, final)
        yield ([piece.encode("utf-8") for piece in pieces] if as_bytes else pieces), final


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


def _decode(data: bytes, path, offset: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CorpusInputError(path, "invalid UTF-8", expected="UTF-8 text", got=f"byte {data[e.start]:#04x} at byte offset {offset + e.start}") from None
