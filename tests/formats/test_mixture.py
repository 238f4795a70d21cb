"""A mixture's targets and its llm.c train stream, against a reference written from the module's rules.

The sources live in memory: each segment is a list of document lengths, its ends their cumulative sum, and
``read_ends`` serves (and logs) slices of them, failing on any read outside a segment.
"""

from __future__ import annotations

import itertools
import math
from contextlib import ExitStack
from fractions import Fraction
from unittest import mock

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from hf_tokbin.errors import BuildError, FormatError
from hf_tokbin.formats import llmc_segments, mixture
from hf_tokbin.formats.llmc_order import BLOCKS_PER_PART, block_starts
from hf_tokbin.formats.llmc_segments import DocumentRange
from hf_tokbin.formats.mixture import (
    MIX_TAG,
    ROUNDS,
    MixturePart,
    MixtureSpec,
    mixture_ranges,
    mixture_targets,
)


class Sources:
    """Sources of in-memory segments: ``lengths[s][p]`` is part p of source s, one length per document."""

    def __init__(self, lengths: list[list[np.ndarray]]):
        self.lengths: dict[str, np.ndarray] = {}
        self.ends: dict[str, np.ndarray] = {}
        self.parts: list[list[MixturePart]] = []
        self.reads: list[tuple[str, int, int]] = []
        for s, parts in enumerate(lengths):
            self.parts.append([])
            for p, part in enumerate(parts):
                segment = f"s{s}/part-{p:06d}"
                self.lengths[segment] = np.asarray(part, dtype=np.int64)
                self.ends[segment] = np.cumsum(self.lengths[segment])
                last = block_starts(len(part))[1:] - 1
                self.parts[-1].append(MixturePart(segment, len(part), tuple(int(e) for e in self.ends[segment][last])))

    @property
    def tokens(self) -> list[int]:
        return [sum(part.tokens for part in parts) for parts in self.parts]

    def read_ends(self, segment: str, first: int, count: int) -> np.ndarray:
        n = self.ends[segment].size
        assert 0 <= first and 1 <= count and first + count <= n, f"read {first}+{count} of {segment} ({n} documents)"
        self.reads.append((segment, first, count))
        return self.ends[segment][first : first + count].copy()

    def ranges(self, seed: int, targets, rounds: int = ROUNDS) -> list[tuple[int, DocumentRange]]:
        return list(mixture_ranges(seed, self.parts, targets, self.read_ends, rounds))

    def start(self, segment: str, document: int) -> int:
        return int(self.ends[segment][document - 1]) if document else 0


def reference(sources: Sources, seed: int, targets, rounds: int = ROUNDS) -> list[tuple[int, DocumentRange]]:
    """The module's rules, one document at a time: each source's prefix, then the rounds, a range per block a turn
    touches."""
    prefixes = []
    for s, (parts, target) in enumerate(zip(sources.parts, targets)):
        blocks = [(part.segment, a, b) for part in parts for a, b in itertools.pairwise(block_starts(part.documents))]

        def stream():
            for epoch in itertools.count():
                for visit, k in enumerate(np.random.default_rng([seed, MIX_TAG, s, epoch]).permutation(len(blocks))):
                    segment, first, stop = blocks[k]
                    yield from (((epoch, visit), segment, d) for d in range(first, stop))

        prefix, tokens = [], 0
        for document in stream() if target else ():
            prefix.append(document)
            tokens += int(sources.lengths[document[1]][document[2]])
            if tokens >= target:
                break
        prefixes.append(prefix)
    out, taken, emitted = [], [0] * len(targets), [0] * len(targets)
    for r in range(1, rounds + 1):
        for s, target in enumerate(targets):
            turn = []
            while emitted[s] < math.ceil(Fraction(target * r, rounds)):
                visit, segment, d = prefixes[s][taken[s]]
                turn.append((visit, segment, d))
                taken[s] += 1
                emitted[s] += int(sources.lengths[segment][d])
            for (_, segment), documents in itertools.groupby(turn, key=lambda doc: doc[:2]):
                docs = [d for _, _, d in documents]
                start, end = sources.start(segment, docs[0]), int(sources.ends[segment][docs[-1]])
                out.append((s, DocumentRange(segment, docs[0], len(docs), start, end - start)))
    return out


def documents_of(sources: Sources, ranges) -> list[list[tuple[str, int]]]:
    """Each source's documents in stream order, after checking that every range is whole documents of one block."""
    out: list[list[tuple[str, int]]] = [[] for _ in sources.parts]
    for s, r in ranges:
        starts = block_starts(sources.lengths[r.segment].size)
        block = int(np.searchsorted(starts, r.first_document, side="right")) - 1
        assert r.n_documents >= 1 and r.first_document + r.n_documents <= starts[block + 1], r
        assert r.first_token == sources.start(r.segment, r.first_document), r
        docs = range(r.first_document, r.first_document + r.n_documents)
        assert r.n_tokens == int(sources.lengths[r.segment][list(docs)].sum()), r
        out[s] += [(r.segment, d) for d in docs]
    return out


