"""The corpus stage (hf_tokbin.corpus) and ``hf-tokbin corpus``: folders that load_dataset reads back exactly."""

from __future__ import annotations

import builtins
import errno
import hashlib
import importlib.util
import json
import os
import re
import threading
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from story_edges import EDGE_STORIES, EDGE_TEXT
from tinystories_reference import stories as reference_stories

from hf_tokbin.cli import main
from hf_tokbin.corpus import write as write_module
from hf_tokbin.corpus.write import ROW_GROUP_ROWS, import_corpus, write_tinystories_corpus
from hf_tokbin.engines.local import usable_cores
from hf_tokbin.errors import CorpusInputError
from hf_tokbin.formats.corpus_manifest import CorpusManifest

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parents[1] / "data"
SAMPLE = ROOT / "hf_tokbin" / "data" / "sample"


def load(directory: Path, tmp_path: Path) -> datasets.DatasetDict:
    return datasets.load_dataset(str(directory), cache_dir=str(tmp_path / "hf-cache"))


def files_of(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def leftovers(parent: Path) -> list[str]:
    """Temporary folders the stage may have left beside its output."""
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


def test_tinystories_corpus_loads_back_every_story_in_order(tmp_path):
    train = write(tmp_path / "train.txt", EDGE_TEXT)
    valid = DATA / "shakespeare_scenes.txt"
    manifest = write_tinystories_corpus(train, valid, tmp_path / "corpus", shard_rows=10)
    corpus = load(tmp_path / "corpus", tmp_path)
    assert corpus["train"]["text"][:] == EDGE_STORIES == list(reference_stories(train))
    assert corpus["validation"]["text"][:] == list(reference_stories(valid))
    assert set(corpus["train"]["split"]) == {"train"} and set(corpus["validation"]["split"]) == {"validation"}
    assert manifest == CorpusManifest.read(tmp_path / "corpus")
    assert manifest.split_rule == "files" and manifest.name == "tinystories"
    assert [s.path for s in manifest.sources] == ["train.txt", "shakespeare_scenes.txt"]
    assert manifest.sources[0].sha256 == hashlib.sha256(train.read_bytes()).hexdigest()
    # Train shards first, then validation: the order of the build's input shards.
    assert [s.path for s in manifest.shards] == ["data/train-00000.parquet"] + [
        f"data/validation-{i:05d}.parquet" for i in range(5)
    ]
    assert [s.rows for s in manifest.shards] == [4, 10, 10, 10, 10, 6]
    for shard in manifest.shards:
        data = (tmp_path / "corpus" / shard.path).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (shard.size, shard.sha256)
        assert set(pq.read_table(tmp_path / "corpus" / shard.path).column("split").to_pylist()) == {shard.split}
    assert leftovers(tmp_path) == []


def test_crlf_input_writes_the_same_shards_as_lf_input(tmp_path):
    lf = DATA / "shakespeare_scenes.txt"
    crlf = write(tmp_path / "crlf.txt", lf.read_text(encoding="utf-8").replace("\n", "\r\n"))
    a = write_tinystories_corpus(lf, None, tmp_path / "lf")
    b = write_tinystories_corpus(crlf, None, tmp_path / "crlf")
    assert a.sources != b.sources
    assert a.shards == b.shards  # same paths, rows, sizes and SHA-256


def test_same_input_gives_byte_identical_folders(tmp_path):
    train, valid = SAMPLE / "train.txt", SAMPLE / "valid.txt"
    write_tinystories_corpus(train, valid, tmp_path / "one", shard_bytes=50_000)
    write_tinystories_corpus(train, valid, tmp_path / "two", shard_bytes=50_000)
    one, two = files_of(tmp_path / "one"), files_of(tmp_path / "two")
    assert len(one) == len([p for p in one if p.startswith("data/")]) + 2  # shards + manifest + card
    assert one == two
    assert str(tmp_path).encode() not in b"".join(one.values())  # no absolute paths anywhere


def shard_texts(directory: Path, manifest: CorpusManifest) -> list[list[str]]:
    return [pq.read_table(directory / s.path).column("text").to_pylist() for s in manifest.shards]


def test_shard_bytes_bound_the_text_per_shard(tmp_path):
    limit = 20_000
    stories = [f"Story {i}: " + "Tom ran. " * (i % 40) for i in range(2000)]
    stories.insert(1000, "x" * (limit + 1))  # bigger than the limit: a shard of its own
    train = write(tmp_path / "train.txt", "".join(s + "\n<|endoftext|>\n" for s in stories))
    manifest = write_tinystories_corpus(train, None, tmp_path / "corpus", shard_bytes=limit)
    shards = shard_texts(tmp_path / "corpus", manifest)
    assert [t for shard in shards for t in shard] == stories
    assert [len(shard) for shard in shards].count(1) == 1 and ["x" * (limit + 1)] in shards
    sizes = [sum(len(t.encode()) for t in shard) for shard in shards]
    assert all(size <= limit for size, shard in zip(sizes, shards, strict=True) if len(shard) > 1)
    # A shard closes only when the next story would not fit.
    assert all(size + len(nxt[0].encode()) > limit for size, nxt in zip(sizes[:-1], shards[1:], strict=True))
    assert [s.path for s in manifest.shards] == [f"data/train-{i:05d}.parquet" for i in range(len(shards))]


def test_row_groups_are_counted_from_each_shard_start(tmp_path):
    train = write(tmp_path / "train.txt", "".join(f"{i}\n<|endoftext|>\n" for i in range(30_000)))
    manifest = write_tinystories_corpus(train, None, tmp_path / "corpus", shard_rows=25_000)
    groups = []
    for shard in manifest.shards:
        metadata = pq.ParquetFile(tmp_path / "corpus" / shard.path).metadata
        groups.append([metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)])
    assert ROW_GROUP_ROWS == 10_000 and groups == [[10_000, 10_000, 5_000], [5_000]]


