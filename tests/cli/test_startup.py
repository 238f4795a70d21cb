"""Start-up: a command imports the libraries it uses, when it uses them.

``hf-tokbin --help`` lists the commands without importing any subcommand's
libraries, and no command's ``--help`` imports ``datasets``, the Hub client,
``pyarrow.parquet`` or ``tqdm``. Asserted as module lists, never as times.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hf_tokbin.cli import COMMANDS

HEAVY = (
    "datasets",
    "huggingface_hub",
    "pyarrow",
    "pyarrow.parquet",
    "pyarrow.compute",
    "tqdm",
    "fsspec",
    "numpy",
    "tokenizers",
    "gigatoken",
    "awkward",
    "pandas",
)
NEVER_FOR_HELP = ("datasets", "huggingface_hub", "pyarrow.parquet", "tqdm")


def _imported_by(argv: list[str]) -> set[str]:
    """The modules of HEAVY loaded after ``hf-tokbin ARGV`` ran, in a fresh interpreter."""
    code = (
        "import json, sys\n"
        "from hf_tokbin.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def test_help_imports_no_library():
    assert _imported_by(["--help"]) == set()
    assert _imported_by(["--version"]) == set()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_help_imports_neither_datasets_nor_the_hub_nor_parquet_nor_tqdm(command):
    assert not _imported_by([command, "--help"]) & set(NEVER_FOR_HELP)


def test_import_hf_tokbin_imports_no_library_until_a_name_is_used():
    code = (
        "import sys, hf_tokbin; before = 'numpy' in sys.modules; hf_tokbin.MegatronPair; "
        "print(before, 'numpy' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]


def test_corpus_tinystories_imports_neither_datasets_nor_the_hub_nor_pandas(tmp_path):
    # The TinyStories reader needs none: datasets' import alone cost more than reading 100 MB of text,
    # and pyarrow imports pandas on its first list conversion or compute call. Nor pyarrow.compute (0.04 s):
    # only the importers' split column and source counts use it.
    text = tmp_path / "train.txt"
    text.write_text("Once upon a time.\n<|endoftext|>\nThe end, caf\u00e9.\n", encoding="utf-8")
    imported = _imported_by(["corpus", "tinystories", str(text), "--out", str(tmp_path / "corpus")])
    assert (tmp_path / "corpus" / "_MANIFEST.json").exists()
    assert not imported & {"datasets", "huggingface_hub", "pandas", "pyarrow.compute"}


def test_a_local_build_imports_neither_datasets_nor_the_hub_nor_pandas_nor_tqdm(tmp_path):
    # A corpus folder and a local tokenizer need none of them: their imports were most of a build's start-up.
    from release_fixtures import stories, write_corpus
    from tokenizer_files import gpt2_tokenizer_json

    corpus = write_corpus(tmp_path / "corpus", [("train", stories(20, seed=1))])
    out = tmp_path / "release"
    imported = _imported_by(
        ["build", "--corpus", str(corpus), "--tokenizer", str(gpt2_tokenizer_json()), "--out", str(out), "--quiet"]
    )
    assert (out / "COMPLETE.json").exists()
    assert not imported & {"datasets", "huggingface_hub", "pandas", "tqdm"}


def test_verify_of_a_release_imports_neither_datasets_nor_the_hub_nor_pandas(tmp_path):
    # pyarrow.parquet.read_table imports pyarrow.dataset and pandas: a second and a half of a 200 MB release's verify.
    from release_fixtures import stories, write_corpus
    from tokenizer_files import gpt2_tokenizer_json

    from hf_tokbin.cli import main

    corpus = write_corpus(tmp_path / "corpus", [("train", stories(20, seed=1)), ("validation", stories(5, seed=2))])
    out = tmp_path / "release"
    assert (
        main(
            ["build", "--corpus", str(corpus), "--tokenizer", str(gpt2_tokenizer_json()), "--out", str(out), "--quiet"]
        )
        == 0
    )
    assert (out / "preview" / "train.parquet").exists()  # so the preview is read
    assert not _imported_by(["verify", str(out)]) & {"datasets", "huggingface_hub", "pandas"}
