"""The dataset card (``README.md``) of a tokenized release, rendered from the release itself.

:func:`render_release_card` fills ``dataset_card/release_card.md`` (a
:class:`string.Template`, ``${name}`` placeholders) from what the release
folder holds: ``run_config.json`` (as :meth:`hf_tokbin.pipeline.BuildPlan.run_config`
writes it), ``stats.json`` (exact counts; the receipts' counts when it has
none), the receipts (which Megatron pairs exist) and the llm.c
``_MANIFEST.json`` files. It never reads ``COMPLETE.json``: the build writes
the card before it, and ``COMPLETE.json`` lists the card.

``run_config.json`` is read through :class:`hf_tokbin.formats.run_config.RunConfig`
(the one reader; a malformed file is an error). The fields it shows::

    dataset                          the title
    formats                          ["llmc", "megatron"] or one of them: which
                                     sections, tags and reading recipes appear
    doc_sep, bos                     the separator / EOD and the BOS: ids, tokens, sources
    special_tokens                   how special-token text inside documents was encoded
    corpus.license, corpus.language  the YAML license and language
    corpus.source                    source_datasets, unless "local"
    split_rule.name, split_rule.text the split rule, in words
    tokenizer.{tokenizer_id, sha256, vocab_size, source,
               revision, subfolder}  the tokenizer section
    llmc.layout, llmc.separator      the llm.c header layout and where the separator stands
    megatron.dtype_code              the pairs' dtype when no .idx is at hand
    versions.hf_tokbin               the version named in "Verify what you downloaded"

Without ``run_config.json`` the sections say it was not recorded, and the
formats are those whose files the folder holds.
Other scalar fields of the tokenizer record are listed as they are.
The output is deterministic: same release, same bytes (no dates, no absolute
paths).

YAML metadata, written by PyYAML's safe emitter (no value can add a key or
end the block; ``no`` stays the string "no"): ``license`` (a Hub license id,
:data:`HUB_LICENSES`; any other value is the Hub's escape, ``license: other``
with ``license_name`` when the value is a lowercase slug), ``language`` (the
codes the Hub accepts, as ``datasets`` lists them; others are named in the
card's text, not the metadata), ``size_categories`` (from the number of
documents), ``task_categories: [text-generation]``, ``source_datasets`` (a
Hub corpus only), ``tokenizer``, ``tags`` (one per format), and ``viewer``:
true with the preview's ``configs:`` entry when the release holds preview files
(:mod:`hf_tokbin.cards.preview`; token files are not viewable tables), else false.
The pictures the release holds (:mod:`hf_tokbin.cards.pictures`) are linked
beside their tables with relative Markdown image links.

The card says what is true when the build writes it: the files and their
digests in ``COMPLETE.json``; publishing is what ``hf-tokbin push`` adds. It
names the hf_tokbin version that built the release (``versions.hf_tokbin``),
which is installed from its source (it is not on PyPI), and counts the llm.c
files' ids as their manifests list them, separators and BOS included.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from ..formats import llmc
from ..formats.corpus_manifest import SPLIT_RULE_TEXT
from ..formats.release import (
    RECEIPTS_DIR,
    RUN_CONFIG_NAME,
    SPLITS,
    STATS_NAME,
    TOKENS_DIR,
    Receipt,
    Stats,
)
from ..formats.run_config import RunConfig
from ..formats.sniff import file_magic
from .lengths import NOT_RECORDED, length_section
from .metadata import HUB_LICENSES, code_span, dump_yaml, is_hub_language, load_template, markdown_text, size_category
from .pictures import picture_link, picture_rows, sources_picture
from .preview import preview_metadata, preview_rows

COUNT_FIELDS = ("documents", "text_tokens", "bos_tokens", "eod_tokens", "total_tokens")
MEGATRON, LLMC = "megatron", "llmc"
FORMAT_LABELS = {MEGATRON: "Megatron", LLMC: "llm.c"}
_LICENSE_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")  # what license_name may be: a lowercase slug


def render_release_card(
    release_dir: str | os.PathLike,
    *,
    license: str | None = None,
    language: str | list[str] | None = None,
    source_dataset: str | None = None,
) -> str:
    """The ``README.md`` text of the release in ``release_dir``; arguments override ``run_config.json``."""
    release = _Release.read(Path(release_dir))
    corpus = _dict(release.config.corpus) if release.config else {}
    corpus_source = _text(corpus.get("source"))
    license = license or _text(corpus.get("license")) or "unknown"
    language = language if language is not None else corpus.get("language")
    source = source_dataset or (corpus_source if corpus_source != "local" else None)
    documents = sum(c.get("documents", 0) for c in release.split_counts.values())
    metadata = _yaml_metadata(
        license,
        language,
        size_category(documents),
        source,
        release.tokenizer_id,
        release.title(),
        release.formats,
        preview_metadata(release.root),
    )
    return load_template().substitute(
        metadata=metadata, license_line=_license_line(license, language), **_sections(release)
    )


@dataclass(frozen=True)
class _Release:
    """What the card is rendered from, each file read through its own reader (``run_config.json`` may be absent)."""

    root: Path
    config: RunConfig | None
    stats: Stats | None  # None without stats.json: the counts are the receipts'
    receipts: list[Receipt]
    manifests: list[tuple[str, llmc.TokensManifest]]  # (folder relative to the release, its _MANIFEST.json)

    @classmethod
    def read(cls, root: Path) -> _Release:
        config = RunConfig.read(root / RUN_CONFIG_NAME) if (root / RUN_CONFIG_NAME).is_file() else None
        receipts = [Receipt.read(p) for p in sorted((root / RECEIPTS_DIR).glob("part-*.json"))]
        stats = Stats.read(root / STATS_NAME) if (root / STATS_NAME).is_file() else None
        return cls(root, config, stats, receipts, _llmc_manifests(root))

    @property
    def formats(self) -> list[str]:
        return _formats(self.config, self.receipts, self.manifests)

    @property
    def split_counts(self) -> dict[str, dict[str, int]]:
        if self.stats is not None and self.stats.splits:
            return {name: counts.stats_dict() for name, counts in self.stats.splits.items()}
        return _receipt_counts(self.receipts)

    @property
    def tokenizer_id(self) -> str:
        recorded = _text(_dict(self.config.tokenizer).get("tokenizer_id")) if self.config else None
        return recorded or "unknown"

    def title(self, shown=str) -> str:
        """The title; ``shown`` renders its names (``markdown_text`` for the card's heading; as they are for YAML)."""
        made_for = " and ".join(FORMAT_LABELS[f] for f in self.formats) or "training"
        if self.config is None:
            return "Tokenized pretraining release"
        return f"{shown(self.config.dataset)} tokenized with {shown(self.tokenizer_id)} for {made_for}"

    def layout(self) -> _Layout:
        config = self.config
        return _Layout(
            bos_id=config.bos_id if config else None,
            separator_position=(config.llmc_separator if config else None) or "before",
            special_tokens=config.special_tokens if config else None,
        )


def _sections(release: _Release) -> dict[str, str]:
    """The template's fields but the metadata and license line."""
    config, formats, root = release.config, release.formats, release.root
    eod_id = config.eod_id if config and MEGATRON in formats else None
    separator = _manifest_separator(config, release.manifests) if LLMC in formats else None
    llmc_layout = _llmc_layout(config, root, release.manifests) if LLMC in formats else None
    layout = release.layout()
    version = _text(_dict(config.versions).get("hf_tokbin")) if config else None
    sources = (
        {name: {s: c.stats_dict() for s, c in by_split.items()} for name, by_split in release.stats.sources.items()}
        if release.stats
        else {}
    )
    from_stats = bool(release.stats and release.stats.splits)
    counts = _counts_section(release.split_counts, sources, from_stats, eod_id, separator, formats, layout)
    counts += _source_pictures(root) + _mixture_section(root, config)
    return dict(
        title=release.title(markdown_text),
        hf_tokbin=f"hf_tokbin {version}" if version else "hf_tokbin",
        corpus_phrase=code_span(config.dataset) if config else "a text corpus",
        trainers=_trainers(formats),
        files_section=_files_section(root, release.receipts, release.manifests, formats, llmc_layout)
        + _order_note(config, formats),
        counts_section=counts + _llmc_counts(release.manifests, formats),
        lengths_section=length_section(root, release.receipts) if MEGATRON in formats else NOT_RECORDED,
        tokenizer_section=_tokenizer_section(_dict(config.tokenizer) if config else {}, config),
        split_section=_split_section(config.split_rule if config else None),
        format_section=_format_section(
            root,
            release.receipts,
            release.manifests,
            formats,
            eod_id,
            separator,
            llmc_layout,
            config.megatron_dtype_code if config else None,
            layout,
        ),
        reading_section=_reading_section(root, release.receipts, release.manifests, formats, llmc_layout),
    )


# -- reading the release defensively ---------------------------------------


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _text(value) -> str | None:
    """A non-empty string or integer field as text; anything else is not recorded."""
    if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
        return str(value)
    return None


def _count(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class _Layout:
    """What the card says about document boundaries.

    The BOS, where llm.c's separator stands, how special-token text was encoded."""

    bos_id: int | None
    separator_position: str  # "before" or "after"
    special_tokens: str | None  # "ordinary", "parsed" or None (not recorded)

    def megatron_document(self) -> str:
        return "`[bos] + ids + [eod]`" if self.bos_id is not None else "`ids + [eod]`"

    def llmc_document(self, has_separator: bool) -> str:
        bos = "[bos] + " if self.bos_id is not None else ""
        if not has_separator:
            return f"`{bos}ids`"
        return f"`[sep] + {bos}ids`" if self.separator_position == "before" else f"`{bos}ids + [sep]`"


def _formats(
    config: RunConfig | None, receipts: list[Receipt], manifests: list[tuple[str, llmc.TokensManifest]]
) -> list[str]:
    """The formats ``run_config.json`` names, in a fixed order; without it, those whose files are here."""
    if config is not None:
        return [f for f in FORMAT_LABELS if f in config.formats]
    held = {MEGATRON: any(f.path.endswith(".idx") for r in receipts for f in r.files), LLMC: bool(manifests)}
    return [f for f in FORMAT_LABELS if held[f]]


def _manifest_separator(config: RunConfig | None, manifests: list[tuple[str, llmc.TokensManifest]]):
    """The llm.c separator id: run_config.json's; without it, the first manifest's ``doc_sep_id``."""
    if config is not None:
        return config.llmc_sep_id
    return next((m.doc_sep_id for _, m in manifests), None)


def _llmc_layout(config: RunConfig | None, root: Path, manifests: list[tuple[str, llmc.TokensManifest]]) -> str | None:
    """``llmc.layout`` of run_config.json; without it, ``llama3`` when the first token file has that magic."""
    if config is not None:
        return config.llmc_layout
    for folder, manifest in manifests:
        names = [f.name for f in manifest.files]
        if names and (root / folder / names[0]).is_file():
            return "llama3" if file_magic(root / folder / names[0]) == llmc.LLAMA3_MAGIC else "gpt2"
    return None


def _receipt_counts(receipts: list[Receipt]) -> dict[str, dict[str, int]]:
    """Counts per split summed over the receipts, for a release whose ``stats.json`` has none."""
    summed: dict[str, dict[str, int]] = {}
    for receipt in receipts:
        for split, counts in receipt.splits.items():
            row = summed.setdefault(split, {"documents": 0, "text_tokens": 0, "eod_tokens": 0, "total_tokens": 0})
            for key, value in (
                ("documents", counts.documents),
                ("text_tokens", counts.text_tokens),
                ("eod_tokens", counts.eod_tokens),
                ("total_tokens", counts.total_tokens),
            ):
                row[key] += value
    return {s: summed[s] for s in SPLITS if s in summed}


def _llmc_manifests(root: Path) -> list[tuple[str, llmc.TokensManifest]]:
    """``(folder relative to the release, manifest)`` for every llm.c ``_MANIFEST.json``."""
    paths = sorted((root / TOKENS_DIR).glob(f"*/*/{llmc.MANIFEST_NAME}"))
    return [(path.parent.relative_to(root).as_posix(), llmc.TokensManifest.read(path)) for path in paths]


# -- sections --------------------------------------------------------------


def _languages(language) -> list[str]:
    return [language] if isinstance(language, str) else [x for x in (language or []) if isinstance(x, str)]


def _license_metadata(license: str) -> dict:
    """``{"license": ID}`` for a Hub license id; else the Hub's escape, ``other`` with the name when it is a slug."""
    if license in HUB_LICENSES:
        return {"license": license}
    return {"license": "other", **({"license_name": license} if _LICENSE_NAME.fullmatch(license) else {})}


def _yaml_metadata(
    license, language, size, source, tokenizer_id, title, formats: list[str], preview: dict | None = None
) -> str:
    """The card's YAML front matter, written by a YAML emitter: no value can add a key or end the block."""
    metadata = _license_metadata(license)
    languages = [x for x in _languages(language) if is_hub_language(x)]
    if languages:
        metadata["language"] = languages
    metadata |= {"size_categories": [size], "task_categories": ["text-generation"]}
    if source:
        metadata["source_datasets"] = [source]
    metadata |= {
        "pretty_name": title,
        "tokenizer": tokenizer_id,
        "tags": ["tokenized", *(FORMAT_LABELS[f].lower() for f in formats), "hf-tokbin"],
        "viewer": False,
    }
    metadata |= preview or {}  # the preview's configs: entry (cards/preview.py)
    return dump_yaml(metadata).rstrip("\n")


def _license_line(license: str, language) -> str:
    """The license and languages as recorded, in words: what the YAML could not say (a license outside the Hub's list,
    a language that is no Hub code) stays visible."""
    license_text = (
        f"`{license}`"
        if license in HUB_LICENSES
        else f"{code_span(json.dumps(license, ensure_ascii=False))} (not a Hub license id: `other` in the metadata)"
    )
    languages = _languages(language)
    known = [f"`{x}`" for x in languages if is_hub_language(x)]
    unknown = [code_span(json.dumps(x, ensure_ascii=False)[1:-1]) for x in languages if not is_hub_language(x)]
    text = f"License (as recorded for the corpus): {license_text}. Languages: {', '.join(known) or 'not recorded'}."
    if unknown:
        text += f" Recorded but not Hub language codes, so left out of the metadata: {', '.join(unknown)}."
    return text


def _trainers(formats: list[str]) -> str:
    names = []
    if MEGATRON in formats:
        names.append("Megatron-LM / megatron-core and MaxText")
    if LLMC in formats:
        names.append("llm.c-family trainers")
    return " and ".join(names) or "training"


def _counted(n: int, noun: str) -> str:
    """``n`` and its noun: "1 pair", "2 pairs"."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _table(header: list[str], rows: list[list[str]]) -> str:
    # A cell's own "|" (a corpus name may hold one) is escaped, code spans included (GitHub Flavored Markdown's rule).
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _files_section(
    root: Path,
    receipts: list[Receipt],
    manifests: list[tuple[str, llmc.TokensManifest]],
    formats: list[str],
    llmc_layout: str | None = None,
) -> str:
    rows = []
    if MEGATRON in formats:
        for split in SPLITS:
            pairs = [
                f
                for r in receipts
                for f in r.files
                if f.path.startswith(f"shards/{split}/") and f.path.endswith(".bin")
            ]
            if pairs:
                size = sum(f.size for r in receipts for f in r.files if f.path.startswith(f"shards/{split}/"))
                what = f"Megatron IndexedDataset pairs, {split} documents"
                files = f"`shards/{split}/part-NNNNNN.bin` + `.idx`"
                rows.append([files, what, _counted(len(pairs), "pair"), f"{size:,}"])
    if receipts:
        what = "one per input shard: its counts" + (
            ", and the size and SHA-256 of its pairs" if MEGATRON in formats else ""
        )
        rows.append(["`receipts/part-NNNNNN.json`", what, f"{len(receipts):,}", ""])
    if LLMC in formats:
        for folder, manifest in manifests:
            files = manifest.files
            size = sum(_llmc_file_size(root / folder, f, manifest, llmc_layout) for f in files)
            rows.append(
                [
                    code_span(f"{folder}/{{train,val}}-NNNNN.bin"),
                    "llm.c token files, with their `_MANIFEST.json`",
                    f"{len(files):,}",
                    f"{size:,}",
                ]
            )
    rows += preview_rows(root) + picture_rows(root)
    rows += [
        ["`run_config.json`", "pinned inputs, tokenizer and split rule", "1", ""],
        ["`stats.json`", "exact document and token counts, by split and source", "1", ""],
        ["`COMPLETE.json`", "every other file with its size and SHA-256; uploaded last", "1", ""],
    ]
    note = (
        "\n\nA split's pair is omitted when its input shard holds no document of that split."
        if MEGATRON in formats
        else ""
    )
    return _table(["files", "what", "count", "bytes"], rows) + note


def _order_note(config: RunConfig | None, formats: list[str]) -> str:
    """How a shuffled release orders its documents (pipeline/shuffle.py).

    Nothing in corpus order, whose cards keep their bytes."""
    if config is None or config.shuffle_seed is None:
        return ""
    if config.options.mix is not None and LLMC in formats:
        return (
            f"\n\nDocuments are shuffled with seed {config.shuffle_seed}: each part (one input shard) holds its "
            "documents in a seeded order; the llm.c train files hold the mixture's stream (whole documents of every "
            "source, drawn and interleaved by the seed), the llm.c validation files interleave blocks of every part. "
            "The Megatron pairs keep each part's documents together."
        )
    text = (
        f"\n\nDocuments are shuffled with seed {config.shuffle_seed}: each part (one input shard) holds its "
        "documents in a seeded order"
    )
    if LLMC in formats and config.llmc_interleave_seed is not None:
        text += (
            ", and the llm.c files interleave blocks of every part in a seeded order, so a trainer reading them "
            "in order meets every part from the start"
        )
    elif LLMC in formats:
        text += "; the llm.c files hold the parts in part order"
    if config.llmc_interleave_seed is not None:
        text += (
            ". Documents are numbered from 0 in that interleaved order, the order a trainer reads the llm.c files, in "
            "every view (the preview, `hf-tokbin show --doc N` with either `--format`): the Megatron pairs keep each "
            "part's documents together, so document N is not the Nth sequence of the pairs"
        )
    return text + "."


def _id_text(value) -> str:
    return f" (id {value})" if _count(value) is not None else ""


def _token_note(eod_id, separator, formats: list[str], layout: _Layout) -> str:
    """What the counts mean for the files this release holds."""
    notes = []
    bos = (
        f", and begins with one BOS token{_id_text(layout.bos_id)}, counted in `bos tokens`"
        if layout.bos_id is not None
        else ""
    )
    if MEGATRON in formats:
        notes.append(
            f"In the Megatron pairs every document ends with one EOD token{_id_text(eod_id)}, counted in `eod "
            f"tokens`{bos}."
        )
    if LLMC in formats:
        bos_note = f" and one BOS{_id_text(layout.bos_id)}" if layout.bos_id is not None else ""
        if _count(separator) is not None:
            where = "preceded" if layout.separator_position == "before" else "followed"
            notes.append(
                f"In the llm.c files every document is {where} by the separator{_id_text(separator)}: they hold the "
                f"text tokens plus one separator{bos_note} per document."
            )
        elif layout.bos_id is not None:
            notes.append(
                f"The llm.c files hold the text tokens plus one BOS{_id_text(layout.bos_id)} per document: the "
                "tokenizer has no separator."
            )
        else:
            notes.append(
                "The llm.c files hold the text tokens only: the tokenizer has no separator, so documents follow each "
                "other directly."
            )
    if MEGATRON in formats:
        notes.append(
            "`text tokens` are the documents' own tokens; `total tokens` adds the EOD and BOS tokens: the ids of the "
            "Megatron pairs."
        )
    elif LLMC in formats:
        notes.append(
            "`text tokens` are the documents' own tokens, and `total tokens` equals them here; the llm.c table below "
            "counts every id the files hold."
        )
    return " ".join(notes)


def _counts_section(
    split_counts: dict[str, dict[str, int]],
    sources: dict[str, dict[str, dict[str, int]]],
    from_stats: bool,
    eod_id,
    separator,
    formats: list[str],
    layout: _Layout,
) -> str:
    if not split_counts:
        return "Not recorded (no `stats.json` and no receipts)."
    # The known counts first, in their order, then any other count stats.json has (shown as it is).
    present = {k for c in split_counts.values() for k in c}
    columns = [k for k in COUNT_FIELDS if k in present or k != "bos_tokens"] + sorted(
        {k for c in split_counts.values() for k in c} - set(COUNT_FIELDS)
    )
    header = ["split"] + [k.replace("_", " ") for k in columns]
    rows = [
        [split] + [f"{counts[k]:,}" if k in counts else "" for k in columns] for split, counts in split_counts.items()
    ]
    origin = (
        "From `stats.json`."
        if from_stats
        else "Summed over the receipts (this release has no split counts in `stats.json`)."
    )
    note = _token_note(eod_id, separator, formats, layout)
    text = origin + (" " + note if note else "") + "\n\n" + _table(header, rows)
    source_rows = _source_rows(sources, columns)
    if source_rows:
        text += "\n\nBy source:\n\n" + _table(["source", "split"] + header[1:], source_rows)
    return text


def _source_pictures(root: Path) -> str:
    """The sources pictures the release holds (a build with a source column), one image link per split."""
    links = [picture_link(root, sources_picture(split), f"Text tokens of {split} by source") for split in SPLITS]
    return "".join(f"\n\n{link}" for link in links if link)


def _mixture_section(root: Path, config: RunConfig | None) -> str:
    """A mixture's table (``stats.json``'s ``mixture``): per source, its share asked and got in the llm.c train files,
    the epochs used, and what its train parts hold. Nothing for any other release."""
    if config is None or config.options.mix is None:
        return ""
    try:
        mixture = json.loads((root / STATS_NAME).read_text(encoding="utf-8"))["mixture"]
        sources = dict(mixture["sources"])
        total = f"{int(mixture['tokens']):,}"
    except (OSError, ValueError, KeyError, TypeError):
        return "\n\nMixture: not recorded (no `mixture` in `stats.json`)."
    rows = []
    for name, source in sources.items():
        held = _dict(_dict(source).get("llmc"))
        available = _dict(_dict(source).get("available"))
        cells = [
            _percent(_dict(source).get("target_share")),
            _percent(held.get("share")) if held else "blend only",
            f"{held['epochs']:.2f}" if isinstance(held.get("epochs"), (int, float)) else "",
            _number(held.get("documents")),
            _number(held.get("tokens")),
            _number(available.get("documents")),
            _number(available.get("tokens")),
        ]
        rows.append([code_span(name), *cells])
    header = [
        "source", "target share", "share", "epochs", "llm.c documents", "llm.c tokens", "train documents",
        "train tokens",
    ]
    return (
        f"\n\nMixture of {total} train tokens, at most {config.options.mix.max_epochs} epoch(s) of a source "
        "(`hf-tokbin build --mix`): the llm.c train files hold it, whole documents drawn and interleaved by the "
        "seed; the Megatron pairs hold every train document, and `hf-tokbin recipe` prints the blend that draws "
        "each source's share. Validation holds every validation document of every source.\n\n" + _table(header, rows)
    )


def _percent(value) -> str:
    return f"{value:.1%}" if isinstance(value, (int, float)) and not isinstance(value, bool) else ""


def _number(value) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else ""


def _source_rows(sources: dict[str, dict[str, dict[str, int]]], columns: list[str]) -> list[list[str]]:
    """The per-source table's rows: each source's counts per split."""
    rows = []
    for name, by_split in sorted(sources.items()):
        rows += [
            [code_span(name), split] + [f"{counts[k]:,}" if k in counts else "" for k in columns]
            for split, counts in sorted(by_split.items())
        ]
    return rows


def _llmc_counts(manifests: list[tuple[str, llmc.TokensManifest]], formats: list[str]) -> str:
    """The llm.c files' documents and tokens per split, as their ``_MANIFEST.json`` lists them.

    That is what a trainer reads."""
    if LLMC not in formats or not manifests:
        return ""
    text = ""
    for folder, manifest in manifests:
        rows = []
        for split in llmc.SPLITS:
            files = [f for f in manifest.files if f.split == split]
            documents, tokens = sum(f.n_docs for f in files), sum(f.n_tokens for f in files)
            rows.append([f"`{split}`", f"{len(files):,}", f"{documents:,}", f"{tokens:,}"])
        text += (
            f"\n\nThe llm.c files ({code_span(folder + '/')}), as their `_MANIFEST.json` lists them: the tokens are "
            "every id the files hold, "
            "separators and BOS included, so they differ from the text tokens above by those per document.\n\n"
            + _table(["split", "files", "documents", "tokens"], rows)
        )
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


def _tokenizer_section(tokenizer: dict, config: RunConfig | None) -> str:
    if not tokenizer:
        return "Not recorded in `run_config.json`."
    is_byte = tokenizer.get("source") == BYTE_SOURCE
    lines = _tokenizer_lines(tokenizer, is_byte)
    if config is not None and "doc_sep_id" not in tokenizer:
        labelled = [("document separator (EOD)", config.doc_sep), ("BOS, before every document", config.bos)]
        # llm.c's own separator (--llmc-layout llama3: <|begin_of_text|>) only where it is another token.
        labelled += (
            [("llm.c separator (in the llm.c files instead of the EOD)", config.llmc_doc_sep)]
            if config.llmc_doc_sep is not None
            else []
        )
        for label, token in labelled:
            lines.append(f"- {label}: " + (_boundary_text(token) if token is not None else "none"))
    bos = config.bos if config is not None else None
    lines += ["", _encoding_note(is_byte, config)]
    lines.append(
        ("A BOS is inserted before every document; no" if bos is not None else "No BOS or")
        + " padding is inserted; nothing is truncated, packed or deduplicated."
    )
    return "\n".join(lines)


def _tokenizer_lines(tokenizer: dict, is_byte: bool) -> list[str]:
    """The tokenizer record's fields: the known ones labelled, in their order, then any other scalar as it is."""
    labels = (
        {**_TOKENIZER_LABELS, "sha256": "SHA-256 of its canonical description (it has no `tokenizer.json`)"}
        if is_byte
        else _TOKENIZER_LABELS
    )
    lines = [
        f"- {label}: {code_span(str(tokenizer[key]))}"
        for key, label in labels.items()
        if tokenizer.get(key) is not None
    ]
    others = sorted(set(tokenizer) - set(labels))
    scalar = [
        key for key in others if isinstance(tokenizer[key], (str, int, float)) and not isinstance(tokenizer[key], bool)
    ]
    return lines + [f"- {markdown_text(key)}: {code_span(str(tokenizer[key]))}" for key in scalar]


def _boundary_text(token) -> str:
    """A boundary token as the card shows it: its id, its text and where it came from, each value escaped."""
    text = f" {code_span(token.token)}" if token.token is not None else ""
    return f"`{token.id}`{text}, from {markdown_text(token.source)}"


def _encoding_note(is_byte: bool, config: RunConfig | None) -> str:
    """How each document's text became ids, as run_config.json's special-token policy says."""
    if is_byte:
        return "Each document is encoded as its UTF-8 bytes: one id per byte, the id being the byte value."
    if config is not None and config.special_tokens == "ordinary":
        return (
            "Each document is encoded once with `tokenizers` (`encode(text, add_special_tokens=False)`) with "
            "special-token "
            "text as ordinary text (`encode_special_tokens = True`): `<|endoftext|>` written in a document is "
            "encoded as "
            "the characters it is made of, never as the special token, so no document boundary comes from the text."
        )
    return (
        "Each document is encoded once with `tokenizers` (`encode(text, add_special_tokens=False)`): an added token "
        "written literally in the text (such as `<|endoftext|>`) is matched as that token, as `tokenizers` does"
        + (" (`--parse-special-tokens`)." if config is not None else ".")
    )


def _split_section(rule) -> str:
    details = _dict(rule)
    name = _text(details.get("name"))
    if name is None:
        return "Not recorded in `run_config.json`."
    recorded = _text(details.get("text"))
    if recorded is not None and recorded == SPLIT_RULE_TEXT.get(name):
        return recorded  # hf_tokbin's own words, Markdown included
    return markdown_text(recorded) if recorded is not None else SPLIT_RULE_TEXT.get(name, code_span(name))


def _llmc_file_size(
    folder: Path, entry: llmc.LlmcFileEntry, manifest: llmc.TokensManifest, llmc_layout: str | None
) -> int:
    """A token file's size: from its manifest entry and the layout, else from disk.

    A build's finish may hold no token file."""
    if llmc_layout in llmc.FAMILIES and manifest.vocab_size <= 2**32:
        return llmc.HEADER_BYTES + entry.n_tokens * llmc.layout_for(manifest.vocab_size, llmc_layout).dtype.itemsize
    path = folder / entry.name
    return path.stat().st_size if path.is_file() else 0


def _format_section(
    root: Path,
    receipts: list[Receipt],
    manifests: list[tuple[str, llmc.TokensManifest]],
    formats: list[str],
    eod_id,
    separator,
    llmc_layout,
    dtype_code,
    layout: _Layout,
) -> str:
    parts = [_megatron_format(root, receipts, eod_id, dtype_code, layout)] if MEGATRON in formats else []
    if LLMC in formats:
        documents = _llmc_documents(separator, layout)
        parts += [_llmc_format(root, folder, manifest, llmc_layout, documents) for folder, manifest in manifests]
    return "\n\n".join(parts) or "No token files recorded."


def _megatron_dtype(root: Path, receipts: list[Receipt], dtype_code) -> str:
    """The pairs' dtype: the first ``.idx`` header's; without one, run_config.json's code; else both possibilities."""
    from ..formats import megatron

    idx_files = [f.path for r in receipts for f in r.files if f.path.endswith(".idx")]
    if idx_files:
        header = megatron.read_index_header(root / idx_files[0])
        return f"{header.dtype.name} (dtype code {header.code})"
    if _count(dtype_code) in megatron.DTYPE_CODES:
        return f"{megatron.DTYPE_CODES[dtype_code].name} (dtype code {dtype_code})"
    return "uint16 (dtype code 8) or int32 (code 4)"


def _megatron_format(root: Path, receipts: list[Receipt], eod_id, dtype_code, layout: _Layout) -> str:
    dtype = _megatron_dtype(root, receipts, dtype_code)
    return (
        "**Megatron pairs** are IndexedDataset version 1. `.bin` is a contiguous little-endian "
        f"stream of {dtype} token ids; each document is one sequence, {layout.megatron_document()}: it ends with one "
        f"EOD token{_id_text(eod_id)}"
        + (f" and begins with one BOS token{_id_text(layout.bos_id)}. " if layout.bos_id is not None else ". ")
        + "`.idx`: magic `MMIDIDX\\0\\0`, version 1 (uint64), the dtype code (uint8), the sequence count and "
        "document count (uint64 each; documents + 1), then the int32 sequence lengths, the int64 byte "
        "pointers into `.bin`, and the int64 document indices `[0, 1, ..., N]`."
    )


def _llmc_documents(separator, layout: _Layout) -> str:
    """How a document stands in the llm.c files, in words."""
    shape = layout.llmc_document(_count(separator) is not None)
    if _count(separator) is None:
        return f"Each document is {shape}, with no separator (the tokenizer has none); files hold whole documents."
    where = "preceded" if layout.separator_position == "before" else "followed"
    return (
        f"Each document is {shape}: {where} by the document separator{_id_text(separator)}; files hold whole "
        "documents."
    )


def _llmc_format(root: Path, folder: str, manifest: llmc.TokensManifest, llmc_layout, documents: str) -> str:
    if llmc_layout == "llama3":
        return (
            f"**llm.c token files** ({code_span(folder + '/')}) use upstream llm.c's Llama 3 layout (`--llmc-layout "
            "llama3`): "
            "a 1024-byte header of 256 little-endian int32 (magic 20240801, version 7, token count, zeros), "
            f"then uint32 ids, as `train_llama3.py` reads them. {documents}"
        )
    first = root / folder / manifest.files[0].name if manifest.files else None
    version = ""
    if llmc_layout == "gpt2" and manifest.vocab_size <= 2**32:  # the layout the build wrote, from the manifest
        written = llmc.layout_for(manifest.vocab_size, "gpt2")
        version = f" Here: version {written.version} ({written.dtype.name} ids)."
    elif first is not None and first.is_file():
        header = llmc.read_header(first)
        version = f" Here: version {header.version} ({header.dtype.name} ids)."
    return (
        f"**llm.c token files** ({code_span(folder + '/')}): a 1024-byte header of 256 little-endian int32 "
        f"(magic 20240520, version, token count, vocabulary size, zeros), then the ids; version 1 "
        f"holds uint16 ids, version 2 uint32 ids.{version} {documents}"
    )


def _reading_section(
    root: Path, receipts: list[Receipt], manifests: list[tuple[str, llmc.TokensManifest]], formats: list[str],
    llmc_layout,
) -> str:
    parts = []
    if MEGATRON in formats:
        first_pair = next(
            (f.path[: -len(".bin")] for r in receipts for f in r.files if f.path.endswith(".bin")),
            "shards/train/part-000000",
        )
        parts += [
            "**Megatron-LM / megatron-core** read a pair by its path prefix (no suffix):\n\n"
            "```python\n"
            "from megatron.core.datasets.indexed_dataset import IndexedDataset\n\n"
            f'dataset = IndexedDataset("{first_pair}")\n'
            "print(len(dataset), dataset[0][:16])\n"
            "```\n\n"
            "In Megatron-LM training, list the prefixes (with weights) in `--data-path`, e.g. `--data-path 1.0 "
            f"{first_pair}`.",
            "**MaxText** reads the pairs with its Grain memory-mapped reader. Its `mmap_npy` path can read them "
            "too but also needs the separate document, sample and shuffle `.npy` indices, which this release does "
            "not include: MaxText builds them at startup for the training configuration, or you build them beforehand.",
            "**numpy** (with hf_tokbin, which validates the index before it returns a view):\n\n"
            "```python\n"
            "from hf_tokbin.formats.megatron import MegatronPair\n\n"
            f'pair = MegatronPair("{first_pair}.idx")\n'
            "print(len(pair), pair.n_tokens, pair[0][:16])\n"
            "```",
        ]
    if LLMC in formats:
        for folder, _ in manifests:
            # Pasted into a shell: each glob quoted, the folder's own glob characters escaped, as hf-tokbin recipe
            # prints them.
            train, val = (shlex.quote(llmc.split_glob(folder, split)) for split in ("train", "val"))
            if llmc_layout == "llama3":
                parts.append(
                    "**llm.c** `train_llama3.py` reads these files unchanged, e.g. "
                    f"{code_span(f'--input_bin {train} --input_val_bin {val}')}."
                )
                continue
            parts.append(
                f"**llm.c** reads version-1 files unchanged, e.g. {code_span(f'./train_gpt2cu -i {train} -j {val}')}; "
                "version-2 (uint32) files are read by `hf_tokbin.formats.llmc.open_tokens` or any reader that follows "
                "the header."
            )
    return "\n\n".join(parts + _recipes(root, formats, llmc_layout))


RELEASE_PLACEHOLDER = "RELEASE"  # the card holds no absolute path: recipes name the downloaded folder so
# Characters shell quoting (shlex.quote: ' as '"'"'), a Python literal (' and \ escaped) or a glob (a [*?] as [[]...)
# write otherwise: a path holding one appears in a recipe line in pieces, which the placeholder cannot replace.
PATH_CHARS_QUOTING_CHANGES = "'\\[*?"


def _recipes(root: Path, formats: list[str], llmc_layout) -> list[str]:
    """``hf-tokbin recipe``'s text for every trainer that reads this release's formats (and llm.c layout), with
    the release folder as RELEASE; a line saying why for a trainer that cannot train on it."""
    from ..trainers import TRAINERS

    layout = llmc_layout or "gpt2"
    trainers = [t for t in TRAINERS.values() if t.reads in formats and (t.reads != LLMC or layout in t.llmc_layouts)]
    if not trainers:
        return []
    parts = [
        "**Train on it**: what `hf-tokbin recipe RELEASE --for TARGET` prints for each trainer, with RELEASE the "
        "absolute path of the downloaded folder. These lines are for B=4, T=1024, one GPU: pass `-B`, `-T`, "
        "`--world-size`, `--epochs` for others."
    ]
    prefix = str(root.resolve())
    if any(c in prefix for c in PATH_CHARS_QUOTING_CHANGES):  # its quoted form could not be replaced by RELEASE
        commands = ", ".join(f"`hf-tokbin recipe RELEASE --for {t.name}` ({t.label})" for t in trainers)
        return [
            *parts,
            f"Run {commands}: this card shows no lines, since the folder the release was built in has a name its "
            "quoting would change.",
        ]
    return parts + [_recipe_block(root, trainer, prefix) for trainer in trainers]


def _recipe_block(root: Path, trainer, prefix: str) -> str:
    """One trainer's recipe as ``hf-tokbin recipe`` prints it (no finding: the build has just checked the files)."""
    from ..errors import FormatError
    from ..trainers import recipe

    version = trainer.checked_against.split(":")[0]
    problem = trainer.record_problem(root)
    if problem is None and trainer.reads_token_bytes:
        return (
            f"{trainer.label} ({version}): run `hf-tokbin recipe RELEASE --for {trainer.name}`. Its lines count "
            "steps and documents from where each document starts in the token files, which this card, written "
            "from the release's records, does not read."
        )
    if problem is not None:
        return f"{trainer.label}: {problem}."
    try:
        text = recipe(root, trainer.name, with_findings=False).text().replace(prefix, RELEASE_PLACEHOLDER)
    except FormatError as e:  # no line of this trainer trains on the release (a vocabulary past its model's)
        return f"{trainer.label}: {e.rule.replace(prefix, RELEASE_PLACEHOLDER)}."
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall("`+", text)), default=0))
    return f"<details><summary>{trainer.label} ({version})</summary>\n\n{fence}bash\n{text}{fence}\n\n</details>"
