"""``verify``: a release's preview (:mod:`hf_tokbin.formats.preview`) holds exactly the first documents of its
token files, and their text.

One row per document, first in the llm.c order (:mod:`hf_tokbin.formats.llmc_order`), recomputed from
run_config.json and the receipts (a mixture's train rows: its schedule, :mod:`hf_tokbin.verify.mixture`). A row's
``megatron_input_ids`` are that document's sequence in its pair; its ``llmc_input_ids``, the rows one after another,
are the split's first llm.c ids. Where the receipts count sources (a source column, a mixture), a row's ``source``
is one its part's receipt counts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..engines.panics import engine_panic_as
from ..errors import VerificationError
from ..formats import llmc, megatron
from ..formats.llmc_order import llmc_order
from ..formats.preview import columns, ids_column, preview_path, read_preview, row_ids, tokens_column
from ..formats.release import (
    FORMATS,
    LLMC_SPLIT,
    PREVIEW_DIR,
    SPLITS,
    TOKENIZER_DIR,
    TOKENIZER_FILE,
    Receipt,
    pair_path,
)
from ..formats.run_config import BYTE_TOKENIZER_SHA256, RunConfig, as_id_definition
from ..readers.views import LlmcSplit

SHIPPED_TOKENIZER = f"{TOKENIZER_DIR}/{TOKENIZER_FILE}"


def check_previews(
    root: Path,
    config: RunConfig,
    receipts: list[Receipt],
    listed: set[str],
    held: set[str] | None = None,
    mixture_runs: list[tuple[str, int, int]] | None = None,
) -> list[str]:
    """Every ``preview/<split>.parquet`` COMPLETE.json lists: rows as the format promises, ids those of the files, text
    that encodes to them.

    ``held``: the listed files present here (a partial copy's; all of ``listed`` by default). Every rule the held files
    allow runs; the rules that could not run are returned, one line each (absent files, a row over the text bound).
    ``mixture_runs``: a mixture's first train documents, ``(part, first document, documents)``, as its schedule
    recomputes them (:mod:`hf_tokbin.verify.mixture`); None where it cannot (no pairs here): a row's part is then
    only checked to be a train part.
    """
    held = listed if held is None else held
    previews = [preview_path(split) for split in SPLITS if preview_path(split) in listed]
    unknown = sorted(
        p for p in listed if p.startswith(f"{PREVIEW_DIR}/") and p not in {preview_path(s) for s in SPLITS}
    )
    if unknown:
        raise VerificationError(root / unknown[0], "a preview is preview/train.parquet or preview/validation.parquet")
    if previews and config.tokenizer_sha256 != BYTE_TOKENIZER_SHA256 and SHIPPED_TOKENIZER not in listed:
        raise VerificationError(
            root / previews[0],
            f"a release with a preview must ship {SHIPPED_TOKENIZER}, which checks its text",
            got="not listed in COMPLETE.json",
        )
    gaps = []
    for split in SPLITS:
        rel = preview_path(split)
        if rel in listed and rel not in held:
            gaps.append(f"{rel}: not checked (absent here)")
        elif rel in listed:
            runs = mixture_runs if split == "train" and config.options.mix is not None else ()
            gaps += _check_preview(root / rel, root, config, split, receipts, listed, held, runs)
    return gaps


def _check_preview(
    path: Path,
    root: Path,
    config: RunConfig,
    split: str,
    receipts: list[Receipt],
    listed: set[str],
    held: set[str],
    runs: list[tuple[str, int, int]] | tuple | None = (),
) -> list[str]:
    """One preview; ``runs``: a mixture's first train documents, None when they cannot be recomputed, () for the
    llm.c order."""
    rows = read_preview(path)
    formats = [f for f in FORMATS if f in config.formats]
    count = len(rows["document"])
    if list(rows) != list(columns(formats)) or count == 0:
        expected = ", ".join(columns(formats))
        got = ", ".join(rows) if count else "no row"
        rule = "preview must hold one row per document, with a column of ids for each format of the release"
        raise VerificationError(path, rule, expected=expected, got=got)
    gaps = []
    counted = {r.part: frozenset(r.sources) for r in receipts if r.sources is not None}  # each part's sources
    if runs is None:  # a mixture's train order without its pairs: each row's part is one of the train parts
        in_order = None
        parts = frozenset(r.part for r in receipts if split in r.splits and r.splits[split].documents)
        for i in range(count):
            _check_row(path, rows, i, parts, formats, counted)
    else:
        in_order = _documents_in_order(receipts, split, count, config.llmc_interleave_seed, runs or None)
        for i in range(count):
            _check_row(path, rows, i, [part for part, _, _ in in_order], formats, counted)
    for format in formats:
        if in_order is None and format == "megatron":
            gaps.append(f"{preview_path(split)}: {ids_column(format)} not checked: a mixture's train order needs "
                        "the Megatron pairs here")
            continue
        needed = _token_files_read(config, split, format, in_order, listed)
        absent = sorted(needed - held)
        if absent:
            not_compared = f"{ids_column(format)} not checked against the token files"
            gaps.append(f"{preview_path(split)}: {not_compared} ({absent[0]} absent here)")
            continue
        ids = [np.asarray(v, dtype=np.int64) for v in rows[ids_column(format)]]
        _check_ids(path, root, config, split, format, ids, in_order)
    if config.tokenizer_sha256 != BYTE_TOKENIZER_SHA256 and SHIPPED_TOKENIZER not in held:
        return gaps + [f"{preview_path(split)}: text not checked against input_ids ({SHIPPED_TOKENIZER} absent here)"]
    return gaps + _check_texts(path, root, config, rows, formats)


def _token_files_read(
    config: RunConfig, split: str, format: str, in_order: list[tuple[str, int, int]], listed: set[str]
) -> set[str]:
    """The token files the ids check of ``format`` reads: the preview documents' pairs, or the split's llm.c files."""
    if format == "megatron":
        return {pair_path(split, part, suffix) for part, _, _ in in_order for suffix in ("bin", "idx")}
    return {p for p in listed if p.startswith(f"{config.llmc_dir}/{LLMC_SPLIT[split]}-")}


TEXT_CHARS_CHECKED = 1 << 20  # a longer row's text is not encoded again here (memory, see below)


def _check_texts(path: Path, root: Path, config: RunConfig, rows: dict, formats: list[str]) -> list[str]:
    """Each row's text is its document's: the release's own tokenizer encodes it to the row's ids.

    The ids are the files' (checked above); what a reader of the preview sees is
    the text, so it is checked too, with ``tokenizers`` (the definition of the
    ids: :func:`~hf_tokbin.formats.run_config.as_id_definition`) and
    run_config.json's special-token rule. A text longer than
    ``TEXT_CHARS_CHECKED`` characters is not encoded (``tokenizers`` needs
    about 120 bytes of memory a byte of text, and a preview always holds its
    first document, however long): each such row is returned as a rule not run.
    """
    encode = _release_encoding(root, config)
    separator = config.llmc_separator or "before"
    gaps = []
    for document, text in enumerate(rows["text"]):
        if len(text) > TEXT_CHARS_CHECKED:
            bound = f"{len(text):,} characters, over the {TEXT_CHARS_CHECKED:,} checked"
            gaps.append(f"{path.parent.name}/{path.name}: row {document}: text not re-encoded: {bound}")
            continue
        with engine_panic_as(
            VerificationError, path, f"row {document}: the release's tokenizer cannot encode the text (it panicked)"
        ):
            ids = encode(text)
        for format in formats:
            expected = row_ids(format, ids, config.bos_id, config.eod_id, config.llmc_sep_id, separator)
            held = rows[ids_column(format)][document]
            if not np.array_equal(np.asarray(held, dtype=np.int64), expected.astype(np.int64)):
                raise VerificationError(
                    path,
                    f"row {document}: text must be the document's text: the release's tokenizer must encode it to the"
                    f" row's {ids_column(format)}",
                    expected=f"{expected[:8].tolist()}...",
                    got=f"{list(held[:8])}...",
                )
    return gaps


def _release_encoding(root: Path, config: RunConfig):
    """``text -> ids`` as the release defines them: ``tokenizer/tokenizer.json`` (already checked against
    run_config.json), or the byte tokenizer's."""
    if config.tokenizer_sha256 == BYTE_TOKENIZER_SHA256:
        return lambda text: np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.uint32)
    from tokenizers import Tokenizer

    with engine_panic_as(
        VerificationError, root / SHIPPED_TOKENIZER, "the release's tokenizer cannot be loaded (it panicked)"
    ):
        tokenizer = as_id_definition(
            Tokenizer.from_file(str(root / SHIPPED_TOKENIZER)), config.special_tokens == "parsed"
        )
    return lambda text: np.asarray(tokenizer.encode(text, add_special_tokens=False).ids, dtype=np.uint32)


