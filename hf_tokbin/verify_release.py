"""``hf-tokbin verify DIR``: re-check a whole release, every byte the seeds promise.

In order, stopping at the first broken promise (the error names the file):

1. ``COMPLETE.json`` exists and lists exactly the files present, each with
   its size and SHA-256.
2. ``run_config.json`` names the tokenizer (vocab size, separator) and formats.
3. Each receipt matches ``COMPLETE.json``; each Megatron pair is valid, one
   document per sequence, every sequence ends with EOD, ids < vocab_size, and
   its counts equal the receipt's.
4. The llm.c manifest and every token file: header, size, ids < vocab_size,
   SHA-256 and n_tokens as listed, a separator before each document.
5. Conservation: per split, the receipts' documents equal the corpus rows
   pinned in ``run_config.json``, and tokens agree across receipts, Megatron
   pairs, llm.c files and ``stats.json``.
6. Split disjointness: every part's outputs sit in the split of its input
   shard, and no input shard appears twice.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from . import llmc, llmc_llama3, megatron
from ._io import read_json
from .errors import FormatError, VerificationError
from .release import (
    COMPLETE_NAME,
    LLMC_SPLIT,
    RECEIPTS_DIR,
    RUN_CONFIG_NAME,
    SPLITS,
    STATS_NAME,
    Complete,
    Receipt,
    SplitCounts,
    check_files,
    check_receipts,
    pair_path,
)
from .verify import file_magic


@dataclass
class ReleaseReport:
    path: Path
    files: int = 0
    bytes: int = 0
    splits: dict[str, SplitCounts] = field(default_factory=dict)
    formats: tuple[str, ...] = ()

    def summary(self) -> str:
        lines = [f"{self.path}: OK: {self.files} files, {self.bytes / 1e6:,.1f} MB, formats {', '.join(self.formats)}"]
        for split, c in self.splits.items():
            lines.append(f"  {split:<11}{c.documents:>12,} documents {c.text_tokens:>15,} text tokens {c.eod_tokens:>12,} EOD")
        return "\n".join(lines)


def verify_release(root: str | os.PathLike) -> ReleaseReport:
    root = Path(root)
    if not (root / COMPLETE_NAME).exists():
        raise VerificationError(root, "release is incomplete: no COMPLETE.json", hint="a release is complete only when COMPLETE.json is present")
    complete = Complete.read(root)
    listed = {f.path: f for f in complete.files}
    present = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    for rel in present:
        if rel != COMPLETE_NAME and rel not in listed:
            raise VerificationError(root / rel, "file is not listed in COMPLETE.json")
    check_files(root, complete.files, COMPLETE_NAME, progress=False)

    config = read_json(root / RUN_CONFIG_NAME, VerificationError)
    try:
        vocab_size = int(config["tokenizer"]["vocab_size"])
        doc_sep_id = config["tokenizer"]["doc_sep_id"]
        formats = tuple(config["formats"])
        shards = config["corpus"]["shards"]
        dataset = config["dataset"]
        tokenizer_id = config["tokenizer"]["tokenizer_id"]
    except (KeyError, TypeError, ValueError) as e:
        raise VerificationError(root / RUN_CONFIG_NAME, "run_config.json lacks a field", got=str(e)) from None

    receipts = _check_receipts(root, complete, shards, formats, vocab_size, config.get("eod_id"))
    totals = _totals(receipts)
    for split in SPLITS:
        rows = sum(s["rows"] for s in shards if s["split"] == split)
        docs = totals[split].documents if split in totals else 0
        if docs != rows:
            raise VerificationError(root / RECEIPTS_DIR, f"{split}: documents in receipts must equal corpus rows (nothing lost)", expected=rows, got=docs)
    if "llmc" in formats:
        _check_llmc(root, f"tokens/{tokenizer_id}/{dataset}", listed, totals, vocab_size, doc_sep_id)
    _check_stats(root, totals)
    return ReleaseReport(root, len(complete.files) + 1, sum(f.size for f in complete.files), totals, formats)


def _check_receipts(root: Path, complete: Complete, shards: list, formats, vocab_size: int, eod_id) -> list[Receipt]:
    by_part = {r.part: r for r in check_receipts(root, complete)}
    if len(by_part) != len(shards):
        raise VerificationError(root / RECEIPTS_DIR, "one receipt per input shard of run_config.json", expected=len(shards), got=len(by_part))
    receipts = []
    seen_inputs = set()
    for i, shard in enumerate(shards):
        path = root / RECEIPTS_DIR / f"part-{i:06d}.json"
        receipt = by_part.get(f"part-{i:06d}")
        if receipt is None:
            raise VerificationError(path, "receipt of an input shard is missing")
        if receipt.input_shard.path != shard["path"] or receipt.input_shard.sha256 != shard["sha256"]:
            raise VerificationError(path, "receipt names a different input shard than run_config.json", expected=shard["path"], got=receipt.input_shard.path)
        if receipt.input_shard.sha256 in seen_inputs and shard["rows"]:
            raise VerificationError(path, "the same input shard appears twice (splits must be disjoint)", got=receipt.input_shard.path)
        seen_inputs.add(receipt.input_shard.sha256)
        if set(receipt.splits) - {shard["split"]}:
            raise VerificationError(path, "a part's documents must all be in its input shard's split", expected=shard["split"], got=sorted(receipt.splits))
        if "megatron" in formats:
            _check_pair(root, receipt, shard["split"], vocab_size, eod_id)
        receipts.append(receipt)
    return receipts


def _check_pair(root: Path, receipt: Receipt, split: str, vocab_size: int, eod_id) -> None:
    counts = receipt.splits.get(split)
    bin_rel = pair_path(split, receipt.part, "bin")
    expected = {bin_rel, pair_path(split, receipt.part, "idx")} if counts and counts.documents else set()
    if {f.path for f in receipt.files} != expected:
        raise VerificationError(root / RECEIPTS_DIR / f"{receipt.part}.json", "receipt must list its part's .bin and .idx (none for an empty split)", expected=sorted(expected), got=[f.path for f in receipt.files])
    if not expected:
        return
    pair = megatron.MegatronPair(root / bin_rel, vocab_size=vocab_size)
    pair.check_one_document_per_sequence(eod_id)
    code = megatron.dtype_code_for_vocab(vocab_size)
    if pair.header.code != code:
        raise FormatError(pair.idx_path, "dtype code does not match vocab_size", expected=code, got=pair.header.code)
    if len(pair) != counts.documents or pair.n_tokens != counts.text_tokens + counts.eod_tokens or counts.eod_tokens != counts.documents:
        raise VerificationError(pair.bin_path, "pair counts differ from the receipt (token conservation)", expected=(counts.documents, counts.total_tokens), got=(len(pair), pair.n_tokens))


def _totals(receipts: list[Receipt]) -> dict[str, SplitCounts]:
    totals = {}
    for split in SPLITS:
        parts = [r.splits[split] for r in receipts if split in r.splits]
        if parts:
            totals[split] = SplitCounts(*(sum(getattr(c, name) for c in parts) for name in ("documents", "text_tokens", "eod_tokens", "text_bytes")))
    return totals


def verify_llmc_folder(directory: Path) -> llmc.TokensManifest:
    """An llm.c token folder: the files on disk are the manifest's, numbered without gaps, each intact."""
    manifest = llmc.TokensManifest.read(directory / llmc.MANIFEST_NAME)
    names = {f.name for f in manifest.files}
    on_disk = {p.name for p in directory.glob("*.bin")}
    if names != on_disk:
        raise VerificationError(directory, "token files on disk differ from the manifest", expected=sorted(names), got=sorted(on_disk))
    for split in llmc.SPLITS:
        files = sorted((f for f in manifest.files if f.split == split), key=lambda f: f.name)
        if [f.name for f in files] != [llmc.file_name(split, i) for i in range(len(files))]:
            raise VerificationError(directory / llmc.MANIFEST_NAME, f"{split}: token files must be numbered from 00000 without gaps", got=[f.name for f in files])
        for entry in files:
            path = directory / entry.name
            # Upstream llm.c's Llama 3 layout (--llmc-variant llama3) has its own magic and reader.
            check = llmc_llama3.verify_token_file if file_magic(path) == llmc_llama3.MAGIC else llmc.verify_token_file
            check(path, entry, manifest.vocab_size, manifest.doc_sep_id)
    return manifest


