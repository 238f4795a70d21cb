"""Which repo paths a pull may write, and which of them ``--include`` selects.

A path from a server's record is written only when it is one of the layout's
own paths (a release in the Megatron release layout, or a corpus folder), as plain text:

- relative, no empty, ``.`` or ``..`` component, no component starting with ``.``
  (``.git/config`` would run the server's commands on the next ``git status``);
- printable characters only, no backslash (no NUL, newline, terminal escape or bidi control);
- release: ``shards/{train,validation}/part-N.{bin,idx}``, ``receipts/part-N.json``,
  ``tokens/<tokenizer_id>/<dataset>/<file>``, ``preview/{train,validation}.parquet``, ``run_config.json``,
  ``stats.json``, ``README.md``;
- corpus: ``data/...<name>.parquet`` (the shards ``_MANIFEST.json`` lists; ``README.md`` is fetched by name).

``--include`` names parts of a release by format and split: ``FORMAT:SPLIT``,
``FORMAT`` (every split) or ``SPLIT`` (every format), with FORMAT ``megatron``
or ``llmc`` and SPLIT ``train`` or ``validation`` (``val`` accepted). A corpus
takes splits only. An item with ``/``, ``.`` or a glob character is a repo
path or a glob of them (``shards/train/part-000000.bin``, ``shards/validation/*``),
as ``hf download --include`` takes them. ``--exclude`` takes paths and globs too:
a token file or corpus shard it matches is left out. The records
(``run_config.json``, ``stats.json``, ``README.md``, the receipts, the llm.c
``_MANIFEST.json`` and the preview) are always fetched: they are what the
selected files are verified against.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from ..errors import HubError
from ..formats.release import FORMATS, SPLITS, is_layout_path
from ..formats.rules import is_folder_name, split_name
from .revision import shown

# the shards a corpus manifest lists (the card is fetched by name)
_CORPUS_PATH = re.compile(r"data/(?:[^/]+/)*[^/]+\.parquet")
_LLMC_FILE = re.compile(r"tokens/[^/]+/[^/]+/(train|val)-[0-9]+\.bin")
_PAIR_FILE = re.compile(r"shards/(train|validation)/part-[0-9]+\.(?:bin|idx)")


def check_path(kind: str, path: str, listed_in: str) -> str:
    """``path`` if a pull may write it for a ``kind`` ("release" or "corpus") repo; else a :class:`HubError`."""
    if kind == "release":
        ok = is_layout_path(path)  # formats.release: the rule verify applies too
    else:
        ok = (
            isinstance(path, str)
            and _CORPUS_PATH.fullmatch(path) is not None
            and all(map(is_folder_name, path.split("/")))
        )
    if not ok:
        raise HubError(
            listed_in,
            f"lists a path that is no part of a {kind}'s layout; nothing was written",
            got=shown(path),
            hint="a pull writes only relative, non-hidden paths of the layout (see docs/security.md)",
        )
    return path


def is_token_file(path: str) -> bool:
    """Whether a release path is a token file (a Megatron ``.bin``/``.idx`` or an llm.c ``.bin``): the big files."""
    return _PAIR_FILE.fullmatch(path) is not None or _LLMC_FILE.fullmatch(path) is not None


def check_path_in_repo(value: str | None) -> str:
    """``--path-in-repo``: the folder of the repo holding the release, as ``a/b`` ("" for the top); each component
    a plain, non-hidden name."""
    folder = (value or "").strip("/")
    if folder and not all(map(is_folder_name, folder.split("/"))):
        raise HubError(
            "--path-in-repo", "must be a folder of plain, non-hidden names such as releases/v1", got=shown(value)
        )
    return folder


@dataclass(frozen=True)
class Include:
    """What ``--include`` selects: (format, split) pairs, or (``pairs`` None) the whole repo."""

    pairs: frozenset[tuple[str, str]] | None = None
    specs: tuple[str, ...] = ()  # as given: the --include items, then "exclude PATTERN" for each --exclude
    names_a_format: bool = False
    globs: tuple[str, ...] = ()  # paths and patterns of repo paths, as ``hf download --include`` takes them
    excludes: tuple[str, ...] = ()  # paths and patterns of repo paths left out, as ``hf download --exclude``

    @classmethod
    def parse(cls, specs, excludes=()) -> Include:
        """``FORMAT:SPLIT``, ``FORMAT`` or ``SPLIT`` items, or paths and globs (``shards/validation/*``),
        comma-separated or repeated; ``excludes``: paths and globs."""
        items = _items(specs)
        excluded = tuple(_items(excludes))
        if not items and not excluded:
            return cls()
        globs = tuple(item for item in items if any(c in item for c in "*?[/."))
        pairs, names_a_format = set(), False
        if not items:  # --exclude alone: everything it does not match
            pairs = {(f, s) for f in FORMATS for s in SPLITS}
        for item in (item for item in items if item not in globs):
            if ":" in item:
                fmt, _, split = item.partition(":")
                bad = fmt not in FORMATS or split_name(split) is None
            else:
                fmt, split = (item, "") if item in FORMATS else ("", item)
                bad = not fmt and split_name(split) is None
            if bad:
                raise HubError(
                    "--include",
                    "each item is FORMAT:SPLIT, FORMAT or SPLIT",
                    expected=f"FORMAT among {', '.join(FORMATS)}, SPLIT among {', '.join(SPLITS)}",
                    got=shown(item),
                )
            names_a_format |= bool(fmt)
            for f in [fmt] if fmt else FORMATS:
                for s in [split_name(split)] if split else SPLITS:
                    pairs.add((f, s))
        specs = (*items, *(f"exclude {pattern}" for pattern in excluded))
        return cls(frozenset(pairs), specs, names_a_format, globs, excluded)

    @property
    def everything(self) -> bool:
        return self.pairs is None

    def selects(self, path: str) -> bool:
        """Whether the release file ``path`` is fetched: a selected part, or a record."""
        if self.pairs is None:
            return True
        if match := _PAIR_FILE.fullmatch(path):
            stem = path.rsplit(".", 1)[0]  # a pattern naming one file of a Megatron pair fetches (or leaves) the pair
            pair = (f"{stem}.bin", f"{stem}.idx")
            return (("megatron", match.group(1)) in self.pairs or self._globbed(*pair)) and not self._excluded(*pair)
        if match := _LLMC_FILE.fullmatch(path):
            wanted = ("llmc", split_name(match.group(1))) in self.pairs or self._globbed(path)
            return wanted and not self._excluded(path)
        return True  # records: run_config.json, stats.json, README.md, receipts, the llm.c _MANIFEST.json

    def selects_split(self, split: str, path: str = "") -> bool:
        """Whether the corpus shard ``path`` of ``split`` is fetched (a corpus has no formats)."""
        if self.names_a_format:
            raise HubError(
                "--include", "a corpus repo has no formats: name splits only", got=shown(", ".join(self.specs))
            )
        if self.pairs is None:
            return True
        return (any(s == split for _, s in self.pairs) or self._globbed(path)) and not self._excluded(path)

    def unmatched(self, paths) -> list[str]:
        """The paths and globs of ``--include`` and ``--exclude`` that match none of ``paths``."""
        paths = list(paths)
        return [g for g in (*self.globs, *self.excludes) if not any(fnmatch.fnmatchcase(p, g) for p in paths)]

    def _globbed(self, *paths: str) -> bool:
        """Whether a path or glob of ``--include`` matches one of ``paths`` (``*`` crosses folders)."""
        return any(fnmatch.fnmatchcase(path, glob) for glob in self.globs for path in paths if path)

    def _excluded(self, *paths: str) -> bool:
        return any(fnmatch.fnmatchcase(path, glob) for glob in self.excludes for path in paths if path)


def _items(specs) -> list[str]:
    """The items of repeated, comma-separated option values."""
    return [item.strip() for spec in (specs or ()) for item in spec.split(",") if item.strip()]
