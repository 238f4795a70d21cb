"""The datasets way in: Dataset.map(hf_tokbin.tokenize(tok), num_proc) ids, and build_release from them."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import numpy as np
import pytest
from tokenizer_files import GPT2_EOS_ID, gpt2_tokenizer_json, story_texts

import hf_tokbin
from hf_tokbin.errors import BuildError
from hf_tokbin.formats.given_ids import IdsCheck
from hf_tokbin.readers.views import MegatronSplit

# Stories, an empty text (dropped), special-token text (ordinary text by default), and code points the fast path
# leaves to tokenizers (U+A7CE is a letter to gigatoken only; a private-use character of plane 15).
TEXTS = [
    *story_texts(40),
    "",
    "the end <|endoftext|> of text",
    "꟎ letter only to gigatoken \U000f0001 private",
    *story_texts(20, seed=1),
]


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def tok() -> Path:
    return gpt2_tokenizer_json()


@pytest.fixture(scope="module")
def raw(tmp_path_factory) -> datasets.Dataset:
    split = ["validation" if i % 9 == 4 else "train" for i in range(len(TEXTS))]
    return datasets.Dataset.from_dict({"text": TEXTS, "split": split})


@pytest.fixture(scope="module")
def mapped(raw, tok) -> datasets.Dataset:
    return raw.map(hf_tokbin.tokenize(tok), batched=True, batch_size=7, num_proc=2)


@pytest.fixture(scope="module")
def raw_release(raw, tok, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("raw") / "stories"
    hf_tokbin.build_release(raw, tok, out, progress=False, shard_rows=25)
    return out


def test_mapped_ids_are_the_ids_the_build_writes(mapped, raw_release):
    documents = {}
    for split in ("train", "validation"):
        pairs = MegatronSplit.open(raw_release, split)
        documents[split] = [pairs[i][:-1].tolist() for i in range(len(pairs))]  # each sequence is ids + [eod]
        assert all(pairs[i][-1] == GPT2_EOS_ID for i in range(len(pairs)))
    kept = [row for row in mapped if row["text"]]
    for split in ("train", "validation"):
        assert [row["input_ids"] for row in kept if row["split"] == split] == documents[split]
    assert mapped.features["input_ids"].feature.dtype == "uint32"


def test_the_encoder_pickles_with_its_fast_path_outcome(tok):
    import pickle

    encode = hf_tokbin.tokenize(tok)
    again = pickle.loads(pickle.dumps(encode))
    assert again.encoder.engine == encode.encoder.engine
    batch = {"text": TEXTS[:5]}
    assert [a.tolist() for a in again(batch)["input_ids"]] == [a.tolist() for a in encode(batch)["input_ids"]]


@pytest.mark.parametrize("kind", ["Dataset", "DatasetDict", "IterableDataset"])
def test_a_release_from_mapped_ids_is_the_raw_text_release_byte_for_byte(mapped, raw_release, tok, tmp_path, kind):
    source = {
        "Dataset": mapped,
        "DatasetDict": datasets.DatasetDict({"only": mapped}),  # the split column still decides
        "IterableDataset": mapped.to_iterable_dataset(num_shards=1),  # as load_dataset(..., streaming=True) gives
    }[kind]
    out = tmp_path / "stories"
    hf_tokbin.build_release(source, tok, out, progress=False, shard_rows=25, num_proc=2)
    mine, theirs = files_under(out), files_under(raw_release)
    assert sorted(mine) == sorted(theirs)
    assert [path for path in mine if mine[path] != theirs[path]] == []


def test_one_changed_id_is_refused_naming_the_row(mapped, tok, tmp_path):
    row = 45

    def change(example, i):
        if i == row:
            example["input_ids"] = [
                *example["input_ids"][:3],
                (example["input_ids"][3] + 1) % 50000,
                *example["input_ids"][4:],
            ]
        return example

    changed = mapped.map(change, with_indices=True)
    with pytest.raises(
        BuildError,
        match=rf"<in-memory dataset> row {row}: input_ids differ from the tokenizer's ids .*first difference at id 3",
    ):
        hf_tokbin.build_release(changed, tok, tmp_path / "stories", progress=False, shard_rows=25)
    assert not (tmp_path / "stories" / "COMPLETE.json").exists()


def test_ids_for_an_empty_text_are_refused(tok, tmp_path):
    bad = datasets.Dataset.from_dict({"text": ["a story", ""], "input_ids": [[64, 1621], [5]]})
    with pytest.raises(BuildError, match=r"row 1: input_ids of an empty text must be empty"):
        hf_tokbin.build_release(bad, tok, tmp_path / "x", progress=False)


def test_an_id_outside_the_vocabulary_is_refused_even_unchecked(tok, tmp_path):
    good = hf_tokbin.tokenize(tok)({"text": ["a story", "another story"]})["input_ids"]
    bad = datasets.Dataset.from_dict(
        {"text": ["a story", "another story"], "input_ids": [good[0].tolist(), [*good[1].tolist()[:-1], 60000]]}
    )
    with pytest.raises(BuildError, match=r"row 1: input_ids holds an id outside the tokenizer's vocabulary"):
        hf_tokbin.build_release(bad, tok, tmp_path / "x", progress=False, check_ids="sample:1")


def test_a_sample_check_is_recorded_in_run_config(mapped, raw_release, tok, tmp_path):
    out = tmp_path / "stories"
    hf_tokbin.build_release(mapped, tok, out, progress=False, shard_rows=25, check_ids="sample:5")
    config = json.loads((out / "run_config.json").read_text())
    assert config["ids"]["checked"] == "sample:5"
    assert "ids" not in json.loads((raw_release / "run_config.json").read_text())
    mine, theirs = files_under(out), files_under(raw_release)
    # The same ids: only the records that pin run_config.json differ.
    assert (
        "run_config.json"
        in {path for path in mine if mine[path] != theirs[path]}
        <= {"run_config.json", "COMPLETE.json", "README.md"}
    )
    assert hf_tokbin.verify_release(out) is not None


@pytest.mark.parametrize("total,k", [(62, 5), (10, 10), (7, 3), (1000, 1), (5, 9)])
def test_a_sample_check_picks_exactly_k_documents_spread_over_all(total, k):
    check = IdsCheck.parse(f"sample:{k}")
    whole = check.mask(0, total, total)
    pieces = np.concatenate([check.mask(first, min(7, total - first), total) for first in range(0, total, 7)])
    assert whole.sum() == min(k, total) and np.array_equal(whole, pieces)
    assert whole[0]


@pytest.mark.parametrize("text", ["sample:0", "sample:", "some", "sample:-3"])
def test_check_ids_must_be_all_or_a_sample(text):
    with pytest.raises(BuildError, match="must be all or sample:K"):
        IdsCheck.parse(text, "out")


def test_check_ids_needs_an_input_ids_column(raw, tok, tmp_path):
    with pytest.raises(BuildError, match="check_ids applies to a dataset with an input_ids column"):
        hf_tokbin.build_release(raw, tok, tmp_path / "x", progress=False, check_ids="sample:3")


GIVEN_KINDS = [
    "Dataset",
    "DatasetDict",
    "IterableDataset",
    "IterableDatasetDict",
    "IterableDataset without features",
    "saved Dataset",
    "saved DatasetDict",
]


def given_as(kind: str, dataset: datasets.Dataset, folder: Path):
    """``dataset`` (a mapped one) in the form ``kind`` names: each of the ways a dataset with input_ids comes in."""
    if kind.startswith("saved "):
        given_as(kind.removeprefix("saved "), dataset, folder).save_to_disk(str(folder))
        return folder
    if kind == "IterableDataset without features":  # as a generator gives it: its columns are known only by reading it
        rows = list(dataset)
        return datasets.IterableDataset.from_generator(lambda: iter(rows))
    return {
        "Dataset": lambda: dataset,
        "DatasetDict": lambda: datasets.DatasetDict({"only": dataset}),
        "IterableDataset": lambda: dataset.to_iterable_dataset(num_shards=1),
        "IterableDatasetDict": lambda: datasets.IterableDatasetDict(
            {"only": dataset.to_iterable_dataset(num_shards=1)}
        ),
    }[kind]()


@pytest.mark.parametrize("kind", GIVEN_KINDS)
def test_given_ids_are_checked_whatever_holds_them(mapped, tok, tmp_path, kind):
    wrong = mapped.map(lambda example: {"input_ids": [(i + 1) % 50000 for i in example["input_ids"]]})
    with pytest.raises(BuildError, match=r"row 0: input_ids differ from the tokenizer's ids"):
        hf_tokbin.build_release(
            given_as(kind, wrong, tmp_path / "saved"), tok, tmp_path / "stories", progress=False, shard_rows=25
        )
    assert not (tmp_path / "stories" / "COMPLETE.json").exists()


@pytest.mark.parametrize("kind", GIVEN_KINDS)
def test_a_sample_check_applies_whatever_holds_the_ids(mapped, tok, tmp_path, kind):
    out = tmp_path / "stories"
    hf_tokbin.build_release(
        given_as(kind, mapped, tmp_path / "saved"), tok, out, progress=False, shard_rows=25, check_ids="sample:5"
    )
    assert json.loads((out / "run_config.json").read_text())["ids"]["checked"] == "sample:5"


def test_an_id_past_int64_is_reported_as_it_is(tok, tmp_path):
    import pyarrow as pa

    ids = pa.array([[64, 1621], [64, 2**63 + 7]], type=pa.list_(pa.uint64()))
    bad = datasets.Dataset(pa.table({"text": ["a story", "a story"], "input_ids": ids}))
    with pytest.raises(BuildError, match=rf"row 1: input_ids must be ids 0..2\*\*32-1: got {2**63 + 7}"):
        hf_tokbin.build_release(bad, tok, tmp_path / "x", progress=False)
