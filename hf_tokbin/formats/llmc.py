"""llm.c ``.bin`` token files and their ``_MANIFEST.json`` (the llm.c layout).

A token file is a flat stream of token ids that llm.c's loaders memory-map.
All integers are little-endian::

    offset  size               field
    0       1024               header: 256 x int32
    1024    n_tokens * w       token ids; w = 2 (uint16) for version 1, 4 (uint32) for version 2

    header[0]       magic 20240520
    header[1]       version: 1 (uint16 ids, vocab_size <= 65536) or 2 (uint32 ids)
    header[2]       n_tokens, the number of ids that follow (at most 2**31 - 1)
    header[3]       vocab_size of the tokenizer (0 = unknown, as llm.c writes it)
    header[4..255]  0

The file size is exactly ``1024 + n_tokens * w``. A reader rejects a wrong
magic, an unknown version, a non-zero reserved int, a size that disagrees with
n_tokens, and an id >= vocab_size when header[3] is non-zero.

Files hold whole documents in corpus order; when the tokenizer defines a
document separator, every document is preceded by it (as llm.c does; the
writer's ``separator="before"``), or followed by it (``"after"``: the TinyStories rules'
``<|bos|> story <|eos|>`` stream). A BOS, when given, begins every document::

    before: [sep] + [bos] + ids        after: [bos] + ids + [sep]

The writer starts a new file (``train-00001.bin``...) before a document that would
push the current one past ``max_tokens`` (default 100,000,000); a single
document longer than that is an error, never a split.

Worked example (ids [1, 2, 3], vocab 256): 1,030 bytes,
``88 d8 34 01 | 01 00 00 00 | 03 00 00 00 | 00 01 00 00 | 1008 x 00 | 01 00 02 00 03 00``.

Upstream llm.c's Llama 3 layout (``--llmc-layout llama3``), what llm.c's
``dev/data/data_common.py`` ``write_datafile(..., model_desc="llama-3")``
writes and ``train_llama3.py`` ``_peek_data_shard`` reads, differs only in
its header: magic 20240801, version 7, uint32 ids whatever the vocabulary,
and header[3..255] all 0 (no vocab_size field; the manifest's stands in).
Worked example (ids [1, 2, 3]): 1,036 bytes,
``a1 d9 34 01 | 07 00 00 00 | 03 00 00 00 | 1012 x 00 | 01 00 00 00 02 00 00 00 03 00 00 00``.

The three (magic, version) pairs are the one table :data:`LAYOUTS`; every
reader and writer here goes through it.

A build writes the files in two steps, so that no machine reads every token
(:class:`SegmentWriter`, :func:`pack_file`). Each part (input shard) writes its
documents once, exactly as they stand in the token files (separators and BOS
in place, the layout's dtype, no header), as a *segment*::

    <part>.tokens   the stream of ids, document after document
    <part>.ends     int64 little-endian: ends[i] = the stream position (in ids) after document i

A token file is then its header followed by consecutive byte ranges of the
segments, cut between documents; :func:`plan_files` computes the cuts from the
segments' counts alone, reading ``.ends`` only where a file's end falls inside
a segment. The files are the bytes one sequential writer (:class:`LlmcWriter`)
would write.

The manifest ``tokens/<tokenizer_id>/<dataset>/_MANIFEST.json`` lists every file
with its split, n_tokens, n_docs and SHA-256 (schema
``hf_tokbin/schemas/tokens-manifest.schema.json``).
"""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from .._io import (
    atomic_open,
    canonical_json,
    commit_file,
    create_file,
    naming_the_file,
    read_json,
    sha256_file,
    tmp_path_for,
    write_text_atomic,
)
from ..errors import FormatError
from .ids import check_ids_below, checked_documents, checked_ids, with_boundaries
from .records import is_sha256, require
from .rules import UINT16_VOCAB_LIMIT

MAGIC = 20240520  # the GPT-2 family (the llm.c layout)
LLAMA3_MAGIC = 20240801  # upstream llm.c's Llama 3 files
HEADER_INTS = 256
HEADER_BYTES = HEADER_INTS * 4
MAX_TOKENS_PER_FILE = 2**31 - 1
DEFAULT_MAX_TOKENS = 100_000_000
SPLITS = ("train", "val")
SEPARATOR_POSITIONS = ("before", "after")
MANIFEST_NAME = "_MANIFEST.json"
_CHECK_CHUNK = 1 << 24  # ids checked per step, so a check never loads a whole file


