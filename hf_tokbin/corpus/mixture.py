"""A mixture's corpora as one corpus: each corpus a source, its shards under its name (``build --mix``).

A build reads one corpus manifest and its input shards by index. A mixture of
corpora (each a corpus folder, a pushed corpus or a plain Hub repo, resolved as
``--corpus`` resolves one) becomes one *combined* corpus: a manifest
synthesized in a temporary folder, listing every source's shards in ``--mix``
order with the source's name before each path (``web/data/train-00000.parquet``),
and :class:`MixedShards`, which reads each such shard where its own corpus keeps
it. The manifest's ``documents_by_source`` counts each source's rows, so the
build counts every part under its source's name (receipts, ``stats.json``)
without a column. The same corpora always give the same manifest bytes, so a
re-run resumes the build.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import BuildError
from ..formats.corpus_manifest import PER_SOURCE_RULE, CorpusManifest, CorpusShard
from ..formats.records import FileEntry
from ..formats.rules import SOURCE_NAME_RULE, is_source_name
from .source import CorpusSource, LocalShards, check_shard_file, temporary_folder

MIXED_LICENSE = "other"  # sources under different licenses: the card lists each


@dataclass(frozen=True)
class MixedShards:
    """Input shards of several corpora, each under its source's name (plain values: pickles to Ray workers)."""

    sources: tuple[tuple[str, object], ...]  # (source name, its corpus's ShardSource), in --mix order

    def _inner(self, shard: CorpusShard) -> tuple[object, CorpusShard]:
        name, _, path = shard.path.partition("/")
        return dict(self.sources)[name], dataclasses.replace(shard, path=path)

    def check(self, manifest: CorpusManifest) -> None:
        for name, shards in self.sources:
            inner = [self._inner(s)[1] for s in manifest.shards if s.path.partition("/")[0] == name]
            shards.check(dataclasses.replace(manifest, shards=tuple(inner), documents_by_source={}))

    def local_path(self, shard: CorpusShard, scratch: Path):
        shards, inner = self._inner(shard)
        return shards.local_path(inner, scratch)

    def open_for_sample(self, shard: CorpusShard):
        shards, inner = self._inner(shard)
        return shards.open_for_sample(inner)

    def location(self, shard: CorpusShard) -> str:
        shards, inner = self._inner(shard)
        return shards.location(inner)


def combine_corpora(corpora: list[CorpusSource], names: tuple[str, ...], name: str) -> tuple[CorpusSource, list[dict]]:
    """(the combined corpus, each source's corpus record for ``run_config.json``'s ``mix``).

    ``corpora[i]`` is one source: its corpus name must be one of ``names`` (``--mix`` names the corpora), and the
    combined corpus takes them in ``names``' order.
    """
    from .._io import sha256_file
    from ..formats.corpus_manifest import MANIFEST_NAME

    ordered = _in_mix_order(corpora, names)
    rules = {m.split_rule for _, m in ordered}
    licenses = {m.license for _, m in ordered}
    documents_by_source = {
        split: {n: m.rows(split) for n, (_, m) in zip(names, ordered) if m.rows(split)}
        for split in ("train", "validation")
    }
    combined = CorpusManifest(
        name=name,
        split_rule=rules.pop() if len(rules) == 1 else PER_SOURCE_RULE,
        sources=tuple(
            FileEntry(f"{n}/{f.path}", f.size, f.sha256) for n, (_, m) in zip(names, ordered) for f in m.sources
        ),
        shards=tuple(
            dataclasses.replace(s, path=f"{n}/{s.path}") for n, (_, m) in zip(names, ordered) for s in m.shards
        ),
        license=licenses.pop() if len(licenses) == 1 else MIXED_LICENSE,
        language=tuple(dict.fromkeys(code for _, m in ordered for code in m.language)),
        empty_documents_dropped=sum(m.empty_documents_dropped for _, m in ordered),
        documents_by_source={split: counts for split, counts in documents_by_source.items() if counts},
    )
    root = temporary_folder("hf_tokbin-mixture-")
    combined.write(root)
    records = []
    for n, (c, _) in zip(names, ordered):
        digest = sha256_file(Path(c.root) / MANIFEST_NAME)
        records.append({"name": n, "source": c.source, "revision": c.revision, "manifest_sha256": digest})
    shards = MixedShards(tuple((n, c.shards) for n, (c, _) in zip(names, ordered)))
    return CorpusSource(root, "local", None, shards), records


