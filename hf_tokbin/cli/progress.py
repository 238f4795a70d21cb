"""Whether a command shows progress bars: ``--quiet`` and the environment variables users set to hide them.

``TQDM_DISABLE`` (tqdm's own), ``HF_DATASETS_DISABLE_PROGRESS_BARS`` (``datasets``) and
``HF_HUB_DISABLE_PROGRESS_BARS`` (``huggingface_hub``) each hide every bar of a command: ours are created with an
explicit ``disable=``, which tqdm lets win over its environment, so they are read here once. Without bars, the Hub
client's download bars are turned off too (a build fetching its corpus or tokenizer, a pull).
"""

from __future__ import annotations

import os

DISABLING_VARIABLES = ("TQDM_DISABLE", "HF_DATASETS_DISABLE_PROGRESS_BARS", "HF_HUB_DISABLE_PROGRESS_BARS")
_TRUE = ("1", "true", "yes", "on")  # as datasets and huggingface_hub read their variables


def show_progress(quiet: bool) -> bool:
    """False with ``--quiet`` or any of :data:`DISABLING_VARIABLES` set true; then the Hub client's bars are off as well."""
    shown = not quiet and not any(os.environ.get(name, "").strip().lower() in _TRUE for name in DISABLING_VARIABLES)
    if not shown:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    return shown
