"""A dataset's own ids kept beside its corpus: the files, their writer and reader, and how many a build checks.

A dataset with an ``input_ids`` column given to ``build_release`` is written as a corpus as any dataset is, and
its ids are kept in a folder beside it, in corpus order (:class:`GivenIdsWriter`). Per split, three files of
little-endian numbers, one entry per kept document (an empty text is dropped with its ids, which must be empty):

- ``<split>.ids.u32``: the documents' ids, one after another (``uint32``);
- ``<split>.lengths.i64``: each document's id count (``int64``);
- ``<split>.rows.i64``: each document's (member, row) in the dataset (two ``int64``).

``members.json`` lists the dataset's members (a ``DatasetDict``'s split names; ``[null]`` for a ``Dataset``), so
a refused document is named by its member and row. A build reads them back (:class:`GivenIds`) and writes them
instead of encoding the text, after checking them (:class:`IdsCheck`: every document, or ``sample:K``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import BuildError
from .corpus_shard import text_lengths

ID_COLUMN = "input_ids"
_IDS, _LENGTHS, _ROWS = (
    "ids.u32",
    "lengths.i64",
    "rows.i64",
)  # per split: flat ids, id count per document, (member, row) per document
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
        """What ``run_config.json`` says: nothing when every document was checked (the release is the raw-text
        build's)."""
        if self.sample is None:
            return None
        return {
            "from": f"the dataset's {ID_COLUMN} column",
            "checked": f"sample:{self.sample}",
            "rule": "documents floor(i * N / K), i < K, in corpus order",
        }

    def mask(self, first: int, count: int, total: int) -> np.ndarray:
        """Which of documents ``first .. first + count - 1`` (of ``total``, in corpus order) are checked."""
        if self.sample is None or self.sample >= total:
            return np.ones(count, dtype=bool)
        g = np.arange(first, first + count, dtype=np.int64)
        # Document floor(i * N / K) for i < K: exactly K documents, one where each multiple of N/K is crossed.
        return ((g + 1) * self.sample + total - 1) // total != (g * self.sample + total - 1) // total


class GivenIdsWriter:
    """Appends each kept document's ids to its split's files, in the order the corpus writer keeps them."""

    def __init__(self, folder: Path, members: list):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True)
        (self.folder / _MEMBERS).write_text(
            json.dumps([None if m is None else str(m) for m in members]), encoding="utf-8"
        )
        self._files: dict[str, list] = {}

    def add(self, member: int, first_row: int, ids, splits, texts, where: str) -> None:
        """One batch: ``ids`` (a list column), ``splits`` and ``texts`` (the checked corpus rows) of rows ``first_row
        ...``."""
        import pyarrow as pa

        ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
        lengths = _list_lengths(ids, first_row, where)
        flat = _checked_values(ids, first_row, where)
        text_bytes = text_lengths(texts)
        empty = np.flatnonzero((text_bytes == 0) & (lengths > 0))
        if empty.size:  # the corpus drops an empty document; ids for it are not the tokenizer's ("" has none)
            raise BuildError(
                f"{where} row {first_row + int(empty[0])}",
                f"{ID_COLUMN} of an empty text must be empty",
                got=f"{int(lengths[empty[0]])} ids",
            )
        starts = np.concatenate(([0], np.cumsum(lengths)))
        split_values = np.asarray(splits.to_pylist() if hasattr(splits, "to_pylist") else splits, dtype=object)
        for split in ("train", "validation"):
            keep = np.flatnonzero((split_values == split) & (text_bytes > 0))
            if keep.size:
                self._append(split, member, first_row, keep, flat, starts, lengths)

    def _append(
        self,
        split: str,
        member: int,
        first_row: int,
        keep: np.ndarray,
        flat: np.ndarray,
        starts: np.ndarray,
        lengths: np.ndarray,
    ) -> None:
        files = self._files.get(split)
        if files is None:
            files = self._files[split] = [
                open(self.folder / f"{split}.{name}", "wb") for name in (_IDS, _LENGTHS, _ROWS)
            ]
        picked = np.concatenate([flat[starts[i] : starts[i + 1]] for i in keep.tolist()]) if keep.size else flat[:0]
        files[0].write(np.asarray(picked, dtype="<u4").tobytes())
        files[1].write(np.asarray(lengths[keep], dtype="<i8").tobytes())
        files[2].write(
            np.stack([np.full(keep.size, member, dtype="<i8"), first_row + keep.astype("<i8")], axis=1).tobytes()
        )

    def close(self) -> None:
        for files in self._files.values():
            for file in files:
                file.close()


def _list_lengths(ids, first_row: int, where: str) -> np.ndarray:
    import pyarrow as pa

    if not (pa.types.is_list(ids.type) or pa.types.is_large_list(ids.type)) or not pa.types.is_integer(
        ids.type.value_type
    ):
        raise BuildError(where, f"{ID_COLUMN} must be a list of integer ids per row", got=str(ids.type))
    if ids.null_count:
        row = first_row + int(np.argmax(ids.is_null().to_numpy(zero_copy_only=False)))
        raise BuildError(
            f"{where} row {row}", f"{ID_COLUMN} is null", hint="map every row with hf_tokbin.tokenize(tokenizer)"
        )
    offsets = ids.offsets.to_numpy()
    return np.diff(offsets - offsets[0]).astype(np.int64)


def _checked_values(ids, first_row: int, where: str) -> np.ndarray:
    """The flat ids of the batch as ``int64``; a negative id or one past uint32 is refused, naming its row."""
    values = ids.flatten()
    if values.null_count:
        raise BuildError(
            where, f"{ID_COLUMN} holds a null id", hint="map every row with hf_tokbin.tokenize(tokenizer)"
        )
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
        """``take(count)``: (flat ids, lengths, row names) of the next ``count`` documents of ``split``, from
        ``first_document``."""
        folder = Path(self.folder)
        lengths_all = (
            np.fromfile(folder / f"{split}.{_LENGTHS}", dtype="<i8")
            if (folder / f"{split}.{_LENGTHS}").exists()
            else np.zeros(0, dtype="<i8")
        )
        rows_all = (
            np.fromfile(folder / f"{split}.{_ROWS}", dtype="<i8").reshape(-1, 2)
            if lengths_all.size
            else np.zeros((0, 2), dtype="<i8")
        )
        starts = np.concatenate(([0], np.cumsum(lengths_all)))
        ids = np.memmap(folder / f"{split}.{_IDS}", dtype="<u4", mode="r") if starts[-1] else np.zeros(0, dtype="<u4")
        members = self.members()
        position = [first_document]

        def take(count: int):
            first = position[0]
            if first + count > lengths_all.size:
                raise BuildError(
                    folder,
                    f"the kept {ID_COLUMN} hold fewer {split} documents than the corpus",
                    expected=first + count,
                    got=lengths_all.size,
                )
            position[0] = first + count
            rows = [_row_name(members[m], r) for m, r in rows_all[first : first + count].tolist()]
            return np.array(ids[starts[first] : starts[first + count]]), lengths_all[first : first + count], rows

        return take


def _row_name(member, row: int) -> str:
    return f"<in-memory dataset{'' if member is None else f' split {member}'}> row {row}"
