"""A resolved tokenizer's identity (:class:`TokenizerInfo`) and loading its ``tokenizer.json``.

What a build's workers need of a tokenizer, apart from finding it (:mod:`.resolve`, which fetches from the Hub):
the record that pins it, the loader, and the tokenizer :func:`.resolve.resolve_tokenizer` loaded, handed over by
the SHA-256 of its bytes so the encoder does not load the file again.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import TokenizerError
from ..formats.run_config import BoundaryToken
from ..formats.tokenizer_configs import ConfigFile

BYTE = "byte"
TOKENIZER_FILE = "tokenizer.json"
EOS_TOKEN = "<|endoftext|>"
# Where a boundary token came from (BoundaryToken.source), as run_config.json records it.
FROM_DOC_SEP_OPTION = "--doc-sep"
FROM_BOS_OPTION = "--bos"
# llm.c's own Llama 3 data (dev/data/fineweb.py tokenize_llama, tinystories.py): [<|begin_of_text|>] + ids per
# document, no EOS.
LLAMA3_BEGIN_OF_TEXT = "<|begin_of_text|>"
FROM_LLAMA3_LAYOUT = "--llmc-layout llama3: llm.c's own Llama 3 data"


@dataclass(frozen=True)
class TokenizerInfo:
    """Everything that pins a tokenizer. ``path`` is local and never written to reproducible files."""

    tokenizer_id: str
    sha256: str
    vocab_size: int
    doc_sep_id: int | None  # the separator / EOD: doc_sep.id
    source: str  # "byte", "local" or the Hub repo id
    revision: str | None
    subfolder: str | None
    path: str | None  # the local tokenizer.json (None for byte)
    doc_sep: BoundaryToken | None = None  # where doc_sep_id came from; filled in when only the id is given
    bos: BoundaryToken | None = None  # the token put before every document (--bos), if any
    # The config files beside tokenizer.json, as read once: the separator comes from these bytes, a release ships them.
    config_files: tuple[ConfigFile, ...] = ()

    def __post_init__(self):
        if self.doc_sep is None and self.doc_sep_id is not None:
            # Built from an id alone (a caller of the Python API): nothing proves text cannot encode to it.
            object.__setattr__(self, "doc_sep", BoundaryToken(self.doc_sep_id, None, FROM_DOC_SEP_OPTION, True))
        if (self.doc_sep.id if self.doc_sep is not None else None) != self.doc_sep_id:
            raise TokenizerError(
                self.path or self.source,
                "doc_sep must describe doc_sep_id",
                expected=self.doc_sep_id,
                got=self.doc_sep,
            )

    def to_record(self) -> dict:
        """The identity as run_config.json records it: no local path; the boundary tokens are recorded on their own.

        A tokenizer with a tokenizer.json also pins the config files read beside it (``config_files``: name ->
        SHA-256).
        """
        record = asdict(self)
        for name in ("path", "doc_sep_id", "doc_sep", "bos", "config_files"):
            del record[name]
        if self.path is not None:
            record["config_files"] = {f.name: f.sha256 for f in self.config_files}
        return record


# The tokenizer resolve_tokenizer loaded, by the SHA-256 of the bytes it was loaded from (the digest the release
# records), with its id space: the build's encoder takes it, once, instead of loading the file again (0.5-1.6 s for
# 128,000-262,144 entries), and so encodes with exactly the bytes recorded.
_handed_over: dict[str, tuple] = {}


def take_resolved_tokenizer(sha256: str | None):
    """(``tokenizers.Tokenizer``, id space) resolved from the bytes of digest ``sha256``, once; None if there is
    none."""
    return _handed_over.pop(sha256, None) if sha256 else None


def _read_tokenizer_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise TokenizerError(path, "cannot read tokenizer.json", got=e.strerror or str(e)) from None


def load_tokenizer_json(path: str | os.PathLike, data: bytes | None = None):
    """A ``tokenizers.Tokenizer`` from ``path`` (or from ``data``, its bytes), or a :class:`TokenizerError` naming the
    file."""
    from tokenizers import Tokenizer

    try:
        if data is not None:
            return Tokenizer.from_str(data.decode("utf-8"))
        return Tokenizer.from_file(os.fspath(path))
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except (
        BaseException
    ) as e:  # a bare Exception on malformed files; a Rust panic is pyo3's PanicException, a BaseException
        raise TokenizerError(
            path, "cannot load tokenizer.json", got=(str(e).splitlines() or [type(e).__name__])[0][:200]
        ) from None


def vocab_size_of(tokenizer) -> int:
    """The size of the id space: largest id + 1, over the model's vocabulary and the added tokens.

    Not ``get_vocab_size()``, which counts entries: a vocabulary with a gap
    (50,257 entries whose largest id is 65,636) needs ids up to 65,636, and the
    id width of every output file follows from this number.
    """
    ids = tokenizer.get_vocab(with_added_tokens=True).values()
    return max(ids, default=-1) + 1
