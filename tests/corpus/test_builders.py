"""The datasets builders of hf_tokbin.corpus.builders: TinyStories text and JSONL/Parquet corpus shards."""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path
from unittest import mock

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from story_edges import EDGE_STORIES, EDGE_TEXT
from tinystories_reference import DELIMITER
from tinystories_reference import stories as reference_stories

from hf_tokbin.corpus import tinystories_text
from hf_tokbin.corpus.builders import CorpusShards, TinyStories, read_stories, sha256_split
from hf_tokbin.corpus.builders.tinystories import read_story_batches
from hf_tokbin.corpus.tinystories_text import story_tables
from hf_tokbin.errors import CorpusInputError

DATA = Path(__file__).resolve().parents[1] / "data"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def test_edge_cases_match_hand_written_stories_and_the_reference_reader(tmp_path):
    path = write(tmp_path, "edge.txt", EDGE_TEXT)
    assert list(reference_stories(path)) == EDGE_STORIES  # the hand-written list is the TinyStories rules' reading
    assert list(read_stories(path)) == EDGE_STORIES


@pytest.mark.parametrize("block_size", [1, 2, 13, 64, 1 << 20])
def test_block_size_never_changes_the_stories(tmp_path, block_size):
    path = write(tmp_path, "edge.txt", EDGE_TEXT + "\nA tail story\nwith two lines\n")
    assert list(read_stories(path, block_size)) == EDGE_STORIES + ["A tail story\nwith two lines"]


def test_crlf_file_gives_the_stories_of_the_lf_file(tmp_path):
    crlf = write(tmp_path, "crlf.txt", EDGE_TEXT.replace("\n", "\r\n"))
    stories = list(read_stories(crlf, block_size=5))
    assert stories == EDGE_STORIES
    assert not any("\r" in story for story in stories)
    # What the TinyStories rules' code does with the same file: stray "\r" kept (the reason for the choice).
    assert list(reference_stories(crlf))[0] == "and so the cat went home.\r"


def test_lone_cr_is_a_line_end_around_the_delimiter_and_text_elsewhere(tmp_path):
    path = write(tmp_path, "cr.txt", "one\r<|endoftext|>\rtwo\rstill two\n")
    assert list(reference_stories(path)) == ["one\r", "two\rstill two"]
    assert list(read_stories(path, block_size=3)) == ["one\r", "two\rstill two"]


FRAGMENTS = st.sampled_from([DELIMITER, "\n", "\r\n", "\r", " ", "Tom", "é", "<|", "endoftext|>", "\n\n", "x"])


@settings(max_examples=300, deadline=None)
@given(st.lists(FRAGMENTS, max_size=40), st.integers(1, 40))
def test_reader_is_the_reference_reader_after_crlf_becomes_lf(tmp_path_factory, fragments, block_size):
    text = "".join(fragments)
    tmp = tmp_path_factory.mktemp("prop")
    expected = list(reference_stories(write(tmp, "lf.txt", text.replace("\r\n", "\n"))))
    assert list(read_stories(write(tmp, "in.txt", text), block_size)) == expected
    if "\r" not in text:
        assert list(reference_stories(tmp / "in.txt")) == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(FRAGMENTS, max_size=40), st.integers(1, 40), st.booleans())
def test_the_corpus_tables_cut_bytes_into_the_readers_stories(tmp_path_factory, fragments, block_size, keep_empty):
    # story_tables cuts the stories as UTF-8 bytes:
    # the same stories as the text reader, empty ones included.
    path = write(tmp_path_factory.mktemp("bytes"), "in.txt", "".join(fragments))
    tables = [
        table.column("text").to_pylist()
        for _, table in story_tables([path], "train", block_size, keep_empty=keep_empty)
    ]
    assert [s for texts in tables for s in texts] == [
        s for batch in read_story_batches(path, block_size, keep_empty=keep_empty) for s in batch
    ]