def test_a_write_failing_on_a_shards_thread_stops_the_run_and_leaves_nothing(tmp_path, monkeypatch):
    # Each shard is compressed and written on a thread of its
    # own: its error must end the run, as on the caller's thread.
    train = write(tmp_path / "train.txt", "".join(f"story {i}\n<|endoftext|>\n" for i in range(300_000)))
    written, write_group = [], write_module._ShardOnThread._write_group
    lock = threading.Lock()

    def disk_full_in_the_second_shard(self, group, split):
        with lock:  # the shards' threads run at once: their calls interleave in any order
            written.append(self.rel)
            full = self.rel == "data/train-00001.parquet" and written.count(self.rel) == 2
        if full:
            raise OSError(errno.ENOSPC, "No space left on device", str(self.root / self.rel))
        write_group(self, group, split)

    monkeypatch.setattr(write_module._ShardOnThread, "_write_group", disk_full_in_the_second_shard)
    with pytest.raises(OSError, match="No space left on device"):
        write_tinystories_corpus(train, None, tmp_path / "corpus", shard_rows=20_000)
    assert written.count("data/train-00001.parquet") == 2
    # Stopped at a hand-over after the failure, not after the whole
    # input (30 row groups): how soon depends on the threads' order.
    assert len(written) < 30
    assert not (tmp_path / "corpus").exists() and leftovers(tmp_path) == []
    assert not [t for t in threading.enumerate() if t.name.startswith("hf_tokbin-parquet")]  # no writer left behind


def test_the_row_groups_waiting_for_the_writers_are_bounded(tmp_path, monkeypatch):
    train = write(tmp_path / "train.txt", "".join(f"story {i}\n<|endoftext|>\n" for i in range(150_000)))
    waiting, peak, largest, submit = [0], [0], [0], write_module._ShardOnThread._submit
    lock, filled = threading.Lock(), threading.Event()
    budget = 300_000  # bytes: a few of this corpus's row groups (about 110 KB each)

    def counted_submit(self, work, size=0):
        def counted_work():
            # writers hold until the reader has queued half the budget: then slower than it, every time
            filled.wait(60)
            try:
                return work()
            finally:
                with lock:
                    waiting[0] -= size

        with lock:  # counted before the task can finish
            waiting[0] += size
            largest[0] = max(largest[0], size)
        submit(self, counted_work, size)
        with lock:
            peak[0] = max(peak[0], waiting[0])
            if waiting[0] >= budget // 2:
                filled.set()

    monkeypatch.setattr(write_module._ShardOnThread, "_submit", counted_submit)
    monkeypatch.setattr(write_module, "queued_bytes_budget", lambda limit: budget)
    manifest = write_tinystories_corpus(train, None, tmp_path / "corpus", shard_rows=30_000)
    assert manifest.rows("train") == 150_000 and len(manifest.shards) == 5
    # Every row group holds its bytes until written: at most the budget over every shard, plus the one counted while it
    # waits; the queue does fill (the writers are slower), so the bound is what held it.
    assert budget // 2 <= peak[0] <= budget + largest[0]


