"""Whether a command shows progress bars: ``--quiet`` and the environment variables users set to hide them.

``TQDM_DISABLE`` (tqdm's own), ``HF_DATASETS_DISABLE_PROGRESS_BARS`` (``datasets``) and
``HF_HUB_DISABLE_PROGRESS_BARS`` (``huggingface_hub``) each hide every bar of a command: ours are created with an
explicit ``disable=``, which tqdm lets win over its environment, so they are read here once. Without bars, the Hub
client's download bars are turned off too (a build fetching its corpus or tokenizer, a pull).
"""

from __future__ import annotations

import os
import re
import sys

DISABLING_VARIABLES = ("TQDM_DISABLE", "HF_DATASETS_DISABLE_PROGRESS_BARS", "HF_HUB_DISABLE_PROGRESS_BARS")
_TRUE = ("1", "true", "yes", "on")  # as datasets and huggingface_hub read their variables


def show_progress(quiet: bool) -> bool:
    """False with ``--quiet`` or any of :data:`DISABLING_VARIABLES` set true.

    Then the Hub client's bars are off as well.
    """
    shown = not quiet and not any(os.environ.get(name, "").strip().lower() in _TRUE for name in DISABLING_VARIABLES)
    if not shown:
        _hub_bars_off()
    return shown


def _hub_bars_off() -> None:
    """The Hub client's bars off: by its function once it is loaded, else by the variable it reads when it is.

    Importing the client only to turn its bars off cost a local build a tenth of its start-up.
    """
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    else:
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"  # read by huggingface_hub.constants at its import


LOG_MININTERVAL = "30"  # seconds between a bar's lines in a log (tqdm's default, 0.1 s, suits a terminal)
_TERMINAL_CONTROL = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # tqdm's cursor moves between nested bars


def log_progress_seldom() -> None:
    """In a log, a bar writes a line at most every :data:`LOG_MININTERVAL` seconds.

    ``TQDM_MININTERVAL``, when set, says otherwise. tqdm reads its ``TQDM_*`` variables when it is imported:
    too late once it is (a caller of :func:`hf_tokbin.cli.main`).
    """
    if "tqdm" not in sys.modules:
        os.environ.setdefault("TQDM_MININTERVAL", LOG_MININTERVAL)


class LogLines:
    """A stream for a log that is not a terminal: tqdm's redraws (``\\r``, cursor moves, padding) become one line each.

    Text without a carriage return passes as it is; a line a redraw replaced is ended, and lines left blank
    (a bar cleared, a move down between nested bars) are dropped.
    """

    def __init__(self, stream):
        self._stream = stream
        self._line = ""  # the unfinished line

    def write(self, text: str) -> int:
        for index, piece in enumerate(_TERMINAL_CONTROL.sub("", text).split("\r")):
            if index:  # a carriage return: the line so far is finished
                self._end_line()
            *finished, self._line = (self._line + piece).split("\n")
            self._stream.write("".join(f"{line.rstrip()}\n" for line in finished if line.strip()))
        return len(text)

    def _end_line(self) -> None:
        if self._line.strip():
            self._stream.write(self._line.rstrip() + "\n")
        self._line = ""

    def close(self) -> None:
        """Write the unfinished line (the stream itself stays open)."""
        self._end_line()
        self._stream.flush()

    def __getattr__(self, name):
        return getattr(self._stream, name)
