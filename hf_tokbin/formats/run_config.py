"""``run_config.json``: what a release was built from and how, pinned before any work starts.

::

    {"format": "hf_tokbin.run_config/2",
     "dataset": "tinystories", "version": "v1",
     "corpus": {"name", "license", "language": [...], "source": "local" | "NS/NAME",
                "revision": null | "<commit>", "manifest_sha256": "<hex>",
                "shards": [{"path", "split", "rows", "size", "sha256"}, ...],
                "subset": {...},                 only with build --limit: formats.corpus_manifest.CorpusSubset
                "source_column": "source"},      only when the build counted by source
                                                 (receipts' and stats.json's sources)
     "mix": {"sources": [{"name", "weight", "corpus": {"name", "source", "revision", "manifest_sha256"}}, ...],
             "tokens": null | T, "max_epochs": E},   only for a mixture of corpora (formats/mixture.py); corpus is
                                                 then the combined corpus (hf_tokbin.corpus.mixture)
     "tokenizer": {"tokenizer_id", "sha256", "vocab_size", "source", "revision", "subfolder",
                   "config_files": {NAME: "<hex>"}},   the config files read beside tokenizer.json (not byte)
     "special_tokens": "ordinary" | "parsed",  special-token text inside documents
     "doc_sep": null | BOUNDARY,               the separator (llm.c) and EOD (Megatron): one id
     "bos": null | BOUNDARY,                   put before every document, in both formats
     "split_rule": {"name", "text"},
     "shuffle": {"seed": S, "scope": SCOPE},   only with build --shuffle-seed S; SCOPE (formats/llmc_order.py):
                "documents within each part, and the parts' blocks interleaved in the llm.c files", or
                "documents within each part" (releases before: llm.c files in part order)
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
- llm.c, ``separator: "before"`` (the llm.c layout): ``[sep] + [bos] + ids`` per document;
  ``"after"`` (the TinyStories rules): ``[bos] + ids + [sep]``; ``null`` (no separator):
  ``[bos] + ids``.

``special_tokens: "ordinary"``: a special token's text inside a document was
encoded as ordinary text, so a boundary id whose ``ordinary_text_can_encode``
is false never occurs inside a document. ``"parsed"``
(``--parse-special-tokens``): such text was encoded as the token.

Nothing in it depends on ``num_proc``, batch size or engine, and it holds no
absolute path or time, so the same build writes the same bytes anywhere.
:func:`run_config_record` is the one writer; :class:`RunConfig` the one
reader (every field a release is checked against, validated on reading); the
build's options in it are written and read by
:class:`hf_tokbin.formats.build_options.BuildOptions` alone. It reads
this format and of ``hf_tokbin.run_config/1`` (older releases: their
separator and EOD were ``tokenizer.doc_sep_id``, their llm.c layout
``llmc.variant`` "seed000" = "gpt2" (the llm.c layout), separator before,
special-token text parsed, no BOS). Input shard i of ``corpus.shards`` is ``part-{i:06d}`` of
the release.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

from .._io import canonical_json, read_json, sha256_bytes
from ..errors import FormatError, VerificationError, shown
from . import llmc, megatron
from .build_options import BuildOptions, read_format_records, read_formats
from .corpus_manifest import CorpusSubset
from .llmc_order import INTERLEAVED_SCOPE, SHUFFLE_SCOPES
from .mixture import read_mix_record
from .records import FileEntry, checked_field, is_count, is_sha256
from .release import SPLITS, TOKENS_DIR
from .rules import FOLDER_NAME_RULE, SOURCE_NAME_RULE, is_commit_id, is_folder_name, is_repo_id, is_source_name
from .tokenizer_configs import CONFIG_FILES

RUN_CONFIG_FORMAT = "hf_tokbin.run_config/2"
RUN_CONFIG_FORMAT_V1 = "hf_tokbin.run_config/1"
# Format 1's llmc.variant -> the llm.c layout (formats.llmc.FAMILIES) it wrote; also the deprecated --llmc-variant.
LLMC_VARIANTS = {"seed000": "gpt2", "llama3": "llama3"}


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
    doc_sep: BoundaryToken | None,
    bos: BoundaryToken | None,
    split_rule: dict,
    options: BuildOptions,
    versions: dict,
    ids: dict | None = None,
    llmc_doc_sep: BoundaryToken | None = None,
    mix: dict | None = None,
) -> dict:
    """The ``run_config.json`` object, keys in their fixed order
    (the options' keys are :meth:`BuildOptions.to_record`'s).

    ``llmc_doc_sep``: llm.c's separator when it is not ``doc_sep`` (``llmc.doc_sep``;
    absent otherwise, so every other build keeps its bytes).
    """
    chosen = options.to_record(tokenizer["vocab_size"], (llmc_doc_sep or doc_sep) is not None)
    if llmc_doc_sep is not None and chosen["llmc"] is not None:
        chosen["llmc"]["doc_sep"] = llmc_doc_sep.to_record()
    return {
        "format": RUN_CONFIG_FORMAT,
        "dataset": dataset,
        "version": version,
        "corpus": corpus,
        # "mix" only for a mixture of corpora (formats.mixture), so every other build keeps its bytes.
        **({"mix": mix} if mix is not None else {}),
        "tokenizer": tokenizer,
        "special_tokens": chosen.pop("special_tokens"),
        "doc_sep": doc_sep.to_record() if doc_sep is not None else None,
        "bos": bos.to_record() if bos is not None else None,
        "split_rule": split_rule,
        **chosen,  # "shuffle" (only with a seed), "formats", "llmc", "megatron"
        # "ids" only when given ids were checked on a sample: checked
        # in full, they are the tokenizer's (the same bytes).
        **({"ids": ids} if ids is not None else {}),
        "versions": versions,
    }


@dataclass(frozen=True)
class ShardPin:
    """One input shard as ``run_config.json`` pins it; part N is built from shard N."""

    file: FileEntry
    split: str
    rows: int


BYTE_VOCAB_SIZE = 256
# The byte tokenizer (ids = UTF-8 bytes) has no tokenizer.json; this canonical description stands in for it.
BYTE_DESCRIPTION = canonical_json({"model": "byte", "vocab_size": BYTE_VOCAB_SIZE})
BYTE_TOKENIZER_SHA256 = sha256_bytes(BYTE_DESCRIPTION.encode())  # run_config.json's tokenizer.sha256 for it


def as_id_definition(tokenizer, parse_special: bool):
    """A ``tokenizers.Tokenizer`` set to give a document's ids as a release defines them; the same object.

    ``tokenizer.encode(text, add_special_tokens=False).ids`` with special-token
    text as ``special_tokens`` says (ordinary text unless ``parse_special``), no
    truncation, no padding: a ``tokenizer.json`` may carry ``truncation`` and
    ``padding`` (saved after ``enable_truncation``/``enable_padding``), which
    would cut every document at ``max_length`` and fill a batch's shorter
    documents with pad ids, so the release would not hold the document's text.
    """
    tokenizer.encode_special_tokens = not parse_special
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


@dataclass(frozen=True)
class RunConfig:
    """The fields of ``run_config.json`` a release is checked against (and its card shows), each validated on reading.
    """

    dataset: str
    version: str
    # as recorded (format 1: as its builds were); num_proc, batch size and limit at their defaults
    options: BuildOptions
    corpus_manifest_sha256: str
    shards: tuple[ShardPin, ...]
    tokenizer_id: str
    tokenizer_sha256: str
    vocab_size: int
    doc_sep: BoundaryToken | None  # the Megatron EOD, and the llm.c separator unless llmc_doc_sep
    bos: BoundaryToken | None
    format: str = RUN_CONFIG_FORMAT
    # llmc.doc_sep: llm.c's own separator (--llmc-layout llama3's <|begin_of_text|>)
    llmc_doc_sep: BoundaryToken | None = None
    # What the card shows, as recorded (not checked against the files).
    tokenizer: dict | None = None  # the tokenizer record, as written
    corpus: dict | None = None  # the corpus record but its shards
    corpus_subset: CorpusSubset | None = None  # a --limit build: what its corpus was cut from
    split_rule: dict | None = None
    versions: dict | None = None  # the versions of hf_tokbin and tokenizers that built it
    shuffle_scope: str | None = None  # with a shuffle seed: formats.llmc_order's scope, as recorded
    # tokenizer.config_files: the SHA-256 of each config file read beside tokenizer.json; None: not recorded
    tokenizer_config_files: dict[str, str] | None = None
    mix_corpora: tuple[dict, ...] = ()  # a mixture: each source's corpus record (options.mix is the spec)

    @property
    def formats(self) -> tuple[str, ...]:
        return self.options.formats

    @property
    def source_column(self) -> str | None:
        """The column the build counted by source (receipts' and stats.json's ``sources``); None: not counted."""
        return (self.corpus or {}).get("source_column")

    @property
    def special_tokens(self) -> str:
        """"ordinary" or "parsed"."""
        return self.options.special_tokens

    @property
    def shuffle_seed(self) -> int | None:
        """build --shuffle-seed; None: corpus order."""
        return self.options.shuffle_seed

    @property
    def llmc_interleave_seed(self) -> int | None:
        """The seed of the llm.c files' block order (formats/llmc_order.py); None: parts in part order."""
        return self.shuffle_seed if self.shuffle_scope == INTERLEAVED_SCOPE else None

    @property
    def llmc_layout(self) -> str | None:
        """"gpt2" or "llama3" with the llmc format, else None."""
        return self.options.llmc_layout if "llmc" in self.formats else None

    @property
    def llmc_sep(self) -> BoundaryToken | None:
        """The token llm.c's files put at each document: ``llmc.doc_sep``, else ``doc_sep``."""
        return self.llmc_doc_sep if self.llmc_doc_sep is not None else self.doc_sep

    @property
    def llmc_sep_id(self) -> int | None:
        return self.llmc_sep.id if self.llmc_sep is not None else None

    @property
    def llmc_separator(self) -> str | None:
        """"before" or "after" with the llmc format and a separator, else None."""
        return self.options.llmc_separator if "llmc" in self.formats and self.llmc_sep is not None else None

    @property
    def max_tokens_per_file(self) -> int | None:
        """llm.c's roll-over limit with the llmc format (verify checks every file against it), else None."""
        return self.options.max_tokens_per_file if "llmc" in self.formats else None

    @property
    def megatron_dtype_code(self) -> int | None:
        """The dtype code of every ``.idx`` with the megatron format
        (checked on reading: the one vocab_size needs), else None.
        """
        return megatron.dtype_code_for_vocab(self.vocab_size) if "megatron" in self.formats else None

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
            "doc_sep_id": self.llmc_sep_id,
            "dataset": self.dataset,
            "version": self.version,
            "corpus_manifest_sha256": self.corpus_manifest_sha256,
        }

    def boundary_tokens(self) -> dict[str, BoundaryToken]:
        """The boundary tokens by role ("separator", "BOS"), for checks that look for them inside documents."""
        roles = {"separator": self.doc_sep, "BOS": self.bos, "llm.c separator": self.llmc_doc_sep}
        return {role: token for role, token in roles.items() if token is not None}

    @classmethod
    def read(cls, path: Path) -> RunConfig:
        obj = read_json(path, VerificationError)

        def get(name: str, ok: Callable, rule: str):
            return checked_field(path, obj, name, ok, rule)

        fmt = get(
            "format", lambda v: v in (RUN_CONFIG_FORMAT, RUN_CONFIG_FORMAT_V1),
            f"{RUN_CONFIG_FORMAT} (or {RUN_CONFIG_FORMAT_V1})",
        )
        formats = read_formats(path, obj)
        vocab_size = get("tokenizer.vocab_size", lambda v: is_count(v) and v > 0, "a positive integer")
        _check_vocab_fits(path, formats, vocab_size)
        is_id = lambda v: is_count(v) and v < vocab_size  # noqa: E731
        version_1 = fmt == RUN_CONFIG_FORMAT_V1
        doc_sep = (
            _read_version_1_doc_sep(path, obj, formats, is_id, vocab_size)
            if version_1
            else _read_boundary(path, obj, "doc_sep", is_id, vocab_size)
        )
        if "megatron" in formats and doc_sep is None:
            raise VerificationError(
                path, "doc_sep must be an id: the megatron format ends every document with it", got=None
            )
        if version_1:  # format 1 had no BOS
            bos, llmc_doc_sep, options = None, None, _read_version_1_options(path, obj, formats, vocab_size)
        else:
            bos = _read_boundary(path, obj, "bos", is_id, vocab_size)
            has_llmc_doc_sep = isinstance(obj.get("llmc"), dict) and "doc_sep" in obj["llmc"]
            llmc_doc_sep = _read_boundary(path, obj, "llmc.doc_sep", is_id, vocab_size) if has_llmc_doc_sep else None
            options = BuildOptions.from_record(path, obj, vocab_size, (llmc_doc_sep or doc_sep) is not None)
        _read_origins(path, obj)
        options, mix_corpora = _with_mix(path, obj, options)
        return cls(
            dataset=get("dataset", is_folder_name, FOLDER_NAME_RULE),
            version=get("version", lambda v: isinstance(v, str) and v != "", "a non-empty string"),
            options=options,
            corpus_manifest_sha256=get("corpus.manifest_sha256", is_sha256, "64 lowercase hex digits"),
            shards=_read_shards(path, get("corpus.shards", lambda v: isinstance(v, list), "a list")),
            tokenizer_id=get("tokenizer.tokenizer_id", is_folder_name, FOLDER_NAME_RULE),
            tokenizer_sha256=get("tokenizer.sha256", is_sha256, "64 lowercase hex digits"),
            vocab_size=vocab_size,
            doc_sep=doc_sep,
            bos=bos,
            format=fmt,
            llmc_doc_sep=llmc_doc_sep,
            tokenizer=dict(obj["tokenizer"]),  # both objects: their fields above were read
            corpus={k: v for k, v in obj["corpus"].items() if k != "shards"},
            corpus_subset=CorpusSubset.from_record(obj["corpus"]["subset"], path)
            if "subset" in obj["corpus"]
            else None,
            split_rule=obj.get("split_rule") if isinstance(obj.get("split_rule"), dict) else None,
            versions=obj.get("versions") if isinstance(obj.get("versions"), dict) else None,
            shuffle_scope=get("shuffle.scope", lambda v: v in SHUFFLE_SCOPES, " or ".join(map(repr, SHUFFLE_SCOPES)))
            if options.shuffle_seed is not None
            else None,
            tokenizer_config_files=_read_config_files(path, obj),
            mix_corpora=mix_corpora,
        )


