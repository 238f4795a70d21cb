"""The ``datasets`` way in: ``Dataset.map`` with the release's encoder, then a release from the mapped ids.

::

    import datasets, hf_tokbin

    ds = datasets.load_dataset("NS/NAME", split="train")
    mapped = ds.map(hf_tokbin.tokenize("tok/"), batched=True, num_proc=8)
    hf_tokbin.build_release(mapped, "tok/", "release/")             # every document's ids checked
    hf_tokbin.build_release(mapped, "tok/", "release/", check_ids="sample:1000")

:func:`tokenize` is the build's own encoder (:mod:`hf_tokbin.tokenizer.encoder`:
``tokenizers``' ids, the fast path only where it is proven identical, long
documents in bounded pieces) as a picklable batched ``map`` function: a row's
``input_ids`` are exactly the ids the release holds for its text (no boundary
token: those are each format's business).

A dataset with an ``input_ids`` column given to ``build_release`` (a
``Dataset``, ``IterableDataset``, ``DatasetDict`` or ``IterableDatasetDict``
whose every split has one, or a ``save_to_disk`` folder of any of them) is
written as a corpus as any dataset is (the same text shards), and its ids are kept
beside it (:class:`GivenIdsWriter`: per split, the ids, each document's id
count and its row), in corpus order. The build then writes those ids instead
of encoding the text, after checking them (:class:`IdsCheck`): by default
every document is encoded again and compared, so the release is the raw-text
build's, byte for byte; ``sample:K`` checks K documents spread evenly over the
corpus and records that in ``run_config.json``. A differing document is
refused, naming its row.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import BuildError, CorpusInputError
from ..formats.corpus_shard import text_lengths
from ..formats.ids import first_out_of_range
from .encode_batch import EncodeBatch

ID_COLUMN = "input_ids"
_IDS, _LENGTHS, _ROWS = "ids.u32", "lengths.i64", "rows.i64"  # per split: flat ids, id count per document, (member, row) per document
_MEMBERS = "members.json"  # the dataset's members (a DatasetDict's split names; [null] for a Dataset)
_SAMPLE = re.compile(r"sample:([1-9][0-9]*)")


@dataclass(frozen=True)
class IdsCheck:
    """How many of the given ids a build checks: every document (``"all"``) or ``sample:K``, K spread evenly."""

    sample: int | None = None  # None: every document

    @classmethod
    def parse(cls, text: str | None, where=None) -> "IdsCheck":
        if text is None or text == "all":
            return cls()
        found = _SAMPLE.fullmatch(text) if isinstance(text, str) else None
        if found is None:
            raise BuildError(where, "--check-ids must be all or sample:K (K a positive number of documents)", got=text)
        return cls(int(found.group(1)))

    def record(self) -> dict | None:
        """What ``run_config.json`` says: nothing when every document was checked (the release is the raw-text build's)."""
        if self.sample is None:
            return None
        return {"from": f"the dataset's {ID_COLUMN} column", "checked": f"sample:{self.sample}", "rule": "documents floor(i * N / K), i < K, in corpus order"}

    def mask(self, first: int, count: int, total: int) -> np.ndarray:
        """Which of documents ``first .. first + count - 1`` (of ``total``, in corpus order) are checked."""
        if self.sample is None or self.sample >= total:
            return np.ones(count, dtype=bool)
        g = np.arange(first, first + count, dtype=np.int64)
        # Document floor(i * N / K) for i < K: exactly K documents, one where each multiple of N/K is crossed.
        return ((g + 1) * self.sample + total - 1) // total != (g * self.sample + total - 1) // total


class Tokenize:
    """A batched ``Dataset.map`` function: ``{"input_ids": ...}`` for a batch's ``text_column``, the release's ids.

    Picklable: the encoder travels with its fast-path outcome (checked once,
    here), so ``num_proc`` workers encode with the same routing and proof.
    """

    def __init__(self, encoder, vocab_size: int, text_column: str = "text"):
        self.encoder = encoder
        self.vocab_size = vocab_size
        self.text_column = text_column

    def __call__(self, batch) -> dict:
        if self.text_column not in batch:
            raise CorpusInputError(None, f"missing text column {self.text_column!r}", expected=f"a column {self.text_column!r}", got=list(batch)[:10])
        texts = batch[self.text_column]
        texts = texts.to_pylist() if hasattr(texts, "to_pylist") else list(texts)
        if any(not isinstance(t, str) for t in texts):
            bad = next(t for t in texts if not isinstance(t, str))
            raise CorpusInputError(None, f"column {self.text_column!r} must hold strings", got=type(bad).__name__)
        flat, lengths = EncodeBatch(self.encoder, self.vocab_size, self.text_column).encode(texts)
        # A list of arrays (views of one buffer): what batched map takes, typed List(uint32) by datasets.
        return {ID_COLUMN: np.split(np.asarray(flat, dtype=np.uint32), np.cumsum(lengths)[:-1])}


def tokenize(tokenizer, *, text_column: str = "text", fast: str = "auto", parse_special: bool = False, tokenizer_id: str | None = None) -> Tokenize:
    """The batched ``map`` function of ``tokenizer`` (what ``--tokenizer`` takes, or a :class:`TokenizerInfo`).

    ``parse_special`` must be the build's (``--parse-special-tokens``): it
    changes the ids. ``fast`` never changes an id.
    """
    import os

    from ..engines.panics import engine_output_held
    from ..tokenizer.encoder import encoder_for
    from ..tokenizer.resolve import TokenizerInfo, resolve_tokenizer

    if not isinstance(tokenizer, TokenizerInfo):
        tokenizer = resolve_tokenizer(os.fspath(tokenizer), tokenizer_id)
    encoder = encoder_for(tokenizer.path, fast, parse_special=parse_special)
    with engine_output_held():  # as the build checks it (encode.prepare_encoder)
        encoder.check_fast_path([])  # once, in this process: the outcome is pickled to every worker
    return Tokenize(encoder, tokenizer.vocab_size, text_column)


# ---------------------------------------------------------------- the ids kept beside the corpus


def has_given_ids(dataset) -> bool:
    """Whether an in-memory dataset (a ``Dataset`` or ``IterableDataset``, or every member of a ``DatasetDict`` or
    ``IterableDatasetDict``: dicts of them, whose ``column_names`` is a dict by split) has an ``input_ids`` column."""
    members = list(dataset.values()) if isinstance(dataset, dict) else [dataset]
    return bool(members) and all(ID_COLUMN in _column_names(m) for m in members)


def _column_names(member) -> list[str]:
    """A dataset's columns; an ``IterableDataset`` of unknown features (a generator's) shows them in its first row."""
    if member.column_names is not None:
        return list(member.column_names)
    first = next(iter(member.take(1)), None)
    return list(first) if first is not None else []


class GivenIdsWriter:
    """Appends each kept document's ids to its split's files, in the order the corpus writer keeps them."""

    def __init__(self, folder: Path, members: list):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True)
        (self.folder / _MEMBERS).write_text(json.dumps([None if m is None else str(m) for m in members]), encoding="utf-8")
        self._files: dict[str, list] = {}

    def add(self, member: int, first_row: int, ids, splits, texts, where: str) -> None:
        """One batch: ``ids`` (a list column), ``splits`` and ``texts`` (the checked corpus rows) of rows ``first_row ...``."""
        import pyarrow as pa

        ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
        lengths = _list_lengths(ids, first_row, where)
        flat = _checked_values(ids, first_row, where)
        text_bytes = text_lengths(texts)
        empty = np.flatnonzero((text_bytes == 0) & (lengths > 0))
        if empty.size:  # the corpus drops an empty document; ids for it are not the tokenizer's ("" has none)
            raise BuildError(f"{where} row {first_row + int(empty[0])}", f"{ID_COLUMN} of an empty text must be empty", got=f"{int(lengths[empty[0]])} ids")
        starts = np.concatenate(([0], np.cumsum(lengths)))
        split_values = np.asarray(splits.to_pylist() if hasattr(splits, "to_pylist") else splits, dtype=object)
        for split in ("train", "validation"):
            keep = np.flatnonzero((split_values == split) & (text_bytes > 0))
            if keep.size:
                self._append(split, member, first_row, keep, flat, starts, lengths)

    def _append(self, split: str, member: int, first_row: int, keep: np.ndarray, flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> None:
        files = self._files.get(split)
        if files is None:
            files = self._files[split] = [open(self.folder / f"{split}.{name}", "wb") for name in (_IDS, _LENGTHS, _ROWS)]
        picked = np.concatenate([flat[starts[i] : starts[i + 1]] for i in keep.tolist()]) if keep.size else flat[:0]
        files[0].write(np.asarray(picked, dtype="<u4").tobytes())
        files[1].write(np.asarray(lengths[keep], dtype="<i8").tobytes())
        files[2].write(np.stack([np.full(keep.size, member, dtype="<i8"), first_row + keep.astype("<i8")], axis=1).tobytes())

    def close(self) -> None:
        for files in self._files.values():
            for file in files:
                file.close()


def _list_lengths(ids, first_row: int, where: str) -> np.ndarray:
    import pyarrow as pa

    if not (pa.types.is_list(ids.type) or pa.types.is_large_list(ids.type)) or not pa.types.is_integer(ids.type.value_type):
        raise BuildError(where, f"{ID_COLUMN} must be a list of integer ids per row", got=str(ids.type))
    if ids.null_count:
        row = first_row + int(np.argmax(ids.is_null().to_numpy(zero_copy_only=False)))
        raise BuildError(f"{where} row {row}", f"{ID_COLUMN} is null", hint="map every row with hf_tokbin.tokenize(tokenizer)")
    offsets = ids.offsets.to_numpy()
    return np.diff(offsets - offsets[0]).astype(np.int64)


def _checked_values(ids, first_row: int, where: str) -> np.ndarray:
    """The flat ids of the batch as ``int64``; a negative id or one past uint32 is refused, naming its row."""
    values = ids.flatten()
    if values.null_count:
        raise BuildError(where, f"{ID_COLUMN} holds a null id", hint="map every row with hf_tokbin.tokenize(tokenizer)")
    given = values.to_numpy(zero_copy_only=False)  # in its own type: a uint64 past 2**63 is no negative number
    bad = np.flatnonzero((given < 0) | (given >= 2**32))
    if bad.size:
        ends = np.cumsum(_list_lengths(ids, first_row, where))
        row = first_row + int(np.searchsorted(ends, bad[0], side="right"))
        raise BuildError(f"{where} row {row}", f"{ID_COLUMN} must be ids 0..2**32-1", got=int(given[bad[0]]))
    return given.astype(np.int64, copy=False)


@dataclass(frozen=True)
class GivenIds:
    """The ids kept beside a corpus (:class:`GivenIdsWriter`) and how many of them a build checks."""

    folder: str
    check: IdsCheck = IdsCheck()

    def members(self) -> list:
        return json.loads((Path(self.folder) / _MEMBERS).read_text(encoding="utf-8"))

    def reader(self, split: str, first_document: int):
        """``take(count)``: (flat ids, lengths, row names) of the next ``count`` documents of ``split``, from ``first_document``."""
        folder = Path(self.folder)
        lengths_all = np.fromfile(folder / f"{split}.{_LENGTHS}", dtype="<i8") if (folder / f"{split}.{_LENGTHS}").exists() else np.zeros(0, dtype="<i8")
        rows_all = np.fromfile(folder / f"{split}.{_ROWS}", dtype="<i8").reshape(-1, 2) if lengths_all.size else np.zeros((0, 2), dtype="<i8")
        starts = np.concatenate(([0], np.cumsum(lengths_all)))
        ids = np.memmap(folder / f"{split}.{_IDS}", dtype="<u4", mode="r") if starts[-1] else np.zeros(0, dtype="<u4")
        members = self.members()
        position = [first_document]

        def take(count: int):
            first = position[0]
            if first + count > lengths_all.size:
                raise BuildError(folder, f"the kept {ID_COLUMN} hold fewer {split} documents than the corpus", expected=first + count, got=lengths_all.size)
            position[0] = first + count
            rows = [_row_name(members[m], r) for m, r in rows_all[first : first + count].tolist()]
            return np.array(ids[starts[first] : starts[first + count]]), lengths_all[first : first + count], rows

        return take


def _row_name(member, row: int) -> str:
    return f"<in-memory dataset{'' if member is None else f' split {member}'}> row {row}"


def check_given(encoder, task: tuple) -> tuple[np.ndarray, np.ndarray, int]:
    """One batch of given ids, in this process or a worker's: the checked documents encoded again and compared.

    ``task``: (vocab size, shard, texts, text bytes, given flat ids, given lengths, row names, check mask).
    Returns what an encoding task returns: (flat ids in the release's width, lengths, text bytes).
    """
    vocab_size, source, texts, n_bytes, flat, lengths, rows, mask = task
    batch = EncodeBatch(encoder, vocab_size, source)
    bad = first_out_of_range(flat, vocab_size)
    if bad is not None:
        where = rows[int(np.searchsorted(np.cumsum(lengths), bad, side="right"))]
        raise BuildError(where, f"{ID_COLUMN} holds an id outside the tokenizer's vocabulary", expected=f"ids < {vocab_size}", got=int(flat[bad]))
    if mask.any():
        texts = texts if isinstance(texts, list) else texts.to_pylist()
        checked = np.flatnonzero(mask)
        want, want_lengths = batch.encode([texts[i] for i in checked.tolist()])
        _compare(flat, lengths, checked, want, want_lengths, rows)
    return np.asarray(flat, dtype=batch.dtype), lengths, n_bytes


def _compare(flat, lengths, checked, want, want_lengths, rows) -> None:
    """The first checked document whose given ids are not the tokenizer's is refused, naming its row."""
    starts = np.concatenate(([0], np.cumsum(lengths)))
    want_starts = np.concatenate(([0], np.cumsum(want_lengths)))
    for k, i in enumerate(checked.tolist()):
        have, expected = flat[starts[i] : starts[i + 1]], want[want_starts[k] : want_starts[k + 1]]
        if have.size != expected.size or not np.array_equal(have, expected):
            n = min(have.size, expected.size)
            differ = np.flatnonzero(have[:n] != expected[:n])
            at = int(differ[0]) if differ.size else n
            raise BuildError(
                rows[i],
                f"{ID_COLUMN} differ from the tokenizer's ids for this row's text (first difference at id {at})",
                expected=expected[at : at + 8].tolist(),
                got=have[at : at + 8].tolist(),
                hint="map with hf_tokbin.tokenize(tokenizer) and the build's tokenizer and --parse-special-tokens, or drop the column to encode the text",
            )
