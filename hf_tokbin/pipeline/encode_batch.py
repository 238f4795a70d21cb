"""One batch of documents to the release's ids: what the build's encoding tasks and ``Dataset.map`` both run.

:class:`EncodeBatch` encodes with :mod:`hf_tokbin.tokenizer.encoder` (long
documents in bounded pieces), names the row an engine panics on, and checks
every id against the vocabulary before narrowing it to the release's width.
"""

from __future__ import annotations

import numpy as np

from ..engines.panics import engine_output_held, is_engine_panic, panic_message
from ..errors import BuildError, FormatError, TokenizerError
from ..formats.corpus_shard import utf8_buffer
from ..formats.ids import checked_ids
from ..formats.rules import id_dtype
from ..tokenizer.long_documents import encode_in_bounded_pieces


class EncodeBatch:
    """One batch of texts to ids, checked and narrowed to the release's width (``uint16``, or ``uint32`` above 65,536 ids).

    Made per batch in the process that encodes it; the encoder reaches worker
    processes once, when the build's pool starts (inherited by fork, or
    unpickled once per spawned worker), and each process loads its engines
    once. Called on a table (``{"text": ...}``) it returns a table of id
    lists.
    """

    def __init__(self, encoder, vocab_size: int, source: str | None = None, first_row: int = 0):
        self.encoder = encoder
        self.vocab_size = vocab_size
        self.source = source  # the shard, for the error message
        self.first_row = first_row  # the shard's row of the batch's first text, for the error message
        self.dtype = id_dtype(vocab_size)
        self.by_engine = (0, 0)  # after encode: this batch's documents the fast engine, and tokenizers, encoded

    def encode(self, texts) -> tuple[np.ndarray, np.ndarray]:
        """(flat ids in the release's width, ``int64`` lengths) of ``texts`` (a pyarrow string array or a list)."""
        before = tuple(getattr(self.encoder, "documents_by_engine", (0, 0)))
        try:
            with engine_output_held():  # a Rust panic's report is dropped: the error names the document instead
                # A pyarrow array: its UTF-8 buffer to the encoder whole where it takes it (encode_utf8), else its texts.
                buffer = None if isinstance(texts, list) else utf8_buffer(texts)
                encoded = None if buffer is None else self.encoder.encode_utf8(*buffer)
                if encoded is None:
                    texts = texts if isinstance(texts, list) else texts.to_pylist()
                    # Long documents in bounded pieces, same ids (tokenizer/long_documents.py).
                    encoded = encode_in_bounded_pieces(self.encoder, texts)
                flat, lengths = encoded
        except BaseException as error:
            if not is_engine_panic(error):
                raise
            raise self._panic_error(texts if isinstance(texts, list) else texts.to_pylist(), error) from None
        after = getattr(self.encoder, "documents_by_engine", (0, 0))
        self.by_engine = (after[0] - before[0], after[1] - before[1])  # a long document counts once, not per piece
        # Before the narrowing cast: an id the width cannot hold would wrap silently.
        try:
            flat = checked_ids(flat, self.vocab_size, self.source)
        except FormatError as e:
            raise BuildError(self.source, "the encoder produced an id outside the tokenizer's vocabulary", expected=f"ids < {self.vocab_size}", got=e.got) from None
        return np.asarray(flat, dtype=self.dtype), lengths

    def _panic_error(self, texts: list[str], error: BaseException) -> TokenizerError:
        """The error naming the first document of the batch on which an engine panics on its own (else the batch)."""
        for i, text in enumerate(texts):
            try:
                with engine_output_held():
                    encode_in_bounded_pieces(self.encoder, [text])
            except BaseException as own:
                if not is_engine_panic(own):
                    raise
                return TokenizerError(self.source, f"row {self.first_row + i}: the tokenizer's engine cannot encode this document (it panicked)", got=panic_message(own), hint=_panic_hint(own))
        last = self.first_row + len(texts) - 1
        return TokenizerError(self.source, f"rows {self.first_row}-{last}: the tokenizer's engine panicked on this batch", got=panic_message(error), hint=_panic_hint(error))

    def __call__(self, table):
        import pyarrow as pa

        flat, lengths = self.encode(table.column("text"))
        offsets = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return pa.table({"ids": pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(flat))})


def _panic_hint(error: BaseException) -> str:
    if "retry-limit" in str(error):
        return "the pre-tokenizer's regex backtracks past Oniguruma's retry limit on this text: simplify the pattern, or leave the document out"
    return "leave the document out, or report it to the engine named in the message"
