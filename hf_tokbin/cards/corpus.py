"""The dataset card (``README.md``) of a corpus folder, from ``dataset_card/corpus_card.md``.

Its ``configs:`` YAML names the Parquet shards of each split, so
``datasets.load_dataset(DIR)`` loads the corpus with no custom code. The
YAML front matter is written by a YAML emitter (``yaml.safe_dump``), never by
pasting text into a template: ``language: no`` (Norwegian) stays the string
``"no"``, and a value cannot add keys. Licenses are checked against the Hub's
license ids (:data:`HUB_LICENSES`, from https://huggingface.co/docs/hub/repositories-licenses)
and languages against the shape of ISO 639 codes (:func:`check_card_metadata`).
"""

from __future__ import annotations

import json
from string import Template

from ..errors import CorpusInputError
from ..formats.corpus_manifest import LANGUAGE_CODE, LICENSE_ID, SPLIT_RULE_TEXT, SPLITS, CorpusManifest
from .metadata import HUB_LICENSES, dump_yaml, load_template, markdown_text, size_category

CARD_TEMPLATE = "corpus_card.md"  # in dataset_card/
DATA_DIR = "data"  # the corpus folder's shards: DATA_DIR/<split>-NNNNN.parquet


def check_card_metadata(license: str, language, any_license: bool = False, flag: str = "--license") -> None:
    """A Hub license id (or, with ``any_license``, any id of that shape) and ISO 639 language codes.

    Anything else is one clear error."""
    if not isinstance(license, str) or not LICENSE_ID.fullmatch(license):
        raise CorpusInputError(
            None,
            f"{flag}: not a license id",
            expected="lowercase letters, digits, '.', '+', '-' (e.g. apache-2.0)",
            got=repr(license),
        )
    if license not in HUB_LICENSES and not any_license:
        raise CorpusInputError(
            None,
            f"{flag}: not a Hub license id",
            expected="one of the Hub's ids (apache-2.0, mit, cc-by-4.0, odc-by, other, ...)",
            got=repr(license),
            hint="see https://huggingface.co/docs/hub/repositories-licenses; --any-license takes another id",
        )
    for code in language:
        if not isinstance(code, str) or not LANGUAGE_CODE.fullmatch(code):
            raise CorpusInputError(
                None,
                "--language: not an ISO 639 language code",
                expected="codes such as en, fr, no, zh-Hant",
                got=repr(code),
            )


def render_corpus_card(manifest: CorpusManifest, schema=None) -> str:
    """The dataset card ``README.md`` of a corpus folder, from ``dataset_card/corpus_card.md``."""
    template = load_template(CARD_TEMPLATE)
    present = [split for split in SPLITS if manifest.rows(split)]
    front = {
        "license": manifest.license,
        "language": list(manifest.language),
        "configs": [
            {
                "config_name": "default",
                "data_files": [{"split": split, "path": f"{DATA_DIR}/{split}-*.parquet"} for split in present],
            }
        ],
        "dataset_info": {"features": _features(schema)},
        "size_categories": [size_category(sum(s.rows for s in manifest.shards))],
        "tags": ["hf-tokbin", "text"],
    }
    splits = "".join(
        f"| {split} | {manifest.rows(split):,} | {len([s for s in manifest.shards if s.split == split])} | "
        f"{sum(s.size for s in manifest.shards if s.split == split) / 1e6:,.1f} |\n"
        for split in present
    )
    sources = "".join(f"| `{_cell(s.path)}` | {s.size:,} | `{s.sha256}` |\n" for s in manifest.sources)
    # The template's front matter is replaced whole: the YAML is the emitter's, never text pasted into YAML.
    body = Template(_without_front_matter(template.template)).substitute(
        name=markdown_text(manifest.name),
        # A Python string literal whatever the name holds (a quote in it cannot end the string and run the rest).
        dataset_path=json.dumps(f"path/or/namespace/{manifest.name}", ensure_ascii=False),
        split_rule=manifest.split_rule,
        split_rule_text=SPLIT_RULE_TEXT[manifest.split_rule],
        splits_table=splits.rstrip("\n"),
        sources_table=sources.rstrip("\n"),
        shard_count=len(manifest.shards),
        empty_dropped=f"{manifest.empty_documents_dropped:,}",
    )
    return "---\n" + dump_yaml(front) + "---\n" + body


def _without_front_matter(text: str) -> str:
    if not text.startswith("---\n"):
        return text
    end = text.find("\n---\n", 3)
    return text if end < 0 else text[end + len("\n---\n") :]


def _features(schema) -> list[dict]:
    """The shards' columns as the card's ``dataset_info.features`` (``datasets``' own YAML form for kept columns)."""
    plain = [{"name": "text", "dtype": "string"}, {"name": "split", "dtype": "string"}]
    if schema is None or schema.names == ["text", "split"]:
        return plain
    import datasets

    return datasets.Features.from_arrow_schema(schema)._to_yaml_list()


def _cell(text: str) -> str:
    """A value for a Markdown table cell on one line."""
    return text.replace("|", "\\|").replace("\n", " ").replace("`", "'")
