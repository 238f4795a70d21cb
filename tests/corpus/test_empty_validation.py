"""An empty validation split is said at import and at build, with the rule that gave it."""

from __future__ import annotations

import json

from hf_tokbin.cli import main


def jsonl(path, texts, **columns):
    path.write_text(
        "".join(json.dumps({"text": t, **{k: v[i] for k, v in columns.items()}}) + "\n" for i, t in enumerate(texts))
    )
    return path


def test_import_without_a_split_column_warns_that_nothing_is_validation(tmp_path, capsys):
    source = jsonl(tmp_path / "docs.jsonl", [f"document {i}" for i in range(20)])
    assert main(["corpus", "import", str(source), "--out", str(tmp_path / "corpus")]) == 0
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if x.startswith("warning: no validation documents")]
    assert "split rule all-train" in line and "hf-tokbin recipe" in line
    assert (
        main(
            [
                "build",
                "--corpus",
                str(tmp_path / "corpus"),
                "--tokenizer",
                "byte",
                "--doc-sep",
                "0",
                "--out",
                str(tmp_path / "rel"),
                "--quiet",
            ]
        )
        == 0
    )
    assert "warning: no validation documents (split rule all-train" in capsys.readouterr().err


def test_the_sha256_rule_on_a_small_corpus_warns_too(tmp_path, capsys):
    source = jsonl(tmp_path / "docs.jsonl", [f"document {i}" for i in range(50)])
    assert main(["corpus", "import", str(source), "--out", str(tmp_path / "corpus"), "--split-rule", "sha256"]) == 0
    assert "warning: no validation documents (split rule sha256" in capsys.readouterr().err


def test_a_corpus_with_validation_gets_no_warning(tmp_path, capsys):
    texts = [f"document {i}" for i in range(10)]
    source = jsonl(tmp_path / "docs.jsonl", texts, split=["train"] * 8 + ["validation"] * 2)
    assert main(["corpus", "import", str(source), "--out", str(tmp_path / "corpus")]) == 0
    assert "no validation documents" not in capsys.readouterr().err


def test_a_vocabulary_above_65536_with_the_default_llmc_layout_is_told_the_layout_trainers_read(tmp_path):
    import dataclasses

    from release_fixtures import stories, write_corpus

    from hf_tokbin.pipeline import plan_build
    from hf_tokbin.tokenizer import resolve_tokenizer

    corpus = write_corpus(tmp_path / "corpus", [("train", stories(5, 1)), ("validation", stories(2, 2))])
    plan = plan_build(corpus, resolve_tokenizer("byte", doc_sep_id=0), tmp_path / "rel")
    assert plan.warnings() == []
    big = dataclasses.replace(plan, tokenizer=dataclasses.replace(plan.tokenizer, vocab_size=128256))
    (line,) = big.warnings()
    assert "--llmc-layout llama3" in line and "128,256" in line
    assert dataclasses.replace(big, options=dataclasses.replace(big.options, llmc_layout="llama3")).warnings() == []
