"""The local engine: a build's parts one after another in this process, with one pool of worker processes for the whole build.

A part's encoding uses ``num_proc`` processes. Starting a pool costs about
0.4 s with ``datasets``' pools; a corpus of many small shards paid that per
shard, so ``num_proc`` 2 was slower than 1. :class:`WorkerPool` is started
once, on the first part that needs it, kept for every later part, and closed
when the parts are done (:func:`run_parts_locally`).
"""

from __future__ import annotations

import atexit
import collections
import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from .._io import progress_bar

_worker_state: Any = None  # in a worker process: the state its pool was started with


def _start_worker(state: Any, parent: int) -> None:
    global _worker_state
    import signal

    # Ctrl-C reaches the whole process group: the parent stops the build and says so on one line; a worker
    # interrupted too printed its own traceback (20-35 lines). It finishes the batch it holds and ends with the pool.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent)
    # One engine thread per worker: num_proc workers fill num_proc cores. gigatoken runs on the calling thread in a
    # worker by itself; tokenizers would start a thread per core in each worker (4 threads on 2 cores).
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    _worker_state = state


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent: int) -> None:
    """End this worker process when ``parent`` (the build) ends, however it ends (``kill -9`` included).

    On Linux the kernel sends SIGKILL at the parent's death (``prctl
    PR_SET_PDEATHSIG``); elsewhere a daemon thread watches the parent id. A
    parent already gone when this runs is caught by comparing ids. Orphaned
    workers would otherwise live on under pid 1. (The kernel signals when the
    *thread* that forked the worker ends: pools are started by the thread that
    runs the parts, which outlives them.)
    """
    import signal
    import sys

    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            _watch_parent(parent)
    else:
        _watch_parent(parent)
    if os.getppid() != parent:  # died before the line above took effect
        os._exit(1)


def _watch_parent(parent: int, every: float = 1.0) -> None:
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(1)

    threading.Thread(target=watch, name="hf_tokbin-parent-watch", daemon=True).start()


def _call_with_state(fn: Callable[[Any, Any], Any], item: Any) -> Any:
    return fn(_worker_state, item)


class WorkerPool:
    """``num_proc`` worker processes that each hold one ``state`` (the build's encoder), loaded once per process.

    Where the platform forks, workers inherit ``state`` (nothing is pickled);
    elsewhere each spawned worker unpickles it once. :meth:`map_ordered` keeps
    at most ``window`` items in flight, so memory is bounded by the items, not
    by how many there are.
    """

    def __init__(self, state: Any, num_proc: int):
        self.state = state
        self.num_proc = num_proc
        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
        self._executor = ProcessPoolExecutor(num_proc, mp_context=context, initializer=_start_worker, initargs=(state, os.getpid()))

    def map_ordered(self, fn: Callable[[Any, Any], Any], items: Iterable[Any], window: int | None = None) -> Iterator[Any]:
        """``fn(state, item)`` for every item, in worker processes; the results in the order of ``items``.

        ``fn`` must be a module-level function (it is pickled by name). A
        worker that dies (killed, out of memory) raises
        ``concurrent.futures.process.BrokenProcessPool`` here, never a hang.
        """
        window = window or 2 * self.num_proc
        pending: collections.deque = collections.deque()
        try:
            for item in items:
                pending.append(self._executor.submit(_call_with_state, fn, item))
                if len(pending) >= window:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:  # an error (or an abandoned generator): drop the rest of this map
                future.cancel()

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)


def prefetched(items: Iterable[Any], depth: int = 2) -> Iterator[Any]:
    """``items`` in order, made by a thread that runs up to ``depth`` items ahead of the consumer.

    The two sides then share the machine's cores wherever one of them is in
    code that releases the GIL (Parquet compression, SHA-256, file I/O). An
    exception in the producer is raised here, where its item would have come;
    a consumer that stops early stops the producer (within 0.1 s).
    """
    import queue
    import threading

    end = object()
    slots: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(entry) -> bool:
        while not stop.is_set():
            try:
                slots.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((item, None)):
                    return
            put((end, None))
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, raised there
            put((end, e))

    thread = threading.Thread(target=produce, name="hf_tokbin-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item, error = slots.get()
            if item is end:
                if error is not None:
                    raise error
                return
            yield item
    finally:
        stop.set()
        thread.join()


_shared: WorkerPool | None = None


def shared_pool(state: Any, num_proc: int) -> WorkerPool:
    """The open pool for ``state`` (the same object) and ``num_proc``, or a new one (closing a pool left for another state)."""
    global _shared
    if _shared is not None and (_shared.state is not state or _shared.num_proc != num_proc):
        close_shared_pool()
    if _shared is None:
        _shared = WorkerPool(state, num_proc)
    return _shared


def close_shared_pool() -> None:
    """Stop the shared pool's processes, if one is open."""
    global _shared
    pool, _shared = _shared, None
    if pool is not None:
        pool.close()


atexit.register(close_shared_pool)  # a pool opened outside run_parts_locally (build_part called directly) ends with the process


def run_parts_locally(fn: Callable[..., Any], plan: Any, indices: list[int], progress: bool = True) -> list:
    """``fn(plan, i, progress, close_on=...)`` for every ``i``, in order, with a bar over the parts; one worker pool serves them all.

    A part may hand its closing (fsync, digests, its receipt: mostly waiting
    on the disk) to ``close_on`` (:class:`ClosingInTurn`) and return that
    closing's future: the next part is encoded meanwhile. Every closing has
    ended (done, or failed and cleaned up) before this returns or raises.
    """
    from concurrent.futures import Future, ThreadPoolExecutor

    try:
        with ThreadPoolExecutor(1, thread_name_prefix="hf_tokbin-close") as executor:
            closing = ClosingInTurn(executor)
            results = [fn(plan, i, progress, close_on=closing) for i in progress_bar(indices, desc="parts", unit="part", disable=not progress or len(indices) < 2)]
            return [r.result() if isinstance(r, Future) else r for r in results]
    finally:
        close_shared_pool()


class ClosingInTurn:
    """Parts' closings on one thread, each started once the one before it has succeeded.

    ``closing(close, abort)`` waits for the previous part's closing (it ran
    while this part was encoded) and starts this one's; if the previous one
    failed, this part is aborted (its files removed) and that error raised:
    no part is finished after the first one that failed, as without the thread.
    """

    def __init__(self, executor):
        self._executor = executor
        self._running = None

    def __call__(self, close: Callable[[], Any], abort: Callable[[], None]):
        try:
            if self._running is not None:
                self._running.result()
        except BaseException:
            abort()
            raise
        self._running = self._executor.submit(close)
        return self._running


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity: a batch job's share, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def run_in_threads(fn: Callable[..., Any], plan: Any, items: list, num_threads: int, progress: bool = True, desc: str = "tasks") -> list:
    """``fn(plan, item)`` for every item on a pool of ``num_threads`` threads; the results in order, with a bar."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max(1, num_threads), thread_name_prefix="hf_tokbin-task") as pool:
        futures = [pool.submit(fn, plan, item) for item in items]
        try:
            return [f.result() for f in progress_bar(futures, desc=desc, unit="file", disable=not progress or len(items) < 2)]
        finally:
            for future in futures:  # an error: drop the tasks not started
                future.cancel()
