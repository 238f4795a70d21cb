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

import os

from .local import LocalFolder, Output
from .url import UrlFolder, check_url, is_url, scratch_key, scratch_root


def open_output(out: str, scratch: str | None = None) -> Output:
    """The output ``--out`` names: a URL (``scratch`` is its scratch key) or a local folder."""
    if is_url(out):
        return UrlFolder(out, os.fspath(scratch_root(scratch or scratch_key(out, ""))))
    return LocalFolder(out)


__all__ = ["LocalFolder", "Output", "UrlFolder", "check_url", "is_url", "open_output", "scratch_key", "scratch_root"]
