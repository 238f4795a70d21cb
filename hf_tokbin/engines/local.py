"""The local engine: maps on this machine, in threads or in worker processes.

- :func:`run_in_threads`: a function over items on a pool of threads (file copies and hashes: the kernel and
  hashlib work without the GIL).
- :class:`WorkerPool`: a function over items in ``num_proc`` worker processes, a bounded window in flight.
  Starting a pool costs about 0.4 s; a caller that maps many times (a build, once per part) keeps one open
  (:func:`shared_pool`) and closes it when done (:func:`close_shared_pool`).
- :func:`prefetched`: items made on a thread a few ahead of their consumer.
- :func:`map_one_behind`: a function over items on a thread of its own, each call while the next item is made.
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
    maps, which outlives them.)
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
    """``num_proc`` worker processes that each hold one ``state`` (a build's plan), given once per process.

    Where the platform forks, workers inherit ``state`` (nothing is pickled);
    elsewhere each spawned worker unpickles it once. :meth:`map_ordered` keeps
    at most ``window`` items in flight, so memory is bounded by the items, not
    by how many there are.
    """

    def __init__(self, state: Any, num_proc: int):
        self.state = state
        self.num_proc = num_proc
        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
        self._executor = ProcessPoolExecutor(
            num_proc, mp_context=context, initializer=_start_worker, initargs=(state, os.getpid())
        )

    def map_ordered(
        self, fn: Callable[[Any, Any], Any], items: Iterable[Any], window: int | None = None
    ) -> Iterator[Any]:
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
    """The open pool for ``state`` (the same object) and ``num_proc``, or a new one (closing a pool left for another
    state)."""
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


atexit.register(close_shared_pool)  # a pool its caller did not close ends with the process


def map_one_behind(
    fn: Callable[[Any], Any], items: Iterable[Any], thread_name: str = "hf_tokbin-behind"
) -> Iterator[Any]:
    """``fn(item)`` for every item on a thread of its own, one call at a time, each while the next item is made.

    The items' iterator runs in the caller's thread; ``fn(item)`` is started once the call before it has
    succeeded, so after a call fails no other call starts: its error is raised once the next item is made, and
    the items' iterator is closed (a generator gets ``GeneratorExit`` at the item it gave last, which no call
    took). Every call has ended (done, or failed) before this returns or raises. The results come in order.
    """
    from concurrent.futures import ThreadPoolExecutor

    iterator = iter(items)
    try:
        with ThreadPoolExecutor(1, thread_name_prefix=thread_name) as executor:
            running = None
            for item in iterator:
                if running is not None:
                    yield running.result()
                running = executor.submit(fn, item)
            if running is not None:
                yield running.result()
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity: a batch job's share, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def run_in_threads(
    fn: Callable[..., Any],
    shared: Any,
    items: list,
    num_threads: int,
    progress: bool = True,
    desc: str = "tasks",
    unit: str = "file",
) -> list:
    """``fn(shared, item)`` for every item on a pool of ``num_threads`` threads; the results in order, with a bar."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max(1, num_threads), thread_name_prefix="hf_tokbin-task") as pool:
        futures = [pool.submit(fn, shared, item) for item in items]
        try:
            bar = progress_bar(futures, desc=desc, unit=unit, disable=not progress or len(items) < 2)
            return [f.result() for f in bar]
        finally:
            for future in futures:  # an error: drop the tasks not started
                future.cancel()
