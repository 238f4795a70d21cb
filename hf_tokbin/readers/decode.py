"""``hf-tokbin show``: decode what a trainer reads from a release, boundary tokens marked.

::

    shown = hf_tokbin.show("release/", split="train", doc=3)                  # one document
    shown = hf_tokbin.show("release/", window=1000, length=64, format="llmc")  # a training window
    shown = hf_tokbin.show("release/", doc=3, tokenizer="tok/")                # built from a local tokenizer.json
    print(shown.render())

Documents are numbered from 0 in the split's llm.c order, the order a trainer
reads them and the preview shows them (:class:`DocumentNumbers`): document N is
the same document in either format, also under ``--shuffle-seed``, where the
Megatron pairs hold them in another order. A mixture's train split is read in its
llm.c files alone: its schedule (:mod:`hf_tokbin.formats.mixture`) may repeat a
document or leave it out, so a Megatron document has no one number there.

A document is one Megatron sequence (``[bos] + ids + [eod]``) or one llm.c
document with its separator (``[sep] + [bos] + ids``, or ``[bos] + ids + [sep]``
with ``--llmc-sep after``), as :mod:`hf_tokbin.readers.views` finds them. A
window is ``length`` ids of the split's token stream from ``window`` (the
files one after the other). Each run of text ids is decoded with the
release's own tokenizer (the one ``run_config.json`` pins: ``byte``, its Hub
repo at the recorded commit, or a local ``tokenizer.json`` given with
``tokenizer=`` whose SHA-256 must be the recorded one); each boundary token
is shown as ``⟦ROLE ID 'TOKEN'⟧``, and where a document starts inside the
output a line ``── document N ──`` says so. Control characters of the text
(ESC, BEL, ...) are shown as ``cat -v`` shows them (``^[``, ``^G``), so
nothing read from a release reaches a terminal as a command;
``render(raw=True)`` (``hf-tokbin show --raw``) gives the text as it is.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from .._io import is_control_character
from ..errors import FormatError
from ..formats.llmc_order import llmc_order
from ..formats.release import RECEIPTS_DIR, RUN_CONFIG_NAME, Receipt
from ..formats.run_config import RunConfig
from .views import LlmcSplit, MegatronSplit, TokenStream


@dataclass(frozen=True)
class Piece:
    """A run of ids of one document: text ids (``role`` None) or
    one boundary token (``"separator"``, ``"EOD"``, ``"BOS"``).
    """

    document: int  # the document's index in the split
    starts_document: bool  # this piece is the first of its document
    role: str | None
    ids: tuple[int, ...]
    text: str  # decoded text, or the boundary token's own text ("" if it has none)


@dataclass(frozen=True)
class Shown:
    """What :func:`show` read: tokens ``start:stop`` of a split's stream in one format, in pieces."""

    release: str
    split: str
    format: str
    start: int
    stop: int
    n_tokens: int
    pieces: tuple[Piece, ...]

    def documents(self) -> dict[int, str]:
        """Each document the window touches: its decoded text (boundary tokens left out)."""
        texts: dict[int, str] = {}
        for piece in self.pieces:
            texts[piece.document] = texts.get(piece.document, "") + (piece.text if piece.role is None else "")
        return texts

    def render(self, raw: bool = False) -> str:
        """The header line, then the pieces; text control characters escaped as ``cat -v`` shows them unless ``raw``.
        """
        touched = sorted({p.document for p in self.pieces})
        span = (
            f"document {touched[0]}"
            if len(touched) == 1
            else f"documents {touched[0]} to {touched[-1]}"
            if touched
            else "no document"
        )
        lines = [
            f"{self.release}: {self.split}, {self.format} tokens {self.start:,}..{self.stop:,} "
            f"({self.stop - self.start:,} of {self.n_tokens:,}), {span}"
        ]
        out = []
        for piece in self.pieces:
            if piece.starts_document:
                out.append(f"\n── document {piece.document} ──\n")
            elif not out:
                out.append(f"── document {piece.document} (continued) ──\n")
            out.append((piece.text if raw else escaped(piece.text)) if piece.role is None else _marker(piece))
        return lines[0] + "\n" + "".join(out).lstrip("\n")


def escaped(text: str) -> str:
    """``text`` with its control characters as ``cat -v`` shows them: ``^[`` for ESC, ``^G`` for BEL, ``^?`` for DEL,
    ``M-^[`` for U+009B; newline and tab kept; any other (a bidi control, a line separator) as ``<U+202E>``."""
    return "".join(_escaped_character(c) if c not in "\n\t" and is_control_character(c) else c for c in text)


