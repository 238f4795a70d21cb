"""The release card shows the documents and tokens of each source per split when the corpus has a source column."""

from __future__ import annotations

from release_fixtures import build_with_sources, counts_by_source, source_rows


def test_the_card_has_a_row_per_source_and_split_with_its_documents_and_tokens(tmp_path):
    rows = source_rows(40, seed=2)
    card = (build_with_sources(tmp_path, rows) / "README.md").read_text()
    table = card.split("By source:", 1)[1]
    for name, by_split in counts_by_source(rows, None).items():
        for split, counts in by_split.items():
            assert (
                f"| `{name}` | {split} | "
                + " | ".join(f"{counts[k]:,}" for k in ("documents", "text_tokens", "eod_tokens", "total_tokens"))
                + " |"
                in table
            )