def _documents_in_order(
    receipts: list[Receipt], split: str, count: int, seed: int | None, named_runs: list | None = None
) -> list[tuple[str, int, int]]:
    """The split's first ``count`` documents in the llm.c order (formats/llmc_order.py), or in ``named_runs``
    (``(part, first document, documents)``: a mixture's train stream).

    Each is (its part, its index in the Megatron split, its index in its part)."""
    parts = [r for r in receipts if split in r.splits and r.splits[split].documents]
    documents = [r.splits[split].documents for r in parts]
    before = np.concatenate(([0], np.cumsum(documents, dtype=np.int64))).tolist()
    if named_runs is None:
        runs = llmc_order(seed, split, documents).first_documents(count)
    else:
        position = {r.part: p for p, r in enumerate(parts)}
        runs = [(position[part], first, n) for part, first, n in named_runs]
    in_order = [(parts[p].part, before[p] + first + j, first + j) for p, first, n in runs for j in range(n)]
    return in_order[:count]


def _check_row(
    path: Path,
    rows: dict,
    i: int,
    parts: list[str] | frozenset[str],
    formats: list[str],
    counted: dict[str, frozenset[str]],
) -> None:
    """Row ``i``: its number, its part (``parts[i]``, or one of ``parts`` where the order is not known), its source
    (one its part's receipt counts, where receipts count sources: ``counted``) and counts."""
    where = f"row {i}"
    if rows["document"][i] != i:
        rule = f"{where}: document must count the split's documents from 0"
        raise VerificationError(path, rule, expected=i, got=rows["document"][i])
    if isinstance(parts, frozenset):
        known, expected = rows["part"][i] in parts, "one of the split's parts"
    else:
        known, expected = i < len(parts) and rows["part"][i] == parts[i], parts[i] if i < len(parts) else "none"
    if not known:
        rule = f"{where}: part must be the part holding the document (its receipts' counts)"
        raise VerificationError(path, rule, expected=expected, got=rows["part"][i])
    if any(rows[name][i] is None for name in rows):
        raise VerificationError(path, f"{where}: no column may be null")
    sources = counted.get(rows["part"][i])
    if sources is not None and rows["source"][i] not in sources:
        rule = f"{where}: source must be the source its part's receipt counts"
        raise VerificationError(path, rule, expected=", ".join(sorted(sources)), got=rows["source"][i])
    for format in formats:
        tokens, ids = rows[tokens_column(format)][i], rows[ids_column(format)][i]
        if tokens != len(ids):
            rule = f"{where}: {tokens_column(format)} must be the number of {ids_column(format)}"
            raise VerificationError(path, rule, expected=len(ids), got=tokens)