def test_the_shards_open_at_once_are_bounded_however_small_they_are(tmp_path, monkeypatch):
    """A shard holds a thread and an open file until it is sealed. Tiny shards (10 rows: a few hundred bytes, nothing
    against the byte budget) whose seal waits on a slow disk were opened one after the other without a bound: on a
    0.2 s fsync, 2,000 of them held 170 threads and files at once, and ulimit -n 128 ended the import with "Too many
    open files". At most one shard per core sealing, and one filling per split, are open at once."""
    train = write(tmp_path / "train.txt", "".join(f"story {i}\n<|endoftext|>\n" for i in range(400)))
    bound = usable_cores() + 2  # a shard per core, and one filling per split (train, validation)
    open_now, peak, released = [0], [0], threading.Event()
    lock = threading.Lock()
    init, seal = write_module._ShardOnThread.__init__, write_module._ShardOnThread._close_and_seal

    def counted_init(self, *args):
        init(self, *args)
        with lock:
            open_now[0] += 1
            peak[0] = max(peak[0], open_now[0])
            if open_now[0] > bound + 2:
                released.set()  # not bounded: no need to wait any longer, the assertion below fails

    def slow_seal(self, split, rows):
        if not released.wait(1):  # a slow disk: the first seals wait (the bound holds the reader meanwhile), then none
            released.set()
        try:
            return seal(self, split, rows)
        finally:
            with lock:
                open_now[0] -= 1

    monkeypatch.setattr(write_module._ShardOnThread, "__init__", counted_init)
    monkeypatch.setattr(write_module._ShardOnThread, "_close_and_seal", slow_seal)
    manifest = write_tinystories_corpus(train, None, tmp_path / "corpus", shard_rows=10)
    assert manifest.rows("train") == 400 and len(manifest.shards) == 40
    assert peak[0] <= bound, peak[0]
    assert write_module.shards_at_once(cores=bound - 2) == bound and write_module.shards_at_once(cores=1) == 3


def test_the_queued_bytes_budget_is_a_shard_per_core_within_fixed_bounds():
    budget = write_module.queued_bytes_budget
    limit = write_module.ShardLimit.of(shard_bytes=100 << 20)
    assert budget(limit, cores=1) == write_module.QUEUED_BYTES_MIN  # no second core to compress a second shard
    assert budget(limit, cores=3) == 200 << 20
    assert budget(limit, cores=64) == write_module.QUEUED_BYTES_MAX  # flat: never more, whatever the machine
    # or the shard size
    assert budget(write_module.ShardLimit.of(shard_bytes=1 << 40), cores=2) == write_module.QUEUED_BYTES_MAX
    assert budget(write_module.ShardLimit.of(shard_rows=10), cores=2) == write_module.DEFAULT_SHARD_BYTES


def test_a_row_group_larger_than_the_whole_budget_goes_alone():
    slots = write_module._WriterSlots(100, shards=3)
    slots.acquire(1_000)  # nothing held: it goes
    done = threading.Event()
    threading.Thread(target=lambda: (slots.acquire(1), done.set()), daemon=True).start()
    assert not done.wait(0.2)  # a second one waits for the first
    slots.release(1_000, _finished())
    assert done.wait(30)


def _finished():
    from concurrent.futures import Future

    task = Future()
    task.set_result(None)
    return task


def test_each_input_is_read_once_and_its_digest_is_of_the_bytes_read(tmp_path, monkeypatch):
    # The manifest's SHA-256 of an input is of the very bytes the
    # stories were cut from: no second read that could see other bytes.
    train = write(tmp_path / "train.txt", "".join(f"story {i}\n<|endoftext|>\n" for i in range(5000)))
    valid = write(tmp_path / "valid.txt", "One.\n<|endoftext|>\nTwo.\n")
    opened, real_open = [], builtins.open

    def counting_open(file, *args, **kwargs):
        if os.fspath(file) in (os.fspath(train), os.fspath(valid)):
            opened.append(Path(file).name)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    manifest = write_tinystories_corpus(train, valid, tmp_path / "corpus", shard_rows=1000)
    assert sorted(opened) == ["train.txt", "valid.txt"]
    assert [(s.path, s.size, s.sha256) for s in manifest.sources] == [
        (path.name, path.stat().st_size, hashlib.sha256(path.read_bytes()).hexdigest()) for path in (train, valid)
    ]