def _with_mix(path: Path, obj: dict, options: BuildOptions) -> tuple[BuildOptions, tuple[dict, ...]]:
    """The options with ``mix``'s spec, and each source's corpus record (none without a mixture)."""
    if "mix" not in obj:
        return options, ()
    spec, corpora = read_mix_record(path, obj)
    return replace(options, mix=spec), corpora


# Where a tokenizer or corpus came from, as recorded: every character of these reaches a card and a recipe line.
_SUBFOLDER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*(?:/[A-Za-z0-9_][A-Za-z0-9._-]*)*")
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]{0,63}")


def _read_origins(path: Path, obj: dict) -> None:
    """The fields naming where the inputs came from, each in its own character set (a card and a recipe print them).

    ``source`` is ``local`` (``byte`` for the byte tokenizer) or a Hub repo id;
    ``revision`` null for a local input, a commit id for a Hub one; a
    subfolder plain relative names; versions PEP 440 characters.
    """
    for name, local in (("tokenizer", ("byte", "local")), ("corpus", ("local",))):
        record = obj.get(name) if isinstance(obj.get(name), dict) else {}
        if "source" not in record:  # a hand-made record of ids alone: nothing to print
            continue
        source = checked_field(
            path,
            obj,
            f"{name}.source",
            lambda v: v in local or is_repo_id(v),
            f"{' or '.join(local)}, or a Hub repo id NS/NAME",
        )
        if "revision" in record:
            pinned = source not in local
            rule = (
                "a commit id (40 lowercase hex digits): a pinned revision never names a branch"
                if pinned
                else f"null for a {source} {name}"
            )
            checked_field(path, obj, f"{name}.revision", is_commit_id if pinned else (lambda v: v is None), rule)
    if isinstance(obj.get("corpus"), dict) and "source_column" in obj["corpus"]:
        checked_field(path, obj, "corpus.source_column", is_source_name, SOURCE_NAME_RULE)
    if isinstance(obj.get("tokenizer"), dict) and "subfolder" in obj["tokenizer"]:
        checked_field(
            path,
            obj,
            "tokenizer.subfolder",
            lambda v: (
                v is None or (isinstance(v, str) and _SUBFOLDER.fullmatch(v) is not None and ".." not in v.split("/"))
            ),
            "null or a relative folder of plain names",
        )
    if "versions" in obj:
        checked_field(
            path,
            obj,
            "versions",
            lambda v: (
                isinstance(v, dict)
                and all(
                    isinstance(k, str)
                    and _VERSION.fullmatch(k)
                    and (x is None or isinstance(x, str) and _VERSION.fullmatch(x))
                    for k, x in v.items()
                )
            ),
            "an object of package names and versions",
        )


