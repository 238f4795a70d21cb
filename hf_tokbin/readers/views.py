"""Readers for training: a split of a release as numpy views, with no copy and no torch.

Two views, both over memory maps that every file's reader has checked first
(:func:`hf_tokbin.formats.llmc.open_tokens`, :class:`hf_tokbin.formats.megatron.MegatronPair`):

- :class:`LlmcSplit` -- a split's llm.c ``.bin`` files (the llm.c layout, or upstream's
  Llama 3 layout) as one token stream.
- :class:`MegatronSplit` -- a split's Megatron pairs (one per part file) as one
  sequence of documents: ``len``, ``split[i]`` (document i), ``split.stream``.
  It has ``__len__`` and ``__getitem__`` only, so it is a Grain source as it is:
  ``grain.MapDataset.source(MegatronSplit.open(root))``.

Windows and batches (:meth:`TokenStream.windows`, :meth:`TokenStream.batches`):

- A window holds ``seq_len + 1`` tokens; its inputs are ``window[:-1]`` and its
  targets ``window[1:]`` (the TinyStories rules train on 513-token windows: ``seq_len=512``).
- **Windows never cross from one file (or pair) into the next**, as in llm.c's
  DataLoader, which reads every batch from inside one shard
  (``llmc/dataloader.h``, ``dataloader_load_batch``). A window is then one slice
  of one memory map, never a copy, and never joins the last document of one
  file to the first of another (an order no trainer promises). Windows do
  cross document boundaries inside a file, as llm.c's do.
- ``aligned=True`` starts every window at a document start: for llm.c files, at
  a document start found from the separator (just before each document, or
  just after the previous one with ``--llmc-sep after``), as modded-nanogpt's
  BOS-aligned loader does (``train_gpt.py``, ``Shard.next_batch``); for Megatron
  pairs, at a sequence start read from the ``.idx``.
- :class:`RandomWindows` is map-style and seeded: window ``i`` starts at a
  position drawn by ``numpy.random.default_rng((seed, i))``, uniform over every
  start whose window fits inside one file. The same ``(seed, i)`` gives the
  same window in any order and any worker process. Its length is
  ``sum((n_tokens - 1) // seq_len)`` over files: the number of windows llm.c's
  loader reads from those files in one epoch (``shard_num_samples`` with B=1).
"""

from __future__ import annotations

import operator
import os
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from ..errors import FormatError
from ..formats import llmc, megatron
from ..formats.release import LLMC_SPLIT, RUN_CONFIG_NAME, SHARDS_DIR, TOKENS_DIR
from ..formats.rules import split_name
from ..formats.run_config import RunConfig

_SCAN_CHUNK = 1 << 24  # ids compared per step when looking for separators


