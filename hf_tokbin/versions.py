"""The packages whose version can change an id, and their versions in this process.

- ``hf_tokbin``: the routing of documents between engines, the cuts of long
  documents, every byte of the outputs;
- ``tokenizers``: the definition of every id;
- ``gigatoken``: the fast engine, used only for the documents the fast-path
  proof covers, and that proof holds for the version it was made with.

Each worker of a distributed build must run the driver's versions of all
three (:mod:`hf_tokbin.engines.ray` checks them on every task), and the
proof's cache is keyed by them (:mod:`hf_tokbin.pipeline.encode`).
"""

from __future__ import annotations

import importlib.metadata

from . import __version__

#: Every package whose version can change an id (see the module docstring).
ID_PACKAGES = ("hf_tokbin", "tokenizers", "gigatoken")


def package_version(name: str) -> str | None:
    """The installed version of ``name``; None if it is not installed or its metadata is broken or gone."""
    if name == "hf_tokbin":
        return __version__  # the code running, even from a source tree
    try:
        version = importlib.metadata.version(name)
    except Exception:  # noqa: BLE001 - PackageNotFoundError, or a malformed dist-info: either way no known version
        return None
    return version if isinstance(version, str) and version else None


def package_versions(names: tuple[str, ...] = ID_PACKAGES) -> dict[str, str | None]:
    """``{name: version or None}`` for ``names`` (default :data:`ID_PACKAGES`), in that order."""
    return {name: package_version(name) for name in names}
