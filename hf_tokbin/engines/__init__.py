"""Where a build's parts run: ``local`` (this machine, :mod:`.local`) or ``ray`` (a Ray cluster, :mod:`.ray`).

Both run the same function, :func:`hf_tokbin.pipeline.build_part`, on the same
plan, and give byte-identical releases. Ray is imported only when used.
"""

from __future__ import annotations

import dataclasses
import functools


def run_parts(engine: str, build_part, plan, indices: list[int], ray_address: str | None = None, progress: bool = True) -> list:
    """``build_part(plan, i, progress)`` for every input shard ``i`` on ``engine``; the results in order.

    ``build_part`` is :func:`hf_tokbin.pipeline.build_part` (a module-level function: Ray workers import it by name).
    """
    if engine == "local":
        from .local import run_parts_locally

        return run_parts_locally(build_part, plan, indices, progress)
    from .ray import run_parts as run_on_ray

    # One process per task (Ray spreads the tasks); per-part bars would only be noise from every worker.
    task = functools.partial(build_part, progress=False)
    return run_on_ray(task, dataclasses.replace(plan, options=dataclasses.replace(plan.options, num_proc=1)), indices, address=ray_address, progress=progress)
