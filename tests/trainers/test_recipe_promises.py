"""Recipes keep their promise (review of session 7): pasted whole into bash nothing of the release runs, MaxText
starts from scratch with its own launcher, and no recipe trains on the pairs that happen to be on disk."""

from __future__ import annotations

import functools
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from consumer_fixtures import docs_of, write_release

from hf_tokbin.cli import main
from hf_tokbin.errors import FormatError
from hf_tokbin.formats import llmc
from hf_tokbin.trainers import LoaderSettings, recipe
from hf_tokbin.trainers.base import python_literal
from hf_tokbin.trainers.maxtext import MAXTEXT_LAUNCHER

VOCAB, EOT = 50257, 50256
SMALL = LoaderSettings(batch_size=2, seq_len=8)


def docs(n, seed):
    return docs_of(np.random.default_rng(seed), n, VOCAB, 3, 14, avoid=EOT)


@pytest.fixture
def release(tmp_path) -> Path:
    return write_release(
        tmp_path / "release", [docs(12, 1), docs(5, 2), docs(20, 3)], [docs(8, 4)], VOCAB, EOT, max_tokens=80
    )


@pytest.mark.parametrize(
    "text", ["plain/path-*.bin", "x'$(touch PWNED)/y", 'q"`touch PWNED`\\', "tab\\x27 and ' and \\'"]
)
def test_python_literals_give_the_text_back_and_keep_no_quote_a_shell_would_end(text):
    literal = python_literal(text)
    assert eval(literal) == text  # noqa: S307 - our own literal
    assert literal.startswith("'") and literal.endswith("'") and "'" not in literal[1:-1]


@pytest.mark.parametrize("target", ["modded-nanogpt", "nanogpt"])
def test_a_folder_name_with_a_quote_pasted_whole_into_bash_runs_nothing(release, tmp_path, capsys, target):
    # tokens/<tokenizer_id>/<dataset>/ comes from the release: repr() put such a name in double quotes, where bash runs
    # $(...).
    name = "x'$(touch PWNED)`touch PWNED2`"
    os.rename(release / "tokens" / "tok" / "toy", release / "tokens" / "tok" / name)
    config = json.loads((release / "run_config.json").read_text())
    config["dataset"] = name
    (release / "run_config.json").write_text(json.dumps(config))
    assert main(["recipe", str(release), "--for", target, "-T", "8", "-B", "2"]) in (0, 1)  # 1: a finding (tiny files)
    out = capsys.readouterr().out
    assert "PWNED" in out
    assert name in "".join(eval(part) for line in recipe(release, target, SMALL).code for part in _literals(line))  # noqa: S307
    shell = tmp_path / "shell"
    (shell / "bin").mkdir(parents=True)
    env = {
        "PATH": str(shell / "bin"),
        "HOME": str(shell),
    }  # no command of the recipe starts; touch would be found nowhere but...
    (shell / "bin" / "touch").symlink_to(shutil.which("touch"))  # ...here: an escaped payload leaves PWNED
    subprocess.run(["/bin/bash"], input=out, text=True, cwd=shell, env=env, capture_output=True)
    assert sorted(p.name for p in shell.iterdir()) == ["bin"]


def _literals(line: str) -> list[str]:
    """The single-quoted Python literals of a printed code line."""
    import re

    return re.findall(r"'[^']*'", line)


