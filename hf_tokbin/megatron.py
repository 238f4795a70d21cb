"""Old import path, kept for released dataset cards (``from hf_tokbin.megatron
import MegatronPair``): the format lives in :mod:`hf_tokbin.formats.megatron`.
"""

import warnings

warnings.warn("hf_tokbin.megatron is deprecated: import hf_tokbin.formats.megatron", DeprecationWarning, stacklevel=2)

from .formats.megatron import *  # noqa: E402, F403
from .formats.megatron import MegatronPair, MegatronWriter, PairFiles  # noqa: E402, F401
