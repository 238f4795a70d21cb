"""The preview a build writes: one row per document, each format's ids as columns, the card's default config."""

from __future__ import annotations

import datasets
import numpy as np
import pytest
from release_fixtures import build_release

from hf_tokbin.formats.megatron import MegatronPair
from hf_tokbin.readers.views import LlmcSplit


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return build_release(tmp_path_factory.mktemp("preview"))


def test_load_dataset_of_a_release_folder_gives_one_row_per_document(release, tmp_path):
    loaded = datasets.load_dataset(str(release), cache_dir=str(tmp_path / "cache"))  # the card's default config
    assert set(loaded) == {"train", "validation"}
    for split, dataset in loaded.items():
        assert dataset["document"] == list(range(dataset.num_rows)), split  # each document once
        assert {"text", "llmc_input_ids", "megatron_input_ids"} <= set(dataset.column_names)
    from hf_tokbin.formats.preview import columns, read_preview

    for split, dataset in loaded.items():
        assert dataset.column_names == list(columns(("llmc", "megatron")))
        assert dataset.to_dict() == read_preview(release / "preview" / f"{split}.parquet")


def test_a_row_holds_each_format_s_ids_of_the_same_document(release):
    from hf_tokbin.formats.preview import read_preview

    rows = read_preview(release / "preview" / "train.parquet")
    pair = MegatronPair(release / "shards" / "train" / "part-000000.idx")
    stream = LlmcSplit.open(release, "train", check_ids=False)
    start = 0
    for i in range(3):
        megatron, llmc = rows["megatron_input_ids"][i], rows["llmc_input_ids"][i]
        assert megatron == pair[i].tolist() and rows["megatron_tokens"][i] == len(megatron)
        assert llmc == np.asarray(stream.read(start, start + len(llmc))).tolist() and rows["llmc_tokens"][i] == len(
            llmc
        )
        assert llmc == [0, *megatron[:-1]]  # the separator (EOD 0) before the document in llm.c, after it in Megatron
        start += len(llmc)