def _check_ids(
    path: Path,
    root: Path,
    config: RunConfig,
    split: str,
    format: str,
    ids: list[np.ndarray],
    in_order: list[tuple[str, int, int]],
) -> None:
    """Megatron: each row is that document's sequence.

    llm.c: the rows, one after the other, are the split's first ids, each a document."""
    if format == "megatron":
        by_part: dict[str, list[int]] = {}
        for k, (part, _, _) in enumerate(in_order):
            by_part.setdefault(part, []).append(k)
        for part, rows in sorted(by_part.items()):  # one pair open at a time: a release has a pair per input shard
            pair = megatron.MegatronPair(root / pair_path(split, part, "bin"))
            for k in rows:
                if not np.array_equal(ids[k], np.asarray(pair[in_order[k][2]], dtype=np.int64)):
                    raise VerificationError(
                        path,
                        f"megatron document {in_order[k][1]} (row {k}): "
                        "megatron_input_ids must be the Megatron sequence",
                        got=f"{ids[k][:8].tolist()}...",
                    )
        return
    stream = LlmcSplit.open(root, split, check_ids=False)
    joined = np.concatenate(ids)
    if joined.size > stream.n_tokens or not np.array_equal(
        np.asarray(stream.read(0, joined.size), dtype=np.int64), joined
    ):
        raise VerificationError(path, "llmc_input_ids, one row after the other, must be the split's first llm.c ids")
    # Each row is one document as the layout puts it: [sep, bos, text] or [bos, text, sep]. A scan for the separator
    # cannot cut the stream (text may give the separator's id), so the rows' own ends are checked against the layout.
    bos = config.bos_id
    head, tail = (
        list(ids) for ids in llmc.document_boundaries(config.llmc_sep_id, bos, config.llmc_separator or "before")
    )
    for k, row in enumerate(ids):
        if row.size < len(head) + len(tail) or row[: len(head)].tolist() != head or (tail and row[-1] != tail[0]):
            raise VerificationError(
                path,
                f"llmc row {k} must be one document in the llm.c layout "
                f"(separator {config.llmc_separator}, bos {bos})",
                expected=[*head, "...", *tail],
                got=row[:4].tolist(),
            )
