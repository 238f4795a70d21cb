"""Where tasks run: ``local`` (this machine, :mod:`.local`) or ``ray`` (a Ray cluster, :mod:`.ray`).

An engine maps a function over items and returns the results in order; it knows nothing of what the items are.
A build maps its step "encode" over its parts and its pack task over its llm.c files (:mod:`hf_tokbin.pipeline`),
verify its file checks. Both engines give byte-identical releases. Ray is imported only when used.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable


def run_tasks(
    engine: str,
    fn: Callable,
    shared,
    items: list,
    labels: list[str],
    ray_address: str | None = None,
    progress: bool = True,
    desc: str = "tasks",
    *,
    threads: int = 1,
    unit: str = "file",
) -> list:
    """``fn(shared, item)`` for every item on ``engine``; the results in the order of ``items``.

    Locally a pool of ``threads`` threads runs them. On Ray each is a task (``shared`` put once in the object
    store), retried where its worker died. ``fn`` is a module-level function (Ray workers import it by name);
    ``labels`` name the items in messages; ``desc`` and ``unit`` name the progress bar and what it counts.
    """
    if engine == "local":
        from .local import run_in_threads

        return run_in_threads(fn, shared, items, threads, progress, desc, unit)
    from .ray import run_tasks as run_on_ray

    return run_on_ray(fn, shared, items, address=ray_address, progress=progress, labels=labels, desc=desc, unit=unit)


@contextlib.contextmanager
def connected(engine: str, ray_address: str | None = None):
    """One connection to the engine for every map of a build (Ray: ``ray.init`` once, shut down at the end)."""
    if engine != "ray":
        yield
        return
    from .ray import session

    with session(ray_address):
        yield