def test_maxtext_starts_with_its_launcher_and_leaves_the_run_name_to_maxtext(release, tmp_path):
    r = recipe(release, "maxtext", SMALL, index_dir=tmp_path / "idx")
    assert r.lines[0] == MAXTEXT_LAUNCHER + " \\"
    assert not any(
        line.lstrip("'").startswith("run_name=") for line in r.lines
    )  # else a second run resumes the first's checkpoints
    assert any("new one each run" in note and "resumes" in note for note in r.notes)
    # Pasted as printed, with a stand-in maxtext package: MaxText's entry point gets base.yml, then the key=value
    # lines.
    package = tmp_path / "site" / "maxtext"
    (package / "configs").mkdir(parents=True)
    (package / "trainers" / "pre_train").mkdir(parents=True)
    for init in (package, package / "trainers", package / "trainers" / "pre_train"):
        (init / "__init__.py").write_text("")
    (package / "configs" / "base.yml").write_text("run_name: ''\n")
    record = tmp_path / "argv.json"
    (package / "trainers" / "pre_train" / "train.py").write_text(
        f"import json, sys\njson.dump(sys.argv, open({str(record)!r}, 'w'))\n"
    )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "site"), "HOME": str(tmp_path)}
    done = subprocess.run(["/bin/bash"], input="\n".join(r.lines) + "\n", text=True, env=env, capture_output=True)
    assert done.returncode == 0, done.stderr
    argv = json.loads(record.read_text())
    assert argv[1] == str(package / "configs" / "base.yml")
    assert argv[2:] == shlex.split(" ".join(line.rstrip("\\") for line in r.lines[1:]))
    assert all("=" in arg for arg in argv[2:])


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A built release: two train parts and one validation part, both formats, receipts and COMPLETE.json."""
    from release_fixtures import stories, write_corpus

    root = tmp_path_factory.mktemp("built")
    corpus = write_corpus(
        root / "corpus",
        [("train", stories(30, seed=1)), ("train", stories(20, seed=2)), ("validation", stories(10, seed=3))],
    )
    out = root / "release"
    assert (
        main(["build", "--corpus", str(corpus), "--tokenizer", "byte", "--doc-sep", "3", "--out", str(out), "--quiet"])
        == 0
    )
    return out


@pytest.mark.parametrize("target", ["megatron", "maxtext"])
@pytest.mark.parametrize("missing", ["shards/train/part-000001.idx", "shards/validation"])
def test_a_pair_its_receipt_lists_that_is_missing_is_refused_not_left_out(built, tmp_path, target, missing):
    root = Path(shutil.copytree(built, tmp_path / "release"))
    settings = LoaderSettings(batch_size=1, seq_len=8)
    recipe(root, target, settings, index_dir=tmp_path / "idx")  # whole: fine
    shutil.rmtree(root / missing) if (root / missing).is_dir() else (
        root / missing
    ).unlink()  # the whole folder: "no validation split"
    with pytest.raises(FormatError, match="a Megatron pair its receipt lists is missing"):
        recipe(root, target, settings, index_dir=tmp_path / "idx")
    # A partial copy (pull --include) gets the pairs it holds; a PARTIAL.json that is not one vouches for nothing.
    (root / "COMPLETE.json").unlink()
    (root / "PARTIAL.json").write_text("{}")
    with pytest.raises(FormatError, match="PARTIAL.json"):
        recipe(root, target, settings, index_dir=tmp_path / "idx")


BIG_VOCAB = 60000  # a vocabulary past GPT-2's 50,257 (a 64k BPE): llm.c's uint16 layout holds it


@pytest.fixture
def big_vocab_release(tmp_path) -> Path:
    rng = np.random.default_rng(7)
    big = [[list(rng.integers(0, BIG_VOCAB - 1, 12)) for _ in range(6)] for _ in range(2)]
    return write_release(
        tmp_path / "big",
        big,
        [[list(rng.integers(0, BIG_VOCAB - 1, 12)) for _ in range(4)]],
        BIG_VOCAB,
        BIG_VOCAB - 1,
        max_tokens=80,
    )


def test_no_from_scratch_llmc_line_is_printed_for_ids_past_gpt2_s_embedding(big_vocab_release, capsys):
    # -e d12 builds GPT-2 with vocab_size 50,257: train_gpt2.cu would read past its embedding for every larger id.
    with pytest.raises(FormatError, match="50,257"):
        recipe(big_vocab_release, "llmc", SMALL)
    assert main(["recipe", str(big_vocab_release), "--for", "llmc", "-B", "2", "-T", "8"]) == 1
    captured = capsys.readouterr()
    assert "train_gpt2" not in captured.out and len(captured.err.strip().splitlines()) == 1
    # Every other -e / --model is GPT-2's 50,257 too (d12..d48, gpt2:dN, gpt2): refused the same.
    for model in ("d12", "d48", "gpt2:d24", "gpt3:c768", "gpt2"):
        with pytest.raises(FormatError, match="50,257"):
            recipe(big_vocab_release, "llmc", LoaderSettings(batch_size=2, seq_len=8, init_from=model))
    # A .bin checkpoint of this vocabulary: the line is printed, with the warning that it must be one.
    tuned = recipe(big_vocab_release, "llmc", LoaderSettings(batch_size=2, seq_len=8, init_from="mine.bin"))
    assert "-e mine.bin" in tuned.lines[0] and [f.level for f in tuned.findings if f.rule == "gpt2-vocab"] == [
        "warning"
    ]
    # verify --for llmc (no --init-from there) warns, it does not fail a release a checkpoint can train on.
    # (Its llm.c folder: verify --for also checks every byte, and the fixture's release has no COMPLETE.json.)
    llmc_folder = big_vocab_release / "tokens" / "tok" / "toy"
    assert main(["verify", str(llmc_folder), "--for", "llmc", "-B", "2", "-T", "8"]) == 0


def _nanogpt_model_vocab(code: list[str], tmp_path: Path) -> int | None:
    """What nanoGPT's train.py sizes a from-scratch model by, with the recipe's lines where they go (after
    data_dir)."""
    import pickle

    namespace = {"os": os, "np": np, "pickle": pickle, "dataset": "openwebtext"}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec("data_dir = os.path.join('data', dataset)", namespace)  # noqa: S102 - train.py, as it reads
        exec("\n".join(line for line in code if not line.startswith("#")), namespace)  # noqa: S102 - the recipe's own lines
        # train.py, after the lines: "attempt to derive vocab_size from the dataset".
        exec(  # noqa: S102
            "meta_path = os.path.join(data_dir, 'meta.pkl')\nmeta_vocab_size = None\n"
            "if os.path.exists(meta_path):\n    with open(meta_path, 'rb') as f:\n        meta = pickle.load(f)\n    "
            "meta_vocab_size = meta['vocab_size']",
            namespace,
        )
    finally:
        os.chdir(cwd)
    return namespace["meta_vocab_size"]


def test_nanogpt_lines_size_a_from_scratch_model_to_the_vocabulary(big_vocab_release, release, tmp_path):
    assert _nanogpt_model_vocab(list(recipe(big_vocab_release, "nanogpt", SMALL).code), tmp_path) == BIG_VOCAB
    named = recipe(big_vocab_release, "nanogpt", LoaderSettings(batch_size=2, seq_len=8, init_from="scratch"))
    assert _nanogpt_model_vocab(list(named.code), tmp_path) == BIG_VOCAB  # --init-from scratch is from scratch too
    assert not any("--init-from gpt2" in note for note in named.notes)  # no advice the recipe then refuses
    assert not (tmp_path / "data").exists()  # nothing written into the user's nanoGPT data folder
    assert (
        _nanogpt_model_vocab(list(recipe(release, "nanogpt", SMALL).code), tmp_path) is None
    )  # 50,257 fits the default 50,304
    with pytest.raises(FormatError, match="GPT-2"):
        recipe(big_vocab_release, "nanogpt", LoaderSettings(batch_size=2, seq_len=8, init_from="gpt2"))


def test_a_llama3_layout_asked_for_llmc_gets_its_real_finding_not_the_vocabulary_refusal(tmp_path, capsys):
    rng = np.random.default_rng(3)
    docs = [[list(rng.integers(0, 128000, 9)) for _ in range(5)]]
    llama3_writer = functools.partial(llmc.LlmcWriter, family="llama3")
    root = write_release(tmp_path / "l3", docs, [], 128256, 128001, llmc_writer=llama3_writer)
    config = json.loads((root / "run_config.json").read_text())
    config["llmc"]["layout"] = "llama3"  # as a --llmc-layout llama3 build records it
    (root / "run_config.json").write_text(json.dumps(config))
    assert main(["recipe", str(root), "--for", "llmc", "-B", "2", "-T", "8"]) == 1
    out, err = capsys.readouterr()
    assert "llmc-llama3" in out + err and "50,257" not in out + err


def test_the_release_card_promises_no_llmc_line_for_a_vocabulary_past_gpt2_s(big_vocab_release):
    from hf_tokbin.cards.release import _recipes

    text = "\n".join(_recipes(big_vocab_release, ["llmc", "megatron"], "gpt2"))
    assert (
        "train_gpt2cu" not in text
        and "train_gpt2.py" not in text
        and "llm.c: no llm.c recipe" in text
        and "50,257" in text
    )
    assert str(big_vocab_release.resolve()) not in text
    assert "pretrain_gpt.py" in text  # Megatron's lines are still there