# Every marker on a line of its own (the offsets fast path), with runs of blank lines around the delimiter
# lines (stripped by moving offsets, _STRIP_PASSES runs at once, longer ones in Python) and empty stories.
DELIMITED = st.lists(
    st.tuples(st.sampled_from(["", "Tom", "é x", "\n", "a\n\nb", " "]), st.integers(0, 7), st.integers(0, 7)),
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(DELIMITED, st.integers(1, 60), st.booleans())
def test_blank_lines_at_delimiters_are_trimmed_into_the_readers_stories(
    tmp_path_factory, items, block_size, keep_empty
):
    text = "".join(story + "\n" * before + f"\n{DELIMITER}\n" + "\n" * after for story, before, after in items)
    path = write(tmp_path_factory.mktemp("trim"), "in.txt", text)
    tables = [
        table.column("text").to_pylist()
        for _, table in story_tables([path], "train", block_size, keep_empty=keep_empty)
    ]
    assert [s for texts in tables for s in texts] == [
        s for batch in read_story_batches(path, block_size, keep_empty=keep_empty) for s in batch
    ]
    if not keep_empty:
        assert [s for texts in tables for s in texts] == list(reference_stories(path))


@settings(max_examples=200, deadline=None)
@given(DELIMITED, st.integers(1, 60), st.booleans())
def test_arrows_take_and_joined_memoryviews_gather_the_same_stories(tmp_path_factory, items, block_size, keep_empty):
    # From _TAKE_FROM_BYTES on, a file's stories are gathered with Arrow's take (it imports pyarrow.compute), below by
    # joining memoryviews: the same stories, the reader's.
    text = "".join(story + "\n" * before + f"\n{DELIMITER}\n" + "\n" * after for story, before, after in items)
    path = write(tmp_path_factory.mktemp("gather"), "in.txt", text)

    def stories(take_from: int) -> list[str]:
        with mock.patch.object(tinystories_text, "_TAKE_FROM_BYTES", take_from):
            return [
                s
                for _, table in story_tables([path], "train", block_size, keep_empty=keep_empty)
                for s in table.column("text").to_pylist()
            ]

    assert (
        stories(0)
        == stories(1 << 62)
        == [s for batch in read_story_batches(path, block_size, keep_empty=keep_empty) for s in batch]
    )


def test_real_text_shakespeare_scenes(tmp_path):
    fixture = DATA / "shakespeare_scenes.txt"
    expected = list(reference_stories(fixture))
    assert len(expected) == 46 and expected[1].startswith("SCENE I.")
    assert list(read_stories(fixture, block_size=4096)) == expected
    crlf = write(tmp_path, "crlf.txt", fixture.read_text(encoding="utf-8").replace("\n", "\r\n"))
    assert list(read_stories(crlf, block_size=4096)) == expected


@pytest.mark.parametrize(
    "read",
    [
        lambda path: list(read_stories(path, block_size=16)),  # the bad byte is several blocks in
        lambda path: list(story_tables([path], "train", block_size=16)),
        lambda path: list(story_tables([path], "train")),  # one block, every marker on its own line: the offsets cut
    ],
)
def test_invalid_utf8_names_file_and_absolute_byte_offset(tmp_path, read):
    good = "Lily ran.\n<|endoftext|>\n" * 10
    path = tmp_path / "bad.txt"
    path.write_bytes(good.encode() + b"Tom \xe9t\xe9\n")
    with pytest.raises(CorpusInputError) as error:
        read(path)
    message = str(error.value)
    assert str(path) in message and "invalid UTF-8" in message
    assert f"byte offset {len(good) + 4}" in message


def test_arrows_utf8_check_accepts_exactly_what_python_decodes():
    # story_tables checks a block that is not ASCII with Arrow's UTF-8 validation, and decodes it only to name the bad
    # byte: both must accept the same bytes. Every sequence of 1-3 bytes, and of 4 from a lead byte, over the bytes at
    # the edges of UTF-8's byte classes (overlong, surrogate and
    # past-U+10FFFF forms among them), alone and after ASCII.
    edges = [
        0x00,
        0x7F,
        0x80,
        0x8F,
        0x90,
        0x9F,
        0xA0,
        0xBF,
        0xC0,
        0xC1,
        0xC2,
        0xDF,
        0xE0,
        0xE1,
        0xEC,
        0xED,
        0xEE,
        0xEF,
        0xF0,
        0xF1,
        0xF3,
        0xF4,
        0xF5,
        0xFF,
    ]
    sequences = [bytes(s) for n in (1, 2, 3) for s in itertools.product(edges, repeat=n)]
    sequences += [
        bytes((lead, *s)) for lead in (0xE0, 0xED, 0xF0, 0xF1, 0xF4, 0xF5) for s in itertools.product(edges, repeat=3)
    ]

    def decodes(data: bytes) -> bool:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True

    for sequence in sequences:
        for data in (sequence, b"Lily" + sequence + b"x"):
            assert tinystories_text._is_utf8(data) == decodes(data), data


def test_truncated_utf8_at_end_of_file_is_an_error(tmp_path):
    path = tmp_path / "cut.txt"
    path.write_bytes("Lily said ☕".encode()[:-1])
    with pytest.raises(CorpusInputError, match="byte offset 10"):
        list(read_stories(path))


def test_empty_and_delimiter_only_files_give_no_batches(tmp_path):
    assert list(read_story_batches(write(tmp_path, "empty.txt", ""))) == []
    assert list(read_story_batches(write(tmp_path, "delims.txt", "<|endoftext|>\n\n<|endoftext|>\n"))) == []


def test_tinystories_builder_through_datasets_public_api(tmp_path):
    train = write(tmp_path, "train.txt", EDGE_TEXT)
    valid = write(tmp_path, "valid.txt", "Valid one.\n<|endoftext|>\nValid two.\n")
    builder = TinyStories(
        cache_dir=str(tmp_path / "cache"), data_files={"train": str(train), "validation": str(valid)}, block_size=7
    )
    streamed = builder.as_streaming_dataset()
    assert [row["text"] for row in streamed["train"]] == EDGE_STORIES
    assert [row["text"] for row in streamed["validation"]] == ["Valid one.", "Valid two."]
    builder.download_and_prepare()
    prepared = builder.as_dataset()
    assert prepared["train"]["text"][:] == EDGE_STORIES
    assert prepared["validation"].num_rows == 2


def test_tinystories_config_rejects_bad_block_size(tmp_path):
    with pytest.raises(CorpusInputError, match="block_size"):
        TinyStories(cache_dir=str(tmp_path), data_files={"train": str(write(tmp_path, "t.txt", "a"))}, block_size=0)


# --- CorpusShards -------------------------------------------------------------------------------


def rows_of(tmp_path, files, **config):
    builder = CorpusShards(cache_dir=str(tmp_path / "cache"), data_files={"input": [str(f) for f in files]}, **config)
    return [(row["text"], row["split"]) for row in builder.as_streaming_dataset(split="input")]


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def reference_split(text: str) -> str:
    """The Megatron release layout's split rule, written out independently of the code under test."""
    value = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], byteorder="big")
    return "validation" if value % 1000 == 0 else "train"