def _read_config_files(path: Path, obj: dict) -> dict[str, str] | None:
    """``tokenizer.config_files``: each config file's name (one a build reads) and SHA-256; None when not recorded."""
    if "config_files" not in obj["tokenizer"]:
        return None
    rule = f"an object of config file names ({', '.join(CONFIG_FILES)}) and their SHA-256"
    pinned = checked_field(path, obj, "tokenizer.config_files", lambda v: isinstance(v, dict), rule)
    for name, digest in pinned.items():
        if name not in CONFIG_FILES or not is_sha256(digest):
            raise VerificationError(path, f"tokenizer.config_files: {rule}", got=shown(f"{name}: {digest}"))
    return dict(pinned)


def _check_vocab_fits(path: Path, formats: tuple[str, ...], vocab_size: int) -> None:
    """Each format's ids hold every id of ``vocab_size`` (llm.c's uint16/uint32, Megatron's dtype)."""
    for name, limit in (("llmc", llmc.version_for_vocab), ("megatron", megatron.dtype_code_for_vocab)):
        if name in formats:
            try:
                limit(vocab_size)
            except FormatError as e:
                raise VerificationError(
                    path, f"tokenizer.vocab_size: {e.rule} ({name} format)", expected=e.expected, got=e.got
                ) from None


