"""``run_config.json``: what a release was built from and how, pinned before any work starts.

::

    {"format": "hf_tokbin.run_config/2",
     "dataset": "tinystories", "version": "v1",
     "corpus": {"name", "license", "language": [...], "source": "local" | "NS/NAME",
                "revision": null | "<commit>", "manifest_sha256": "<hex>",
                "shards": [{"path", "split", "rows", "size", "sha256"}, ...]},
     "tokenizer": {"tokenizer_id", "sha256", "vocab_size", "source", "revision", "subfolder"},
     "special_tokens": "ordinary" | "parsed",  special-token text inside documents
     "doc_sep": null | BOUNDARY,               the separator (llm.c) and EOD (Megatron): one id
     "bos": null | BOUNDARY,                   put before every document, in both formats
     "split_rule": {"name", "text"},
     "shuffle": {"seed": S, "scope": "documents within each part"},   only with build --shuffle-seed S
     "ids": {"from", "checked": "sample:K", "rule"},   only for a dataset's input_ids checked on a sample
     "formats": ["llmc", "megatron"],
     "llmc": null | {"layout": "gpt2" | "llama3", "separator": null | "before" | "after",
                     "max_tokens_per_file": N},
     "megatron": null | {"dtype_code": 8 | 4},
     "versions": {"hf_tokbin": "...", "tokenizers": "..."}}

    BOUNDARY = {"id": N, "token": null | "<|endoftext|>", "source": "--doc-sep" | "--bos" |
                "generation_config.json eos_token_id" | "tokenizer_config.json eos_token" |
                "special_tokens_map.json eos_token",
                "ordinary_text_can_encode": true | false}

The document layouts it pins (``[x]`` one token, ``ids`` a document's text):

- Megatron: every document is one sequence ``[bos] + ids + [eod]`` (``bos`` only
  when given), ``eod`` = ``doc_sep.id``; the lengths count both.
- llm.c, ``separator: "before"`` (seed 000): ``[sep] + [bos] + ids`` per document;
  ``"after"`` (seed 002): ``[bos] + ids + [sep]``; ``null`` (no separator):
  ``[bos] + ids``.

``special_tokens: "ordinary"``: a special token's text inside a document was
encoded as ordinary text, so a boundary id whose ``ordinary_text_can_encode``
is false never occurs inside a document. ``"parsed"``
(``--parse-special-tokens``): such text was encoded as the token.

Nothing in it depends on ``num_proc``, batch size or engine, and it holds no
absolute path or time, so the same build writes the same bytes anywhere.
:func:`run_config_record` is the one writer; :class:`RunConfig` the one
reader (every field a release is checked against, validated on reading), of
this format and of ``hf_tokbin.run_config/1`` (older releases: their
separator and EOD were ``tokenizer.doc_sep_id``, their llm.c layout
``llmc.variant`` "seed000" = "gpt2", separator before, special-token text
parsed, no BOS). Input shard i of ``corpus.shards`` is ``part-{i:06d}`` of
the release.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from .._io import read_json
from ..errors import FormatError, VerificationError
from . import llmc, megatron
from .records import FileEntry, is_count, is_sha256
from .release import FORMATS, SPLITS, TOKENS_DIR

RUN_CONFIG_FORMAT = "hf_tokbin.run_config/2"
RUN_CONFIG_FORMAT_V1 = "hf_tokbin.run_config/1"
# Format 1's llmc.variant -> the llm.c layout (formats.llmc.FAMILIES) it wrote; also the deprecated --llmc-variant.
LLMC_VARIANTS = {"seed000": "gpt2", "llama3": "llama3"}
SHUFFLE_SCOPE = "documents within each part"  # build --shuffle-seed (hf_tokbin.pipeline.shuffle)
LLMC_LAYOUTS = llmc.FAMILIES
SEPARATOR_POSITIONS = ("before", "after")  # where llm.c puts the separator: before each document (seed 000) or after (seed 002)
SPECIAL_TOKEN_POLICIES = ("ordinary", "parsed")


@dataclass(frozen=True)
class BoundaryToken:
    """A token the writers put at document boundaries: the separator / EOD, or the BOS.

    ``ordinary_text_can_encode`` says whether a document's text, encoded with
    special-token text as ordinary text, can give this id (the byte tokenizer:
    always; ``tokenizers``: :func:`hf_tokbin.tokenizer.resolve.ordinary_text_can_encode`).
    When it cannot, the id inside a document is proof of a broken release.
    """

    id: int
    token: str | None  # its text in the tokenizer's vocabulary; None for the byte tokenizer
    source: str  # "--doc-sep", "generation_config.json eos_token_id", ...
    ordinary_text_can_encode: bool

    def to_record(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        """``50256 '<|endoftext|>' (from generation_config.json eos_token_id)``, for the build's first line."""
        token = f" {self.token!r}" if self.token is not None else ""
        return f"{self.id}{token} (from {self.source})"