def test_split_without_documents_is_left_out_and_load_dataset_still_works(tmp_path):
    train = write(tmp_path / "train.txt", "One.\n<|endoftext|>\nTwo.\n")
    valid = write(tmp_path / "valid.txt", "<|endoftext|>\n\n<|endoftext|>\n")
    manifest = write_tinystories_corpus(train, valid, tmp_path / "corpus")
    assert [s.split for s in manifest.shards] == ["train"]
    assert manifest.rows("validation") == 0
    corpus = load(tmp_path / "corpus", tmp_path)
    assert list(corpus) == ["train"] and corpus["train"]["text"][:] == ["One.", "Two."]
    card = (tmp_path / "corpus" / "README.md").read_text()
    assert "split: train" in card and "split: validation" not in card and "data/validation-" not in card


def test_no_stories_at_all_is_an_error_and_leaves_nothing(tmp_path):
    empty = write(tmp_path / "empty.txt", "\n<|endoftext|>\n\n")
    with pytest.raises(CorpusInputError, match=r"empty\.txt: no documents in the input"):
        write_tinystories_corpus(empty, None, tmp_path / "corpus")
    assert not (tmp_path / "corpus").exists() and leftovers(tmp_path) == []


def test_invalid_utf8_in_validation_file_fails_after_train_and_leaves_nothing(tmp_path):
    bad = tmp_path / "valid.txt"
    bad.write_bytes(b"Fine.\n<|endoftext|>\nBad \xc3(\n")
    with pytest.raises(CorpusInputError, match=r"valid\.txt: invalid UTF-8: .*byte offset 24"):
        write_tinystories_corpus(SAMPLE / "train.txt", bad, tmp_path / "corpus")
    assert not (tmp_path / "corpus").exists() and leftovers(tmp_path) == []


def test_output_folder_rules(tmp_path):
    train = write(tmp_path / "train.txt", "One.\n")
    out = tmp_path / "out"
    out.mkdir()
    write_tinystories_corpus(train, None, out)  # an empty folder is fine
    with pytest.raises(CorpusInputError, match="not empty.*--overwrite"):
        write_tinystories_corpus(train, None, out)
    write(train, "Two.\n")
    manifest = write_tinystories_corpus(train, None, out, overwrite=True)  # a corpus folder is replaced
    assert load(out, tmp_path)["train"]["text"][:] == ["Two."] and manifest.rows("train") == 1
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(CorpusInputError, match="replaces only a corpus folder"):
        write_tinystories_corpus(train, None, other, overwrite=True)
    assert (other / "notes.txt").read_text() == "mine"
    assert leftovers(tmp_path) == []


def test_missing_input_and_bad_options(tmp_path):
    with pytest.raises(CorpusInputError, match=r"nope\.txt: input file is missing"):
        write_tinystories_corpus(tmp_path / "nope.txt", None, tmp_path / "corpus")
    train = write(tmp_path / "train.txt", "One.\n")
    with pytest.raises(CorpusInputError, match="not both"):
        write_tinystories_corpus(train, None, tmp_path / "corpus", shard_rows=1, shard_bytes=1)
    with pytest.raises(CorpusInputError, match="positive integer"):
        write_tinystories_corpus(train, None, tmp_path / "corpus", shard_rows=0)
    with pytest.raises(CorpusInputError, match="corpus name"):
        write_tinystories_corpus(train, None, tmp_path / "corpus", name="a/b")
    assert not (tmp_path / "corpus").exists()


# --- import ------------------------------------------------------------------------------------


def reference_split(text: str) -> str:
    value = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], byteorder="big")
    return "validation" if value % 1000 == 0 else "train"


def write_inputs(tmp_path: Path, rows: list[dict]) -> Path:
    """The rows split over a folder: a JSONL file, a nested Parquet file, and files that must be skipped."""
    folder = tmp_path / "inputs"
    (folder / "b").mkdir(parents=True)
    half = len(rows) // 2
    (folder / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:half]), encoding="utf-8")
    pq.write_table(pa.Table.from_pylist(rows[half:]), folder / "b" / "part.parquet")
    (folder / "_MANIFEST.json").write_text("{}")
    (folder / ".hidden.jsonl").write_text("not json")
    return folder


