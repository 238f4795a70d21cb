"""verify recomputes stats.json's counts by source from the receipts, and refuses receipts whose sources do not
add up.
"""

from __future__ import annotations

import shutil

import pytest
from release_edits import edit_json, refused, reseal, reseal_complete
from release_fixtures import build_with_sources, source_rows

from hf_tokbin.verify.release import verify_release


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_with_sources(tmp_path_factory.mktemp("sources"), source_rows(60, seed=9))


@pytest.fixture
def release(built, tmp_path):
    return shutil.copytree(built, tmp_path / "release")


def test_the_release_verifies(release):
    verify_release(release)


def test_a_receipt_whose_sources_do_not_add_up_is_refused_naming_the_receipt(release):
    def one_more_web_document(receipt):
        receipt["sources"]["web"]["train"]["documents"] += 1

    edit_json(release / "receipts" / "part-000000.json", one_more_web_document)
    reseal_complete(release)
    refused(
        release, "receipts/part-000000.json", "the sources' train documents must add up to the split's (nothing lost)"
    )


def test_a_document_moved_between_sources_in_stats_json_is_refused_naming_stats_json(release):
    def moved(stats):
        stats["sources"]["web"]["train"]["documents"] -= 1
        stats["sources"]["books"]["train"]["documents"] += 1

    edit_json(release / "stats.json", moved)
    reseal(release)
    refused(release, "stats.json", "sources.books.train.documents differs from the receipts")


def test_receipts_of_which_only_some_count_sources_are_refused(release):
    edit_json(release / "receipts" / "part-000001.json", lambda receipt: receipt.pop("sources"))
    reseal(release)
    refused(
        release,
        "receipts/part-000001.json",
        "every receipt counts its sources: run_config.json's corpus.source_column is 'source'",
    )


def test_sources_in_a_release_whose_run_config_names_no_source_column_are_refused(release):
    def forget(config):
        del config["corpus"]["source_column"]

    edit_json(release / "run_config.json", forget)
    reseal(release)
    refused(
        release,
        "receipts/part-000000.json",
        "no receipt counts sources: run_config.json names no corpus.source_column",
    )


def test_verify_corpus_counts_the_source_column_against_the_manifest(tmp_path):
    import json

    from hf_tokbin.corpus.write import import_corpus
    from hf_tokbin.errors import VerificationError
    from hf_tokbin.verify.corpus import verify_corpus

    rows = source_rows(30, seed=1)
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    corpus = tmp_path / "corpus"
    import_corpus([tmp_path / "rows.jsonl"], corpus, source_column="src")
    assert "OK" in verify_corpus(corpus)

    def moved(manifest):
        train = manifest["documents_by_source"]["train"]
        train["web"], train["books"] = train["web"] - 1, train["books"] + 1  # still adds up to the rows

    edit_json(corpus / "_MANIFEST.json", moved)
    with pytest.raises(VerificationError, match="documents_by_source must count the shards' source column") as info:
        verify_corpus(corpus)
    assert str(info.value).startswith(str(corpus / "_MANIFEST.json"))
