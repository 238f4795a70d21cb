"""The dataset card (``README.md``) of a tokenized release, rendered from the release itself.

:func:`render_release_card` fills ``dataset_card/release_card.md`` (a
:class:`string.Template`, ``${name}`` placeholders) from what the release
folder holds: ``run_config.json`` (as :meth:`hf_tokbin.build.BuildPlan.run_config`
writes it), ``stats.json`` (exact counts; the receipts' counts when it has
none), the receipts (which Megatron pairs exist) and the llm.c
``_MANIFEST.json`` files. It never reads ``COMPLETE.json``: the build writes
the card before it, and ``COMPLETE.json`` lists the card.

The ``run_config.json`` fields it reads, and nothing else::

    dataset                          the title
    formats                          ["llmc", "megatron"] or one of them: which
                                     sections, tags and reading recipes appear
    eod_id                           the EOD id the Megatron pairs append
    corpus.license, corpus.language  the YAML license and language
    corpus.source                    source_datasets, unless "local"
    split_rule.name, split_rule.text the split rule, in words
    tokenizer.{tokenizer_id, sha256, vocab_size, doc_sep_id, source,
               revision, subfolder}  the tokenizer section
    llmc.variant, llmc.doc_sep_id    the llm.c layout and its separator
    megatron.dtype_code              the pairs' dtype when no .idx is at hand

A missing file or field leaves its line out (or says it was not recorded);
``formats`` missing, the formats are those whose files the folder holds.
Other scalar fields of the tokenizer record are listed as they are.
The output is deterministic: same release, same bytes (no dates, no absolute
paths).

YAML metadata: ``license``, ``language`` (when known), ``size_categories``
(from the number of documents), ``task_categories: [text-generation]``,
``source_datasets`` (a Hub corpus only), ``tokenizer``, ``tags`` (one per
format), ``viewer: false`` (token files are not viewable tables).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from string import Template

from .._io import read_json
from ..errors import FormatError
from ..formats import llmc
from ..formats.corpus_manifest import SPLIT_RULE_TEXT
from ..formats.release import (
    RECEIPTS_DIR,
    RUN_CONFIG_NAME,
    SPLITS,
    STATS_NAME,
    TOKENS_DIR,
    Receipt,
)
from ..formats.sniff import file_magic

# dataset_card/ of the repository, installed as the package hf_tokbin.dataset_card.
TEMPLATE_PACKAGE = "hf_tokbin.dataset_card"
RELEASE_TEMPLATE = "release_card.md"
COUNT_FIELDS = ("documents", "text_tokens", "eod_tokens", "total_tokens")
MEGATRON, LLMC = "megatron", "llmc"
FORMAT_LABELS = {MEGATRON: "Megatron", LLMC: "llm.c"}
# The Hub's size_categories buckets, by number of documents.
_SIZE_BUCKETS = [(10**3, "n<1K"), (10**4, "1K<n<10K"), (10**5, "10K<n<100K"), (10**6, "100K<n<1M"), (10**7, "1M<n<10M"), (10**8, "10M<n<100M"), (10**9, "100M<n<1B"), (10**10, "1B<n<10B"), (10**11, "10B<n<100B"), (10**12, "100B<n<1T")]
_PLAIN_YAML = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/<>-]*$")


def size_category(documents: int) -> str:
    """The Hub ``size_categories`` bucket for a number of documents."""
    for bound, name in _SIZE_BUCKETS:
        if documents < bound:
            return name
    return "n>1T"


def load_template(name: str = RELEASE_TEMPLATE) -> Template:
    from importlib.resources import files

    path = files(TEMPLATE_PACKAGE) / name
    if not path.is_file():
        raise FormatError(str(path), "dataset card template is missing", hint="reinstall hf_tokbin: the templates ship as hf_tokbin.dataset_card")
    return Template(path.read_text(encoding="utf-8"))


def render_release_card(release_dir: str | os.PathLike, *, license: str | None = None, language: str | list[str] | None = None, source_dataset: str | None = None) -> str:
    """The ``README.md`` text of the release in ``release_dir``; arguments override ``run_config.json``."""
    root = Path(release_dir)
    run_config = _optional_json(root / RUN_CONFIG_NAME)
    stats = _optional_json(root / STATS_NAME)
    receipts = [Receipt.read(p) for p in sorted((root / RECEIPTS_DIR).glob("part-*.json"))]
    manifests = _llmc_manifests(root)
    tokenizer = _dict(run_config.get("tokenizer"))
    corpus = _dict(run_config.get("corpus"))
    formats = _formats(run_config, receipts, manifests)
    split_counts = _split_counts(stats, receipts)

    dataset = _text(run_config.get("dataset"))
    tokenizer_id = _text(tokenizer.get("tokenizer_id")) or "unknown"
    corpus_source = _text(corpus.get("source"))
    source = source_dataset or (corpus_source if corpus_source != "local" else None)
    license = license or _text(corpus.get("license")) or "unknown"
    language = language if language is not None else corpus.get("language")
    documents = sum(c.get("documents", 0) for c in split_counts.values())
    made_for = " and ".join(FORMAT_LABELS[f] for f in formats) or "training"
    title = f"{dataset} tokenized with {tokenizer_id} for {made_for}" if dataset else "Tokenized pretraining release"
    eod_id = run_config.get("eod_id") if MEGATRON in formats else None
    separator = _dict(run_config.get("llmc")).get("doc_sep_id", tokenizer.get("doc_sep_id")) if LLMC in formats else None
    llmc_variant = _llmc_variant(run_config, root, manifests) if LLMC in formats else None

    metadata = _yaml_metadata(license, language, size_category(documents), source, tokenizer_id, title, formats)
    return load_template().substitute(
        metadata=metadata,
        title=title,
        corpus_phrase=f"`{dataset}`" if dataset else "a text corpus",
        trainers=_trainers(formats),
        files_section=_files_section(root, receipts, manifests, formats),
        counts_section=_counts_section(split_counts, stats, bool(stats.get("splits")), eod_id, separator, formats),
        tokenizer_section=_tokenizer_section(tokenizer),
        split_section=_split_section(run_config.get("split_rule")),
        format_section=_format_section(root, receipts, manifests, formats, eod_id, separator, llmc_variant, _dict(run_config.get("megatron"))),
        reading_section=_reading_section(receipts, manifests, formats, llmc_variant),
    )


# -- reading the release defensively ---------------------------------------


def _optional_json(path: Path) -> dict:
    return read_json(path, FormatError) if path.is_file() else {}


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _text(value) -> str | None:
    """A non-empty string or integer field as text; anything else is not recorded."""
    if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
        return str(value)
    return None


def _count(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _formats(run_config: dict, receipts: list[Receipt], manifests: list[tuple[str, dict]]) -> list[str]:
    """The formats ``run_config.json`` names, in a fixed order; without it, those whose files are here."""
    named = run_config.get("formats")
    if isinstance(named, list):
        return [f for f in FORMAT_LABELS if f in named]
    held = {MEGATRON: any(f.path.endswith(".idx") for r in receipts for f in r.files), LLMC: bool(manifests)}
    return [f for f in FORMAT_LABELS if held[f]]


def _llmc_variant(run_config: dict, root: Path, manifests: list[tuple[str, dict]]) -> str | None:
    """``llmc.variant`` of run_config.json; without it, ``llama3`` when the first token file has that magic."""
    named = _text(_dict(run_config.get("llmc")).get("variant"))
    if named is not None:
        return named
    for folder, manifest in manifests:
        names = [f["name"] for f in manifest.get("files", []) if isinstance(f, dict) and isinstance(f.get("name"), str)]
        if names and (root / folder / names[0]).is_file():
            return "llama3" if file_magic(root / folder / names[0]) == llmc.LLAMA3_MAGIC else "seed000"
    return None


def _counts_of(obj) -> dict[str, int]:
    """The count fields of a stats entry, with ``total_tokens`` derived when it is missing."""
    counts = {k: v for k, v in obj.items() if _count(v) is not None} if isinstance(obj, dict) else {}
    if "total_tokens" not in counts and "text_tokens" in counts and "eod_tokens" in counts:
        counts["total_tokens"] = counts["text_tokens"] + counts["eod_tokens"]
    return counts


def _split_counts(stats: dict, receipts: list[Receipt]) -> dict[str, dict[str, int]]:
    """Counts per split from ``stats.json``, or summed over the receipts when it has none."""
    splits = _dict(stats.get("splits"))
    if splits:
        return {name: _counts_of(value) for name, value in splits.items()}
    summed: dict[str, dict[str, int]] = {}
    for receipt in receipts:
        for split, counts in receipt.splits.items():
            row = summed.setdefault(split, {"documents": 0, "text_tokens": 0, "eod_tokens": 0, "total_tokens": 0})
            for key, value in (("documents", counts.documents), ("text_tokens", counts.text_tokens), ("eod_tokens", counts.eod_tokens), ("total_tokens", counts.total_tokens)):
                row[key] += value
    return {s: summed[s] for s in SPLITS if s in summed}


def _llmc_manifests(root: Path) -> list[tuple[str, dict]]:
    """``(folder relative to the release, manifest)`` for every llm.c ``_MANIFEST.json``."""
    found = []
    for path in sorted((root / TOKENS_DIR).glob("*/*/_MANIFEST.json")):
        found.append((path.parent.relative_to(root).as_posix(), read_json(path, FormatError)))
    return found


# -- sections --------------------------------------------------------------


def _yaml_scalar(value) -> str:
    text = str(value)
    return text if _PLAIN_YAML.match(text) and text not in ("true", "false", "null", "yes", "no") else json.dumps(text, ensure_ascii=False)


def _yaml_metadata(license, language, size, source, tokenizer_id, title, formats: list[str]) -> str:
    lines = [f"license: {_yaml_scalar(license)}"]
    languages = [language] if isinstance(language, str) else [x for x in (language or []) if isinstance(x, str)]
    if languages:
        lines += ["language:"] + [f"- {_yaml_scalar(x)}" for x in languages]
    lines += ["size_categories:", f"- {_yaml_scalar(size)}", "task_categories:", "- text-generation"]
    if source:
        lines += ["source_datasets:", f"- {_yaml_scalar(source)}"]
    lines += [f"pretty_name: {_yaml_scalar(title)}", f"tokenizer: {_yaml_scalar(tokenizer_id)}", "tags:", "- tokenized"]
    lines += [f"- {_yaml_scalar(FORMAT_LABELS[f].lower())}" for f in formats]
    lines += ["- hf-tokbin", "viewer: false"]
    return "\n".join(lines)


def _trainers(formats: list[str]) -> str:
    names = []
    if MEGATRON in formats:
        names.append("Megatron-LM / megatron-core and MaxText")
    if LLMC in formats:
        names.append("llm.c-family trainers")
    return " and ".join(names) or "training"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _files_section(root: Path, receipts: list[Receipt], manifests: list[tuple[str, dict]], formats: list[str]) -> str:
    rows = []
    if MEGATRON in formats:
        for split in SPLITS:
            pairs = [f for r in receipts for f in r.files if f.path.startswith(f"shards/{split}/") and f.path.endswith(".bin")]
            if pairs:
                size = sum(f.size for r in receipts for f in r.files if f.path.startswith(f"shards/{split}/"))
                rows.append([f"`shards/{split}/part-NNNNNN.bin` + `.idx`", f"Megatron IndexedDataset pairs, {split} documents", f"{len(pairs):,} pairs", f"{size:,}"])
    if receipts:
        what = "one per input shard: its counts" + (", and the size and SHA-256 of its pairs" if MEGATRON in formats else "")
        rows.append(["`receipts/part-NNNNNN.json`", what, f"{len(receipts):,}", ""])
    if LLMC in formats:
        for folder, manifest in manifests:
            files = [f for f in manifest.get("files", []) if isinstance(f, dict)]
            size = sum((root / folder / f["name"]).stat().st_size for f in files if isinstance(f.get("name"), str) and (root / folder / f["name"]).is_file())
            rows.append([f"`{folder}/{{train,val}}-NNNNN.bin`", "llm.c token files, with their `_MANIFEST.json`", f"{len(files):,}", f"{size:,}"])
    rows += [
        ["`run_config.json`", "pinned inputs, tokenizer and split rule", "1", ""],
        ["`stats.json`", "exact document and token counts, by split and source", "1", ""],
        ["`COMPLETE.json`", "every other file with its size and SHA-256; uploaded last", "1", ""],
    ]
    note = "\n\nA split's pair is omitted when its input shard holds no document of that split." if MEGATRON in formats else ""
    return _table(["files", "what", "count", "bytes"], rows) + note


def _id_text(value) -> str:
    return f" (id {value})" if _count(value) is not None else ""


def _token_note(eod_id, separator, formats: list[str]) -> str:
    """What the counts mean for the files this release holds."""
    notes = []
    if MEGATRON in formats:
        notes.append(f"In the Megatron pairs every document ends with one EOD token{_id_text(eod_id)}, counted in `eod tokens`.")
    if LLMC in formats:
        if _count(separator) is not None:
            notes.append(f"In the llm.c files every document is preceded by the separator{_id_text(separator)}: they hold the text tokens plus one separator per document.")
        else:
            notes.append("The llm.c files hold the text tokens only: the tokenizer has no separator, so documents follow each other directly.")
    return " ".join(notes)


def _counts_section(split_counts: dict[str, dict[str, int]], stats: dict, from_stats: bool, eod_id, separator, formats: list[str]) -> str:
    if not split_counts:
        return "Not recorded (no `stats.json` and no receipts)."
    # The known counts first, in their order, then any other count stats.json has (shown as it is).
    columns = list(COUNT_FIELDS) + sorted({k for c in split_counts.values() for k in c} - set(COUNT_FIELDS))
    header = ["split"] + [k.replace("_", " ") for k in columns]
    rows = [[split] + [f"{counts[k]:,}" if k in counts else "" for k in columns] for split, counts in split_counts.items()]
    origin = "From `stats.json`." if from_stats else "Summed over the receipts (this release has no split counts in `stats.json`)."
    note = _token_note(eod_id, separator, formats)
    text = origin + (" " + note if note else "") + "\n\n" + _table(header, rows)
    source_rows = []
    for name, value in sorted(_dict(stats.get("sources")).items()):
        # A source maps either straight to counts, or to counts per split.
        by_split = {"": _counts_of(value)} if _counts_of(value) else {s: _counts_of(v) for s, v in sorted(_dict(value).items())}
        for split, counts in by_split.items():
            if counts:
                source_rows.append([f"`{name}`", split] + [f"{counts[k]:,}" if k in counts else "" for k in columns])
    if source_rows:
        text += "\n\nBy source:\n\n" + _table(["source", "split"] + header[1:], source_rows)
    return text


BYTE_SOURCE = "byte"  # tokenizer.source of the built-in byte tokenizer (hf_tokbin.tokenizer.BYTE)
# The fields of run_config.json's tokenizer record (TokenizerInfo.to_record), in the order shown.
_TOKENIZER_LABELS = {
    "tokenizer_id": "id",
    "source": "source",
    "revision": "pinned revision",
    "subfolder": "subfolder",
    "sha256": "SHA-256 of `tokenizer.json`",
    "vocab_size": "vocabulary size",
    "doc_sep_id": "document separator (EOD) id",
}


def _tokenizer_section(tokenizer: dict) -> str:
    if not tokenizer:
        return "Not recorded in `run_config.json`."
    is_byte = tokenizer.get("source") == BYTE_SOURCE
    labels = {**_TOKENIZER_LABELS, "sha256": "SHA-256 of its canonical description (it has no `tokenizer.json`)"} if is_byte else _TOKENIZER_LABELS
    lines = []
    for key, label in labels.items():
        if key in tokenizer and tokenizer[key] is not None:
            lines.append(f"- {label}: `{tokenizer[key]}`")
    for key in sorted(set(tokenizer) - set(labels)):
        if isinstance(tokenizer[key], (str, int, float)) and not isinstance(tokenizer[key], bool):
            lines.append(f"- {key}: `{tokenizer[key]}`")
    lines.append("")
    if is_byte:
        lines.append("Each document is encoded as its UTF-8 bytes: one id per byte, the id being the byte value.")
    else:
        lines.append(
            "Each document is encoded once with `tokenizers` (`encode(text, add_special_tokens=False)`): an added token "
            "written literally in the text (such as `<|endoftext|>`) is matched as that token, as `tokenizers` does."
        )
    lines.append("No BOS or padding is inserted; nothing is truncated, packed or deduplicated.")
    return "\n".join(lines)


def _split_section(rule) -> str:
    details = _dict(rule)
    name = _text(details.get("name"))
    if name is None:
        return "Not recorded in `run_config.json`."
    return _text(details.get("text")) or SPLIT_RULE_TEXT.get(name, f"`{name}`")


def _format_section(root: Path, receipts: list[Receipt], manifests: list[tuple[str, dict]], formats: list[str], eod_id, separator, llmc_variant, megatron_record: dict) -> str:
    from ..formats import llmc, megatron

    parts = []
    if MEGATRON in formats:
        idx_files = [f.path for r in receipts for f in r.files if f.path.endswith(".idx")]
        dtype = "uint16 (dtype code 8) or int32 (code 4)"
        if idx_files:
            header = megatron.read_index_header(root / idx_files[0])
            dtype = f"{header.dtype.name} (dtype code {header.code})"
        elif _count(megatron_record.get("dtype_code")) in megatron.DTYPE_CODES:
            code = megatron_record["dtype_code"]
            dtype = f"{megatron.DTYPE_CODES[code].name} (dtype code {code})"
        parts.append(
            "**Megatron pairs** are IndexedDataset version 1. `.bin` is a contiguous little-endian "
            f"stream of {dtype} token ids; each document is one sequence and ends with one EOD token{_id_text(eod_id)}. "
            "`.idx`: magic `MMIDIDX\\0\\0`, version 1 (uint64), the dtype code (uint8), the sequence count and "
            "document count (uint64 each; documents + 1), then the int32 sequence lengths, the int64 byte "
            "pointers into `.bin`, and the int64 document indices `[0, 1, ..., N]`."
        )
    if LLMC in formats:
        if _count(separator) is not None:
            documents = f"Each document is preceded by the document separator{_id_text(separator)}; files hold whole documents."
        else:
            documents = "Documents follow each other with no separator (the tokenizer has none); files hold whole documents."
        for folder, manifest in manifests:
            names = [f["name"] for f in manifest.get("files", []) if isinstance(f, dict) and isinstance(f.get("name"), str)]
            first = root / folder / names[0] if names else None
            if llmc_variant == "llama3":
                parts.append(
                    f"**llm.c token files** (`{folder}/`) use upstream llm.c's Llama 3 layout (`--llmc-variant llama3`): "
                    "a 1024-byte header of 256 little-endian int32 (magic 20240801, version 7, token count, zeros), "
                    f"then uint32 ids, as `train_llama3.py` reads them. {documents}"
                )
                continue
            version = ""
            if first is not None and first.is_file():
                header = llmc.read_header(first)
                version = f" Here: version {header.version} ({header.dtype.name} ids)."
            parts.append(
                f"**llm.c token files** (`{folder}/`): a 1024-byte header of 256 little-endian int32 "
                f"(magic 20240520, version, token count, vocabulary size, zeros), then the ids; version 1 "
                f"holds uint16 ids, version 2 uint32 ids.{version} {documents}"
            )
    return "\n\n".join(parts) or "No token files recorded."


def _reading_section(receipts: list[Receipt], manifests: list[tuple[str, dict]], formats: list[str], llmc_variant) -> str:
    parts = []
    if MEGATRON in formats:
        first_pair = next((f.path[: -len(".bin")] for r in receipts for f in r.files if f.path.endswith(".bin")), "shards/train/part-000000")
        parts += [
            "**Megatron-LM / megatron-core** read a pair by its path prefix (no suffix):\n\n"
            "```python\n"
            "from megatron.core.datasets.indexed_dataset import IndexedDataset\n\n"
            f'dataset = IndexedDataset("{first_pair}")\n'
            "print(len(dataset), dataset[0][:16])\n"
            "```\n\n"
            f"In Megatron-LM training, list the prefixes (with weights) in `--data-path`, e.g. `--data-path 1.0 {first_pair}`.",
            "**MaxText** reads the pairs with its Grain memory-mapped reader. Its `mmap_npy` path can read them "
            "too but also needs the separate document, sample and shuffle `.npy` indices, which this release does "
            "not include: MaxText builds them at startup for the training configuration, or you build them beforehand.",
            "**numpy** (with hf_tokbin, which validates the index before it returns a view):\n\n"
            "```python\n"
            "from hf_tokbin.megatron import MegatronPair\n\n"
            f'pair = MegatronPair("{first_pair}.idx")\n'
            "print(len(pair), pair.n_tokens, pair[0][:16])\n"
            "```",
        ]
    if LLMC in formats:
        for folder, _ in manifests:
            if llmc_variant == "llama3":
                parts.append(
                    f"**llm.c** `train_llama3.py` reads these files unchanged, e.g. "
                    f"`--input_bin \"{folder}/train-*.bin\" --input_val_bin \"{folder}/val-*.bin\"`."
                )
                continue
            parts.append(
                f"**llm.c** reads version-1 files unchanged, e.g. `./train_gpt2cu -i \"{folder}/train-*.bin\" -j \"{folder}/val-*.bin\"`; "
                "version-2 (uint32) files are read by `hf_tokbin.llmc.open_tokens` or any reader that follows the header."
            )
    return "\n\n".join(parts)