def test_import_with_split_column_loads_back_by_split(tmp_path):
    rows = [
        {"text": f"doc {i} " + "é" * (i % 3), "split": ["train", "val", "validation", "train"][i % 4]}
        for i in range(40)
    ]
    manifest = import_corpus([write_inputs(tmp_path, rows)], tmp_path / "corpus", split_column="split", shard_rows=7)
    corpus = load(tmp_path / "corpus", tmp_path)
    assert corpus["train"]["text"][:] == [r["text"] for r in rows if r["split"] == "train"]
    assert corpus["validation"]["text"][:] == [r["text"] for r in rows if r["split"] != "train"]
    assert manifest.split_rule == "column" and manifest.name == "corpus"
    assert [s.path for s in manifest.sources] == ["inputs/a.jsonl", "inputs/b/part.parquet"]


def test_import_source_names_are_relative_to_the_given_folder(tmp_path):
    rows = [{"text": f"doc {i}"} for i in range(4)]
    folder = write_inputs(tmp_path, rows)
    manifest = import_corpus([folder / "b" / ".."], tmp_path / "corpus")  # a folder given by a ".." path
    assert [s.path for s in manifest.sources] == ["inputs/a.jsonl", "inputs/b/part.parquet"]
    assert manifest.rows("train") == 4


def test_import_with_sha256_rule_loads_back_by_split(tmp_path):
    texts = [f"A story about Lily, number {i}." for i in range(2500)]
    assert any(reference_split(t) == "validation" for t in texts)
    texts.append(next(t for t in texts if reference_split(t) == "validation"))  # a repeat: kept, same split
    manifest = import_corpus(
        [write_inputs(tmp_path, [{"text": t} for t in texts])], tmp_path / "corpus", split_rule="sha256", name="lily"
    )
    corpus = load(tmp_path / "corpus", tmp_path)
    assert corpus["train"]["text"][:] == [t for t in texts if reference_split(t) == "train"]
    assert corpus["validation"]["text"][:] == [t for t in texts if reference_split(t) == "validation"]
    assert manifest.split_rule == "sha256" and manifest.name == "lily"


def test_import_uses_the_split_column_by_default_all_train_ignores_it_and_round_trips_a_corpus(tmp_path):
    write_tinystories_corpus(SAMPLE / "train.txt", SAMPLE / "valid.txt", tmp_path / "tiny", shard_bytes=60_000)
    again = import_corpus([tmp_path / "tiny"], tmp_path / "again", shard_bytes=60_000, name="tinystories")
    assert again.split_rule == "column"
    assert again.shards == CorpusManifest.read(tmp_path / "tiny").shards  # a corpus folder imports to itself
    flat = import_corpus([tmp_path / "tiny"], tmp_path / "flat", split="all-train")
    assert flat.split_rule == "all-train" and flat.rows("validation") == 0
    assert flat.rows("train") == again.rows("train") + again.rows("validation")


def test_import_only_validation_rows_loads_only_validation(tmp_path):
    source = tmp_path / "v.jsonl"
    source.write_text('{"text": "a", "split": "val"}\n{"text": "b", "split": "val"}\n', encoding="utf-8")
    import_corpus([source], tmp_path / "corpus", split_column="split")
    corpus = load(tmp_path / "corpus", tmp_path)
    assert list(corpus) == ["validation"] and corpus["validation"]["text"][:] == ["a", "b"]


def test_import_errors_leave_nothing(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "a", "split": "train"}\n{"text": "b", "split": "test"}\n', encoding="utf-8")
    with pytest.raises(CorpusInputError, match=r"bad\.jsonl: line 2: unknown split"):
        import_corpus([bad], tmp_path / "corpus", split_column="split")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CorpusInputError, match="folder holds no input files"):
        import_corpus([empty], tmp_path / "corpus")
    with pytest.raises(CorpusInputError, match="unknown input file type"):
        import_corpus([write(tmp_path / "x.csv", "text\na\n")], tmp_path / "corpus")
    assert not (tmp_path / "corpus").exists() and leftovers(tmp_path) == []


# --- command line ---------------------------------------------------------------------------------


def test_cli_tinystories_and_import(tmp_path, capsys):
    out = tmp_path / "corpus"
    assert (
        main(
            [
                "corpus",
                "tinystories",
                str(SAMPLE / "train.txt"),
                str(SAMPLE / "valid.txt"),
                "--out",
                str(out),
                "--shard-rows",
                "100",
            ]
        )
        == 0
    )
    summary = capsys.readouterr().err
    manifest = CorpusManifest.read(out)
    assert (
        f"train: {manifest.rows('train'):,} stories in "
        f"{len([s for s in manifest.shards if s.split == 'train'])} shards"
        in summary
    )
    # the rate in the units that fit (tests/cli/test_corpus_summary.py)
    assert re.search(r"^read .* \([\d.]+[kMG]?B/s\) -> ", summary, re.M)
    assert (
        main(
            [
                "corpus",
                "import",
                str(out),
                "--out",
                str(tmp_path / "again"),
                "--split-column",
                "split",
                "--shard-rows",
                "100",
                "--name",
                "tinystories",
            ]
        )
        == 0
    )
    assert CorpusManifest.read(tmp_path / "again").shards == manifest.shards


