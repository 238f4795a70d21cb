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
        raise FormatError(path, "token id out of range", expected=f"0 <= id < {vocab_size}", got=high if high >= vocab_size else low)
    return array


def check_ids_below(path, ids: np.ndarray, vocab_size: int, offset: int = 0, where: str = "token") -> None:
    """Raise if any id in ``ids`` is >= ``vocab_size``, naming the first one's index."""
    for start in range(0, len(ids), _CHECK_CHUNK):
        chunk = ids[start : start + _CHECK_CHUNK]
        if chunk.size and int(chunk.max()) >= vocab_size:
            i = start + int(np.argmax(chunk >= vocab_size))
            raise FormatError(path, f"{where} {offset + i}: id must be < vocab_size", expected=f"< {vocab_size}", got=int(ids[i]))


def checked_documents(flat_ids, lengths, vocab_size: int, path) -> tuple[np.ndarray, np.ndarray]:
    """Documents given as one flat id array and each one's length, checked: ids in range, lengths >= 0 adding up to the ids."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.size and int(lengths.min()) < 0:
        raise FormatError(path, "document lengths must not be negative", got=int(lengths.min()))
    flat_ids = checked_ids(flat_ids, vocab_size, path)
    if int(lengths.sum()) != flat_ids.size:
        raise FormatError(path, "document lengths must add up to the ids given", expected=flat_ids.size, got=int(lengths.sum()))
    return flat_ids, lengths