def _in_mix_order(corpora: list[CorpusSource], names: tuple[str, ...]) -> list[tuple[CorpusSource, CorpusManifest]]:
    """Each corpus with its manifest, in ``names``' order; one line for a corpus the mix does not name once, one
    without train documents, one that counts its own sources, or a shard two of them hold."""
    manifests = [CorpusManifest.read(c.root) for c in corpora]
    for corpus, manifest in zip(corpora, manifests):
        if not is_source_name(manifest.name):  # shown as code points: an NFD name looks like the NFC one
            raise BuildError(
                _place(corpus),
                f"a corpus in a mixture names its source, so its name must be {SOURCE_NAME_RULE}",
                got=ascii(manifest.name),
                hint="write the corpus again under another name (hf-tokbin corpus import --name)",
            )
    corpus_names = [m.name for m in manifests]
    if sorted(corpus_names) != sorted(names) or len(set(corpus_names)) != len(corpus_names):
        raise BuildError(
            ", ".join(_place(c) for c in corpora),
            "--mix names each --corpus once, by its corpus name",
            expected=", ".join(names),
            got=", ".join(corpus_names),
        )
    by_name = dict(zip(corpus_names, zip(corpora, manifests)))
    ordered = [by_name[n] for n in names]
    _check_no_shared_shard(ordered)
    for corpus, manifest in ordered:
        if not manifest.rows("train"):
            raise BuildError(
                _place(corpus),
                f"--mix: source {manifest.name} has no train documents, so it can have no share of the train tokens",
            )
        if manifest.documents_by_source:
            raise BuildError(
                _place(corpus),
                "a corpus that counts its own sources cannot be a source of a mixture",
                hint="import it again without --source-column, or one corpus per source",
            )
    return ordered


def _check_no_shared_shard(ordered: list[tuple[CorpusSource, CorpusManifest]]) -> None:
    """One line for a shard (with documents) whose bytes two sources hold: its documents would count under both."""
    seen: dict[str, str] = {}
    for corpus, manifest in ordered:
        for shard in manifest.shards:
            where = f"{manifest.name}/{shard.path}"
            first = seen.setdefault(shard.sha256, where) if shard.rows else where
            if first != where:
                raise BuildError(
                    _place(corpus),
                    "--mix: two sources hold the same input shard, so its documents would count under both",
                    got=f"{first} and {where} (SHA-256 {shard.sha256[:12]}...)",
                    hint="give each document to one source",
                )


def _place(corpus: CorpusSource) -> str:
    """A corpus as a message names it: its folder, or its Hub repo id."""
    return os.fspath(corpus.root) if corpus.source == "local" else corpus.source


def split_by_source(found: CorpusSource, names: tuple[str, ...]) -> tuple[list[CorpusSource], dict]:
    """``--mix-by source``: each source of a corpus that counts its sources, written as a corpus of its own (named by
    it, in a temporary folder) for :func:`combine_corpora`; and the corpus's record (``run_config.json``'s
    ``mix.from``).

    One pass over the corpus in corpus order: each shard fetched and checked whole against the manifest, its
    documents routed by their ``source`` to that source's corpus, each to its split, so every document stays in its
    split and each source keeps its corpus order. Shards hold at most as many rows as the corpus's largest.
    """
    import pyarrow.compute as pc

    from .._io import sha256_file
    from ..formats.corpus_manifest import MANIFEST_NAME
    from .write import CorpusWriter, ShardLimit

    manifest = CorpusManifest.read(found.root)
    _check_named_sources(found, manifest, names)
    base = temporary_folder("hf_tokbin-mix-by-source-")
    limit = ShardLimit(rows=max(1, max(s.rows for s in manifest.shards)))
    with contextlib.ExitStack() as stack:
        writers = {n: stack.enter_context(CorpusWriter(base / n, n, limit)) for n in names}
        for shard in manifest.shards:
            for texts, sources in _checked_batches(found, shard, base / ".shards"):
                for name, writer in writers.items():
                    mask = pc.equal(sources, name)
                    if pc.any(mask).as_py():
                        writer.write_split(shard.split, pc.filter(texts, mask))
        for writer in writers.values():
            writer.finish(manifest.split_rule, (), manifest.license, manifest.language)
    digest = sha256_file(Path(found.root) / MANIFEST_NAME)
    origin = {"name": manifest.name, "source": found.source, "revision": found.revision, "manifest_sha256": digest}
    return [CorpusSource(base / n, "local", None, LocalShards(os.fspath(base / n))) for n in names], origin


def _check_named_sources(found: CorpusSource, manifest: CorpusManifest, names: tuple[str, ...]) -> None:
    """``--mix-by source`` names every source the corpus counts, once, each a name a corpus folder can have."""
    from ..formats.rules import FOLDER_NAME_RULE, is_folder_name

    counted = sorted(set().union(*manifest.documents_by_source.values())) if manifest.documents_by_source else []
    if not counted:
        hint = "corpus import --source-column COLUMN counts them"
        raise BuildError(_place(found), "--mix-by source needs a corpus that counts its sources", hint=hint)
    if sorted(names) != counted:
        raise BuildError(
            _place(found),
            "--mix-by source names every source of the corpus once",
            expected=", ".join(counted),
            got=", ".join(names),
        )
    odd = [n for n in names if not is_folder_name(n)]
    if odd:
        raise BuildError(_place(found), f"--mix-by source: each source names a corpus: {FOLDER_NAME_RULE}", got=odd[0])


def _checked_batches(found: CorpusSource, shard: CorpusShard, scratch: Path):
    """(texts, sources) of one shard in batches, the shard checked whole against the manifest first."""
    from ..formats.corpus_shard import SOURCE_COLUMN, iter_shard_batches

    with found.shards.local_path(shard, scratch) as path:
        check_shard_file(shard, path)
        for _, texts, sources in iter_shard_batches(path, found.shards.location(shard), 10_000, SOURCE_COLUMN):
            yield texts, sources
