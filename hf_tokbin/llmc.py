"""Old import path, kept for released dataset cards (``from hf_tokbin.llmc
import open_tokens``): the format lives in :mod:`hf_tokbin.formats.llmc`.
"""

import warnings

warnings.warn("hf_tokbin.llmc is deprecated: import hf_tokbin.formats.llmc", DeprecationWarning, stacklevel=2)

from .formats.llmc import *  # noqa: E402, F403
from .formats.llmc import LlmcFileEntry, LlmcHeader, LlmcWriter, TokensManifest, open_tokens, read_header, write_tokens  # noqa: E402, F401