@dataclass(frozen=True)
class Layout:
    """One header layout: the magic and version in ``header[0..1]`` and the id width that follows."""

    family: str  # the ``--llmc-layout`` name: "gpt2" (magic 20240520) or "llama3" (magic 20240801)
    magic: int
    version: int
    dtype: np.dtype
    vocab_in_header: bool  # header[3] holds vocab_size (the llm.c layout); upstream's Llama 3 files keep it 0
    max_vocab: int  # the largest vocabulary whose ids fit ``dtype``


# The one table of llm.c layouts. Every reader and writer goes through it.
LAYOUTS = (
    Layout("gpt2", MAGIC, 1, np.dtype("<u2"), True, UINT16_VOCAB_LIMIT),
    Layout("gpt2", MAGIC, 2, np.dtype("<u4"), True, 2**32),
    Layout("llama3", LLAMA3_MAGIC, 7, np.dtype("<u4"), False, 2**32),
)
FAMILIES = ("gpt2", "llama3")
VERSION_UINT16, VERSION_UINT32 = 1, 2
VERSIONS = {layout.version: layout.dtype for layout in LAYOUTS if layout.magic == MAGIC}
MAGICS = tuple(sorted({layout.magic for layout in LAYOUTS}))


def layout_for(vocab_size: int, family: str = "gpt2") -> Layout:
    """The layout a writer of ``family`` uses for ``vocab_size``: the narrowest id width that holds every id."""
    if family not in FAMILIES:
        raise FormatError(None, "llm.c layout must be gpt2 or llama3", got=family)
    if not isinstance(vocab_size, int) or vocab_size <= 0:
        raise FormatError(None, "vocab_size must be positive", got=vocab_size)
    if vocab_size > 2**32:
        raise FormatError(None, "vocab_size too large for uint32 ids", expected="<= 2**32", got=vocab_size)
    return next(layout for layout in LAYOUTS if layout.family == family and vocab_size <= layout.max_vocab)


def layout_of(magic: int, version: int) -> Layout | None:
    return next((layout for layout in LAYOUTS if (layout.magic, layout.version) == (magic, version)), None)


def version_for_vocab(vocab_size: int) -> int:
    """Version 1 (uint16) when every id fits 16 bits, version 2 (uint32) above (magic 20240520)."""
    return layout_for(vocab_size).version