def _check_llmc(root: Path, directory: str, listed: dict, totals: dict[str, SplitCounts], vocab_size: int, doc_sep_id) -> None:
    manifest_path = root / directory / llmc.MANIFEST_NAME
    if f"{directory}/{llmc.MANIFEST_NAME}" not in listed:
        raise VerificationError(manifest_path, "llm.c manifest is missing")
    manifest = verify_llmc_folder(root / directory)
    if manifest.vocab_size != vocab_size or manifest.doc_sep_id != doc_sep_id:
        raise VerificationError(manifest_path, "manifest tokenizer differs from run_config.json", expected=(vocab_size, doc_sep_id), got=(manifest.vocab_size, manifest.doc_sep_id))
    sep = 0 if doc_sep_id is None else 1
    for split, c in totals.items():
        files = [f for f in manifest.files if f.split == LLMC_SPLIT[split]]
        tokens, docs = sum(f.n_tokens for f in files), sum(f.n_docs for f in files)
        if docs != c.documents or tokens != c.text_tokens + sep * c.documents:
            raise VerificationError(manifest_path, f"{split}: llm.c tokens must equal the receipts' (token conservation)", expected=(c.documents, c.text_tokens + sep * c.documents), got=(docs, tokens))


def _check_stats(root: Path, totals: dict[str, SplitCounts]) -> None:
    path = root / STATS_NAME
    stats = read_json(path, VerificationError)
    splits = stats.get("splits")
    expected = {s: {**c.to_dict(), "total_tokens": c.total_tokens} for s, c in totals.items()}
    if splits != expected:
        raise VerificationError(path, "stats.json splits differ from the receipts", expected=expected, got=splits)