def test_cli_error_is_one_line_exit_1(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok\n\xff\n")
    assert main(["corpus", "tinystories", str(bad), "--out", str(tmp_path / "corpus")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "bad.txt: invalid UTF-8" in err and "byte offset 3" in err


def test_cli_rejects_column_and_rule_together(tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                "corpus",
                "import",
                "x.jsonl",
                "--out",
                str(tmp_path / "c"),
                "--split-column",
                "split",
                "--split-rule",
                "sha256",
            ]
        )
    assert exit_info.value.code == 2


# --- the shipped sample and its generator ------------------------------------------------------------


def test_sample_files_are_the_generators_output(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "make_tinystories_like", ROOT / "scripts" / "make_tinystories_like.py"
    )
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    generator.write_file(tmp_path / "train.txt", 0.2, seed=0)
    generator.write_file(tmp_path / "valid.txt", 0.04, seed=1, truncate_first=True)
    assert (tmp_path / "train.txt").read_bytes() == (SAMPLE / "train.txt").read_bytes()
    assert (tmp_path / "valid.txt").read_bytes() == (SAMPLE / "valid.txt").read_bytes()
    size = sum((SAMPLE / name).stat().st_size for name in ("train.txt", "valid.txt"))
    assert 150_000 <= size <= 300_000
    valid = (SAMPLE / "valid.txt").read_text(encoding="utf-8")
    # truncated first story, blank lines
    assert not valid.startswith(("Once", "One day")) and "\n<|endoftext|>\n\n" in valid


# --- the same input twice ------------------------------------------------------------------------


def test_the_same_file_as_train_and_validation_is_refused(tmp_path):
    stories = write(tmp_path / "v.txt", "One.\n<|endoftext|>\nTwo.\n")
    with pytest.raises(CorpusInputError, match=r"v\.txt: the same input file is given twice"):
        write_tinystories_corpus(stories, stories, tmp_path / "corpus")
    (tmp_path / "link.txt").symlink_to(stories)  # another name, the same file
    with pytest.raises(CorpusInputError, match=r"link\.txt: the same input file is given twice"):
        write_tinystories_corpus(stories, tmp_path / "link.txt", tmp_path / "corpus")
    assert not (tmp_path / "corpus").exists() and leftovers(tmp_path) == []


def test_import_refuses_a_file_given_twice_directly_or_through_its_folder(tmp_path):
    folder = tmp_path / "a"
    folder.mkdir()
    source = folder / "x.jsonl"
    source.write_text('{"text": "only once"}\n', encoding="utf-8")
    for inputs in ([source, source], [folder, source]):
        with pytest.raises(CorpusInputError, match=r"x\.jsonl: the same input file is given twice"):
            import_corpus(inputs, tmp_path / "corpus")
    assert not (tmp_path / "corpus").exists()


def test_import_refuses_two_files_with_the_same_source_name_and_takes_their_folder(tmp_path):
    for name in ("a", "b"):
        (tmp_path / "in" / name).mkdir(parents=True)
        (tmp_path / "in" / name / "x.jsonl").write_text(json.dumps({"text": f"from {name}"}) + "\n", encoding="utf-8")
    with pytest.raises(
        CorpusInputError,
        match=r"b/x\.jsonl: two input files would have the same source name.*'x\.jsonl'.*common parent folder",
    ):
        import_corpus([tmp_path / "in" / "a" / "x.jsonl", tmp_path / "in" / "b" / "x.jsonl"], tmp_path / "corpus")
    manifest = import_corpus([tmp_path / "in"], tmp_path / "corpus")
    assert [s.path for s in manifest.sources] == ["in/a/x.jsonl", "in/b/x.jsonl"]
    assert load(tmp_path / "corpus", tmp_path)["train"]["text"][:] == ["from a", "from b"]


def test_cli_unreadable_parquet_is_one_line_naming_the_file(tmp_path, capsys):
    fake = write(tmp_path / "fake.parquet", "PAR1 but not really\n")
    assert main(["corpus", "import", str(fake), "--out", str(tmp_path / "corpus")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{fake}: not a readable Parquet file" in err
    assert leftovers(tmp_path) == []
