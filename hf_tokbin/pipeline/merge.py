"""``hf-tokbin merge RELEASE --out DIR``: one Megatron pair per split, as Megatron's own merge writes it.

Megatron users expect one prefix per split and make it today with
``tools/merge_datasets.py``, which feeds every pair of a folder, in sorted
prefix order, to megatron-core's ``IndexedDatasetBuilder.add_index`` and
``finalize``. For our pairs (one document per sequence, the dtype code of the
vocabulary) that is: the ``.bin`` files one after the other, and an ``.idx``
whose sequence lengths are the parts' in order, pointers running on, and
document indices ``0..N``. This module writes exactly those bytes through our
own :class:`~hf_tokbin.formats.megatron.MegatronWriter`, part by part in part
order (``part-NNNNNN`` sorts as it counts), sequence chunk by chunk, so memory
stays bounded.

The release is verified first (:func:`hf_tokbin.verify.release.verify_release`,
every byte), and each part's ``.bin`` is hashed again as it is read and its
``.idx`` before, against its receipt: a file changed after the verify stops
the merge. ``DIR`` must be new or empty; it ends up holding::

    DIR/<split>.bin, DIR/<split>.idx     one pair per split ("train", "validation")
    DIR/MERGED.json                      written last: what each merged pair holds

``MERGED.json`` ties every document back to its input shard::

    {"format": "hf_tokbin.megatron_merge/1",
     "release": {"complete_sha256": "<hex of the release's COMPLETE.json>", "eod_id": N},
     "splits": {"train": {"files": [{"path": "train.bin", "size", "sha256"}, {"path": "train.idx", ...}],
                          "documents": N, "tokens": N,
                          "parts": [{"part": "part-000000", "input_shard": {"path", "size", "sha256"},
                                     "pair": [{"path": "shards/train/part-000000.bin", ...}, {... .idx}],
                                     "documents": [START, STOP], "tokens": [START, STOP]}, ...]}}}

Document ``i`` of ``DIR/train`` with ``START <= i < STOP`` is document
``i - START`` of that part, and so of that input shard. Without
``MERGED.json`` the folder is not a finished merge.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from .._io import canonical_json, sha256_file, write_text_atomic
from ..errors import BuildError, VerificationError
from ..formats import megatron
from ..formats.merged import MERGE_FORMAT, MERGED_NAME
from ..formats.records import FileEntry
from ..formats.release import COMPLETE_NAME, RECEIPTS_DIR, RUN_CONFIG_NAME, SPLITS, Receipt, pair_path, read_partial
from ..formats.run_config import RunConfig

_SEQUENCES_PER_CHUNK = 1 << 16


def merge_release(release: str | os.PathLike, out: str | os.PathLike, splits: tuple[str, ...] = SPLITS) -> dict:
    """Write one pair per split of ``release`` into the new folder ``out``; return the ``MERGED.json`` record."""
    from ..verify.release import verify_release

    release, out = Path(release), Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise BuildError(out, "the merge folder must be new or empty (nothing is overwritten)")
    if out.resolve().is_relative_to(release.resolve()):
        # Its files would be files of the release that COMPLETE.json does not list: verify and push would refuse it.
        raise BuildError(out, "the merge folder must be outside the release", got=f"inside {release}")
    verify_release(release)
    config = RunConfig.read(release / RUN_CONFIG_NAME)
    if "megatron" not in config.formats:
        raise BuildError(
            release / RUN_CONFIG_NAME,
            "the release has no Megatron pairs to merge",
            hint="build with --format megatron",
        )
    receipts = [Receipt.read(path) for path in sorted((release / RECEIPTS_DIR).glob("part-*.json"))]
    complete_sha256, held = _release_listing(release)
    out.mkdir(parents=True, exist_ok=True)
    record = {
        "format": MERGE_FORMAT,
        "release": {"complete_sha256": complete_sha256, "eod_id": config.eod_id},
        "splits": {},
    }
    try:
        for split in splits:
            parts = [r for r in receipts if r.splits.get(split) and r.splits[split].documents]
            if parts and _split_is_held(release, split, parts, held):
                record["splits"][split] = _merge_split(release, out, split, parts, config.vocab_size)
    except BaseException:
        for split in record["splits"]:  # the pairs this merge finished: nothing half-done stays behind
            for suffix in ("bin", "idx"):
                (out / f"{split}.{suffix}").unlink(missing_ok=True)
        raise
    write_text_atomic(out / MERGED_NAME, canonical_json(record))
    return record


def _release_listing(release: Path) -> tuple[str, set[str] | None]:
    """The SHA-256 of the release's ``COMPLETE.json`` and, for a partial copy, the paths it holds (None: all)."""
    if (release / COMPLETE_NAME).exists():
        return sha256_file(release / COMPLETE_NAME), None
    complete, held = read_partial(release)  # verify_release checked it; the listing is COMPLETE.json's own bytes
    return hashlib.sha256(complete.to_json().encode()).hexdigest(), {f.path for f in held}


