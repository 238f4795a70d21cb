"""The card's ``configs:`` entry for a release's preview, so the Hub's viewer and ``load_dataset(repo)`` read it.

As the Hub documents dataset configs (a card's YAML ``configs:`` with
``config_name`` and ``data_files`` per split): the preview is the one config,
and the default, so ``load_dataset(repo)`` gives one row per document with each
format's ids as columns. The token files stay out of the viewer, since only the
preview files are declared.
"""

from __future__ import annotations

from pathlib import Path

from ..formats.preview import PREVIEW_CONFIG, preview_path
from ..formats.release import SPLITS


def preview_metadata(root: Path) -> dict:
    """``{"viewer": True, "configs": [...]}`` when the release holds preview files, else ``{}`` (the card keeps
    ``viewer: false``)."""
    root = Path(root)
    files = [
        {"split": split, "path": preview_path(split)} for split in SPLITS if (root / preview_path(split)).is_file()
    ]
    if not files:
        return {}
    return {"viewer": True, "configs": [{"config_name": PREVIEW_CONFIG, "data_files": files, "default": True}]}


def preview_rows(root: Path) -> list[list[str]]:
    """The card's files-table row for the preview (not token data: no count of the card or stats.json includes it)."""
    files = [Path(root) / preview_path(split) for split in SPLITS if (Path(root) / preview_path(split)).is_file()]
    if not files:
        return []
    what = (
        "the first documents of each split, one row each (text, source, part, and each format's input_ids and "
        "tokens as columns), for the Hub's viewer and `load_dataset(repo)`; not counted in the token counts"
    )
    size = sum(f.stat().st_size for f in files)
    return [["`preview/{train,validation}.parquet`", what, f"{len(files):,}", f"{size:,}"]]