def run_config_record(
    *,
    dataset: str,
    version: str,
    corpus: dict,
    tokenizer: dict,
    special_tokens: str,
    doc_sep: BoundaryToken | None,
    bos: BoundaryToken | None,
    split_rule: dict,
    formats: tuple[str, ...],
    llmc_layout: str,
    llmc_separator: str,
    max_tokens_per_file: int,
    versions: dict,
    shuffle_seed: int | None = None,
    ids: dict | None = None,
) -> dict:
    """The ``run_config.json`` object, keys in their fixed order."""
    # "shuffle" only when a seed is given, so a build in corpus order writes the same bytes as without the option.
    shuffle = {"shuffle": {"seed": shuffle_seed, "scope": SHUFFLE_SCOPE}} if shuffle_seed is not None else {}
    return {
        "format": RUN_CONFIG_FORMAT,
        "dataset": dataset,
        "version": version,
        "corpus": corpus,
        "tokenizer": tokenizer,
        "special_tokens": special_tokens,
        "doc_sep": doc_sep.to_record() if doc_sep is not None else None,
        "bos": bos.to_record() if bos is not None else None,
        "split_rule": split_rule,
        **shuffle,
        # "ids" only when given ids were checked on a sample: checked in full, they are the tokenizer's (the same bytes).
        **({"ids": ids} if ids is not None else {}),
        "formats": list(formats),
        "llmc": (
            {"layout": llmc_layout, "separator": llmc_separator if doc_sep is not None else None, "max_tokens_per_file": max_tokens_per_file}
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
    """The fields of ``run_config.json`` a release is checked against (and its card shows), each validated on reading."""

    dataset: str
    version: str
    formats: tuple[str, ...]
    corpus_manifest_sha256: str
    shards: tuple[ShardPin, ...]
    tokenizer_id: str
    tokenizer_sha256: str
    vocab_size: int
    doc_sep: BoundaryToken | None  # the llm.c separator and the Megatron EOD
    bos: BoundaryToken | None
    special_tokens: str  # "ordinary" or "parsed"
    llmc_layout: str | None  # "gpt2" or "llama3" with the llmc format, else None
    llmc_separator: str | None  # "before" or "after" with the llmc format and a separator, else None
    shuffle_seed: int | None = None  # build --shuffle-seed; None: corpus order
    format: str = RUN_CONFIG_FORMAT
    # What the card shows, as recorded (not checked against the files).
    tokenizer: dict | None = None  # the tokenizer record, as written
    corpus: dict | None = None  # the corpus record but its shards
    split_rule: dict | None = None
    versions: dict | None = None  # the versions of hf_tokbin and tokenizers that built it
    # Checked on reading and against the files by verify: llm.c's roll-over limit, Megatron's dtype code (None without the format).
    max_tokens_per_file: int | None = None
    megatron_dtype_code: int | None = None

    @property
    def doc_sep_id(self) -> int | None:
        return self.doc_sep.id if self.doc_sep is not None else None

    @property
    def bos_id(self) -> int | None:
        return self.bos.id if self.bos is not None else None

    @property
    def eod_id(self) -> int | None:
        """The id ending every Megatron sequence: the separator, with the megatron format."""
        return self.doc_sep_id if "megatron" in self.formats else None

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

    def boundary_tokens(self) -> dict[str, BoundaryToken]:
        """The boundary tokens by role ("separator", "BOS"), for checks that look for them inside documents."""
        roles = {"separator": self.doc_sep, "BOS": self.bos}
        return {role: token for role, token in roles.items() if token is not None}

    @classmethod
    def read(cls, path: Path) -> RunConfig:
        obj = read_json(path, VerificationError)

        def get(name: str, ok: Callable, rule: str):
            return _field(path, obj, name, ok, rule)

        version_1 = isinstance(obj, dict) and obj.get("format") == RUN_CONFIG_FORMAT_V1
        fmt = get("format", lambda v: v in (RUN_CONFIG_FORMAT, RUN_CONFIG_FORMAT_V1), f"{RUN_CONFIG_FORMAT} (or {RUN_CONFIG_FORMAT_V1})")
        formats = get("formats", lambda v: isinstance(v, list) and v and all(f in FORMATS for f in v) and len(set(v)) == len(v), f"a list of distinct formats among {', '.join(FORMATS)}")
        vocab_size = get("tokenizer.vocab_size", lambda v: is_count(v) and v > 0, "a positive integer")
        for name, limit in (("llmc", llmc.version_for_vocab), ("megatron", megatron.dtype_code_for_vocab)):
            if name in formats:
                try:
                    limit(vocab_size)
                except FormatError as e:
                    raise VerificationError(path, f"tokenizer.vocab_size: {e.rule} ({name} format)", expected=e.expected, got=e.got) from None
        is_id = lambda v: is_count(v) and v < vocab_size  # noqa: E731
        if version_1:
            doc_sep, bos, special_tokens, layout, separator = _read_version_1(path, obj, formats, is_id, vocab_size)
        else:
            doc_sep = _read_boundary(path, obj, "doc_sep", is_id, vocab_size)
            if "megatron" in formats and doc_sep is None:
                raise VerificationError(path, "doc_sep must be an id: the megatron format ends every document with it", got=None)
            bos = _read_boundary(path, obj, "bos", is_id, vocab_size)
            special_tokens = get("special_tokens", lambda v: v in SPECIAL_TOKEN_POLICIES, " or ".join(SPECIAL_TOKEN_POLICIES))
            layout = get("llmc.layout", lambda v: v in LLMC_LAYOUTS, " or ".join(LLMC_LAYOUTS)) if "llmc" in formats else None
            separator = None
            if "llmc" in formats:
                allowed = SEPARATOR_POSITIONS if doc_sep is not None else (None,)
                separator = get("llmc.separator", lambda v: v in allowed, " or ".join(SEPARATOR_POSITIONS) if doc_sep is not None else "null without doc_sep")
        if "megatron" in formats and doc_sep is None:
            raise VerificationError(path, "doc_sep must be an id: the megatron format ends every document with it", got=None)
        max_tokens_per_file, dtype_code = _read_format_records(path, obj, formats, vocab_size)
        return cls(
            dataset=get("dataset", _is_name, "a non-empty name without '/' or a leading '.'"),
            version=get("version", lambda v: isinstance(v, str) and v != "", "a non-empty string"),
            formats=tuple(formats),
            corpus_manifest_sha256=get("corpus.manifest_sha256", is_sha256, "64 lowercase hex digits"),
            shards=_read_shards(path, get("corpus.shards", lambda v: isinstance(v, list), "a list")),
            tokenizer_id=get("tokenizer.tokenizer_id", _is_name, "a non-empty name without '/' or a leading '.'"),
            tokenizer_sha256=get("tokenizer.sha256", is_sha256, "64 lowercase hex digits"),
            vocab_size=vocab_size,
            doc_sep=doc_sep,
            bos=bos,
            special_tokens=special_tokens,
            llmc_layout=layout,
            llmc_separator=separator,
            shuffle_seed=get("shuffle.seed", lambda v: is_count(v) and v < 2**63, "an integer in 0..2**63-1") if "shuffle" in obj else None,
            format=fmt,
            # Both objects: their fields above were read.
            tokenizer=dict(obj["tokenizer"]),
            corpus={k: v for k, v in obj["corpus"].items() if k != "shards"},
            split_rule=obj.get("split_rule") if isinstance(obj.get("split_rule"), dict) else None,
            versions=obj.get("versions") if isinstance(obj.get("versions"), dict) else None,
            max_tokens_per_file=max_tokens_per_file,
            megatron_dtype_code=dtype_code,
        )


def _read_format_records(path: Path, obj: dict, formats: list, vocab_size: int) -> tuple[int | None, int | None]:
    """(``llmc.max_tokens_per_file``, ``megatron.dtype_code``): each an object with its format, null without.

    A consumer learns the layout from these, so they are checked like the rest:
    the dtype code is the one ``vocab_size`` needs (and verify checks every
    ``.idx`` holds it); every llm.c file's n_tokens is checked against the limit.
    """
    for name in ("llmc", "megatron"):
        if name not in formats:
            _field(path, obj, name, lambda v: v is None, f"null without the {name} format")
    max_tokens = dtype_code = None
    if "llmc" in formats:
        limit = llmc.MAX_TOKENS_PER_FILE
        max_tokens = _field(path, obj, "llmc.max_tokens_per_file", lambda v: is_count(v) and 0 < v <= limit, f"an integer in 1..{limit}")
    if "megatron" in formats:
        code = megatron.dtype_code_for_vocab(vocab_size)
        dtype_code = _field(path, obj, "megatron.dtype_code", lambda v: is_count(v) and v == code, f"{code}, the dtype code of vocab_size {vocab_size}")
    return max_tokens, dtype_code


def _read_boundary(path: Path, obj: dict, name: str, is_id: Callable, vocab_size: int) -> BoundaryToken | None:
    """``doc_sep`` or ``bos``: null, or a boundary token record."""
    value = _field(path, obj, name, lambda v: v is None or isinstance(v, dict), "null or an object")
    if value is None:
        return None
    return BoundaryToken(
        id=_field(path, value, "id", is_id, f"an id < vocab_size ({vocab_size})", f"{name}."),
        token=_field(path, value, "token", lambda v: v is None or isinstance(v, str), "null or a string", f"{name}."),
        source=_field(path, value, "source", lambda v: isinstance(v, str) and v != "", "a non-empty string", f"{name}."),
        ordinary_text_can_encode=_field(path, value, "ordinary_text_can_encode", lambda v: isinstance(v, bool), "true or false", f"{name}."),
    )


def _read_version_1(path: Path, obj: dict, formats: list, is_id: Callable, vocab_size: int):
    """(doc_sep, bos, special_tokens, llmc layout, llmc separator) of a format-1 run_config.json."""
    doc_sep_id = _field(path, obj, "tokenizer.doc_sep_id", lambda v: v is None or is_id(v), f"null or an id < vocab_size ({vocab_size})")
    if "megatron" in formats:
        _field(path, obj, "eod_id", lambda v: is_count(v) and v == doc_sep_id, f"the tokenizer's doc_sep_id {doc_sep_id} (Megatron pairs end every document with it)")
    else:
        _field(path, obj, "eod_id", lambda v: v is None, "null without the megatron format")
    layout = separator = None
    if "llmc" in formats:
        variant = _field(path, obj, "llmc.variant", lambda v: isinstance(v, str) and v in LLMC_VARIANTS, f"one of {', '.join(LLMC_VARIANTS)}")
        layout, separator = LLMC_VARIANTS[variant], "before" if doc_sep_id is not None else None
    # Format 1 knew nothing of where its separator came from, and its builds parsed special-token text.
    doc_sep = BoundaryToken(doc_sep_id, None, "tokenizer.doc_sep_id", True) if doc_sep_id is not None else None
    return doc_sep, None, "parsed", layout, separator


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