def _split_is_held(release: Path, split: str, parts: list[Receipt], held: set[str] | None) -> bool:
    """Whether a partial copy holds the split's pairs: all of them (merged), none (skipped), never some."""
    paths = {f.path for r in parts for f in r.files}
    if held is None or paths <= held:
        return True
    if paths & held:
        raise BuildError(
            release,
            f"a partial copy must hold all of a split's pairs or none to merge it: {split} lacks some",
            got=sorted(paths - held)[:3],
        )
    return False


def _merge_split(release: Path, out: Path, split: str, parts: list[Receipt], vocab_size: int) -> dict:
    entries = []
    with megatron.MegatronWriter(
        out / f"{split}.bin", vocab_size, None
    ) as writer:  # None: sequences as they are, EOD included
        for receipt in parts:
            files = {f.path: f for f in receipt.files}
            bin_entry, idx_entry = (files[pair_path(split, receipt.part, suffix)] for suffix in ("bin", "idx"))
            _check_file(release, idx_entry, sha256_file(release / idx_entry.path))
            pair = megatron.MegatronPair(release / idx_entry.path)
            if pair.header.code != writer.code:
                raise VerificationError(
                    release / idx_entry.path,
                    "dtype code differs from the vocabulary's",
                    expected=writer.code,
                    got=pair.header.code,
                )
            first_doc, first_token = writer.n_documents, writer.n_tokens
            _check_file(release, bin_entry, _copy_sequences(pair, writer))
            entries.append(
                {
                    "part": receipt.part,
                    "input_shard": receipt.input_shard.to_dict(),
                    "pair": [bin_entry.to_dict(), idx_entry.to_dict()],
                    "documents": [first_doc, writer.n_documents],
                    "tokens": [first_token, writer.n_tokens],
                }
            )
        files = writer.close()
    return {
        "files": [
            FileEntry(p.name, size, sha).to_dict()
            for p, size, sha in (
                (files.bin_path, files.bin_size, files.bin_sha256),
                (files.idx_path, files.idx_size, files.idx_sha256),
            )
        ],
        "documents": files.n_documents,
        "tokens": files.n_tokens,
        "parts": entries,
    }


def _copy_sequences(pair: megatron.MegatronPair, writer: megatron.MegatronWriter) -> str:
    """Append every sequence of ``pair`` to ``writer`` in chunks; return the SHA-256 of the ``.bin`` bytes read."""
    digest = hashlib.sha256()
    n = len(pair)
    for start in range(0, n, _SEQUENCES_PER_CHUNK):
        stop = min(n, start + _SEQUENCES_PER_CHUNK)
        lengths = np.asarray(pair.lengths[start:stop], dtype=np.int64)
        first = int(pair.pointers[start]) // pair.dtype.itemsize
        ids = np.asarray(pair.tokens[first : first + int(lengths.sum())])
        digest.update(ids.tobytes())
        writer.add_documents(ids, lengths)
    return digest.hexdigest()


def _check_file(release: Path, entry: FileEntry, sha256: str) -> None:
    if sha256 != entry.sha256:
        raise VerificationError(
            release / entry.path,
            "changed since the release was verified: SHA-256 differs from its receipt",
            expected=entry.sha256,
            got=sha256,
        )