def document_boundaries(
    doc_sep_id: int | None, bos_id: int | None, separator: str
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The tokens before and after each document's ids: ``([sep, bos],
    [])`` for "before" (the llm.c layout), ``([bos], [sep])`` for "after".
    """
    sep = () if doc_sep_id is None else (doc_sep_id,)
    bos = () if bos_id is None else (bos_id,)
    return (sep + bos, ()) if separator == "before" else (bos, sep)


def file_name(split: str, index: int) -> str:
    return f"{split}-{index:05d}.bin"


def split_glob(folder: str | os.PathLike, split: str) -> str:
    """The glob of a split's files in ``folder`` (:func:`file_name`'s), the folder's own glob characters escaped: a
    folder named ``a[1]`` is matched as itself, never as ``a1``. Quote it (:func:`shlex.quote`) for a shell."""
    import glob

    return os.path.join(glob.escape(os.fspath(folder)), f"{split}-*.bin")


def encode_header(n_tokens: int, vocab_size: int, layout: Layout | int) -> bytes:
    """The 1,024-byte header; ``layout`` may be a version number of the GPT-2 family."""
    if isinstance(layout, int):
        layout = layout_of(MAGIC, layout)
    header = np.zeros(HEADER_INTS, dtype="<i4")
    header[0] = layout.magic
    header[1] = layout.version
    header[2] = n_tokens
    if layout.vocab_in_header:
        header[3] = vocab_size if vocab_size <= np.iinfo(np.int32).max else 0
    return header.tobytes()


@dataclass(frozen=True)
class LlmcHeader:
    """The parsed, validated header of one token file."""

    version: int
    n_tokens: int
    vocab_size: int  # 0 = unknown (upstream's Llama 3 files never say)
    magic: int = MAGIC

    @property
    def layout(self) -> Layout:
        return layout_of(self.magic, self.version)

    @property
    def dtype(self) -> np.dtype:
        return self.layout.dtype

    @property
    def file_size(self) -> int:
        return HEADER_BYTES + self.n_tokens * self.dtype.itemsize


def read_header(path: str | os.PathLike) -> LlmcHeader:
    """Read and check the header of ``path`` (any layout of :data:`LAYOUTS`) and the file size it implies."""
    path = Path(path)
    size = path.stat().st_size
    if size < HEADER_BYTES:
        raise FormatError(path, "truncated header", expected=f"at least {HEADER_BYTES} bytes", got=f"{size} bytes")
    with open(path, "rb") as file:
        header = np.frombuffer(file.read(HEADER_BYTES), dtype="<i4")
    magic, version = int(header[0]), int(header[1])
    if magic not in MAGICS:
        raise FormatError(path, "wrong magic in header[0]", expected=" or ".join(map(str, MAGICS)), got=magic)
    layout = layout_of(magic, version)
    if layout is None:
        known = [str(x.version) for x in LAYOUTS if x.magic == magic]
        raise FormatError(
            path, "unknown version in header[1]", expected=f"{' or '.join(known)} for magic {magic}", got=version
        )
    n_tokens, vocab_size = int(header[2]), int(header[3])
    if n_tokens < 0:
        raise FormatError(path, "negative n_tokens in header[2]", got=n_tokens)
    reserved_from = 4 if layout.vocab_in_header else 3
    if layout.vocab_in_header:
        if vocab_size < 0:
            raise FormatError(path, "negative vocab_size in header[3]", got=vocab_size)
        if vocab_size > layout.max_vocab:
            raise FormatError(
                path,
                f"version {version} ({layout.dtype.name}) cannot hold vocab_size in header[3]",
                expected=f"<= {layout.max_vocab}",
                got=vocab_size,
            )
    else:
        vocab_size = 0
    nonzero = np.flatnonzero(header[reserved_from:])
    if nonzero.size:
        i = int(nonzero[0]) + reserved_from
        raise FormatError(path, f"reserved header[{i}] must be 0", expected=0, got=int(header[i]))
    parsed = LlmcHeader(version, n_tokens, vocab_size, magic)
    if size != parsed.file_size:
        rule = "truncated file" if size < parsed.file_size else "trailing bytes after the tokens"
        raise FormatError(
            path,
            f"{rule}: size must be 1024 + n_tokens * {parsed.dtype.itemsize}",
            expected=f"{parsed.file_size} bytes",
            got=f"{size} bytes",
        )
    return parsed


def open_tokens(path: str | os.PathLike, check_ids: bool = True, vocab_size: int | None = None) -> np.memmap:
    """A zero-copy, read-only view of the ids of ``path``, after every check a reader makes.

    Ids are checked against header[3] when it is set, else against ``vocab_size`` when given.
    """
    header = read_header(path)
    if header.n_tokens == 0:
        return np.zeros(0, dtype=header.dtype)
    tokens = np.memmap(path, dtype=header.dtype, mode="r", offset=HEADER_BYTES, shape=(header.n_tokens,))
    limit = min(v for v in (header.vocab_size, vocab_size, 2**32) if v)
    if check_ids and limit < 2**32:
        check_ids_below(path, tokens, limit)
    return tokens


def write_tokens(
    path: str | os.PathLike, ids: Sequence[int] | np.ndarray, vocab_size: int, family: str = "gpt2"
) -> None:
    """Write one token file holding ``ids`` exactly (no separators added), atomically."""
    layout = layout_for(vocab_size, family)
    array = _as_ids(ids, layout.dtype, vocab_size, path)
    if array.size > MAX_TOKENS_PER_FILE:
        raise FormatError(path, "too many tokens for one file", expected=f"<= {MAX_TOKENS_PER_FILE}", got=array.size)
    with atomic_open(path) as file:
        file.write(encode_header(array.size, vocab_size, layout))
        file.write(array.tobytes())


def _as_ids(ids, dtype: np.dtype, vocab_size: int, path) -> np.ndarray:
    return checked_ids(ids, vocab_size, path).astype(dtype, copy=False)


@dataclass(frozen=True)
class LlmcFileEntry:
    """One token file as the manifest lists it."""

    name: str
    split: str
    n_tokens: int
    n_docs: int
    sha256: str


class LlmcWriter:
    """Streams the whole documents of one split into ``<split>-00000.bin``, ``-00001.bin``...

    Memory stays flat: ids go to disk as they come; the header is patched in
    at the end of each file, which is then fsynced, renamed and hashed on a
    worker thread while the next file is written (:meth:`close` waits for the
    digests), so hashing costs little beyond the last file's.
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        split: str,
        vocab_size: int,
        doc_sep_id: int | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        family: str = "gpt2",
        bos_id: int | None = None,
        separator: str = "before",
    ):
        if split not in SPLITS:
            raise FormatError(directory, "llm.c split must be train or val", got=split)
        if not 0 < max_tokens <= MAX_TOKENS_PER_FILE:
            raise FormatError(
                directory, "max_tokens per file out of range", expected=f"1..{MAX_TOKENS_PER_FILE}", got=max_tokens
            )
        for name, value in (("doc_sep_id", doc_sep_id), ("bos_id", bos_id)):
            if value is not None and not 0 <= value < vocab_size:
                raise FormatError(
                    directory, f"{name} must be a valid id", expected=f"0 <= id < {vocab_size}", got=value
                )
        if separator not in SEPARATOR_POSITIONS:
            raise FormatError(directory, "separator must be before or after each document", got=separator)
        self.directory = Path(directory)
        self.split = split
        self.vocab_size = vocab_size
        self.layout = layout_for(vocab_size, family)
        self.version, self.dtype = self.layout.version, self.layout.dtype
        self.doc_sep_id = doc_sep_id
        self.bos_id = bos_id
        self.separator = separator
        self._before, self._after = document_boundaries(doc_sep_id, bos_id, separator)
        self.max_tokens = max_tokens
        self.files: list[LlmcFileEntry] = []
        # Finished files still being hashed: (name, n_tokens, n_docs, digest). A
        # worker thread hashes file k while file k+1 is written; close() collects.
        self._hashing: list[tuple[str, int, int, Future]] = []
        self._hasher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hf_tokbin-llmc-sha256")
        self._file = None
        self._n_tokens = 0
        self._n_docs = 0

    def add_document(self, ids: Sequence[int] | np.ndarray) -> None:
        ids = np.asarray(ids)
        self.add_documents(ids, np.array([ids.size], dtype=np.int64))

    def add_documents(self, flat_ids: np.ndarray, lengths: np.ndarray) -> None:
        """Append documents given as one flat id array and the length of each document."""
        with naming_the_file(self.directory / file_name(self.split, self._file_index())):  # a full disk names the file
            self._add_documents(flat_ids, lengths)

    def _add_documents(self, flat_ids: np.ndarray, lengths: np.ndarray) -> None:
        flat_ids, lengths = checked_documents(
            flat_ids, lengths, self.vocab_size, self.directory / file_name(self.split, self._file_index())
        )
        flat_ids = flat_ids.astype(self.dtype, copy=False)
        sizes = lengths + len(self._before) + len(self._after)
        if sizes.size and int(sizes.max()) > self.max_tokens:
            i = int(np.argmax(sizes > self.max_tokens))
            raise FormatError(
                self.directory,
                f"document {self._n_docs + i} of split {self.split} is longer than one file may hold",
                expected=f"<= {self.max_tokens} tokens",
                got=int(sizes[i]),
                hint="files hold whole documents; raise max_tokens or split the document upstream",
            )
        doc_starts = np.concatenate(([0], np.cumsum(lengths)))
        first = 0
        while first < lengths.size:
            if self._file is None:
                self._open_next()
            # How many of the remaining documents fit in the current file.
            room = self.max_tokens - self._n_tokens
            fit = int(np.searchsorted(np.cumsum(sizes[first:]), room, side="right"))
            if fit == 0:
                self._close_current()
                continue
            last = first + fit
            ids = with_boundaries(
                flat_ids[doc_starts[first] : doc_starts[last]], lengths[first:last], self._before, self._after
            )
            self._file.write(np.ascontiguousarray(ids))  # the buffer itself, no bytes copy
            self._n_tokens += int(sizes[first:last].sum())
            self._n_docs += fit
            first = last

    def _open_next(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / file_name(self.split, self._file_index())
        self._file = create_file(tmp_path_for(path))
        self._file.write(bytes(HEADER_BYTES))
        self._n_tokens = 0
        self._n_docs = 0

    def _close_current(self) -> None:
        name = file_name(self.split, self._file_index())
        final = self.directory / name
        tmp = tmp_path_for(final)
        file = self._file
        file.seek(0)
        file.write(self._header())
        file.flush()
        os.fsync(file.fileno())
        file.close()
        self._file = None
        commit_file(tmp, final)
        self._hashing.append((name, self._n_tokens, self._n_docs, self._hasher.submit(sha256_file, final)))

    def _file_index(self) -> int:
        """The number of the file being (or next to be) written."""
        return len(self.files) + len(self._hashing)

    def _header(self) -> bytes:
        """The 1,024-byte header of the file being finished."""
        return encode_header(self._n_tokens, self.vocab_size, self.layout)

    def close(self) -> list[LlmcFileEntry]:
        """Finish the current file and return every file written, in order."""
        with naming_the_file(self.directory / file_name(self.split, self._file_index())):
            return self._close()

    def _close(self) -> list[LlmcFileEntry]:
        if self._file is not None:
            self._close_current()
        for name, n_tokens, n_docs, digest in self._hashing:
            self.files.append(LlmcFileEntry(name, self.split, n_tokens, n_docs, digest.result()))
        self._hashing.clear()
        self._hasher.shutdown()
        return list(self.files)

    def abort(self) -> None:
        """Drop the unfinished file (its temporary name), leaving finished files alone."""
        if self._file is not None:
            self._file.close()
            self._file = None
            tmp_path_for(self.directory / file_name(self.split, self._file_index())).unlink(missing_ok=True)
        self._hasher.shutdown(cancel_futures=True)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()


# ---------------------------------------------------------------- manifest


@dataclass(frozen=True)
class TokensManifest:
    """``tokens/<tokenizer_id>/<dataset>/_MANIFEST.json`` (the llm.c layout), keys in its order."""

    tokenizer_id: str
    tokenizer_sha256: str
    vocab_size: int
    doc_sep_id: int | None
    dataset: str
    version: str
    corpus_manifest_sha256: str
    files: tuple[LlmcFileEntry, ...]

    def __post_init__(self):
        _check_manifest_fields(self, None)

    def to_json(self) -> str:
        obj = dataclasses.asdict(self)
        obj["files"] = [dataclasses.asdict(f) for f in self.files]
        return canonical_json(obj)

    def write(self, directory: str | os.PathLike) -> Path:
        path = Path(directory) / MANIFEST_NAME
        write_text_atomic(path, self.to_json())
        return path

    @classmethod
    def read(cls, path: str | os.PathLike) -> "TokensManifest":
        obj = read_json(path, FormatError)
        expected = [f.name for f in dataclasses.fields(cls)]
        if sorted(obj) != sorted(expected):
            raise FormatError(path, "manifest keys", expected=expected, got=list(obj))
        files = obj.get("files")
        if not isinstance(files, list):
            raise FormatError(path, "files must be a list", got=type(files).__name__)
        entries = []
        for i, f in enumerate(files):
            keys = [x.name for x in dataclasses.fields(LlmcFileEntry)]
            if not isinstance(f, dict) or sorted(f) != sorted(keys):
                raise FormatError(path, f"files[{i}] keys", expected=keys, got=list(f) if isinstance(f, dict) else f)
            entries.append(LlmcFileEntry(**f))
        try:
            return cls(**{**obj, "files": tuple(entries)})
        except FormatError as e:
            raise FormatError(path, e.rule, e.expected, e.got) from None


def _check_manifest_fields(m: TokensManifest, path) -> None:
    for name in ("tokenizer_id", "tokenizer_sha256", "dataset", "version", "corpus_manifest_sha256"):
        require(
            isinstance(getattr(m, name), str) and getattr(m, name),
            path,
            f"{name} must be a non-empty string",
            getattr(m, name),
        )
    for name in ("tokenizer_sha256", "corpus_manifest_sha256"):
        require(is_sha256(getattr(m, name)), path, f"{name} must be 64 lowercase hex digits", getattr(m, name))
    require(
        isinstance(m.vocab_size, int) and m.vocab_size > 0, path, "vocab_size must be a positive integer", m.vocab_size
    )
    require(
        m.doc_sep_id is None or (isinstance(m.doc_sep_id, int) and 0 <= m.doc_sep_id < m.vocab_size),
        path,
        "doc_sep_id must be null or an id < vocab_size",
        m.doc_sep_id,
    )
    seen = set()
    for f in m.files:
        require(f.split in SPLITS, path, "file split must be train or val", f.split)
        require(
            isinstance(f.name, str) and f.name.startswith(f.split + "-") and f.name.endswith(".bin"),
            path,
            "file name must be <split>-NNNNN.bin",
            f.name,
        )
        require(f.name not in seen, path, "file listed twice", f.name)
        seen.add(f.name)
        require(
            isinstance(f.n_tokens, int) and 0 <= f.n_tokens <= MAX_TOKENS_PER_FILE,
            path,
            "n_tokens out of range",
            f.n_tokens,
        )
        require(isinstance(f.n_docs, int) and 0 <= f.n_docs, path, "n_docs must be a non-negative integer", f.n_docs)
        require(is_sha256(f.sha256), path, "sha256 must be 64 lowercase hex digits", f.sha256)


def verify_token_file(
    path: str | os.PathLike,
    entry: LlmcFileEntry | None = None,
    vocab_size: int | None = None,
    doc_sep_id: int | None = None,
    separator: str | None = "before",
) -> LlmcHeader:
    """Check one token file completely; against its manifest entry when given.

    With ``doc_sep_id`` the file must start with the separator (``separator``
    "before") or end with it ("after"; None: either, for a folder whose layout
    is not recorded) and hold at least ``entry.n_docs`` of them.
    """
    path = Path(path)
    header = read_header(path)
    tokens = open_tokens(path, check_ids=True, vocab_size=vocab_size)
    if vocab_size is not None and header.vocab_size not in (0, vocab_size):
        raise FormatError(
            path, "header[3] vocab_size disagrees with the manifest", expected=vocab_size, got=header.vocab_size
        )
    if vocab_size is not None and header.layout != layout_for(vocab_size, header.layout.family):
        expected = layout_for(vocab_size, header.layout.family)
        raise FormatError(path, "version does not match vocab_size", expected=expected.version, got=header.version)
    if entry is not None:
        check_against_entry(path, tokens, entry, doc_sep_id, separator)
    return header


def check_against_entry(
    path, tokens: np.ndarray, entry: LlmcFileEntry, doc_sep_id: int | None = None, separator: str | None = "before"
) -> None:
    """Check a file's ids against its manifest entry: n_tokens, SHA-256 and,
    with ``doc_sep_id``, the separators (see :func:`verify_token_file`).
    """
    if tokens.size != entry.n_tokens:
        raise FormatError(path, "n_tokens disagrees with the manifest", expected=entry.n_tokens, got=int(tokens.size))
    digest = sha256_file(path)
    if digest != entry.sha256:
        raise FormatError(path, "sha256 disagrees with the manifest", expected=entry.sha256, got=digest)
    if doc_sep_id is not None:
        first, last = (int(tokens[0]), int(tokens[-1])) if tokens.size else (None, None)
        if separator is None:
            separator = "after" if first != doc_sep_id and last == doc_sep_id else "before"
        if entry.n_docs and separator == "before" and first != doc_sep_id:
            raise FormatError(path, "a file must start with the document separator", expected=doc_sep_id, got=first)
        if entry.n_docs and separator == "after" and last != doc_sep_id:
            raise FormatError(
                path,
                "a file must end with the document separator (it follows every document)",
                expected=doc_sep_id,
                got=last,
            )
        n_seps = count_id(tokens, doc_sep_id)
        # Text may itself encode to the separator id, so this is a lower bound.
        if n_seps < entry.n_docs:
            raise FormatError(
                path,
                f"every document must be {'preceded' if separator == 'before' else 'followed'} by the separator",
                expected=f">= {entry.n_docs} separators",
                got=n_seps,
            )


def count_id(tokens: np.ndarray, token_id: int) -> int:
    """How many times ``token_id`` occurs in ``tokens``, in chunks (memory stays flat)."""
    return sum(
        int(np.count_nonzero(tokens[s : s + _CHECK_CHUNK] == token_id)) for s in range(0, tokens.size, _CHECK_CHUNK)
    )
