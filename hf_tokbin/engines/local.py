"""The local engine: a build's parts one after another in this process (each part's encoding uses ``num_proc`` processes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def run_parts_locally(fn: Callable[..., Any], plan: Any, indices: list[int], progress: bool = True) -> list:
    """``fn(plan, i, progress)`` for every ``i``, in order, with a bar over the parts."""
    from tqdm.auto import tqdm

    return [fn(plan, i, progress) for i in tqdm(indices, desc="parts", unit="part", disable=not progress or len(indices) < 2)]
