"""``run_config.json``: what a release was built from and how, pinned before any work starts.

::

    {"format": "hf_tokbin.run_config/1",
     "dataset": "tinystories", "version": "v1",
     "corpus": {"name", "license", "language": [...], "source": "local" | "NS/NAME",
                "revision": null | "<commit>", "manifest_sha256": "<hex>",
                "shards": [{"path", "split", "rows", "size", "sha256"}, ...]},
     "tokenizer": {"tokenizer_id", "sha256", "vocab_size", "doc_sep_id", "source", "revision", "subfolder"},
     "eod_id": null | N,                       the doc_sep_id with the megatron format
     "split_rule": {"name", "text"},
     "shuffle": {"seed": S, "scope": "documents within each part"},   only with build --shuffle-seed S
     "formats": ["llmc", "megatron"],
     "llmc": null | {"variant": "seed000" | "llama3", "max_tokens_per_file": N, "doc_sep_id": null | N},
     "megatron": null | {"dtype_code": 8 | 4},
     "versions": {"hf_tokbin": "...", "tokenizers": "..."}}

Nothing in it depends on ``num_proc``, batch size or engine, and it holds no
absolute path or time, so the same build writes the same bytes anywhere.
:func:`run_config_record` is the one writer; :class:`RunConfig` the one
reader (every field a release is checked against, validated on reading).
Input shard i of ``corpus.shards`` is ``part-{i:06d}`` of the release.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .._io import read_json
from ..errors import FormatError, VerificationError
from . import llmc, megatron
from .records import FileEntry, is_count, is_sha256
from .release import FORMATS, SPLITS, TOKENS_DIR

RUN_CONFIG_FORMAT = "hf_tokbin.run_config/1"
# llmc.variant -> the llm.c layout family it writes (formats.llmc.LAYOUTS).
LLMC_VARIANTS = {"seed000": "gpt2", "llama3": "llama3"}
SHUFFLE_SCOPE = "documents within each part"  # build --shuffle-seed (hf_tokbin.build.shuffle)


def run_config_record(
    *,
    dataset: str,
    version: str,
    corpus: dict,
    tokenizer: dict,
    split_rule: dict,
    formats: tuple[str, ...],
    llmc_variant: str,
    max_tokens_per_file: int,
    versions: dict,
    shuffle_seed: int | None = None,
) -> dict:
    """The ``run_config.json`` object, keys in their fixed order."""
    doc_sep_id = tokenizer["doc_sep_id"]
    # "shuffle" only when a seed is given, so a build in corpus order writes the same bytes as before.
    shuffle = {"shuffle": {"seed": shuffle_seed, "scope": SHUFFLE_SCOPE}} if shuffle_seed is not None else {}
    return {
        "format": RUN_CONFIG_FORMAT,
        "dataset": dataset,
        "version": version,
        "corpus": corpus,
        "tokenizer": tokenizer,
        "eod_id": doc_sep_id if "megatron" in formats else None,
        "split_rule": split_rule,
        **shuffle,
        "formats": list(formats),
        "llmc": (
            {"variant": llmc_variant, "max_tokens_per_file": max_tokens_per_file, "doc_sep_id": doc_sep_id}
            if "llmc" in formats
            else None
        ),
        "megatron": {"dtype_code": megatron.dtype_code_for_vocab(tokenizer["vocab_size"])} if "megatron" in formats else None,
        "versions": versions,
    }


@dataclass(frozen=True)
class ShardPin:
    """One input shard as ``run_config.json`` pins it; part N is built from shard N."""

    file: FileEntry
    split: str
    rows: int


@dataclass(frozen=True)
class RunConfig:
    """The fields of ``run_config.json`` a release is checked against, each validated on reading."""

    dataset: str
    version: str
    formats: tuple[str, ...]
    corpus_manifest_sha256: str
    shards: tuple[ShardPin, ...]
    tokenizer_id: str
    tokenizer_sha256: str
    vocab_size: int
    doc_sep_id: int | None
    eod_id: int | None  # the doc_sep_id with the megatron format, else None
    llmc_variant: str | None  # a key of LLMC_VARIANTS with the llmc format, else None
    shuffle_seed: int | None = None  # build --shuffle-seed; None: corpus order

    @property
    def llmc_dir(self) -> str:
        return f"{TOKENS_DIR}/{self.tokenizer_id}/{self.dataset}"

    def llmc_identity(self) -> dict:
        """What the llm.c ``_MANIFEST.json`` must say about the tokenizer and corpus, by its field names."""
        return {
            "tokenizer_id": self.tokenizer_id,
            "tokenizer_sha256": self.tokenizer_sha256,
            "vocab_size": self.vocab_size,
            "doc_sep_id": self.doc_sep_id,
            "dataset": self.dataset,
            "version": self.version,
            "corpus_manifest_sha256": self.corpus_manifest_sha256,
        }

    @classmethod
    def read(cls, path: Path) -> RunConfig:
        obj = read_json(path, VerificationError)

        def get(name: str, ok: Callable, rule: str):
            return _field(path, obj, name, ok, rule)

        formats = get("formats", lambda v: isinstance(v, list) and v and all(f in FORMATS for f in v) and len(set(v)) == len(v), f"a list of distinct formats among {', '.join(FORMATS)}")
        vocab_size = get("tokenizer.vocab_size", lambda v: is_count(v) and v > 0, "a positive integer")
        for fmt, limit in (("llmc", llmc.version_for_vocab), ("megatron", megatron.dtype_code_for_vocab)):
            if fmt in formats:
                try:
                    limit(vocab_size)
                except FormatError as e:
                    raise VerificationError(path, f"tokenizer.vocab_size: {e.rule} ({fmt} format)", expected=e.expected, got=e.got) from None
        doc_sep_id = get("tokenizer.doc_sep_id", lambda v: v is None or (is_count(v) and v < vocab_size), f"null or an id < vocab_size ({vocab_size})")
        if "megatron" in formats:
            if doc_sep_id is None:
                raise VerificationError(path, "tokenizer.doc_sep_id must be an id: the megatron format ends every document with it", got=None)
            eod_id = get("eod_id", lambda v: is_count(v) and v == doc_sep_id, f"the tokenizer's doc_sep_id {doc_sep_id} (Megatron pairs end every document with it)")
        else:
            eod_id = get("eod_id", lambda v: v is None, "null without the megatron format")
        variant = get("llmc.variant", lambda v: isinstance(v, str) and v in LLMC_VARIANTS, f"one of {', '.join(LLMC_VARIANTS)}") if "llmc" in formats else None
        return cls(
            dataset=get("dataset", _is_name, "a non-empty name without '/' or a leading '.'"),
            version=get("version", lambda v: isinstance(v, str) and v != "", "a non-empty string"),
            formats=tuple(formats),
            corpus_manifest_sha256=get("corpus.manifest_sha256", is_sha256, "64 lowercase hex digits"),
            shards=_read_shards(path, get("corpus.shards", lambda v: isinstance(v, list), "a list")),
            tokenizer_id=get("tokenizer.tokenizer_id", _is_name, "a non-empty name without '/' or a leading '.'"),
            tokenizer_sha256=get("tokenizer.sha256", is_sha256, "64 lowercase hex digits"),
            vocab_size=vocab_size,
            doc_sep_id=doc_sep_id,
            eod_id=eod_id,
            llmc_variant=variant,
            shuffle_seed=get("shuffle.seed", lambda v: is_count(v) and v < 2**63, "an integer in 0..2**63-1") if "shuffle" in obj else None,
        )


def _read_shards(path: Path, shards: list) -> tuple[ShardPin, ...]:
    pins = []
    seen = set()
    for i, shard in enumerate(shards):
        where = f"corpus.shards[{i}]."
        file_path = _field(path, shard, "path", lambda v: isinstance(v, str) and v != "", "a non-empty string", where)
        split = _field(path, shard, "split", lambda v: isinstance(v, str) and v in SPLITS, f"one of {', '.join(SPLITS)}", where)
        rows = _field(path, shard, "rows", is_count, "a non-negative integer", where)
        size = _field(path, shard, "size", is_count, "a non-negative integer", where)
        sha256 = _field(path, shard, "sha256", is_sha256, "64 lowercase hex digits", where)
        try:
            entry = FileEntry(file_path, size, sha256)
        except FormatError as e:
            raise VerificationError(path, f"{where}path: {e.rule}", got=e.got) from None
        if rows and sha256 in seen:
            raise VerificationError(path, f"{where}sha256: the same input shard appears twice (splits must be disjoint)", got=file_path)
        seen.add(sha256)
        pins.append(ShardPin(entry, split, rows))
    return tuple(pins)


def _field(path: Path, obj, name: str, ok: Callable, rule: str, prefix: str = ""):
    """The field ``name`` of ``obj`` ("a.b" is ``obj["a"]["b"]``), which must satisfy ``ok``; errors say ``prefix + name``."""
    value = obj
    for key in name.split("."):
        if not isinstance(value, dict) or key not in value:
            raise VerificationError(path, f"{prefix}{name} is missing")
        value = value[key]
    if not ok(value):
        raise VerificationError(path, f"{prefix}{name} must be {rule}", got=value)
    return value


def _is_name(value) -> bool:
    """A folder name under ``tokens/``: non-empty, one path component, not hidden."""
    return isinstance(value, str) and value != "" and "/" not in value and not value.startswith(".")
