"""``verify`` on a mixture release (:mod:`hf_tokbin.formats.mixture`): its sources, its schedule, its shares.

A mixture's run_config.json has ``mix``; the combined corpus lists every shard as ``<source>/<path>``, source by
source in ``--mix`` order. What is checked here, for :mod:`hf_tokbin.verify.release` to use:

- **Receipts.** A receipt counts its documents under one source, the one its input shard's path begins with
  (none for an empty shard), and the receipts' sources are exactly the mix's names.
- **The schedule.** Each source's available train tokens are its receipts' text tokens plus the llm.c separator
  and BOS of each document (as the build counts them); ``T`` and the targets follow from them and the spec
  (:func:`~hf_tokbin.formats.mixture.mixture_targets`, the build's own function). With the Megatron pairs, the
  llm.c train stream is recomputed with :func:`~hf_tokbin.formats.mixture.mixture_ranges`: a part's document
  ends in llm.c stream positions come from its ``.idx`` pointers (a Megatron document is ``[bos] + ids + [eod]``,
  an llm.c one ``[sep] + [bos] + ids`` or ``[bos] + ids + [sep]``). The release module then compares the llm.c
  train files with the pairs in that order, and stats.json's per-source llm.c counts with the schedule's.
- **Without the pairs** (an llm.c-only release, or a partial copy without them) the order cannot be recomputed:
  the schedule needs each part's document lengths, which only the pairs (or the build's segments) hold. Then
  stats.json's per-source llm.c counts are taken as claimed, their sums must be the llm.c train files', and
  their shares and epochs must follow from them.

Memory: the schedule holds the blocks of every source (at most 256 a part), one block's ends per source, and one
range per turn of a source (``ROUNDS`` turns each); never an array per document of the split.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._io import read_json
from ..errors import BuildError, VerificationError
from ..formats import megatron
from ..formats.llmc_order import Blocks, block_starts
from ..formats.llmc_segments import DocumentRange
from ..formats.mixture import MixturePart, MixtureSpec, mixture_ranges, mixture_targets
from ..formats.preview import PREVIEW_DOCUMENTS
from ..formats.records import is_count
from ..formats.release import (
    RUN_CONFIG_NAME,
    STATS_NAME,
    Receipt,
    mixture_record,
    pair_path,
    receipt_path,
)
from ..formats.run_config import RunConfig

SPLIT = "train"  # the split a mixture is a statement about; validation is as without one


def part_source(config: RunConfig, index: int) -> str:
    """The source of part ``index``: its input shard's path begins with it (``en/data/train-00000.parquet``)."""
    return config.shards[index].file.path.partition("/")[0]


def check_receipt_sources(root: Path, config: RunConfig, receipts: list[Receipt]) -> None:
    """Each receipt names one source, its shard's (none without documents); the shards come source by source in
    ``--mix`` order, and the sources named are exactly the mix's names."""
    names = config.options.mix.names
    order = [part_source(config, i) for i in range(len(config.shards))]
    for i, source in enumerate(order):
        rank = names.index(source) if source in names else -1
        if rank < 0 or (i and rank < names.index(order[i - 1])):  # order[i - 1] passed already
            raise VerificationError(
                root / RUN_CONFIG_NAME,
                f"corpus.shards[{i}]: a mixture lists each shard as <source>/<path>, source by source in mix order",
                expected=f"a path beginning with one of {', '.join(names)}",
                got=config.shards[i].file.path,
            )
    for i, receipt in enumerate(receipts):
        counted = sorted(receipt.sources) if receipt.sources is not None else None
        documents = sum(c.documents for c in receipt.splits.values())
        expected = [order[i]] if documents else []
        if counted != expected:
            raise VerificationError(
                root / receipt_path(receipt.part),
                "a mixture's receipt counts its documents under one source: the one its input shard's path "
                "begins with (run_config.json corpus.shards)",
                expected=expected,
                got=counted,
            )
    named = {name for r in receipts for name in r.sources or {}}
    if named != set(names):
        raise VerificationError(
            root / RUN_CONFIG_NAME,
            "mix: the receipts' sources must be exactly the mix's sources",
            expected=sorted(names),
            got=sorted(named),
        )


@dataclass(frozen=True)
class Mixture:
    """A mixture release's schedule as verify recomputes it.

    ``available``: each source's train (documents, llm.c stream tokens); ``taken``: what the llm.c train files
    hold per source (None without llm.c files); ``ranges``: the llm.c train stream as ``(source index, range)``,
    a range's segment naming its part (None when the pairs are not here to recompute it).
    """

    spec: MixtureSpec
    total: int
    targets: tuple[int, ...]
    available: dict[str, tuple[int, int]]
    taken: dict[str, tuple[int, int]] | None
    ranges: list[tuple[int, DocumentRange]] | None

    def record(self) -> dict:
        """stats.json's ``mixture``, as the build writes it (:func:`~hf_tokbin.formats.release.mixture_record`)."""
        return mixture_record(self.spec, self.total, self.targets, self.available, self.taken)

    def stream(self) -> tuple[int, int]:
        """The llm.c train files' documents and tokens, in all."""
        return sum(d for d, _ in self.taken.values()), sum(t for _, t in self.taken.values())

    def blocks(self, parts: list[Receipt]) -> Blocks:
        """The ranges as :class:`~hf_tokbin.formats.llmc_order.Blocks` of ``parts`` (the train parts with documents,
        in part order), so the checks of a seeded order read the mixture's instead."""
        position = {r.part: p for p, r in enumerate(parts)}
        part = np.array([position[r.segment] for _, r in self.ranges], dtype=np.int64)
        first = np.array([r.first_document for _, r in self.ranges], dtype=np.int64)
        count = np.array([r.n_documents for _, r in self.ranges], dtype=np.int64)
        return Blocks(part, np.zeros_like(part), first, count)

    def first_runs(self) -> list[tuple[str, int, int]]:
        """``(part, first document, documents)`` holding the stream's first ``PREVIEW_DOCUMENTS`` documents."""
        runs, left = [], PREVIEW_DOCUMENTS
        for _, r in self.ranges:
            if left <= 0:
                break
            runs.append((r.segment, r.first_document, min(left, r.n_documents)))
            left -= r.n_documents
        return runs


