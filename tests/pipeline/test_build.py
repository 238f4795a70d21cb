"""The build: encoding once, both formats, receipts, stats, COMPLETE.json; deterministic and conserving."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from release_fixtures import stories, write_corpus
from tokenizers import Tokenizer

from hf_tokbin.cli import main
from hf_tokbin.errors import BuildError, FormatError
from hf_tokbin.formats import llmc, megatron
from hf_tokbin.formats.release import Complete, Receipt
from hf_tokbin.pipeline import build, encode_part, plan_build, start_release
from hf_tokbin.tokenizer import resolve_tokenizer, train_bpe
from hf_tokbin.verify.release import verify_release


@pytest.fixture(scope="module")
def bpe_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bpe")
    train_bpe(stories(400, seed=1), 600, out)
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    return write_corpus(
        root,
        [
            ("train", stories(300, seed=2)),
            ("train", stories(250, seed=3)),
            ("validation", stories(120, seed=4)),
            ("train", []),
        ],
    )


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run_build(corpus, tokenizer, out, **options):
    plan = plan_build(corpus, tokenizer, out, **options)
    return build(plan, progress=False)


def corpus_texts(corpus: Path, split: str) -> list[str]:
    from hf_tokbin.corpus.source import iter_texts
    from hf_tokbin.formats.corpus_manifest import CorpusManifest

    return list(iter_texts(corpus, CorpusManifest.read(corpus), split))


def test_ids_equal_tokenizers_encode_for_every_document(tmp_path, corpus, bpe_dir):
    info = resolve_tokenizer(str(bpe_dir))
    run_build(corpus, info, tmp_path / "r", num_proc=2, batch_size=37)
    reference = Tokenizer.from_file(str(bpe_dir / "tokenizer.json"))
    for split, parts in (("train", [0, 1]), ("validation", [2])):
        texts = corpus_texts(corpus, split)
        docs = []
        for part in parts:
            pair = megatron.MegatronPair(tmp_path / "r" / "shards" / split / f"part-{part:06d}.bin")
            docs.extend(pair[i] for i in range(len(pair)))
        assert len(docs) == len(texts)
        for text, doc in zip(texts, docs):
            assert doc[-1] == info.doc_sep_id
            assert doc[:-1].tolist() == reference.encode(text, add_special_tokens=False).ids


def test_llmc_stream_is_separator_then_document_in_corpus_order(tmp_path, corpus, bpe_dir):
    info = resolve_tokenizer(str(bpe_dir))
    run_build(corpus, info, tmp_path / "r", formats=("llmc",), max_tokens_per_file=3000)
    reference = Tokenizer.from_file(str(bpe_dir / "tokenizer.json"))
    directory = tmp_path / "r" / "tokens" / bpe_dir.name / "toy"
    manifest = llmc.TokensManifest.read(directory / "_MANIFEST.json")
    train = [f for f in manifest.files if f.split == "train"]
    assert len(train) > 3, "the small limit must roll over"
    stream = np.concatenate([llmc.open_tokens(directory / f.name) for f in train])
    expected = []
    for text in corpus_texts(corpus, "train"):
        expected += [info.doc_sep_id, *reference.encode(text, add_special_tokens=False).ids]
    assert stream.tolist() == expected
    for f in train:
        tokens = llmc.open_tokens(directory / f.name)
        assert tokens[0] == info.doc_sep_id and f.n_tokens <= 3000
    # Megatron was not asked for: no shards.
    assert not (tmp_path / "r" / "shards").exists()


def test_same_bytes_whatever_num_proc_and_batch_size(tmp_path, corpus, bpe_dir):
    info = resolve_tokenizer(str(bpe_dir))
    run_build(corpus, info, tmp_path / "a", num_proc=1, batch_size=1000)
    run_build(corpus, info, tmp_path / "b", num_proc=2, batch_size=7)
    a, b = tree_bytes(tmp_path / "a"), tree_bytes(tmp_path / "b")
    assert a.keys() == b.keys() and a == b


def test_release_layout_receipts_and_complete(tmp_path, corpus, bpe_dir):
    info = resolve_tokenizer(str(bpe_dir))
    out = tmp_path / "r"
    run_build(corpus, info, out)
    files = set(tree_bytes(out))
    assert "shards/train/part-000000.bin" in files and "shards/validation/part-000002.idx" in files
    # The empty input shard has a receipt but no pair.
    assert not any(f.startswith("shards/") and "part-000003" in f for f in files)
    empty = Receipt.read(out / "receipts/part-000003.json")
    assert empty.files == () and empty.splits["train"].documents == 0
    complete = Complete.read(out)
    assert {f.path for f in complete.files} == files - {"COMPLETE.json"}
    receipt = Receipt.read(out / "receipts/part-000000.json")
    assert receipt.splits["train"].documents == 300 and receipt.splits["train"].eod_tokens == 300
    stats = json.loads((out / "stats.json").read_text())
    assert stats["splits"]["train"]["documents"] == 550 and stats["splits"]["validation"]["documents"] == 120
    config = json.loads((out / "run_config.json").read_text())
    assert config["tokenizer"]["sha256"] == info.sha256 and str(tmp_path) not in (out / "run_config.json").read_text()
    report = verify_release(out)
    assert report.splits["train"].documents == 550


def test_manifest_follows_the_shipped_schema(tmp_path, corpus, bpe_dir):
    import jsonschema

    run_build(corpus, resolve_tokenizer(str(bpe_dir)), tmp_path / "r", formats=("llmc",))
    schema = json.loads((Path(llmc.__file__).parent / "schemas" / "tokens-manifest.schema.json").read_text())
    manifest = json.loads((tmp_path / "r" / "tokens" / bpe_dir.name / "toy" / "_MANIFEST.json").read_text())
    jsonschema.validate(manifest, schema)
    assert list(manifest) == [
        "tokenizer_id",
        "tokenizer_sha256",
        "vocab_size",
        "doc_sep_id",
        "dataset",
        "version",
        "corpus_manifest_sha256",
        "files",
    ]


def test_byte_tokenizer_llmc_has_no_separator_and_megatron_needs_one(tmp_path, corpus):
    out = tmp_path / "r"
    run_build(corpus, resolve_tokenizer("byte"), out, formats=("llmc",))
    stream = llmc.open_tokens(out / "tokens/byte/toy/train-00000.bin")
    assert bytes(stream.astype(np.uint8)) == "".join(corpus_texts(corpus, "train")).encode("utf-8")
    with pytest.raises(BuildError, match="EOD"):
        plan_build(corpus, resolve_tokenizer("byte"), tmp_path / "m", formats=("megatron",))
    assert not (tmp_path / "m").exists()
    run_build(corpus, resolve_tokenizer("byte", doc_sep_id=0), tmp_path / "m", formats=("megatron",))
    assert verify_release(tmp_path / "m").splits["validation"].eod_tokens == 120


def test_changed_or_broken_shard_is_refused_before_it_is_encoded(tmp_path, bpe_dir):
    corpus = write_corpus(tmp_path / "c", [("train", ["one", "two"])])
    other = write_corpus(tmp_path / "o", [("train", ["one", "three"])])
    shard = corpus / "data/train-00000.parquet"
    shard.write_bytes((other / "data/train-00000.parquet").read_bytes())
    with pytest.raises(BuildError, match="differs from its _MANIFEST.json"):
        run_build(corpus, resolve_tokenizer(str(bpe_dir)), tmp_path / "r")
    assert not (tmp_path / "r" / "receipts").exists()
    shard.write_bytes(shard.read_bytes()[:-1] + b"\0")
    with pytest.raises(FormatError, match="not readable Parquet") as info:
        run_build(corpus, resolve_tokenizer(str(bpe_dir)), tmp_path / "r")
    assert str(shard) in str(info.value)


def test_rerun_of_a_finished_build_changes_nothing_and_another_build_is_refused(tmp_path, corpus, bpe_dir):
    info = resolve_tokenizer(str(bpe_dir))
    out = tmp_path / "r"
    run_build(corpus, info, out)
    before = tree_bytes(out)
    summary = run_build(corpus, info, out)
    assert summary.parts_built == 0 and tree_bytes(out) == before
    with pytest.raises(BuildError, match="different build"):
        run_build(corpus, info, out, formats=("llmc",))


def test_a_deleted_output_is_rebuilt_from_its_part(tmp_path, corpus, bpe_dir):
    info = resolve_tokenizer(str(bpe_dir))
    out = tmp_path / "r"
    plan = plan_build(corpus, info, out)
    # Simulate a build killed after two parts: run them, then break one output.
    start_release(plan)
    encode_part(plan, 0)
    encode_part(plan, 1)
    (out / "shards/train/part-000001.idx").write_bytes(b"broken")
    summary = build(plan, progress=False)
    assert summary.parts_built == 3 and summary.parts_skipped == 1
    run_build(corpus, info, tmp_path / "fresh")
    assert tree_bytes(out) == tree_bytes(tmp_path / "fresh")


def test_cli_build_prints_a_summary_and_verify_accepts_the_release(tmp_path, corpus, bpe_dir, capsys):
    out = tmp_path / "r"
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                str(bpe_dir),
                "--out",
                str(out),
                "--num-proc",
                "2",
                "--quiet",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "documents" in printed and "550" in printed and "bytes/token" in printed
    assert main(["verify", str(out)]) == 0
    assert "OK" in capsys.readouterr().out


def test_cli_build_error_is_one_line(tmp_path, corpus, capsys):
    code = main(
        ["build", "--corpus", str(corpus), "--tokenizer", "byte", "--format", "megatron", "--out", str(tmp_path / "r")]
    )
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1 and "EOD" in err


def test_llama3_variant_writes_upstream_layout_and_verifies(tmp_path, corpus, bpe_dir):

    out = tmp_path / "r"
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                str(bpe_dir),
                "--format",
                "llmc",
                "--llmc-variant",
                "llama3",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    directory = out / "tokens" / bpe_dir.name / "toy"
    seed000 = tmp_path / "s"
    run_build(corpus, resolve_tokenizer(str(bpe_dir)), seed000, formats=("llmc",))
    for entry in llmc.TokensManifest.read(directory / "_MANIFEST.json").files:
        ours = llmc.open_tokens(directory / entry.name)
        reference = llmc.open_tokens(seed000 / "tokens" / bpe_dir.name / "toy" / entry.name)
        assert ours.dtype == np.uint32 and ours.tolist() == reference.tolist()
    assert verify_release(out).splits["train"].documents == 550


def test_rerun_removes_what_a_build_killed_after_complete_json_left(tmp_path, corpus, bpe_dir):
    info = resolve_tokenizer(str(bpe_dir))
    out = tmp_path / "r"
    run_build(corpus, info, out)
    before = tree_bytes(out)
    # Killed between COMPLETE.json and the clean-up: the scratch folder stays, maybe a temporary too.
    (out / ".work" / "llmc").mkdir(parents=True)
    (out / ".work" / "llmc" / "part-000000.bin").write_bytes(b"staging")
    (out / "shards" / "train" / ".part-000000.bin.tmp").write_bytes(b"half")
    summary = run_build(corpus, info, out)
    assert summary.parts_built == 0 and tree_bytes(out) == before
    assert verify_release(out).splits["train"].documents == 550


@pytest.mark.parametrize("tokenizer_id", ["", "a/b", "a\\b", ".hidden", ".."])
def test_tokenizer_id_must_be_one_folder_name_before_any_work(tmp_path, corpus, tokenizer_id):
    info = dataclasses.replace(resolve_tokenizer("byte"), tokenizer_id=tokenizer_id)
    with pytest.raises(BuildError, match="--tokenizer-id"):
        plan_build(corpus, info, tmp_path / "r", formats=("llmc",))
    assert not (tmp_path / "r").exists()


def test_cli_build_with_the_tokenizer_in_the_working_folder(tmp_path, corpus, bpe_dir, monkeypatch):
    monkeypatch.chdir(bpe_dir)
    out = tmp_path / "r"
    assert (
        main(["build", "--corpus", str(corpus), "--tokenizer", ".", "--format", "llmc", "--out", str(out), "--quiet"])
        == 0
    )
    assert (out / "tokens" / bpe_dir.name / "toy" / "_MANIFEST.json").is_file()


@pytest.mark.parametrize("limit", [0, -5, llmc.MAX_TOKENS_PER_FILE + 1])
def test_max_tokens_per_file_out_of_range_is_refused_before_any_work(tmp_path, corpus, limit):
    with pytest.raises(BuildError, match="--max-tokens-per-file"):
        plan_build(corpus, resolve_tokenizer("byte"), tmp_path / "r", formats=("llmc",), max_tokens_per_file=limit)
    assert not (tmp_path / "r").exists()


def files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_document_longer_than_an_llmc_file_fails_its_part_before_the_receipt(tmp_path):
    corpus = write_corpus(tmp_path / "c", [("train", ["short", "x" * 50, "short"])])
    byte = resolve_tokenizer("byte", doc_sep_id=0)
    # 50 bytes + separator > 50
    plan = plan_build(corpus, byte, tmp_path / "r", formats=("llmc",), max_tokens_per_file=50)
    start_release(plan)
    with pytest.raises(BuildError, match="document 1 of this shard") as info:
        encode_part(plan, 0, progress=False)
    assert str(corpus / "data/train-00000.parquet") in str(info.value)
    assert files_under(tmp_path / "r") == ["run_config.json"]
    # One more token of room and the same document fits.
    run_build(corpus, byte, tmp_path / "ok", formats=("llmc",), max_tokens_per_file=51)
    assert verify_release(tmp_path / "ok").splits["train"].documents == 3


def test_part_that_loses_documents_leaves_nothing_under_a_final_name(tmp_path, corpus, monkeypatch):
    from hf_tokbin.pipeline import encode as build_module

    encode_shard = build_module.encode_shard

    def drop_last_document(*args, **kwargs):
        for flat, lengths, n_bytes in encode_shard(*args, **kwargs):
            yield flat[: flat.size - int(lengths[-1])], lengths[:-1], n_bytes

    monkeypatch.setattr(build_module, "encode_shard", drop_last_document)
    plan = plan_build(corpus, resolve_tokenizer("byte", doc_sep_id=0), tmp_path / "r")
    start_release(plan)
    with pytest.raises(BuildError, match="nothing lost"):
        encode_part(plan, 0, progress=False)
    assert files_under(tmp_path / "r") == ["run_config.json"]


def test_tokens_lost_on_disk_fail_the_part_and_leave_nothing(tmp_path, corpus, monkeypatch):
    # what a part calls (it checks the ids once, for every format)
    add_documents = megatron.MegatronWriter.add_checked_documents

    def lose_the_last_token_on_disk(self, flat_ids, lengths):
        add_documents(self, flat_ids, lengths)
        self._bin.flush()
        self._bin.truncate(self._bin.tell() - self.dtype.itemsize)
        self._bin.seek(0, 2)

    monkeypatch.setattr(megatron.MegatronWriter, "add_checked_documents", lose_the_last_token_on_disk)
    plan = plan_build(corpus, resolve_tokenizer("byte", doc_sep_id=0), tmp_path / "r")
    start_release(plan)
    with pytest.raises(BuildError, match="token conservation"):
        encode_part(plan, 0, progress=False)
    assert files_under(tmp_path / "r") == ["run_config.json"]


def test_the_plan_is_a_plain_record_and_the_encoder_is_built_once_per_process(tmp_path, corpus, bpe_dir, monkeypatch):
    import pickle

    from hf_tokbin.pipeline import encode

    plan = plan_build(corpus, resolve_tokenizer(str(bpe_dir)), tmp_path / "r")
    assert pickle.loads(pickle.dumps(plan)) == plan  # compared by value, every field: nothing live inside
    assert plan == plan_build(corpus, resolve_tokenizer(str(bpe_dir)), tmp_path / "r")
    assert all(field.compare for field in dataclasses.fields(plan)) and "encoder" not in vars(plan)
    built = []
    proven = encode._proven_encoder

    def counted(plan):
        built.append(plan.tokenizer.sha256)
        return proven(plan)

    monkeypatch.setattr(encode, "_proven_encoder", counted)
    summary = build(plan, progress=False)
    assert summary.parts_built == len(plan.corpus.shards) > 1
    assert built == [plan.tokenizer.sha256]  # once for the build's parts, in this process
