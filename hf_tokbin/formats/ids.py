"""Token ids: the one range check every reader and writer of every format uses.

No id is cast to a file's dtype before it has been checked, so none wraps around.
"""

from __future__ import annotations

import numpy as np

from ..errors import FormatError

_CHECK_CHUNK = 1 << 24  # ids checked per step, so a check never loads a whole file


def checked_ids(ids, vocab_size: int, path) -> np.ndarray:
    """``ids`` as an array, after checking they are integers in ``0..vocab_size-1``.

    The one id check of every writer (llm.c, Llama 3 and Megatron): no id is
    cast to the file's dtype before it has been checked, so none wraps around.
    """
    array = np.asarray(ids)
    if not array.size:
        return array
    if array.dtype.kind not in "iu":
        raise FormatError(path, "token ids must be integers", got=f"dtype {array.dtype}")
    low, high = int(array.min()), int(array.max())
    if low < 0 or high >= vocab_size:
        raise FormatError(
            path, "token id out of range", expected=f"0 <= id < {vocab_size}", got=high if high >= vocab_size else low
        )
    return array


def first_out_of_range(ids: np.ndarray, vocab_size: int) -> int | None:
    """The index of the first id of ``ids`` that is not in ``0..vocab_size-1`` (read in chunks), or None."""
    for start in range(0, len(ids), _CHECK_CHUNK):
        chunk = ids[start : start + _CHECK_CHUNK]
        if chunk.size and (int(chunk.max()) >= vocab_size or int(chunk.min()) < 0):
            return start + int(np.argmax((chunk >= vocab_size) | (chunk < 0)))
    return None


def check_ids_below(path, ids: np.ndarray, vocab_size: int, offset: int = 0, where: str = "token") -> None:
    """Raise if any id in ``ids`` (a file's ids) is >= ``vocab_size`` or negative, naming the first one's index.

    Negative ids only fit a signed file (Megatron's int32); no tokenizer has one.
    """
    i = first_out_of_range(ids, vocab_size)
    if i is not None:
        raise FormatError(
            path, f"{where} {offset + i}: id must be in 0..vocab_size-1", expected=f"< {vocab_size}", got=int(ids[i])
        )


def checked_documents(flat_ids, lengths, vocab_size: int, path) -> tuple[np.ndarray, np.ndarray]:
    """Documents given as one flat id array and each one's length,
    checked: ids in range, lengths >= 0 adding up to the ids.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.size and int(lengths.min()) < 0:
        raise FormatError(path, "document lengths must not be negative", got=int(lengths.min()))
    flat_ids = checked_ids(flat_ids, vocab_size, path)
    if int(lengths.sum()) != flat_ids.size:
        raise FormatError(
            path, "document lengths must add up to the ids given", expected=flat_ids.size, got=int(lengths.sum())
        )
    return flat_ids, lengths


def with_boundaries(
    flat_ids: np.ndarray, lengths: np.ndarray, before: tuple[int, ...] = (), after: tuple[int, ...] = ()
) -> np.ndarray:
    """The documents of ``flat_ids`` (each ``lengths[i]`` ids) each
    as ``[*before] + ids + [*after]``, in ``flat_ids``' dtype.

    One function for every layout: Megatron's ``[bos] + ids + [eod]``, llm.c's
    ``[sep] + [bos] + ids`` (the llm.c layout) and ``[bos] + ids + [sep]`` (the TinyStories rules).
    The tokens must be valid ids of that dtype (the writers check them).
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    added = len(before) + len(after)
    if not added:
        return flat_ids
    n = lengths.size
    # where each document begins in the output
    starts = np.cumsum(lengths) - lengths + np.arange(n, dtype=np.int64) * added
    out = np.empty(flat_ids.size + n * added, dtype=flat_ids.dtype)
    text = np.ones(out.size, dtype=bool)
    for j, token in enumerate(before):
        out[starts + j] = token
        text[starts + j] = False
    for j, token in enumerate(after):
        out[starts + len(before) + lengths + j] = token
        text[starts + len(before) + lengths + j] = False
    out[text] = flat_ids
    return out
