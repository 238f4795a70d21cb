"""verify on a mixture release: the schedule, the sources and the shares recomputed; ``show`` and ``info`` on one.

Three corpora (``tests/mixture_fixtures.py``) mixed en=0.5, fr=0.3, code=0.2, once with both formats (several llm.c
train files) and once with llm.c alone. Each edit is resealed (COMPLETE.json, the llm.c manifest's digests) so
only the rule under test is broken.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from mixture_fixtures import SEPARATOR, llmc_documents, write_mixture_corpora
from release_edits import edit_json, refused, reseal_complete

import hf_tokbin
from hf_tokbin._io import sha256_file
from hf_tokbin.cli import main
from hf_tokbin.formats import llmc
from hf_tokbin.formats.release import Complete
from hf_tokbin.verify.release import verify_release, verify_release_records

MIX = "en=0.5,fr=0.3,code=0.2"
TOKENS = 130_000
FILE_TOKENS = 40_000  # the train stream (about 130,000 tokens) in four files
LLMC_DIR = Path("tokens/byte/en-fr-code")


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    return write_mixture_corpora(tmp_path_factory.mktemp("corpora"))


def build(corpora, out: Path, **options) -> Path:
    spec = hf_tokbin.MixtureSpec.parse(MIX, TOKENS, 2)
    hf_tokbin.build_release(
        [str(c) for c in corpora], "byte", out, doc_sep=SEPARATOR, mix=spec, progress=False,
        max_tokens_per_file=FILE_TOKENS, **options,
    )
    return out


@pytest.fixture(scope="module")
def both(corpora, tmp_path_factory):
    return build(corpora, tmp_path_factory.mktemp("both") / "release")


@pytest.fixture(scope="module")
def llmc_only(corpora, tmp_path_factory):
    return build(corpora, tmp_path_factory.mktemp("llmc") / "release", formats=("llmc",))


def copy_of(release: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(release, tmp_path / "release"))


def rewrite_llmc(release: Path, name: str, change) -> None:
    """Give llm.c file ``name`` the documents ``change(documents)`` returns (each with its separator before), and
    reseal its manifest entry and COMPLETE.json."""
    path = release / LLMC_DIR / name
    header = llmc.read_header(path)
    ids = np.asarray(llmc.open_tokens(path)).copy()
    starts = np.flatnonzero(ids == SEPARATOR)
    documents = change([ids[a:b] for a, b in zip(starts, [*starts[1:], ids.size])])
    new = np.concatenate(documents).astype(header.dtype)
    path.write_bytes(llmc.encode_header(new.size, 256, header.layout) + new.tobytes())
    manifest = llmc.TokensManifest.read(release / LLMC_DIR / llmc.MANIFEST_NAME)
    files = tuple(
        replace(f, n_tokens=int(new.size), n_docs=len(documents), sha256=sha256_file(path)) if f.name == name else f
        for f in manifest.files
    )
    replace(manifest, files=files).write(release / LLMC_DIR)
    reseal_complete(release)


def test_both_formats_verify_clean(both):
    assert len(list((both / LLMC_DIR).glob("train-*.bin"))) >= 3
    report = verify_release(both)
    assert report.formats == ("llmc", "megatron") and not report.warnings


def test_llmc_only_verifies_clean(llmc_only):
    report = verify_release(llmc_only)
    assert report.formats == ("llmc",) and not report.warnings


def test_documents_swapped_in_a_train_file_break_the_schedule(both, tmp_path):
    release = copy_of(both, tmp_path)

    def swap(documents):
        k = next(i for i in range(len(documents) - 1) if not np.array_equal(documents[i], documents[i + 1]))
        documents[k], documents[k + 1] = documents[k + 1], documents[k]
        return documents

    rewrite_llmc(release, "train-00001.bin", swap)
    refused(release, "train-00001.bin", "the Megatron documents in the mixture's schedule")


def test_a_document_dropped_from_a_train_file_breaks_the_schedule(both, tmp_path):
    release = copy_of(both, tmp_path)
    rewrite_llmc(release, "train-00002.bin", lambda documents: documents[:-1])
    refused(release, "_MANIFEST.json", "train: a mixture's llm.c (documents, tokens) must be the schedule")


def test_a_document_dropped_without_pairs_breaks_the_stats_sums(llmc_only, tmp_path):
    release = copy_of(llmc_only, tmp_path)
    rewrite_llmc(release, "train-00000.bin", lambda documents: documents[1:])
    refused(release, "_MANIFEST.json", "the sums of stats.json's mixture.sources.*.llmc")


def test_a_changed_mix_weight_breaks_the_schedule(both, tmp_path):
    release = copy_of(both, tmp_path)
    edit_json(release / "run_config.json", lambda c: c["mix"]["sources"][0].update(weight=0.6))
    reseal_complete(release)
    refused(release, "train: a mixture's llm.c (documents, tokens) must be the schedule run_config.json's mix")


def test_a_changed_mix_weight_without_pairs_breaks_the_targets(llmc_only, tmp_path):
    release = copy_of(llmc_only, tmp_path)
    edit_json(release / "run_config.json", lambda c: c["mix"]["sources"][0].update(weight=0.6))
    reseal_complete(release)
    refused(release, "stats.json", "mixture.sources.en.target_share differs")


@pytest.mark.parametrize("field", ["target_share", "share"])
def test_changed_shares_in_stats_are_named(both, tmp_path, field):
    release = copy_of(both, tmp_path)

    def change(stats):
        source = stats["mixture"]["sources"]["fr"]
        (source if field == "target_share" else source["llmc"])[field] = 0.25

    edit_json(release / "stats.json", change)
    reseal_complete(release)
    where = "fr.target_share" if field == "target_share" else "fr.llmc.share"
    refused(release, "stats.json", f"mixture.sources.{where} differs")


def test_a_receipt_naming_another_source_is_refused(both, tmp_path):
    release = copy_of(both, tmp_path)
    edit_json(release / "receipts/part-000000.json", lambda r: r.update(sources={"fr": r["sources"]["en"]}))
    reseal_complete(release)
    refused(release, "part-000000.json", "counts its documents under one source", "['en']")


@pytest.mark.parametrize("split", ["train", "validation"])
def test_a_preview_row_naming_another_source_is_refused(both, tmp_path, split):
    import pyarrow as pa
    import pyarrow.parquet as pq

    release = copy_of(both, tmp_path)
    path = release / "preview" / f"{split}.parquet"
    table = pq.read_table(path)
    rows = table.to_pydict()
    rows["source"][1] = "fr" if rows["source"][1] != "fr" else "en"
    pq.write_table(pa.table(rows, schema=table.schema), path)
    reseal_complete(release)
    refused(release, f"{split}.parquet", "row 1: source must be the source its part's receipt counts")


def test_show_reads_the_train_split_in_its_llmc_files(both):
    documents = llmc_documents(both / LLMC_DIR)
    shown = hf_tokbin.show(both, doc=5)
    assert shown.format == "llmc"
    assert shown.documents()[5].encode() == bytes(documents[5].astype("uint8"))
    with pytest.raises(hf_tokbin.TokbinError, match="a mixture's train documents are numbered in its llm.c"):
        hf_tokbin.show(both, doc=5, format="megatron")


def test_show_numbers_validation_alike_in_both_formats(both):
    for doc in (0, 7, 100):
        texts = {f: hf_tokbin.show(both, "validation", doc=doc, format=f).documents() for f in ("llmc", "megatron")}
        assert texts["llmc"] == texts["megatron"] and texts["llmc"][doc]


def test_show_and_info_on_the_command_line(both, capsys):
    assert main(["info", str(both)]) == 0
    assert "en-fr-code" in capsys.readouterr().out
    assert main(["show", str(both), "--doc", "3"]) == 0
    assert "train, llmc tokens" in capsys.readouterr().out
    assert main(["show", str(both), "--doc", "3", "--format", "megatron"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "HINT: --format llmc" in err and "Traceback" not in err


def test_records_without_the_train_pairs_check_the_stats_sums(both, tmp_path):
    release = copy_of(both, tmp_path)
    complete = Complete.read(release)
    held = {f.path for f in complete.files if not f.path.startswith("shards/train/")}
    report = verify_release_records(release, complete, held)
    assert any("train: the llm.c files not checked against the Megatron pairs" in w for w in report.warnings)
    assert any("megatron_input_ids not checked: a mixture's train order" in w for w in report.warnings)
    rewrite_llmc(release, "train-00000.bin", lambda documents: documents[1:])
    with pytest.raises(hf_tokbin.TokbinError, match=r"the sums of stats.json's mixture.sources.\*.llmc"):
        verify_release_records(release, Complete.read(release), held)


def test_show_on_a_megatron_only_mixture_refuses_train_and_reads_validation(corpora, tmp_path):
    release = build(corpora, tmp_path / "megatron", formats=("megatron",))
    assert verify_release(release).formats == ("megatron",)
    with pytest.raises(hf_tokbin.TokbinError, match=r"numbered in its llm.c train files.*HINT: --split validation"):
        hf_tokbin.show(release, doc=2)
    assert hf_tokbin.show(release, "validation", doc=2).documents()[2]
