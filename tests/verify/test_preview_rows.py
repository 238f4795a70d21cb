"""verify: a preview holds one row per document, with each format's ids as columns of that row."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from release_edits import refused, reseal_complete

from hf_tokbin.formats.preview import read_preview, write_preview
from hf_tokbin.verify.release import verify_release


def _edit(release, change, split: str = "train") -> None:
    path = release / "preview" / f"{split}.parquet"
    rows = read_preview(path)
    change(rows)
    write_preview(path, rows)
    reseal_complete(release)


def test_a_fresh_preview_passes(copy):
    verify_release(copy)


def test_a_preview_without_one_format_s_columns_is_refused(copy):
    def drop_llmc(rows):
        del rows["llmc_tokens"], rows["llmc_input_ids"]

    _edit(copy, drop_llmc)
    refused(copy, "preview/train.parquet", "one row per document, with a column of ids for each format")


def test_a_preview_with_a_row_per_format_is_refused(copy):
    """The shape the preview must not have: each document twice, one row per format."""
    path = copy / "preview" / "train.parquet"
    table = pq.read_table(path)
    pq.write_table(pa.concat_tables([table, table]), path)
    reseal_complete(copy)
    refused(copy, "preview/train.parquet", "document must count the split's documents from 0")


def _flip_last(ids: list[int]) -> None:
    ids[-1] ^= 1


@pytest.mark.parametrize(
    ("change", "rule"),
    [
        (lambda rows: rows["megatron_tokens"].__setitem__(1, 5), "row 1: megatron_tokens must be the number"),
        (lambda rows: rows["document"].reverse(), "row 0: document must count"),
        (lambda rows: _flip_last(rows["llmc_input_ids"][2]), "llmc_input_ids, one row after the other"),
        (lambda rows: _flip_last(rows["megatron_input_ids"][0]), "megatron document 0 (row 0)"),
    ],
)
def test_a_row_that_is_not_the_token_files_is_refused(copy, change, rule):
    _edit(copy, change)
    refused(copy, "preview/train.parquet", rule)


def test_an_unknown_column_is_refused_as_it_is_read(copy):
    path = copy / "preview" / "validation.parquet"
    table = pq.read_table(path)
    pq.write_table(table.append_column("format", pa.array(["llmc"] * table.num_rows)), path)
    reseal_complete(copy)
    refused(copy, "preview/validation.parquet", "preview columns must be document, part, source, text")
