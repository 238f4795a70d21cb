"""Where a build's tasks run: ``local`` (this machine, :mod:`.local`) or ``ray`` (a Ray cluster, :mod:`.ray`).

Two kinds of task, on the same plan: one per input shard
(:func:`hf_tokbin.pipeline.build_part`, :func:`run_parts`) and, at the finish,
one per llm.c file (:func:`hf_tokbin.pipeline.pack.pack_file`,
:func:`run_tasks`). Both engines give byte-identical releases. Ray is
imported only when used.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools


def run_parts(engine: str, build_part, plan, indices: list[int], ray_address: str | None = None, progress: bool = True) -> list:
    """``build_part(plan, i, progress)`` for every input shard ``i`` on ``engine``; the results in order.

    ``build_part`` is :func:`hf_tokbin.pipeline.build_part` (a module-level function: Ray workers import it by name).
    Locally it is also given ``close_on``, where it may hand its closing while the next part is encoded
    (:func:`hf_tokbin.engines.local.run_parts_locally`).
    """
    if engine == "local":
        from .local import run_parts_locally

        return run_parts_locally(build_part, plan, indices, progress)
    from .ray import run_parts as run_on_ray

    # One process per task (Ray spreads the tasks); per-part bars would only be noise from every worker.
    task = functools.partial(build_part, progress=False)
    return run_on_ray(task, dataclasses.replace(plan, options=dataclasses.replace(plan.options, num_proc=1)), indices, address=ray_address, progress=progress)


def run_tasks(engine: str, fn, plan, items: list, labels: list[str], ray_address: str | None = None, progress: bool = True, desc: str = "tasks") -> list:
    """``fn(plan, item)`` for every item on ``engine``; the results in order.

    Locally a pool of threads runs them. A build's (``plan.options``): one
    per core this process may use, at least ``--num-proc``: the tasks copy
    and hash files, and the kernel and hashlib work without the GIL, as the
    encoder's threads do (a build's ``--num-proc`` counts worker processes).
    Verify's (``plan.num_proc``): exactly ``--num-proc``, the files checked at
    once as its help promises (a user may lower it to spare a shared disk or
    memory). On Ray each is a task, retried as a part is. ``labels`` name the
    items in messages.
    """
    if engine == "local":
        from .local import run_in_threads, usable_cores

        threads = max(plan.options.num_proc, usable_cores()) if hasattr(plan, "options") else plan.num_proc
        return run_in_threads(fn, plan, items, threads, progress, desc)
    from .ray import run_parts as run_on_ray

    return run_on_ray(fn, plan, items, address=ray_address, progress=progress, labels=labels, desc=desc, unit="file")


@contextlib.contextmanager
def connected(engine: str, ray_address: str | None = None):
    """One connection to the engine for every stage of a build (Ray: ``ray.init`` once, shut down at the end)."""
    if engine != "ray":
        yield
        return
    from .ray import session

    with session(ray_address):
        yield