def recompute_mixture(root: Path, config: RunConfig, receipts: list[Receipt], pairs_here: bool) -> Mixture:
    """The mixture's targets from run_config.json's ``mix`` and the receipts, and its llm.c train stream: recomputed
    from the pairs' ``.idx`` when both formats are built and ``pairs_here``, else stats.json's counts as claimed."""
    spec = config.options.mix
    added = (config.llmc_sep is not None) + (config.bos is not None)  # as the build counts a source's tokens
    available = {name: [0, 0] for name in spec.names}
    parts: list[list[MixturePart]] = [[] for _ in spec.names]
    readers = {}
    for i, receipt in enumerate(receipts):
        counts = receipt.splits.get(SPLIT)
        if counts is None or not counts.documents:
            continue
        source = part_source(config, i)
        available[source][0] += counts.documents
        available[source][1] += counts.text_tokens + added * counts.documents
        if pairs_here and set(config.formats) == {"llmc", "megatron"}:
            ends = _LlmcEnds(root, receipt, added - 1 - (config.bos is not None))
            readers[receipt.part] = ends
            cuts = block_starts(counts.documents)
            block_ends = tuple(int(e) for e in ends(cuts[1:] - 1))
            parts[spec.names.index(source)].append(MixturePart(receipt.part, counts.documents, block_ends))
    try:
        total, targets = mixture_targets(
            spec.names, spec.shares, [available[n][1] for n in spec.names], spec.tokens, spec.max_epochs
        )
    except BuildError as e:
        raise VerificationError(root / RUN_CONFIG_NAME, f"mix: {e.rule}", got=e.got, hint=e.hint) from None
    available = {name: tuple(counts) for name, counts in available.items()}
    if "llmc" not in config.formats:
        return Mixture(spec, total, targets, available, None, None)
    if not readers:
        return Mixture(spec, total, targets, available, _claimed(root, spec), None)

    def read_ends(segment: str, first: int, count: int) -> np.ndarray:
        return readers[segment](np.arange(first, first + count, dtype=np.int64))

    seed = config.shuffle_seed if config.shuffle_seed is not None else 0
    ranges = list(mixture_ranges(seed, parts, targets, read_ends))
    taken = {name: [0, 0] for name in spec.names}
    for s, r in ranges:
        taken[spec.names[s]][0] += r.n_documents
        taken[spec.names[s]][1] += r.n_tokens
    return Mixture(spec, total, targets, available, {n: tuple(c) for n, c in taken.items()}, ranges)


class _LlmcEnds:
    """Where documents of a part end in its llm.c stream, from its ``.idx`` pointers alone: a Megatron document's
    end, plus ``delta`` tokens per document up to it (the llm.c layout's tokens besides the text, minus the EOD and
    BOS Megatron adds)."""

    def __init__(self, root: Path, receipt: Receipt, delta: int):
        self.idx = megatron.idx_path_for(root / pair_path(SPLIT, receipt.part, "bin"))
        self.itemsize = megatron.read_index_header(self.idx).dtype.itemsize
        counts = receipt.splits[SPLIT]
        self.documents, self.tokens, self.delta = counts.documents, counts.total_tokens, delta

    def __call__(self, documents: np.ndarray) -> np.ndarray:
        pointers = megatron.sequence_pointers(self.idx, 0, self.documents)  # a memory map: only the pages read
        following = documents + 1
        inside = following < self.documents
        ends = np.full(documents.size, self.tokens, dtype=np.int64)
        ends[inside] = np.asarray(pointers[following[inside]], dtype=np.int64) // self.itemsize
        return ends + following * self.delta


def _claimed(root: Path, spec: MixtureSpec) -> dict[str, tuple[int, int]]:
    """stats.json's llm.c (documents, tokens) per source: what an llm.c-only release claims its train files hold."""
    path = root / STATS_NAME
    stats = read_json(path, VerificationError)
    sources = stats.get("mixture", {}).get("sources", {}) if isinstance(stats.get("mixture"), dict) else {}
    claimed = {}
    for name in spec.names:
        held = sources.get(name, {}).get("llmc") if isinstance(sources.get(name), dict) else None
        if not isinstance(held, dict) or not all(is_count(held.get(k)) for k in ("documents", "tokens")):
            raise VerificationError(
                path,
                f"mixture.sources.{name}.llmc must count the documents and tokens the llm.c train files hold",
                got=held,
            )
        claimed[name] = (held["documents"], held["tokens"])
    return claimed
