"""A build's options: one frozen record, and the one writer and reader of their part of ``run_config.json``.

The command line (``hf-tokbin build``: each flag's ``dest`` is a field's
name), :func:`hf_tokbin.build_release` (its keywords) and
:func:`hf_tokbin.pipeline.plan_build` all make a :class:`BuildOptions`; an
invalid option fails when the record is made, before any work. Adding an
option is one field here (with its check in ``__post_init__`` and, if it
changes a byte, its key in :meth:`BuildOptions.to_record` and
:meth:`BuildOptions.from_record`) and one flag.

Checks that need the tokenizer (a format that needs a separator, ids that
fit a width) are the plan's: this record knows no tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Literal, get_args

from ..errors import BuildError, shown
from . import llmc, megatron
from .llmc_order import INTERLEAVED_SCOPE
from .mixture import MixtureSpec
from .records import checked_field, is_count
from .release import FORMATS
from .rules import SOURCE_NAME_RULE, is_source_name

Format = Literal["llmc", "megatron"]
LlmcLayout = Literal["gpt2", "llama3"]
# llm.c: the separator before each document (the llm.c layout) or after it (the TinyStories rules)
SeparatorPosition = Literal["before", "after"]
FastMode = Literal["auto", "never", "require"]
SpecialTokenPolicy = Literal["ordinary", "parsed"]

LLMC_LAYOUTS: tuple[str, ...] = llmc.FAMILIES  # the Literals above name the same (tests/formats/test_build_options.py)
SEPARATOR_POSITIONS: tuple[str, ...] = llmc.SEPARATOR_POSITIONS
FAST_MODES: tuple[str, ...] = get_args(FastMode)
SPECIAL_TOKEN_POLICIES: tuple[str, ...] = get_args(SpecialTokenPolicy)
MAX_SEED = 2**63 - 1  # numpy's SeedSequence takes any non-negative int; 64 bits keep run_config.json portable
# documents per encoded batch: larger batches amortize per-call costs (scripts/bench_build.py)
DEFAULT_BATCH_SIZE = 10_000
# The keys of run_config.json that to_record writes (the rest are the plan's: corpus, tokenizer, boundary tokens).
RECORD_KEYS = ("special_tokens", "shuffle", "formats", "llmc", "megatron")


@dataclass(frozen=True)
class BuildOptions:
    """How to build a release; every field is checked when the record is made.

    Args:
        formats: the output formats, among ``llmc`` and ``megatron`` (kept in that order).
        num_proc: worker processes encoding batches (1: in this process). No byte depends on it.
        batch_size: documents per encoded batch. No byte depends on it.
        max_tokens_per_file: llm.c's roll-over limit, 1..2**31-1 tokens per file.
        llmc_layout: llm.c header: ``gpt2`` (magic 20240520, the llm.c layout) or ``llama3`` (upstream's 20240801,
            uint32).
        llmc_separator: llm.c: the separator ``before`` each document (the llm.c layout) or ``after`` it (the
            TinyStories rules);
            None: the layout's own (the plan's choice: ``before``, and with ``llama3`` llm.c's own Llama 3
            data's ``<|begin_of_text|>`` as the separator, unless ``--doc-sep`` or ``--bos`` was given).
        parse_special: special-token text inside documents becomes the token (default: ordinary text).
        fast: ``auto`` uses the fast encoder where it is proven exact, ``never`` never, ``require`` or fail.
        shuffle_seed: write each part's documents in a seeded order, and interleave the parts' blocks in the llm.c
            files, 0..2**63-1 (None: corpus order; hf_tokbin.pipeline.shuffle).
        limit: build only the first N documents in corpus order, train first (None: all). Not in
            ``run_config.json``: the corpus pinned there is the limited one.
        source_column: the input's column of source names, counted per source and split in the receipts and
            ``stats.json`` (input files: copied as the corpus's ``source`` column; a plain Hub repo: read as it is).
            A corpus folder made with ``--source-column`` is counted by source without it.
        mix: a mixture of several corpora (``--mix``, ``--tokens``, ``--max-epochs``: :mod:`.mixture`); None: one
            corpus. Its documents are shuffled (``shuffle_seed``, 0 unless given).
    """

    formats: tuple[Format, ...] = FORMATS
    num_proc: int = 1
    batch_size: int = DEFAULT_BATCH_SIZE
    max_tokens_per_file: int = llmc.DEFAULT_MAX_TOKENS
    llmc_layout: LlmcLayout = "gpt2"
    llmc_separator: SeparatorPosition | None = None
    parse_special: bool = False
    fast: FastMode = "auto"
    shuffle_seed: int | None = None
    limit: int | None = None
    source_column: str | None = None
    mix: MixtureSpec | None = None

    def __post_init__(self) -> None:
        formats = (self.formats,) if isinstance(self.formats, str) else tuple(self.formats)
        if not formats or set(formats) - set(FORMATS):
            raise BuildError(None, "formats must be among llmc, megatron", got=",".join(map(str, formats)) or "none")
        object.__setattr__(self, "formats", tuple(f for f in FORMATS if f in formats))  # one canonical order
        _check(_is_positive(self.num_proc), "--num-proc must be at least 1", self.num_proc)
        _check(_is_positive(self.batch_size), "--batch-size must be at least 1", self.batch_size)
        limit = llmc.MAX_TOKENS_PER_FILE
        _check(
            _is_positive(self.max_tokens_per_file) and self.max_tokens_per_file <= limit,
            "--max-tokens-per-file out of range",
            self.max_tokens_per_file,
            f"1..{limit}",
        )
        _check(self.llmc_layout in LLMC_LAYOUTS, "llm.c layout must be gpt2 or llama3", self.llmc_layout)
        _check(
            self.llmc_separator is None or self.llmc_separator in SEPARATOR_POSITIONS,
            "--llmc-sep must be before or after",
            self.llmc_separator,
        )
        _check(isinstance(self.parse_special, bool), "parse_special must be true or false", self.parse_special)
        _check(self.fast in FAST_MODES, "fast-path mode must be auto, never or require", self.fast)
        _check(
            self.shuffle_seed is None or _is_seed(self.shuffle_seed),
            "--shuffle-seed must be an integer in 0..2**63-1",
            self.shuffle_seed,
        )
        _check(
            self.limit is None or _is_positive(self.limit),
            "--limit must be a positive number of documents",
            self.limit,
        )
        _check(
            self.source_column is None or is_source_name(self.source_column),
            f"--source-column must name a column: {SOURCE_NAME_RULE}",
            shown(self.source_column),
        )
        if isinstance(self.mix, str):  # "web=0.6,code=0.4", as --mix takes it
            object.__setattr__(self, "mix", MixtureSpec.parse(self.mix))
        elif isinstance(self.mix, dict):  # {"web": 0.6, "code": 0.4}
            object.__setattr__(self, "mix", MixtureSpec(tuple(self.mix.items())))
        if self.mix is not None:
            _check(isinstance(self.mix, MixtureSpec), "mix must be NAME=W,... or a MixtureSpec", self.mix)
            _check(self.limit is None, "--limit cannot cut a mixture: give --tokens", self.limit)
            _check(
                self.source_column is None, "--source-column: a mixture names its sources by corpus", self.source_column
            )
            if self.shuffle_seed is None:  # a mixture draws and interleaves documents by a seed: 0 unless given
                object.__setattr__(self, "shuffle_seed", 0)

    @classmethod
    def of(cls, options: BuildOptions | None = None, **fields_given) -> BuildOptions:
        """``options`` (default: every default) with ``fields_given`` in place of its fields; each checked."""
        unknown = sorted(set(fields_given) - set(option_names()))
        if unknown:
            raise BuildError(
                None, "unknown build option", expected=f"one of {', '.join(option_names())}", got=", ".join(unknown)
            )
        return replace(options if options is not None else cls(), **fields_given)

    @property
    def special_tokens(self) -> SpecialTokenPolicy:
        """``run_config.json``'s policy for special-token text inside documents."""
        return "parsed" if self.parse_special else "ordinary"

    def to_record(self, vocab_size: int, has_separator: bool) -> dict:
        """The options' keys of ``run_config.json`` (:data:`RECORD_KEYS`,
        in that order); none depends on num_proc or batch size.
        """
        # "shuffle" only when a seed is given, so a build in corpus order writes the same bytes as without the option.
        shuffle = (
            {"shuffle": {"seed": self.shuffle_seed, "scope": INTERLEAVED_SCOPE}}
            if self.shuffle_seed is not None
            else {}
        )
        llmc_record = {
            "layout": self.llmc_layout,
            "separator": (self.llmc_separator or "before") if has_separator else None,
            "max_tokens_per_file": self.max_tokens_per_file,
        }
        return {
            "special_tokens": self.special_tokens,
            **shuffle,
            "formats": list(self.formats),
            "llmc": llmc_record if "llmc" in self.formats else None,
            "megatron": {"dtype_code": megatron.dtype_code_for_vocab(vocab_size)}
            if "megatron" in self.formats
            else None,
        }

    @classmethod
    def from_record(cls, path, obj: dict, vocab_size: int, has_separator: bool) -> BuildOptions:
        """The options ``run_config.json`` (format 2) at ``path`` records; each key checked, errors naming it."""
        formats = read_formats(path, obj)
        given = {"formats": formats, "max_tokens_per_file": read_format_records(path, obj, formats, vocab_size)}
        special = checked_field(
            path, obj, "special_tokens", lambda v: v in SPECIAL_TOKEN_POLICIES, " or ".join(SPECIAL_TOKEN_POLICIES)
        )
        given["parse_special"] = special == "parsed"
        given["shuffle_seed"] = (
            checked_field(path, obj, "shuffle.seed", _is_seed, "an integer in 0..2**63-1")
            if "shuffle" in obj
            else None
        )
        if "llmc" in formats:
            given["llmc_layout"] = checked_field(
                path, obj, "llmc.layout", lambda v: v in LLMC_LAYOUTS, " or ".join(LLMC_LAYOUTS)
            )
            allowed = SEPARATOR_POSITIONS if has_separator else (None,)
            rule = " or ".join(SEPARATOR_POSITIONS) if has_separator else "null without doc_sep"
            given["llmc_separator"] = (
                checked_field(path, obj, "llmc.separator", lambda v: v in allowed, rule) or "before"
            )
        return cls(**given)


def read_formats(path, obj: dict) -> tuple[str, ...]:
    """``run_config.json``'s ``formats`` (both format versions): distinct names among :data:`FORMATS`."""
    ok = lambda v: isinstance(v, list) and v and all(f in FORMATS for f in v) and len(set(v)) == len(v)  # noqa: E731
    return tuple(checked_field(path, obj, "formats", ok, f"a list of distinct formats among {', '.join(FORMATS)}"))


def read_format_records(path, obj: dict, formats: tuple[str, ...], vocab_size: int) -> int:
    """``llmc.max_tokens_per_file`` (the default without llm.c), after checking
    ``llmc`` and ``megatron``: each an object with its format, null without.

    A consumer learns the layout from these, so they are checked like the rest:
    the dtype code is the one ``vocab_size`` needs (and verify checks every
    ``.idx`` holds it); every llm.c file's n_tokens is checked against the limit.
    """
    for name in FORMATS:
        if name not in formats:
            checked_field(path, obj, name, lambda v: v is None, f"null without the {name} format")
    if "megatron" in formats:
        code = megatron.dtype_code_for_vocab(vocab_size)
        checked_field(
            path,
            obj,
            "megatron.dtype_code",
            lambda v: is_count(v) and v == code,
            f"{code}, the dtype code of vocab_size {vocab_size}",
        )
    if "llmc" not in formats:
        return llmc.DEFAULT_MAX_TOKENS
    limit = llmc.MAX_TOKENS_PER_FILE
    return checked_field(
        path, obj, "llmc.max_tokens_per_file", lambda v: _is_positive(v) and v <= limit, f"an integer in 1..{limit}"
    )


def option_names() -> tuple[str, ...]:
    """The fields of :class:`BuildOptions`: the keywords ``plan_build``
    and ``build_release`` pass on, the CLI's flag ``dest`` names.
    """
    return tuple(f.name for f in fields(BuildOptions))


def _check(ok: bool, rule: str, got, expected=None) -> None:
    if not ok:
        raise BuildError(None, rule, expected=expected, got=got)


def _is_positive(value) -> bool:
    return is_count(value) and value > 0


def _is_seed(value) -> bool:
    return is_count(value) and value <= MAX_SEED