def _escaped_character(char: str) -> str:
    code = ord(char)
    if code < 0x20:
        return f"^{chr(code + 0x40)}"
    if code == 0x7F:
        return "^?"
    if 0x80 <= code < 0xA0:
        return f"M-^{chr(code - 0x80 + 0x40)}"
    return f"<U+{code:04X}>"


def _marker(piece: Piece) -> str:
    token = f" {piece.text!r}" if piece.text else ""
    return f"⟦{piece.role} {piece.ids[0]}{token}⟧"


def show(
    release,
    split: str = "train",
    *,
    doc: int | None = None,
    window: int | None = None,
    length: int | None = None,
    format: str | None = None,
    decode: Callable[[tuple[int, ...]], str],
) -> Shown:
    """Decode document ``doc``, or ``length`` tokens from
    ``window``, of a split of the release; see the module docstring.

    ``decode``: ids to text, the release's tokenizer's
    (:func:`hf_tokbin.tokenizer.decode.release_decoder`; ``hf_tokbin.show`` finds it).
    """
    root = Path(release)
    config = RunConfig.read(root / RUN_CONFIG_NAME)
    format = _shown_format(root, config, split, format)
    if (doc is None) == (window is None) or (window is not None and length is None):
        raise FormatError(
            None, "show needs --doc N, or --window OFFSET with --len T",
            got=f"doc={doc}, window={window}, len={length}",
        )
    stream = MegatronSplit.open(root, split).stream if format == "megatron" else LlmcSplit.open(root, split)
    try:
        starts, ends = document_bounds(stream)
    except FormatError:  # llm.c files without a separator: no document boundaries, windows only
        if doc is not None:
            raise
        starts = ends = np.zeros(0, dtype=np.int64)
    numbers = (
        DocumentNumbers.of(root, config, split)
        if format == "megatron" and config.llmc_interleave_seed is not None
        else None
    )
    if doc is not None:
        if not 0 <= doc < starts.size:
            raise FormatError(root, f"no document {doc} in {split}", expected=f"0..{starts.size - 1}", got=doc)
        index = numbers.megatron_index(doc) if numbers is not None else doc
        start, stop = int(starts[index]), int(ends[index])
    else:
        if window < 0 or length < 1 or window + length > stream.n_tokens:
            raise FormatError(
                root, f"window outside the {split} tokens",
                expected=f"0 <= OFFSET, 1 <= LEN, OFFSET + LEN <= {stream.n_tokens:,}", got=f"{window}+{length}",
            )
        start, stop = window, window + length
    roles = boundary_roles(config, format, starts, ends, np.arange(start, stop))
    pieces = _pieces(stream.read(start, stop), start, starts, roles, decode)
    if numbers is not None:  # the Megatron order's documents by their numbers in the split's one numbering
        pieces = [dataclasses.replace(p, document=numbers.number(p.document)) for p in pieces]
    return Shown(os.fspath(release), split, format, start, stop, stream.n_tokens, tuple(pieces))


def _shown_format(root: Path, config: RunConfig, split: str, format: str | None) -> str:
    """The format ``show`` reads: the one asked, else llm.c where it numbers the documents; one line for a format
    the release lacks, or the Megatron pairs of a mixture's train split."""
    mixed = config.options.mix is not None and split == "train"
    # a mixture's train split: its llm.c files, where there are any (the refusal below says so where there are not)
    llmc_first = "llmc" in config.formats and (mixed or "megatron" not in config.formats)
    format = format or ("llmc" if llmc_first else "megatron")
    if format not in config.formats:
        raise FormatError(
            root, f"this release holds no {format} files", expected=" or ".join(config.formats), got=format
        )
    if mixed and format == "megatron":
        raise FormatError(
            root,
            "a mixture's train documents are numbered in its llm.c train files (its schedule may repeat a document "
            "or leave it out); the Megatron pairs hold each once, in another order",
            hint="--format llmc" if "llmc" in config.formats else "--split validation",
        )
    return format