def test_split_column_from_jsonl_and_parquet_in_file_order(tmp_path):
    rows = [
        {"text": "a", "split": "train"},
        {"text": "b", "split": "val"},
        {"text": "c", "split": "validation"},
        {"text": "d", "split": "train"},
    ]
    jsonl = write_jsonl(tmp_path / "a.jsonl", rows)
    parquet = tmp_path / "b.parquet"
    pq.write_table(pa.Table.from_pylist(rows), parquet)
    expected = [("a", "train"), ("b", "validation"), ("c", "validation"), ("d", "train")]
    assert rows_of(tmp_path, [jsonl, parquet], split_column="split", batch_rows=3) == expected * 2


def test_all_train_makes_every_row_train_whatever_its_split_column(tmp_path):
    jsonl = write_jsonl(tmp_path / "a.jsonl", [{"text": "x", "split": "validation"}, {"text": "y"}])
    assert rows_of(tmp_path, [jsonl], split="all-train") == [("x", "train"), ("y", "train")]


def test_a_split_column_is_used_by_default_and_no_column_means_train(tmp_path):
    with_column = write_jsonl(
        tmp_path / "a.jsonl", [{"text": "x", "split": "validation"}, {"text": "y", "split": "train"}]
    )
    assert rows_of(tmp_path, [with_column]) == [("x", "validation"), ("y", "train")]
    without = write_jsonl(tmp_path / "b.jsonl", [{"text": "x"}, {"text": "y"}])
    assert rows_of(tmp_path, [without]) == [("x", "train"), ("y", "train")]


