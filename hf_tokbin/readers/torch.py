"""A thin, optional torch ``Dataset`` over the numpy readers of :mod:`hf_tokbin.readers`.

torch is imported only when a dataset is made, so ``import hf_tokbin.torch_dataset``
works without it. Items are int64 tensors (``torch.long``, what embeddings and
cross-entropy take):

- over a :class:`~hf_tokbin.readers.MegatronSplit`: document i;
- over :class:`~hf_tokbin.readers.RandomWindows`: ``(inputs, targets)`` of
  ``seq_len`` tokens each, the window shifted by one.

Both views pickle by path and reopen their memory maps in each worker, so
``torch.utils.data.DataLoader(..., num_workers=N)`` never copies a file.
"""

from __future__ import annotations

import functools

from ..errors import MissingDependencyError
from .views import MegatronSplit, RandomWindows


@functools.cache
def _dataset_class():
    try:
        import torch
        from torch.utils.data import Dataset
    except ImportError:
        raise MissingDependencyError("torch", "torch", "the torch Dataset wrapper") from None

    class TokbinDataset(Dataset):
        """Map-style torch view of a hf_tokbin reader."""

        def __init__(self, view):
            if not isinstance(view, (MegatronSplit, RandomWindows)):
                raise TypeError(f"expected a MegatronSplit or RandomWindows, got {type(view).__name__}")
            self.view = view

        def __len__(self) -> int:
            return len(self.view)

        def __getitem__(self, i):
            ids = torch.from_numpy(self.view[i].astype("int64"))
            if isinstance(self.view, RandomWindows):
                return ids[:-1], ids[1:]
            return ids

    return TokbinDataset


def torch_dataset(view: MegatronSplit | RandomWindows):
    """A ``torch.utils.data.Dataset`` over ``view`` (documents, or shifted random windows)."""
    return _dataset_class()(view)
