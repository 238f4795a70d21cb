"""The Ray engine: a function mapped over items as Ray tasks on a cluster.

:func:`run_tasks` hands each call to Ray, which places the tasks on the
cluster's nodes and re-runs the ones whose worker process or node died.
hf_tokbin schedules nothing itself. Each call must be independent and
idempotent (a build's parts and pack tasks are: see ``hf_tokbin.pipeline``).

Failures, and what the driver sees:

- A :class:`~hf_tokbin.errors.TokbinError` inside a task is a property of
  the input (bad UTF-8, an id out of range...): re-running cannot cure it.
  It is not retried; the driver raises the same error, same class and
  message, and cancels the tasks still pending.
- Any other exception may be transient (shared storage hiccup, a dropped
  connection): Ray retries the task up to ``max_retries`` times. An
  ``OSError`` still failing after that becomes a one-line
  :class:`~hf_tokbin.errors.BuildError` (the usual cause on a cluster is a
  path that one node cannot see); any other exception is a bug and arrives
  as Ray's error, with the worker's traceback.
- A full disk (even behind a library's error, such as ``datasets``') is
  one ``BuildError`` naming the file being written, where known.
- A worker process or node that dies mid-task (killed, out of memory) is
  retried by Ray up to ``max_retries`` times too; if it keeps dying the
  driver raises a one-line ``BuildError``.

Ray is imported only inside :func:`run_tasks`, so the local engine and the
rest of hf_tokbin never import it.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .._io import disk_full_cause, disk_full_error, write_errors_of_libraries
from ..errors import BuildError, MissingDependencyError, TokbinError
from ..versions import package_versions

#: Ray's name for "spread tasks over the nodes": a build's tasks each read and
#: write whole shards, so using every node beats packing the head node first.
SCHEDULING_STRATEGY = "SPREAD"

#: Seconds to wait for a TCP connection to the head node before giving up on it.
CONNECT_TIMEOUT_S = 10

@dataclass(frozen=True)
class _PermanentFailure:
    """What a task returns instead of raising a TokbinError, so Ray does not retry it."""

    error: TokbinError


def _run_task(
    fn: Callable[[Any, Any], Any],
    shared: Any,
    item: Any,
    driver_versions: dict[str, str | None],
    label: str | None = None,
) -> Any:
    """The body of one Ray task: ``fn(shared, item)`` on a worker, input errors returned."""
    # Every package whose version can change an id (hf_tokbin.versions.ID_PACKAGES) must be the driver's:
    # the driver made the fast-path proof with its own gigatoken.
    worker_versions = package_versions()
    if worker_versions != driver_versions:
        return _PermanentFailure(
            BuildError(
                label or f"task {item}",
                "package versions on a Ray worker must be the driver's",
                expected=_describe(driver_versions),
                got=_describe(worker_versions),
                hint="install the same versions on every node",
            )
        )
    try:
        return fn(shared, item)
    except TokbinError as error:
        return _PermanentFailure(error)
    except write_errors_of_libraries() as error:
        full = disk_full_cause(error)
        if full is None or full is error:
            raise
        # The full disk's OSError itself, not the library's wrapper: an exception
        # reaches the driver pickled, without the cause it was raised from.
        raise full from None


def _describe(versions: dict[str, str | None]) -> str:
    return ", ".join(f"{name} {version or 'missing'}" for name, version in versions.items())


def import_ray():
    """The ``ray`` module, or a :class:`MissingDependencyError` saying how to install it."""
    try:
        import ray
    except ImportError as e:
        raise MissingDependencyError("ray", "ray", "--engine ray") from e
    return ray


def check_reachable(address: str | None) -> None:
    """Fail at once if nothing listens at a ``HOST:PORT`` (or ``ray://HOST:PORT``) cluster address.

    ``ray.init`` retries an unreachable head node for minutes before it gives
    up; one TCP connection tells the same in a moment. ``None`` stands for
    ``RAY_ADDRESS``; ``auto``, ``local`` and other schemes are left to Ray.
    """
    address = address or os.environ.get("RAY_ADDRESS")
    if not address:
        return
    host, colon, port = address.removeprefix("ray://").rpartition(":")
    if not colon or not host or not port.isdigit():
        return  # auto, local, or a scheme Ray resolves itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as e:
        raise BuildError(
            address,
            "Ray cluster must be reachable",
            expected="a Ray head node listening at this address",
            got=f"{type(e).__name__}: {e}",
            hint="start one with `ray start --head`, or correct --ray-address",
        ) from e


@contextlib.contextmanager
def session(address: str | None):
    """Connected to the cluster for the block (if this process is not already): every stage's tasks share the
    connection."""
    ray = import_ray()
    if ray.is_initialized():
        yield
        return
    check_reachable(address)
    ray.init(address=address)
    try:
        yield
    finally:
        ray.shutdown()


def run_tasks(
    fn: Callable[[Any, Any], Any],
    shared: Any,
    items: Iterable[Any],
    address: str | None = None,
    max_retries: int = 3,
    progress: bool = True,
    labels: list[str] | None = None,
    desc: str = "ray tasks",
    unit: str = "task",
) -> list:
    """Run ``fn(shared, item)`` for every item as Ray tasks; return the results in the order of ``items``.

    Args:
        fn: a module-level function of hf_tokbin (workers import it by name).
            Each call must be independent and idempotent: a retried call may
            find the outputs of an earlier, killed attempt.
        shared: plain, picklable values given to every task (put once in the object store).
        items: picklable values, one task each.
        address: a running cluster's address (``HOST:PORT``, ``ray://...``
            or ``auto``). ``None`` follows Ray's own rule: ``RAY_ADDRESS`` if
            set, else the cluster last started on this machine with
            ``ray start``, else a Ray instance started here for the duration
            of the call. If this process is already connected to Ray, that
            connection is used and left open.
        max_retries: how many times Ray re-runs a task whose worker died or
            which raised an error other than a TokbinError (0: never).
        progress: show a tqdm bar that advances as tasks finish.
        labels: what each task is, for messages (default ``task ITEM``).
        desc, unit: the bar's name and what it counts.

    Raises:
        MissingDependencyError: Ray is not installed.
        TokbinError: a task's own input error, as the task raised it.
        BuildError: nothing listens at ``address`` (see :func:`check_reachable`),
            or a task still failing after ``max_retries`` retries.
    """
    if max_retries < 0:  # Ray reads -1 as "retry forever"
        raise BuildError(None, "max_retries", expected="0 or more", got=max_retries)
    ray = import_ray()
    items = list(items)
    connected_here = not ray.is_initialized()
    if connected_here:
        check_reachable(address)
        ray.init(address=address)
    try:
        labels = labels or [f"task {item}" for item in items]
        return _run_on_ray(ray, fn, shared, items, max_retries, progress, labels, (desc, unit))
    finally:
        if connected_here:
            ray.shutdown()


def _run_on_ray(
    ray, fn, shared, items: list, max_retries: int, progress: bool, labels: list[str], bar: tuple[str, str]
) -> list:
    from tqdm.auto import tqdm

    task = ray.remote(
        num_cpus=1,
        max_retries=max_retries,
        retry_exceptions=True,  # TokbinErrors never reach Ray: _run_task returns them
        scheduling_strategy=SCHEDULING_STRATEGY,
    )(_run_task)
    driver_versions = package_versions()
    named = getattr(fn, "func", fn)  # a functools.partial: name the task after the function it wraps
    fn_name = getattr(named, "__name__", type(named).__name__)
    shared_ref = ray.put(shared)  # one copy in the object store, not one per task
    position_of = {
        # Named after the item, so `ray list tasks` and Ray's retry messages say which.
        task.options(name=f"{fn_name}[{item if isinstance(item, int) else labels[position]}]").remote(
            fn, shared_ref, item, driver_versions, labels[position]
        ): position
        for position, item in enumerate(items)
    }
    results: list = [None] * len(items)
    pending = list(position_of)
    try:
        with tqdm(total=len(items), desc=bar[0], unit=bar[1], disable=not progress) as bar:
            while pending:
                (ref,), pending = ray.wait(pending, num_returns=1)
                position = position_of[ref]
                results[position] = _task_result(ray, ref, labels[position], max_retries)
                bar.update(1)
    except BaseException:
        # A failed task (or Ctrl-C) ends the map: free the cluster.
        for ref in pending:
            ray.cancel(ref)
        raise
    return results


def _task_result(ray, ref, label: str | int, max_retries: int) -> Any:
    """The value of a finished task, or the error that ends the map (``label`` names it)."""
    label = label if isinstance(label, str) else f"task {label}"
    try:
        value = ray.get(ref)
    except ray.exceptions.RayTaskError as e:
        full = disk_full_error(e.cause, label)  # the file, where the task's error names it
        if full is not None:
            raise full from e
        if isinstance(e.cause, OSError):
            raise _task_failed(
                label,
                max_retries,
                f"{type(e.cause).__name__}: {e.cause}",
                "every node must read the corpus and tokenizer, and write the output, at the same paths (shared "
                "storage)",
            ) from e
        raise  # a bug: keep Ray's error and the worker's traceback
    except ray.exceptions.RayError as e:
        # The worker process or its node died on every attempt.
        raise _task_failed(
            label,
            max_retries,
            f"{type(e).__name__}: {_first_line(e)}",
            "see `ray logs` on the cluster (killed? out of memory?), or allow more retries",
        ) from e
    if isinstance(value, _PermanentFailure):
        raise value.error
    return value


def _task_failed(label: str, max_retries: int, got: str, hint: str) -> BuildError:
    return BuildError(
        label, "Ray task did not finish", expected=f"success within {max_retries} retries", got=got, hint=hint
    )


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__