def _read_boundary(path: Path, obj: dict, name: str, is_id: Callable, vocab_size: int) -> BoundaryToken | None:
    """``doc_sep`` or ``bos``: null, or a boundary token record."""
    value = checked_field(path, obj, name, lambda v: v is None or isinstance(v, dict), "null or an object")
    if value is None:
        return None
    return BoundaryToken(
        id=checked_field(path, value, "id", is_id, f"an id < vocab_size ({vocab_size})", f"{name}."),
        token=checked_field(
            path, value, "token", lambda v: v is None or isinstance(v, str), "null or a string", f"{name}."
        ),
        source=checked_field(
            path, value, "source", lambda v: isinstance(v, str) and v != "", "a non-empty string", f"{name}."
        ),
        ordinary_text_can_encode=checked_field(
            path, value, "ordinary_text_can_encode", lambda v: isinstance(v, bool), "true or false", f"{name}."
        ),
    )


def _read_version_1_doc_sep(
    path: Path, obj: dict, formats: tuple[str, ...], is_id: Callable, vocab_size: int
) -> BoundaryToken | None:
    """The separator of a format-1 run_config.json: ``tokenizer.doc_sep_id``,
    which ``eod_id`` repeats with the megatron format.
    """
    doc_sep_id = checked_field(
        path,
        obj,
        "tokenizer.doc_sep_id",
        lambda v: v is None or is_id(v),
        f"null or an id < vocab_size ({vocab_size})",
    )
    if "megatron" in formats:
        checked_field(
            path,
            obj,
            "eod_id",
            lambda v: is_count(v) and v == doc_sep_id,
            f"the tokenizer's doc_sep_id {doc_sep_id} (Megatron pairs end every document with it)",
        )
    else:
        checked_field(path, obj, "eod_id", lambda v: v is None, "null without the megatron format")
    # Format 1 knew nothing of where its separator came from.
    return BoundaryToken(doc_sep_id, None, "tokenizer.doc_sep_id", True) if doc_sep_id is not None else None


