"""Old import path, kept for released dataset cards (``from hf_tokbin.megatron import MegatronPair``): the format lives in :mod:`hf_tokbin.formats.megatron`."""

from .formats.megatron import *  # noqa: F403
from .formats.megatron import MegatronPair, MegatronWriter, PairFiles  # noqa: F401
