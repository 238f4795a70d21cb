"""hf_tokbin: tokenized LLM pretraining releases from Hugging Face datasets."""

from .errors import (
    BuildError,
    CorpusInputError,
    FormatError,
    HubError,
    TokbinError,
    TokenizerError,
    VerificationError,
)
from .llmc import LlmcWriter, TokensManifest, open_tokens, write_tokens
from .megatron import MegatronPair, MegatronWriter

__version__ = "0.1.0"

__all__ = [
    "BuildError",
    "CorpusInputError",
    "FormatError",
    "HubError",
    "LlmcWriter",
    "MegatronPair",
    "MegatronWriter",
    "TokbinError",
    "TokenizerError",
    "TokensManifest",
    "VerificationError",
    "open_tokens",
    "write_tokens",
]