@st.composite
def mixtures(draw):
    """2 or 3 sources of 1 to 3 parts of up to 500 documents (some of 0 tokens), shares, a cap and maybe --tokens."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    low = draw(st.sampled_from([0, 1]))
    sizes = st.lists(st.integers(1, 500), min_size=1, max_size=3)
    lengths = [
        [rng.integers(low, draw(st.integers(1, 60)) + 1, size=n) for n in draw(sizes)]
        for _ in range(draw(st.integers(2, 3)))
    ]
    sources = Sources(lengths)
    assume(all(sources.tokens))
    spec = MixtureSpec(tuple((f"c{i}", float(draw(st.integers(1, 9)))) for i in range(len(lengths))))
    max_epochs = draw(st.integers(1, 3))
    largest = min(math.ceil((max_epochs * t + 1) / share) - 1 for share, t in zip(spec.shares, sources.tokens))
    smallest = max(math.ceil(1 / share) for share in spec.shares)  # every source at least one token
    assume(smallest <= largest and all(math.floor(share * largest) for share in spec.shares))
    total = draw(st.one_of(st.none(), st.integers(smallest, largest)))
    _, targets = mixture_targets(spec.names, spec.shares, sources.tokens, total, max_epochs)
    seed = draw(st.integers(0, 2**63 - 1))
    rounds = draw(st.sampled_from([1, 2, 7, 100, ROUNDS]))
    return sources, targets, max_epochs, seed, rounds


# (READ_WHOLE_BLOCK, count_fitting's bisection block): as shipped, and small enough that blocks of more than 3
# documents go through the bisection, down to 2 ends.
READS = [(mixture.READ_WHOLE_BLOCK, llmc_segments._BISECT_BLOCK), (3, 2)]


@pytest.mark.parametrize("reads", READS, ids=["shipped reads", "bisected reads"])
@settings(max_examples=60)
@given(case=mixtures())
def test_the_stream_is_the_rules_reference_range_for_range(case, reads):
    sources, targets, _, seed, rounds = case
    with read_sizes(*reads):
        assert sources.ranges(seed, targets, rounds) == reference(sources, seed, targets, rounds)


def read_sizes(whole_block: int, bisect: int) -> ExitStack:
    stack = ExitStack()
    stack.enter_context(mock.patch.object(mixture, "READ_WHOLE_BLOCK", whole_block))
    stack.enter_context(mock.patch.object(llmc_segments, "_BISECT_BLOCK", bisect))
    return stack


@settings(max_examples=60)
@given(case=mixtures())
def test_every_range_is_whole_documents_of_one_block_with_their_tokens(case):
    sources, targets, _, seed, rounds = case
    ranges = sources.ranges(seed, targets, rounds)
    chosen = documents_of(sources, ranges)  # checks each range
    for s, documents in enumerate(chosen):
        # the documents chosen, per segment, are exactly those the ranges cover, each range once
        for segment in {seg for seg, _ in documents}:
            covered = sorted(d for t, r in ranges if t == s and r.segment == segment
                             for d in range(r.first_document, r.first_document + r.n_documents))
            assert covered == sorted(d for seg, d in documents if seg == segment)


@settings(max_examples=60)
@given(case=mixtures())
def test_each_source_reaches_its_target_by_less_than_a_document_and_repeats_within_the_cap(case):
    sources, targets, max_epochs, seed, rounds = case
    chosen = documents_of(sources, sources.ranges(seed, targets, rounds))
    for s, (documents, target, tokens) in enumerate(zip(chosen, targets, sources.tokens)):
        emitted = sum(int(sources.lengths[seg][d]) for seg, d in documents)
        longest = max(int(sources.lengths[part.segment].max()) for part in sources.parts[s])
        assert target <= emitted < target + max(longest, 1)
        most = max(itertools.chain([0], (n for _, n in _counts(documents))))
        assert most <= min(max_epochs, -(-target // tokens))
        if target <= tokens:
            assert most <= 1  # a downsampled source repeats nothing


def _counts(documents):
    return sorted((doc, len(list(group))) for doc, group in itertools.groupby(sorted(documents)))


def test_a_mixture_keeps_its_shares_over_the_stream_and_in_every_window_of_five_percent():
    """Three uneven sources (5,000 documents in two parts, 1,200 and 300; 5..400 tokens), --tokens 1,000,000 and
    --max-epochs 2, so the smallest is upsampled (about 1.6 epochs) and the others downsampled.

    A window is every document that starts within 5% of the stream's tokens from a document's start, for every
    document whose window ends inside the stream; each source's share of the window is its tokens in it over the
    window's tokens.
    """
    rng = np.random.default_rng(11)
    sources = Sources([[rng.integers(5, 401, size=n) for n in parts] for parts in [(2_500, 2_500), (1_200,), (300,)]])
    spec = MixtureSpec.parse("web=0.7,code=0.2,math=0.1", "1M", max_epochs=2)
    _, targets = mixture_targets(spec.names, spec.shares, sources.tokens, spec.tokens, spec.max_epochs)
    assert targets[2] > sources.tokens[2] and targets[0] < sources.tokens[0] and targets[1] < sources.tokens[1]
    which, lengths = [], []
    for s, r in sources.ranges(5, targets):
        docs = sources.lengths[r.segment][r.first_document : r.first_document + r.n_documents]
        which += [s] * docs.size
        lengths += docs.tolist()
    which, lengths = np.array(which), np.array(lengths)
    shares = np.array([float(share) for share in spec.shares])
    whole = np.array([lengths[which == s].sum() for s in range(3)]) / lengths.sum()
    assert np.abs(whole - shares).max() < 0.01
    starts = np.concatenate([[0], np.cumsum(lengths)])
    width = 0.05 * starts[-1]
    first = np.flatnonzero(starts[:-1] + width <= starts[-1])
    last = np.searchsorted(starts[:-1], starts[first] + width, side="left")
    per_source = [np.concatenate([[0], np.cumsum(np.where(which == s, lengths, 0))]) for s in range(3)]
    window = np.stack([c[last] - c[first] for c in per_source], axis=1)
    worst = np.abs(window / window.sum(axis=1, keepdims=True) - shares).max()
    assert first.size > 1000 and worst < 0.05, worst


def test_the_stream_is_the_same_for_the_same_inputs_and_another_for_another_seed():
    rng = np.random.default_rng(3)
    lengths = [[rng.integers(1, 50, size=700)], [rng.integers(1, 50, size=400), rng.integers(1, 50, size=90)]]
    targets = (20_000, 9_000)
    first = Sources(lengths).ranges(1, targets)
    assert first == Sources(lengths).ranges(1, targets)
    other = Sources(lengths).ranges(2, targets)
    assert [r for _, r in other] != [r for _, r in first]
    assert [s for s, _ in other][:50] != [0] * 50  # interleaved from the start


def test_ends_that_disagree_with_the_block_ends_stop_with_the_segment_named():
    sources = Sources([[np.full(40, 5)], [np.full(40, 5)]])
    sources.ends["s1/part-000000"] = sources.ends["s1/part-000000"] - 3  # one block's worth shorter than recorded
    with pytest.raises(FormatError, match="s1/part-000000: a segment's document ends must agree"):
        sources.ranges(0, (100, 150))


def test_reads_never_hold_more_than_a_block_of_a_large_source():
    """100,000 one-token documents in one part: every read is at most a block's documents, and a block is read
    once (the source, downsampled, reads fewer ends than it has)."""
    sources = Sources([[np.ones(100_000, dtype=np.int64)], [np.full(5_000, 7)]])
    _, targets = mixture_targets(("big", "small"), (Fraction(1, 2), Fraction(1, 2)), sources.tokens, 50_000, 1)
    ranges = sources.ranges(9, targets)
    assert sum(r.n_tokens for s, r in ranges if s == 0) == targets[0] == 25_000
    big = [count for segment, _, count in sources.reads if segment == "s0/part-000000"]
    assert max(big) <= -(-100_000 // BLOCKS_PER_PART) and sum(big) <= 25_000 + max(big)


def test_reads_in_a_block_larger_than_a_whole_read_go_by_bisection():
    sources = Sources([[np.ones(BLOCKS_PER_PART * 40, dtype=np.int64)], [np.full(100, 3)]])
    with read_sizes(8, 4):
        ranges = sources.ranges(4, (5_000, 300))
    assert max(count for _, _, count in sources.reads) <= 8
    assert sum(r.n_tokens for s, r in ranges if s == 0) == 5_000


SHARES = MixtureSpec.parse("web=0.6,code=0.3,math=0.1").shares


def test_default_total_is_the_largest_without_repetition():
    for tokens in [(10**6, 100, 10**6), (10**6, 10**6, 12_345), (7, 10**6, 10**6), (999, 1_000, 1_001)]:
        total, targets = mixture_targets(("web", "code", "math"), SHARES, tokens, None, 1)
        assert all(t <= n for t, n in zip(targets, tokens))
        assert any(t == n for t, n in zip(targets, tokens))  # the limiting source takes all of its tokens
        assert any(math.floor(share * (total + 1)) > n for share, n in zip(SHARES, tokens))


@given(
    tokens=st.lists(st.integers(1, 10**9), min_size=2, max_size=4),
    weights=st.lists(st.integers(1, 1000), min_size=4, max_size=4),
)
def test_default_total_leaves_the_limiting_source_none_of_its_tokens(tokens, weights):
    shares = [Fraction(w, sum(weights[: len(tokens)])) for w in weights[: len(tokens)]]
    names = [f"c{i}" for i in range(len(tokens))]
    largest = min(math.ceil((n + 1) / share) - 1 for share, n in zip(shares, tokens))
    if any(math.floor(share * largest) == 0 for share in shares):  # a source would get no token: refused
        with pytest.raises(BuildError, match="less than one token"):
            mixture_targets(names, shares, tokens, None, 1)
        return
    total, targets = mixture_targets(names, shares, tokens, None, 1)
    assert max(t - n for t, n in zip(targets, tokens)) == 0
    with pytest.raises(BuildError):
        mixture_targets(names, shares, tokens, total + 1, 1)


def test_targets_are_exact_fractions_of_the_total():
    spec = MixtureSpec.parse("web=0.7,code=0.2,math=0.1")
    # 0.7 * 90 is 62.99999999999999 in binary floating point
    assert mixture_targets(spec.names, spec.shares, (10**6,) * 3, 90, 1) == (90, (63, 18, 9))
    assert mixture_targets(("a", "b", "c"), SHARES, (10**6, 100, 10**6), None, 1) == (336, (201, 100, 33))


def test_tokens_beyond_the_cap_are_refused_naming_the_source_and_what_would_work():
    tokens = (10**7, 10**7, 12_345)
    with pytest.raises(BuildError) as refused:
        mixture_targets(("web", "code", "math"), SHARES, tokens, 2_000_000, 1)
    message = str(refused.value)
    assert "\n" not in message
    assert "source math has 12,345 train tokens; its share 0.1 of 2,000,000 needs 200,000" in message
    assert "more than --max-epochs 1 allows" in message
    assert "give --tokens 123,459 or less, or --max-epochs 17" in message
    assert mixture_targets(("web", "code", "math"), SHARES, tokens, 123_459, 1)[1][2] == 12_345
    with pytest.raises(BuildError):
        mixture_targets(("web", "code", "math"), SHARES, tokens, 123_460, 1)
    mixture_targets(("web", "code", "math"), SHARES, tokens, 2_000_000, 17)
    with pytest.raises(BuildError, match="--max-epochs 16 allows"):
        mixture_targets(("web", "code", "math"), SHARES, tokens, 2_000_000, 16)


def test_a_share_of_less_than_one_token_is_refused_naming_the_total_that_gives_one():
    halves = MixtureSpec.parse("web=1,code=1").shares
    with pytest.raises(BuildError) as refused:
        mixture_targets(("web", "code"), halves, (100, 100), 1, 1)
    message = str(refused.value)
    assert "\n" not in message
    assert "source web's share 0.5 of 1 train tokens is less than one token" in message
    assert "give --tokens 2 or more" in message
    assert mixture_targets(("web", "code"), halves, (100, 100), 2, 1) == (2, (1, 1))
    tiny = MixtureSpec.parse("web=1,code=1e-9").shares  # the default total: all of web, none of code
    with pytest.raises(BuildError, match="source code's share 1e-09 of 101 train tokens .* --tokens 1,000,000,001"):
        mixture_targets(("web", "code"), tiny, (100, 100), None, 1)


def test_a_source_with_no_train_tokens_is_refused():
    with pytest.raises(BuildError, match="source code has no train tokens"):
        mixture_targets(("web", "code", "math"), SHARES, (100, 0, 100), None, 1)


@pytest.mark.parametrize(
    "documents, block_ends",
    [(0, ()), (3, (1, 2)), (3, (1, 3, 2)), (3, (-1, 2, 3)), (2, (1.0, 2.0))],
    ids=["no documents", "too few ends", "decreasing", "negative", "not whole numbers"],
)
def test_a_part_without_its_blocks_ends_is_refused(documents, block_ends):
    with pytest.raises(FormatError, match="part-000007: a mixture's part needs train documents"):
        MixturePart("part-000007", documents, block_ends)


def test_a_source_name_may_hold_an_equals_sign():
    """A corpus name may hold ``=``; a weight never does, so the last ``=`` of an item is the one."""
    spec = MixtureSpec.parse("a=b=0.5,c=0.5")
    assert spec.weights == (("a=b", 0.5), ("c", 0.5))
    with pytest.raises(BuildError, match="the weight of a=b must be a positive number: got x"):
        MixtureSpec.parse("a=b=x,c=0.5")
