"""A build's plan: one frozen record of everything its two steps need, and ``run_config.json``.

:func:`hf_tokbin.pipeline.plan_build` (:mod:`.run`) checks every input and option and makes a
:class:`BuildPlan`; :func:`start_release` writes its ``run_config.json`` at the output first, or checks that the
output holds the same build. The plan holds plain values only (a corpus manifest, a tokenizer's identity, the
options, where the shards are read): it pickles to every worker and is compared by value; what is live (the
encoder, an open shard) is made where it is used. A part's llm.c stream is read from its own segment or from its
Megatron ``.bin`` (:func:`from_megatron`): both steps name those files from the plan alone.

Same inputs and options give byte-identical files whatever ``num_proc``, batch size or engine. ``--out`` may be
an fsspec URL: every step writes into ``plan.output.work`` and publishes through :mod:`hf_tokbin.output`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .. import __version__
from .._io import canonical_json
from ..errors import BuildError
from ..formats import llmc, megatron
from ..formats.build_options import BuildOptions
from ..formats.corpus_manifest import SPLIT_RULE_TEXT, CorpusManifest, CorpusSubset
from ..formats.corpus_shard import SOURCE_COLUMN
from ..formats.llmc_segments import ENDS_SUFFIX, TOKENS_SUFFIX
from ..formats.release import COMPLETE_NAME, RUN_CONFIG_NAME, TOKENS_DIR, WORK_DIR, pair_path
from ..formats.run_config import BoundaryToken, run_config_record
from ..output import Output, open_output
from ..tokenizer.info import TokenizerInfo

MAX_STAGED_VOCAB = 2**31  # ids 0..2**31-1: what Megatron's int32 files (and the shuffle's scratch pairs) hold


@dataclass(frozen=True)
class BuildPlan:
    """Everything a build's steps need: plain values only, compared by value, so it pickles to Ray workers.

    Nothing live: each step builds what it uses where it runs (the encoder, in the encode step's process).
    """

    corpus_root: str
    corpus: CorpusManifest
    corpus_manifest_sha256: str
    corpus_source: str  # "local" or the Hub repo id
    corpus_revision: str | None
    tokenizer: TokenizerInfo
    out: str  # an absolute local folder, or an fsspec URL (see hf_tokbin.output)
    options: BuildOptions = BuildOptions()
    release_version: str = "v1"
    scratch_key: str | None = None  # out is a URL: the name of this machine's scratch folder (output.scratch_root)
    corpus_subset: CorpusSubset | None = (
        None  # options.limit: what the corpus was cut from (run_config.json corpus.subset)
    )
    # A dataset's input_ids, kept beside the corpus (given_ids.GivenIds): written after the check instead of encoding.
    given_ids: object = None
    # llm.c's separator when it is not the tokenizer's: --llmc-layout llama3's <|begin_of_text|> (see _llmc_boundary).
    llmc_doc_sep: BoundaryToken | None = None
    # Where input shard i is read: a record of hf_tokbin.corpus.source (LocalShards, HubShards), set by plan_build.
    shards: object = None
    # A mixture (options.mix): each source's corpus record, in --mix order (run_config.json mix.sources[i].corpus).
    mix_corpora: tuple[dict, ...] = ()
    mix_origin: dict | None = None  # --mix-by source: the corpus whose source column named the sources (mix.from)

    def warnings(self) -> list[str]:
        """What the build prints before it starts: an empty validation split, and an llm.c layout no upstream trainer
        reads."""
        # A --limit that ended in train says which limit reaches validation; else the corpus says why it has none.
        subset = self.corpus_subset
        empty = (subset and subset.empty_validation_warning()) or self.corpus.empty_validation_warning()
        lines = [empty] if empty else []
        if (
            "llmc" in self.options.formats
            and self.options.llmc_layout == "gpt2"
            and self.tokenizer.vocab_size > llmc.UINT16_VOCAB_LIMIT
        ):
            lines.append(
                f"warning: a vocabulary of {self.tokenizer.vocab_size:,} gives llm.c files of magic {llmc.MAGIC} "
                "version 2 (uint32), "
                "which no upstream llm.c trainer reads: build with --llmc-layout llama3 for train_llama3.py"
            )
        return lines

    @property
    def shard_source(self):
        """Where input shard i is read (:attr:`shards`)."""
        if self.shards is None:
            raise BuildError(self.corpus_root, "a plan made without plan_build names no shard source")
        return self.shards

    @property
    def source_column(self) -> str | None:
        """The shards' column of source names, counted per source and split; None: not counted.

        ``source`` in a corpus folder imported with ``--source-column`` (its manifest counts its sources), else the
        ``--source-column`` given (a plain Hub repo's own column). A mixture reads none: :meth:`part_source`.
        """
        if self.options.mix is not None:
            return None
        return SOURCE_COLUMN if self.corpus.documents_by_source else self.options.source_column

    @property
    def counts_sources(self) -> bool:
        """Whether parts count their documents by source (a source column, or a mixture's corpora)."""
        return self.source_column is not None or self.options.mix is not None

    def part_source(self, index: int) -> str | None:
        """A mixture's part: the source its shard belongs to (the combined corpus names it first); else None."""
        return self.part_source_of(self.corpus.shards[index])

    def part_source_of(self, shard) -> str | None:
        """A mixture's shard: the source it belongs to (the combined corpus names it first); else None."""
        return shard.path.partition("/")[0] if self.options.mix is not None else None

    @property
    def eod_id(self) -> int | None:
        return self.tokenizer.doc_sep_id

    @property
    def bos_id(self) -> int | None:
        return self.tokenizer.bos.id if self.tokenizer.bos is not None else None

    @property
    def llmc_sep(self) -> BoundaryToken | None:
        """The token llm.c's files put at each document (before or after it, ``options.llmc_separator``)."""
        return self.llmc_doc_sep if self.llmc_doc_sep is not None else self.tokenizer.doc_sep

    @property
    def llmc_sep_id(self) -> int | None:
        return self.llmc_sep.id if self.llmc_sep is not None else None

    @property
    def llmc_layout(self) -> llmc.Layout:
        """The llm.c files' header layout and id width (``options.llmc_layout`` for this vocabulary)."""
        return llmc.layout_for(self.tokenizer.vocab_size, self.options.llmc_layout)

    @property
    def llmc_added_tokens(self) -> int:
        """Tokens llm.c's files add to each document: its separator and BOS."""
        return (self.llmc_sep_id is not None) + (self.bos_id is not None)

    def boundary_line(self) -> str:
        """One line naming the boundary tokens, where they came from, and the special-token policy (printed before the
        work)."""
        sep = self.tokenizer.doc_sep
        parts = [f"separator/EOD {sep.describe() if sep is not None else 'none'}"]
        parts.append(f"BOS {self.tokenizer.bos.describe()}" if self.tokenizer.bos is not None else "no BOS")
        if "llmc" in self.options.formats and self.llmc_sep is not None:
            own = f" {self.llmc_doc_sep.describe()}" if self.llmc_doc_sep is not None else ""
            parts.append(f"llm.c separator{own} {self.options.llmc_separator} each document")
        parts.append(
            "special-token text " + ("parsed as tokens" if self.options.parse_special else "encoded as ordinary text")
        )
        return "; ".join(parts)

    @property
    def llmc_dir(self) -> str:
        return f"{TOKENS_DIR}/{self.tokenizer.tokenizer_id}/{self.corpus.name}"

    @property
    def output(self) -> Output:
        """Where the release goes (a local folder, or a URL with this machine's scratch folder)."""
        return open_output(self.out, self.scratch_key)

    def run_config(self) -> dict:
        """``run_config.json``: pinned inputs and options. Nothing here depends on num_proc, batch size or engine."""
        return run_config_record(
            dataset=self.corpus.name,
            version=self.release_version,
            corpus={
                "name": self.corpus.name,
                "license": self.corpus.license,
                "language": list(self.corpus.language),
                "source": self.corpus_source,
                "revision": self.corpus_revision,
                "manifest_sha256": self.corpus_manifest_sha256,
                "shards": [s.to_dict() for s in self.corpus.shards],
                # Only for a --limit build, so every other build writes the bytes it always did.
                **({"subset": self.corpus_subset.to_record()} if self.corpus_subset is not None else {}),
                # Only when sources are counted: a re-run counting otherwise is another build, and verify knows to
                # expect them.
                **({"source_column": self.source_column} if self.source_column is not None else {}),
            },
            tokenizer=self.tokenizer.to_record(),
            doc_sep=self.tokenizer.doc_sep,
            bos=self.tokenizer.bos,
            llmc_doc_sep=self.llmc_doc_sep,
            split_rule={"name": self.corpus.split_rule, "text": SPLIT_RULE_TEXT[self.corpus.split_rule]},
            options=self.options,
            versions={"hf_tokbin": __version__, "tokenizers": _version("tokenizers")},
            ids=self.given_ids.check.record() if self.given_ids is not None else None,
            mix=self.options.mix.to_record(list(self.mix_corpora), self.mix_origin)
            if self.options.mix is not None
            else None,
        )


def start_release(plan: BuildPlan) -> None:
    """Write ``run_config.json``, or check that the output holds the same build; drop a killed run's temporaries."""
    output = plan.output
    text = canonical_json(plan.run_config())
    existing = output.read_bytes(RUN_CONFIG_NAME)
    if existing is None:
        if any(name != WORK_DIR for name in output.names()):
            raise BuildError(output.root, "output is not empty and holds no run_config.json", hint="use a new --out")
        output.write_text(RUN_CONFIG_NAME, text)
    elif existing != text.encode("utf-8"):
        differing = _differing_fields(existing, text)
        if not _remixed(output, differing):
            raise BuildError(
                output.location(RUN_CONFIG_NAME),
                f"this output holds a different build ({', '.join(differing) or 'its run_config.json bytes'} differ)",
                hint="use a new --out, or delete this one",
            )
        output.write_text(RUN_CONFIG_NAME, text)
    scratch = output.scratch()
    if scratch is not None:
        # The scratch key pins this very build, so whatever the scratch folder holds is this build's.
        scratch.write_text(RUN_CONFIG_NAME, text)  # the card reads it at the finish
    output.remove_temporaries()


def _remixed(output: Output, differing: list[str]) -> bool:
    """Whether only a mixture's weights, total or cap changed on a local output that holds no finished release: its
    encoded parts are the same, and the publish step writes every file the mixture decides afresh (a mix that could
    not be met is asked again without encoding again)."""
    return (
        bool(differing)
        and all(name.startswith("mix.") for name in differing)
        and output.scratch() is None
        and output.read_bytes(COMPLETE_NAME) is None
    )


def _differing_fields(existing: bytes, wanted: str) -> list[str]:
    """The run_config.json fields (dotted: ``llmc.max_tokens_per_file``) whose values differ between an output's and
    this build's."""
    try:
        old = _flat_fields(json.loads(existing))
    except ValueError:
        return []  # not JSON: nothing to name but the file
    new = _flat_fields(json.loads(wanted))
    return [name for name in [*new, *(n for n in old if n not in new)] if old.get(name) != new.get(name)]


def _flat_fields(value, prefix: str = "") -> dict:
    """A JSON object's leaves by dotted name (a list is one leaf)."""
    if not isinstance(value, dict) or not value:
        return {prefix.rstrip("."): value}
    return {
        name: leaf for key, inner in value.items() for name, leaf in _flat_fields(inner, f"{prefix}{key}.").items()
    }


# -- where a part's llm.c stream is (the encode step writes it, the publish step packs from it)


def segment_stem(part: str) -> str:
    """``.work/llmc/<part>``, relative to the release root: where the part's llm.c segment and its record go."""
    return f"{WORK_DIR}/llmc/{part}"


def staging_rel(part: str, suffix: str) -> str:
    """``.work/llmc/<part>.<suffix>``: the llm.c segment (tokens, ends) and its digests (json)."""
    return f"{segment_stem(part)}.{suffix}"


def from_megatron(plan: BuildPlan) -> bool:
    """Whether the parts' llm.c streams are read from their Megatron ``.bin`` (no ``.tokens`` written)."""
    formats = plan.options.formats
    if "llmc" not in formats or "megatron" not in formats or plan.eod_id != plan.llmc_sep_id:
        return False
    width = plan.llmc_layout.dtype.itemsize
    return width == megatron.DTYPE_CODES[megatron.dtype_code_for_vocab(plan.tokenizer.vocab_size)].itemsize


def segment_suffixes(plan: BuildPlan) -> tuple[str, ...]:
    """The files of a part's llm.c segment, as its record lists them: ``.tokens`` (unless read from the ``.bin``) and
    ``.ends``."""
    return (ENDS_SUFFIX,) if from_megatron(plan) else (TOKENS_SUFFIX, ENDS_SUFFIX)


def stream_file(plan: BuildPlan, part: str) -> tuple[str, int]:
    """``(file, shift)``: the file (relative to the release) holding part ``part``'s llm.c ids, and how many ids of
    the stream come before its first byte (1: the separator "before", which the ``.bin`` does not hold)."""
    if not from_megatron(plan):
        return staging_rel(part, TOKENS_SUFFIX), 0
    split = plan.corpus.shards[int(part.rsplit("-", 1)[1])].split
    return pair_path(split, part, "bin"), int(plan.options.llmc_separator == "before")


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)
