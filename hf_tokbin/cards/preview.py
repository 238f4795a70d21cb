"""The card's ``configs:`` entry for a release's preview, so the Hub's viewer and ``load_dataset(repo, "preview")`` read it.

As the Hub documents dataset configs (a card's YAML ``configs:`` with
``config_name`` and ``data_files`` per split); the token files stay out of
the viewer, since only the preview files are declared.
"""

from __future__ import annotations

from pathlib import Path

from ..formats.preview import PREVIEW_CONFIG, preview_path
from ..formats.release import SPLITS


def preview_metadata(root: Path) -> dict:
    """``{"viewer": True, "configs": [...]}`` when the release holds preview files, else ``{}`` (the card keeps ``viewer: false``)."""
    files = [{"split": split, "path": preview_path(split)} for split in SPLITS if (Path(root) / preview_path(split)).is_file()]
    if not files:
        return {}
    return {"viewer": True, "configs": [{"config_name": PREVIEW_CONFIG, "data_files": files, "default": True}]}


def preview_rows(root: Path) -> list[list[str]]:
    """The card's files-table row for the preview (not token data: no count of the card or stats.json includes it)."""
    files = [Path(root) / preview_path(split) for split in SPLITS if (Path(root) / preview_path(split)).is_file()]
    if not files:
        return []
    what = f'the first documents of each split and format (text, input_ids, tokens, source, part), for the Hub\'s viewer and `load_dataset(repo, "{PREVIEW_CONFIG}")`; not counted in the token counts'
    return [["`preview/{train,validation}.parquet`", what, f"{len(files):,}", f"{sum(f.stat().st_size for f in files):,}"]]
