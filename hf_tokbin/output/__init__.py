"""Where a build writes: one interface for a local folder and an fsspec URL.

Every machine writes a part's files into a local folder, :attr:`Output.work`,
exactly as they end up in the release, and then calls :meth:`Output.publish`
with the files in completion order (receipt last, ``COMPLETE.json`` last).
For a local folder ``work`` is the release folder itself and publishing does
nothing; for a URL ``work`` is a scratch folder on this machine and
publishing uploads, then deletes the local copies. The build never asks which
of the two it has.

- :class:`LocalFolder` (``output/local.py``): ``--out DIR``.
- :class:`UrlFolder` (``output/url.py``): ``--out s3://...``, ``gs://...``, ``hf://buckets/...``, ``file://``, ``memory://``.
"""

from __future__ import annotations

import contextlib
import os

from .local import LocalFolder, Output
from .url import UrlFolder, check_url, is_url, scratch_key, scratch_root


def open_output(out: str, scratch: str | None = None) -> Output:
    """The output ``--out`` names: a URL (``scratch`` is its scratch key) or a local folder."""
    if is_url(out):
        return UrlFolder(out, os.fspath(scratch_root(scratch or scratch_key(out, ""))))
    return LocalFolder(out)


@contextlib.contextmanager
def lock_before_planning(out: str | os.PathLike):
    """Hold a local ``--out``'s build lock from before the inputs are loaded (a concurrent build refuses at once).

    :func:`hf_tokbin.pipeline.run_build` takes it, the one place a build
    does. A URL's lock is its scratch folder's, known only once the build is
    planned (``plan.output.lock()``, taken there too). An ``--out`` this made and that ends holding nothing
    but the lock (the inputs were refused) is removed again.
    """
    out = os.fspath(out)
    if is_url(out):
        yield
        return
    made = not os.path.lexists(out)
    try:
        with LocalFolder(out).lock():
            yield
    except BaseException:
        if made:
            _remove_if_only_the_lock(out)
        raise


def _remove_if_only_the_lock(out: str) -> None:
    from .local import LOCK_NAME

    work = os.path.dirname(LOCK_NAME)
    with contextlib.suppress(OSError):
        if os.listdir(out) == [work] and os.listdir(os.path.join(out, work)) == [os.path.basename(LOCK_NAME)]:
            os.unlink(os.path.join(out, LOCK_NAME))
            os.rmdir(os.path.join(out, work))
            os.rmdir(out)


__all__ = [
    "lock_before_planning",
    "LocalFolder",
    "Output",
    "UrlFolder",
    "check_url",
    "is_url",
    "open_output",
    "scratch_key",
    "scratch_root",
]