def _read_version_1_options(path: Path, obj: dict, formats: tuple[str, ...], vocab_size: int) -> BuildOptions:
    """The options of a format-1 run_config.json: its builds parsed
    special-token text and put the separator before each document.
    """
    given = {
        "formats": formats,
        "parse_special": True,
        "max_tokens_per_file": read_format_records(path, obj, formats, vocab_size),
        "llmc_separator": "before",
    }
    if "llmc" in formats:
        variant = checked_field(
            path,
            obj,
            "llmc.variant",
            lambda v: isinstance(v, str) and v in LLMC_VARIANTS,
            f"one of {', '.join(LLMC_VARIANTS)}",
        )
        given["llmc_layout"] = LLMC_VARIANTS[variant]
    return BuildOptions(**given)


def _read_shards(path: Path, shards: list) -> tuple[ShardPin, ...]:
    pins = []
    seen = set()
    for i, shard in enumerate(shards):
        where = f"corpus.shards[{i}]."
        file_path = checked_field(
            path, shard, "path", lambda v: isinstance(v, str) and v != "", "a non-empty string", where
        )
        split = checked_field(
            path, shard, "split", lambda v: isinstance(v, str) and v in SPLITS, f"one of {', '.join(SPLITS)}", where
        )
        rows = checked_field(path, shard, "rows", is_count, "a non-negative integer", where)
        size = checked_field(path, shard, "size", is_count, "a non-negative integer", where)
        sha256 = checked_field(path, shard, "sha256", is_sha256, "64 lowercase hex digits", where)
        try:
            entry = FileEntry(file_path, size, sha256)
        except FormatError as e:
            raise VerificationError(path, f"{where}path: {e.rule}", got=e.got) from None
        if rows and sha256 in seen:
            raise VerificationError(
                path, f"{where}sha256: the same input shard appears twice (splits must be disjoint)", got=file_path
            )
        seen.add(sha256)
        pins.append(ShardPin(entry, split, rows))
    return tuple(pins)