class TokenStream:
    """Several 1-D token arrays (one per file) read as one stream of ``n_tokens`` ids."""

    def __init__(self, parts: Sequence[np.ndarray], names: Sequence[str]):
        self.parts = tuple(parts)
        self.names = tuple(str(n) for n in names)
        self.offsets = np.concatenate(([0], np.cumsum([p.size for p in self.parts], dtype=np.int64)))

    @property
    def n_tokens(self) -> int:
        return int(self.offsets[-1])

    def __len__(self) -> int:
        return self.n_tokens

    def read(self, start: int, stop: int) -> np.ndarray:
        """Ids ``start:stop`` of the whole stream: a view inside one file, a copy across files."""
        if not 0 <= start <= stop <= self.n_tokens:
            raise IndexError(f"range {start}:{stop} out of 0:{self.n_tokens}")
        first = int(np.searchsorted(self.offsets, start, side="right")) - 1
        pieces = []
        while start < stop:
            local = start - int(self.offsets[first])
            take = min(stop - start, self.parts[first].size - local)
            pieces.append(self.parts[first][local : local + take])
            start += take
            first += 1
        if len(pieces) == 1:
            return pieces[0]
        return np.concatenate(pieces) if pieces else np.zeros(0, dtype=self.parts[0].dtype if self.parts else np.int64)

    def document_starts(self, part: int) -> np.ndarray:
        """Sorted positions, inside ``parts[part]``, where a document starts."""
        raise FormatError(
            self.names[part] if self.names else None,
            "document-aligned windows need document boundaries",
            hint="give the document separator id",
        )

    def windows(self, seq_len: int, seed: int = 0, aligned: bool = False) -> "RandomWindows":
        return RandomWindows(self, seq_len, seed, aligned)

    def batches(
        self, batch_size: int, seq_len: int, seed: int = 0, aligned: bool = False
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``(inputs, targets)`` int64 arrays of shape ``(batch_size, seq_len)``, ``targets`` shifted by one.

        Windows ``0..len-1`` of :meth:`windows` in order, ``batch_size`` at a
        time; a last incomplete batch is dropped, as llm.c does.
        """
        if not isinstance(batch_size, int) or batch_size < 1:
            raise FormatError(None, "batch_size must be a positive integer", got=batch_size)
        windows = self.windows(seq_len, seed, aligned)
        for first in range(0, len(windows) - batch_size + 1, batch_size):
            block = np.stack([windows[i] for i in range(first, first + batch_size)]).astype(np.int64)
            yield block[:, :-1], block[:, 1:]


class RandomWindows:
    """Map-style, seeded random windows of ``seq_len + 1`` tokens over a :class:`TokenStream`."""

    def __init__(self, stream: TokenStream, seq_len: int, seed: int = 0, aligned: bool = False):
        if not isinstance(seq_len, int) or seq_len < 1:
            raise FormatError(None, "seq_len must be a positive integer", got=seq_len)
        if not isinstance(seed, int) or seed < 0:
            raise FormatError(None, "seed must be a non-negative integer", got=seed)
        self.stream = stream
        self.seq_len = seq_len
        self.seed = seed
        self.aligned = aligned
        sizes = [p.size for p in stream.parts]
        if aligned:
            # A start is allowed only where the whole window fits in its file.
            self._starts = [
                s[s + seq_len + 1 <= n] for s, n in ((stream.document_starts(i), n) for i, n in enumerate(sizes))
            ]
            counts = [s.size for s in self._starts]
        else:
            self._starts = None
            counts = [max(0, n - seq_len) for n in sizes]
        self._cumulative = np.cumsum(counts, dtype=np.int64)
        self._total = int(self._cumulative[-1]) if counts else 0
        if self._total == 0:
            where = "starting at a document start " if aligned else ""
            raise FormatError(
                stream.names[0] if len(stream.names) == 1 else None,
                f"no window of seq_len + 1 tokens {where}fits inside one file",
                expected=f">= {seq_len + 1} tokens",
                got=f"{max(sizes, default=0)} tokens in the largest file",
            )
        self._len = sum(max(0, n - 1) // seq_len for n in sizes)

    def __len__(self) -> int:
        return self._len

    def start_of(self, i: int) -> tuple[int, int]:
        """``(file index, position in that file)`` where window ``i`` starts."""
        i = operator.index(i)
        if not -self._len <= i < self._len:
            raise IndexError(f"window {i} out of range for {self._len} windows")
        i %= self._len
        k = int(np.random.default_rng((self.seed, i)).integers(self._total))
        part = int(np.searchsorted(self._cumulative, k, side="right"))
        local = k - (int(self._cumulative[part - 1]) if part else 0)
        return part, int(self._starts[part][local]) if self._starts is not None else local

    def __getitem__(self, i: int) -> np.ndarray:
        part, start = self.start_of(i)
        return self.stream.parts[part][start : start + self.seq_len + 1]


def scan_positions(tokens: np.ndarray, token_id: int) -> np.ndarray:
    """Positions of ``token_id`` in ``tokens``, chunk by chunk so memory stays flat."""
    found = [np.flatnonzero(tokens[s : s + _SCAN_CHUNK] == token_id) + s for s in range(0, tokens.size, _SCAN_CHUNK)]
    return np.concatenate(found).astype(np.int64) if found else np.zeros(0, dtype=np.int64)


def open_llmc_file(path: str | os.PathLike, vocab_size: int | None = None, check_ids: bool = True) -> np.ndarray:
    """The validated memory map of one llm.c file, the llm.c layout or upstream's Llama 3 layout (by magic)."""
    return llmc.open_tokens(path, check_ids=check_ids, vocab_size=vocab_size)


def find_llmc_folder(path: str | os.PathLike) -> Path:
    """The folder holding ``_MANIFEST.json``: ``path`` itself, or the one under a release's ``tokens/``."""
    path = Path(path)
    if (path / llmc.MANIFEST_NAME).is_file():
        return path
    manifests = sorted((path / TOKENS_DIR).glob(f"*/*/{llmc.MANIFEST_NAME}"))
    if not manifests:
        raise FormatError(
            path,
            "no llm.c token folder",
            expected=f"{llmc.MANIFEST_NAME} here or {TOKENS_DIR}/<tokenizer_id>/<dataset>/{llmc.MANIFEST_NAME}",
        )
    if len(manifests) > 1:
        raise FormatError(
            path, "several llm.c token folders; pass one of them", got=[str(m.parent) for m in manifests]
        )
    return manifests[0].parent


def llmc_split_name(split: str) -> str:
    """``train`` or ``val`` (the llm.c layout's name), accepting ``validation`` for ``val``."""
    name = LLMC_SPLIT.get(split, split)
    if name not in llmc.SPLITS:
        raise FormatError(None, "unknown split", expected="train, val or validation", got=split)
    return name


def megatron_split_name(split: str) -> str:
    """``train`` or ``validation`` (the Megatron release layout's name), accepting ``val`` for ``validation``."""
    name = split_name(split)
    if name is None:
        raise FormatError(None, "unknown split", expected="train, validation or val", got=split)
    return name


class LlmcSplit(TokenStream):
    """A split's llm.c token files as one stream; each file a read-only memory map.

    ``doc_sep_id`` (from the manifest) gives the document boundaries for
    ``aligned=True``, with ``separator`` saying where it stands: ``"before"``
    each document (the llm.c layout), ``"after"`` it (the TinyStories rules, ``--llmc-sep after``),
    or None to read that from each file as ``verify`` does (it ends with the
    separator and does not start with it: after); ``vocab_size`` checks every
    id (with ``check_ids``).
    """

    def __init__(
        self,
        paths: Sequence[str | os.PathLike],
        doc_sep_id: int | None = None,
        vocab_size: int | None = None,
        check_ids: bool = True,
        separator: str | None = "before",
    ):
        if separator not in (*llmc.SEPARATOR_POSITIONS, None):
            raise FormatError(None, "separator must be before, after or None", got=separator)
        self.paths = tuple(Path(p) for p in paths)
        self.doc_sep_id = doc_sep_id
        self.separator = separator
        self.vocab_size = vocab_size
        self.check_ids = check_ids
        if not self.paths:
            raise FormatError(None, "an llm.c split needs at least one file")
        super().__init__([open_llmc_file(p, vocab_size, check_ids) for p in self.paths], self.paths)
        self._doc_starts: dict[int, np.ndarray] = {}

    @classmethod
    def open(cls, path: str | os.PathLike, split: str = "train", check_ids: bool = True) -> "LlmcSplit":
        """A release folder, an llm.c token folder (``_MANIFEST.json``) or one ``.bin`` file.

        From a manifest: the split's files in manifest order, with its
        ``vocab_size`` and ``doc_sep_id``; each file's n_tokens must match
        (``hf-tokbin verify`` checks the SHA-256 too). The separator's place
        comes from the release's ``run_config.json`` (``llmc.separator``) when
        the folder is in a release, else from the files.
        """
        path = Path(path)
        if path.is_file():
            return cls([path], check_ids=check_ids)
        folder = find_llmc_folder(path)
        manifest = llmc.TokensManifest.read(folder / llmc.MANIFEST_NAME)
        name = llmc_split_name(split)
        entries = [f for f in manifest.files if f.split == name]
        if not entries:
            raise FormatError(folder / llmc.MANIFEST_NAME, f"no {name} files in the manifest")
        stream = cls(
            [folder / f.name for f in entries],
            manifest.doc_sep_id,
            manifest.vocab_size,
            check_ids,
            _recorded_separator(path, folder),
        )
        for entry, tokens, file_path in zip(entries, stream.parts, stream.paths):
            if tokens.size != entry.n_tokens:
                raise FormatError(
                    file_path, "n_tokens disagrees with the manifest", expected=entry.n_tokens, got=int(tokens.size)
                )
        return stream

    def document_starts(self, part: int) -> np.ndarray:
        if self.doc_sep_id is None:
            return super().document_starts(part)
        if part not in self._doc_starts:
            tokens = self.parts[part]
            separators = scan_positions(tokens, self.doc_sep_id)
            separator = self.separator
            if separator is None:  # as verify reads a folder whose layout is not recorded
                ends_with_it = tokens.size and int(tokens[-1]) == self.doc_sep_id
                separator = "after" if ends_with_it and int(tokens[0]) != self.doc_sep_id else "before"
            if separator == "after":
                # Each document follows the previous one's separator; the first starts the file.
                after = separators + 1
                separators = (
                    np.concatenate(([0], after[after < tokens.size])).astype(np.int64) if tokens.size else separators
                )
            self._doc_starts[part] = separators
        return self._doc_starts[part]

    def __getstate__(self):
        # Reopen the memory maps in the receiving process instead of pickling their bytes.
        return {
            "paths": self.paths,
            "doc_sep_id": self.doc_sep_id,
            "vocab_size": self.vocab_size,
            "separator": self.separator,
        }

    def __setstate__(self, state):
        # Ids were checked where the split was first opened.
        self.__init__(
            state["paths"],
            state["doc_sep_id"],
            state["vocab_size"],
            check_ids=False,
            separator=state.get("separator", "before"),
        )


def _recorded_separator(path: Path, folder: Path) -> str | None:
    """``llmc.separator`` of the release holding the token ``folder`` (opened as ``path``), or None if it is in none.
    """
    for root in (path, folder.parent.parent.parent):
        if (root / RUN_CONFIG_NAME).is_file() and folder.parent.parent == root / TOKENS_DIR:
            return RunConfig.read(root / RUN_CONFIG_NAME).llmc_separator
    return None


class MegatronStream(TokenStream):
    """The ``.bin`` streams of several pairs; documents start where the ``.idx`` pointers say."""

    def __init__(self, pairs: Sequence[megatron.MegatronPair]):
        self.pairs = tuple(pairs)
        super().__init__([p.tokens for p in self.pairs], [p.bin_path for p in self.pairs])

    def document_starts(self, part: int) -> np.ndarray:
        pair = self.pairs[part]
        return np.asarray(pair.pointers, dtype=np.int64) // pair.dtype.itemsize


class MegatronSplit:
    """A split's Megatron pairs as one sequence of documents (zero-copy slices).

    ``len(split)`` documents, ``split[i]`` the ids of document i (its EOD
    included), ``split.stream`` the token stream for windows and batches.
    """

    def __init__(self, paths: Sequence[str | os.PathLike], vocab_size: int | None = None):
        self.paths = tuple(Path(p) for p in paths)
        self.vocab_size = vocab_size
        if not self.paths:
            raise FormatError(None, "a Megatron split needs at least one pair")
        self.pairs = tuple(megatron.MegatronPair(p, vocab_size) for p in self.paths)
        self.stream = MegatronStream(self.pairs)
        self._doc_offsets = np.cumsum([len(p) for p in self.pairs], dtype=np.int64)

    @classmethod
    def open(cls, path: str | os.PathLike, split: str = "train", vocab_size: int | None = None) -> "MegatronSplit":
        """A release folder (``shards/<split>/``), a folder of pairs, or one ``.idx``/``.bin``."""
        return cls(find_megatron_pairs(path, split), vocab_size)

    @property
    def n_tokens(self) -> int:
        return self.stream.n_tokens

    def __len__(self) -> int:
        return int(self._doc_offsets[-1])

    def __getitem__(self, i: int) -> np.ndarray:
        i = operator.index(i)
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"document {i} out of range for {n} documents")
        i %= n
        part = int(np.searchsorted(self._doc_offsets, i, side="right"))
        return self.pairs[part][i - (int(self._doc_offsets[part - 1]) if part else 0)]

    def __getstate__(self):
        return {"paths": self.paths}

    def __setstate__(self, state):
        # Structure is checked again on reopening; ids were checked where the split was first opened.
        self.__init__(state["paths"])


def find_megatron_pairs(path: str | os.PathLike, split: str = "train") -> list[Path]:
    """The ``.idx`` files of a split: a release's ``shards/<split>/``, a folder of pairs, or one pair."""
    path = Path(path)
    if path.is_file():
        return [megatron.idx_path_for(path)]
    folder = path / SHARDS_DIR / megatron_split_name(split) if (path / SHARDS_DIR).is_dir() else path
    found = sorted(folder.glob("*.idx"))
    if not found:
        raise FormatError(folder, "no Megatron pairs", expected="part-NNNNNN.idx and .bin files")
    return found
