"""Readers for consumers: numpy views of a release's splits, random
windows, a Grain source (:mod:`.views`); torch optional (:mod:`.torch`).
"""

from .views import (
    LlmcSplit,
    MegatronSplit,
    MegatronStream,
    RandomWindows,
    TokenStream,
    find_llmc_folder,
    find_megatron_pairs,
    llmc_split_name,
    megatron_split_name,
    open_llmc_file,
    scan_positions,
)

__all__ = [
    "LlmcSplit",
    "MegatronSplit",
    "MegatronStream",
    "RandomWindows",
    "TokenStream",
    "find_llmc_folder",
    "find_megatron_pairs",
    "llmc_split_name",
    "megatron_split_name",
    "open_llmc_file",
    "scan_positions",
]