def test_split_map_maps_other_names_and_unmapped_names_are_refused(tmp_path):
    jsonl = write_jsonl(
        tmp_path / "a.jsonl",
        [{"text": "x", "split": "test"}, {"text": "y", "split": "dev"}, {"text": "z", "split": "train"}],
    )
    assert rows_of(tmp_path, [jsonl], split_map={"test": "validation", "dev": "train"}) == [
        ("x", "validation"),
        ("y", "train"),
        ("z", "train"),
    ]
    with pytest.raises(CorpusInputError, match=r"a\.jsonl: line 2: unknown split .*got 'dev'"):
        rows_of(tmp_path, [jsonl], split_map={"test": "validation"})


def test_val_per_mille_sets_the_sha256_rate(tmp_path):
    texts = [f"doc {i}" for i in range(2000)]
    jsonl = write_jsonl(tmp_path / "a.jsonl", [{"text": t} for t in texts])
    rows = rows_of(tmp_path, [jsonl], split="sha256", val_per_mille=100)
    expected = [
        "validation" if int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "big") % 1000 < 100 else "train"
        for t in texts
    ]
    assert [s for _, s in rows] == expected
    assert 100 < expected.count("validation") < 300


def test_sha256_rule_matches_reference_and_keeps_repeats(tmp_path):
    texts = [f"story number {i}" for i in range(3000)]
    validation = [t for t in texts if reference_split(t) == "validation"]
    assert validation, "the sample must hold validation documents for the test to mean anything"
    texts += validation * 2  # repeats: kept, and in the same split
    jsonl = write_jsonl(tmp_path / "a.jsonl", [{"body": t} for t in texts])
    rows = rows_of(tmp_path, [jsonl], text_column="body", split_rule="sha256")
    assert rows == [(t, reference_split(t)) for t in texts]
    assert all(sha256_split(t) == "validation" for t in validation)


def test_unknown_split_value_names_value_file_and_place(tmp_path):
    jsonl = write_jsonl(tmp_path / "a.jsonl", [{"text": "a", "split": "train"}, {"text": "b", "split": "test"}])
    with pytest.raises(CorpusInputError, match=r"a\.jsonl: line 2: unknown split .*got 'test'"):
        rows_of(tmp_path, [jsonl], split_column="split")
    parquet = tmp_path / "b.parquet"
    pq.write_table(pa.table({"text": ["a", "b", "c"], "split": ["train", "dev", None]}), parquet)
    with pytest.raises(CorpusInputError, match=r"b\.parquet: row 1: unknown split .*got 'dev'"):
        rows_of(tmp_path, [parquet], split_column="split")


@pytest.mark.parametrize(
    "row, message",
    [
        ({"content": "a"}, r"line 2: missing text column 'text'"),
        ({"text": 5}, r"line 2: text column 'text' must hold a string: expected string, got int"),
        ({"text": None}, r"line 2: text column 'text' must hold a string: expected string, got null"),
    ],
)
def test_bad_jsonl_text_names_file_and_line(tmp_path, row, message):
    jsonl = write_jsonl(tmp_path / "a.jsonl", [{"text": "fine"}, row])
    with pytest.raises(CorpusInputError, match=message):
        rows_of(tmp_path, [jsonl])


def test_bad_parquet_text_names_file_and_row(tmp_path):
    missing = tmp_path / "missing.parquet"
    pq.write_table(pa.table({"content": ["a"]}), missing)
    with pytest.raises(CorpusInputError, match=r"missing\.parquet: missing text column 'text'"):
        rows_of(tmp_path, [missing])
    numbers = tmp_path / "numbers.parquet"
    pq.write_table(pa.table({"text": [1, 2]}), numbers)
    with pytest.raises(
        CorpusInputError,
        match=r"numbers\.parquet: row 0: text column 'text' must hold strings: expected string, got int64",
    ):
        rows_of(tmp_path, [numbers])
    nulls = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"text": ["a", "b", None]}), nulls)
    with pytest.raises(CorpusInputError, match=r"nulls\.parquet: row 2: .*got null"):
        rows_of(tmp_path, [nulls], batch_rows=2)