@dataclass(frozen=True)
class DocumentNumbers:
    """A split's one document numbering, the llm.c order (the
    training order, the preview's) against the Megatron order.

    The two differ under ``--shuffle-seed``: the llm.c files interleave blocks of every part
    (:mod:`hf_tokbin.formats.llmc_order`), the Megatron pairs keep each part's documents together, in part order.
    Block k of the order is documents ``first[k]..`` of part ``part[k]``: number ``numbered[k]`` on, Megatron index
    ``before[part[k]] + first[k]`` on. Blocks only (at most 256 a part), never an array per document.
    """

    part: np.ndarray
    first: np.ndarray
    count: np.ndarray
    numbered: np.ndarray  # the number of each block's first document
    before: np.ndarray  # Megatron documents before each part

    @classmethod
    def of(cls, root: Path, config: RunConfig, split: str) -> "DocumentNumbers":
        receipts = [Receipt.read(path) for path in sorted((root / RECEIPTS_DIR).glob("part-*.json"))]
        documents = [r.splits[split].documents for r in receipts if split in r.splits and r.splits[split].documents]
        blocks = llmc_order(config.llmc_interleave_seed, split, documents)
        numbered = np.concatenate(([0], np.cumsum(blocks.count)[:-1])).astype(np.int64)
        before = np.concatenate(([0], np.cumsum(documents)[:-1])).astype(np.int64)
        return cls(blocks.part, blocks.first, blocks.count, numbered, before)

    def megatron_index(self, number: int) -> int:
        k = int(np.searchsorted(self.numbered, number, side="right")) - 1
        return int(self.before[self.part[k]] + self.first[k] + number - self.numbered[k])

    def number(self, megatron_index: int) -> int:
        part = int(np.searchsorted(self.before, megatron_index, side="right")) - 1
        inside = megatron_index - int(self.before[part])
        k = int(np.flatnonzero((self.part == part) & (self.first <= inside) & (inside < self.first + self.count))[0])
        return int(self.numbered[k] + inside - self.first[k])


def boundary_roles(
    config: RunConfig, format: str, starts: np.ndarray, ends: np.ndarray, positions: np.ndarray
) -> np.ndarray:
    """Per stream position, the boundary token it holds by the layout (``"EOD"``, ``"separator"``, ``"BOS"``), or None.

    By position, not by id: a document's text may hold the BOS or separator id
    as ordinary text, and that is text.
    """
    roles = np.full(positions.size, None, dtype=object)
    if not starts.size:
        return roles
    document = np.searchsorted(starts, positions, side="right") - 1
    offset, from_end = positions - starts[document], ends[document] - 1 - positions
    bos, sep = config.bos_id is not None, config.llmc_sep_id is not None
    if format == "megatron":
        marks = [("BOS", offset == 0, bos), ("EOD", from_end == 0, config.doc_sep_id is not None)]
    elif config.llmc_separator == "after":
        marks = [("BOS", offset == 0, bos), ("separator", from_end == 0, sep)]
    else:
        marks = [("separator", offset == 0, sep), ("BOS", offset == int(sep), bos)]
    for role, where, present in marks:
        if present:
            roles[where & (roles == None)] = role  # noqa: E711 (elementwise)
    return roles


def document_bounds(stream: TokenStream) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of every document in the stream, as stream
    positions: a document ends at the next start or its file's end.
    """
    starts, ends = [], []
    for part in range(len(stream.parts)):
        local = stream.document_starts(part)
        offset = int(stream.offsets[part])
        starts.append(local + offset)
        ends.append(np.append(local[1:], stream.parts[part].size) + offset)
    if not starts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(starts).astype(np.int64), np.concatenate(ends).astype(np.int64)


def _pieces(ids: np.ndarray, start: int, starts: np.ndarray, roles: np.ndarray, decode) -> list[Piece]:
    """The ids cut at document starts and boundary tokens; each text run decoded as one."""
    ids = np.asarray(ids, dtype=np.int64)
    positions = start + np.arange(ids.size)
    document = np.searchsorted(starts, positions, side="right") - 1
    boundary = roles != None  # noqa: E711 (elementwise)
    cut = np.flatnonzero((np.diff(document) != 0) | boundary[1:] | boundary[:-1]) + 1
    pieces = []
    for run in np.split(np.arange(ids.size), cut):
        if not run.size:
            continue
        first = int(run[0])
        run_ids = tuple(int(i) for i in ids[run])
        starts_document = bool(starts.size) and document[first] >= 0 and int(starts[document[first]]) == start + first
        pieces.append(Piece(int(document[first]), starts_document, roles[first], run_ids, decode(run_ids)))
    return pieces
