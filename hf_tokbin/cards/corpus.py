"""The dataset card (``README.md``) of a corpus folder, from ``dataset_card/corpus_card.md``.

Its ``configs:`` YAML names the Parquet shards of each split, so
``datasets.load_dataset(DIR)`` loads the corpus with no custom code.
"""

from __future__ import annotations

from ..formats.corpus_manifest import SPLIT_RULE_TEXT, SPLITS, CorpusManifest
from .release import load_template, size_category

CARD_TEMPLATE = "corpus_card.md"  # in dataset_card/
DATA_DIR = "data"  # the corpus folder's shards: DATA_DIR/<split>-NNNNN.parquet


def render_corpus_card(manifest: CorpusManifest) -> str:
    """The dataset card ``README.md`` of a corpus folder, from ``dataset_card/corpus_card.md``."""
    template = load_template(CARD_TEMPLATE)
    present = [split for split in SPLITS if manifest.rows(split)]
    data_files = "".join(f"  - split: {split}\n    path: {DATA_DIR}/{split}-*.parquet\n" for split in present)
    splits = "".join(
        f"| {split} | {manifest.rows(split):,} | {len([s for s in manifest.shards if s.split == split])} | "
        f"{sum(s.size for s in manifest.shards if s.split == split) / 1e6:,.1f} |\n"
        for split in present
    )
    sources = "".join(f"| `{s.path}` | {s.size:,} | `{s.sha256}` |\n" for s in manifest.sources)
    return template.substitute(
        name=manifest.name,
        data_files=data_files.rstrip("\n"),
        split_rule=manifest.split_rule,
        split_rule_text=SPLIT_RULE_TEXT[manifest.split_rule],
        splits_table=splits.rstrip("\n"),
        sources_table=sources.rstrip("\n"),
        shard_count=len(manifest.shards),
        license=manifest.license,
        language="".join(f"\n- {code}" for code in manifest.language) if manifest.language else " []",
        size_category=size_category(sum(s.rows for s in manifest.shards)),
    )