def test_bad_jsonl_lines(tmp_path):
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"text": "a"}\n\n{"text": \n', encoding="utf-8")
    with pytest.raises(CorpusInputError, match=r"broken\.jsonl: line 3: not valid JSON"):
        rows_of(tmp_path, [broken])
    surrogate = tmp_path / "surrogate.jsonl"
    surrogate.write_text('{"text": "a\\ud800b"}\n', encoding="utf-8")
    with pytest.raises(CorpusInputError, match=r"line 1: text is not valid Unicode"):
        rows_of(tmp_path, [surrogate])
    bad_bytes = tmp_path / "bytes.jsonl"
    bad_bytes.write_bytes(b'{"text": "a"}\n{"text": "\xff"}\n')
    with pytest.raises(CorpusInputError, match=r"bytes\.jsonl: invalid UTF-8: .*byte offset 24 \(line 2\)"):
        rows_of(tmp_path, [bad_bytes])


def test_corpus_shards_config_rejects_column_and_rule_together(tmp_path):
    with pytest.raises(CorpusInputError, match="not both"):
        CorpusShards(
            cache_dir=str(tmp_path),
            data_files={"input": str(write_jsonl(tmp_path / "a.jsonl", []))},
            split_column="split",
            split_rule="sha256",
        )


def corrupt(path: Path, start: int, stop: int) -> Path:
    """Flip every bit of bytes ``start:stop`` (negative: from the end)."""
    data = bytearray(path.read_bytes())
    for i in range(start % len(data), stop % len(data)):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


def test_unreadable_parquet_names_the_file(tmp_path):
    not_parquet = write(tmp_path, "text.parquet", '{"text": "I am JSON"}\n')
    with pytest.raises(CorpusInputError, match=r"text\.parquet: not a readable Parquet file: .*magic bytes"):
        rows_of(tmp_path, [not_parquet])
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"text": [f"document {i} " * 20 for i in range(500)]}), good)
    footer = tmp_path / "footer.parquet"
    footer.write_bytes(good.read_bytes())
    corrupt(footer, -60, -20)  # inside the footer metadata, before its length and magic
    with pytest.raises(CorpusInputError, match=r"footer\.parquet: not a readable Parquet file"):
        rows_of(tmp_path, [footer])
    pages = tmp_path / "pages.parquet"
    pages.write_bytes(good.read_bytes())
    corrupt(pages, 8, 200)  # the first page header: the footer opens, reading the rows fails
    assert pq.ParquetFile(pages).metadata.num_rows == 500
    with pytest.raises(CorpusInputError, match=r"pages\.parquet: not a readable Parquet file"):
        rows_of(tmp_path, [pages])


@pytest.mark.parametrize("value", [["train"], {"name": "train"}, 1, None])
def test_a_split_value_that_is_not_a_string_names_file_and_line(tmp_path, value):
    jsonl = write_jsonl(tmp_path / "a.jsonl", [{"text": "a", "split": "train"}, {"text": "b", "split": value}])
    with pytest.raises(CorpusInputError, match=r"a\.jsonl: line 2: unknown split in column 'split'") as error:
        rows_of(tmp_path, [jsonl], split_column="split")
    assert error.value.got == repr(value)


def test_invalid_utf8_in_a_parquet_string_column_names_file_and_row(tmp_path):
    raw = [b"fine", b"also fine", "caf\u00e9".encode(), b"bad \xc3( here", b"after"]
    # Parquet writers and readers take string bytes as they are: view binary data as strings.
    texts = pa.array(raw, pa.binary()).view(pa.string())
    path = tmp_path / "latin.parquet"
    pq.write_table(pa.table({"text": texts}), path)
    with pytest.raises(
        CorpusInputError, match=r"latin\.parquet: row 3: text column 'text' is not valid UTF-8"
    ) as error:
        rows_of(tmp_path, [path], batch_rows=2)  # the bad row is in the second batch
    assert "\\xc3(" in error.value.got
    splits = tmp_path / "splits.parquet"
    pq.write_table(
        pa.table({"text": ["a", "b"], "split": pa.array([b"train", b"va\xffl"], pa.binary()).view(pa.string())}),
        splits,
    )
    with pytest.raises(CorpusInputError, match=r"splits\.parquet: row 1: split column 'split' is not valid UTF-8"):
        rows_of(tmp_path, [splits], split_column="split")
