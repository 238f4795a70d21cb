"""BuildOptions: one frozen record of a build's options, checked
when made, the one writer and reader of run_config.json's options.
"""

from __future__ import annotations

import argparse
import json
from typing import get_args

import pytest
from release_fixtures import write_corpus

import hf_tokbin
from hf_tokbin.cli import build as build_cli
from hf_tokbin.cli import main
from hf_tokbin.errors import BuildError, CorpusInputError, VerificationError
from hf_tokbin.formats import llmc
from hf_tokbin.formats.build_options import FAST_MODES, BuildOptions, LlmcLayout, SeparatorPosition, option_names
from hf_tokbin.formats.run_config import RunConfig


@pytest.mark.parametrize(
    "given, rule",
    [
        ({"formats": ()}, "formats must be among llmc, megatron: got none"),
        ({"formats": ("llmc", "bin")}, "formats must be among llmc, megatron"),
        ({"num_proc": 0}, "--num-proc must be at least 1"),
        ({"batch_size": -1}, "--batch-size must be at least 1"),
        ({"max_tokens_per_file": 0}, "--max-tokens-per-file out of range: expected 1..2147483647, got 0"),
        ({"max_tokens_per_file": 2**31}, "--max-tokens-per-file out of range"),
        ({"llmc_layout": "seed000"}, "llm.c layout must be gpt2 or llama3: got seed000"),
        ({"llmc_separator": "between"}, "--llmc-sep must be before or after: got between"),
        ({"parse_special": 1}, "parse_special must be true or false"),
        ({"fast": "always"}, "fast-path mode must be auto, never or require: got always"),
        ({"shuffle_seed": -1}, "--shuffle-seed must be an integer in 0..2\\*\\*63-1"),
        ({"shuffle_seed": 2**63}, "--shuffle-seed must be an integer in 0..2\\*\\*63-1"),
        ({"shuffle_seed": True}, "--shuffle-seed must be an integer"),
        ({"limit": 0}, "--limit must be a positive number of documents: got 0"),
        ({"source_column": ""}, "--source-column must name a column"),
        ({"source_column": "a\nb"}, "--source-column must name a column"),
    ],
)
def test_an_invalid_option_fails_when_the_record_is_made(given, rule):
    with pytest.raises(BuildError, match=rule) as caught:
        BuildOptions(**given)
    assert "\n" not in str(caught.value)


def test_formats_are_kept_in_their_canonical_order_and_the_record_is_frozen():
    options = BuildOptions(formats=["megatron", "llmc"])
    assert options.formats == ("llmc", "megatron")
    with pytest.raises(AttributeError):
        options.num_proc = 2  # type: ignore[misc]


def test_an_unknown_option_is_one_line_naming_the_known_ones():
    with pytest.raises(
        BuildError, match="unknown build option: expected one of formats, .*limit, source_column, mix, got llmc_sep"
    ):
        BuildOptions.of(llmc_sep="after")


def test_the_literal_choices_are_the_formats_own():
    assert get_args(LlmcLayout) == llmc.FAMILIES and get_args(SeparatorPosition) == llmc.SEPARATOR_POSITIONS
    assert FAST_MODES == ("auto", "never", "require")


@pytest.mark.parametrize(
    "options, has_separator",
    [
        (BuildOptions(), True),
        (
            BuildOptions(
                formats=("llmc",),
                llmc_layout="llama3",
                llmc_separator="after",
                max_tokens_per_file=77,
                parse_special=True,
            ),
            True,
        ),
        (BuildOptions(formats=("llmc",)), False),
        (BuildOptions(formats=("megatron",), shuffle_seed=2**63 - 1), True),
    ],
)
def test_to_record_and_from_record_round_trip(options, has_separator, tmp_path):
    record = json.loads(json.dumps(options.to_record(300, has_separator)))
    assert list(record) == [k for k in ("special_tokens", "shuffle", "formats", "llmc", "megatron") if k in record]
    read = BuildOptions.from_record(tmp_path / "run_config.json", record, 300, has_separator)
    recorded = dict(formats=options.formats, parse_special=options.parse_special, shuffle_seed=options.shuffle_seed)
    if "llmc" in options.formats:
        # None (the layout's default, which the plan chooses) is recorded as the place the plan chose: "before".
        recorded.update(
            llmc_layout=options.llmc_layout,
            llmc_separator=options.llmc_separator or "before",
            max_tokens_per_file=options.max_tokens_per_file,
        )
    assert read == BuildOptions(**recorded)


def test_from_record_names_the_file_and_the_key(tmp_path):
    record = BuildOptions(formats=("llmc",)).to_record(300, True)
    record["llmc"]["separator"] = "middle"
    with pytest.raises(
        VerificationError, match=r"run_config.json: llmc.separator must be before or after: got middle"
    ):
        BuildOptions.from_record(tmp_path / "run_config.json", record, 300, True)


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    build_cli.add_arguments(parser)
    return parser


def test_every_option_is_one_flag_of_hf_tokbin_build():
    """Adding an option is one field and one flag: each field is the ``dest`` of a flag, which maps onto it by name."""
    dests = {action.dest for action in _build_parser()._actions}
    assert set(option_names()) <= dests
    args = _build_parser().parse_args(
        [
            "--corpus",
            "c",
            "--tokenizer",
            "byte",
            "--out",
            "o",
            "--format",
            "megatron, llmc",
            "--llmc-sep",
            "after",
            "--parse-special-tokens",
            "--limit",
            "3",
            "--llmc-variant",
            "llama3",
        ]
    )
    assert build_cli.build_options(args) == BuildOptions(
        llmc_separator="after", parse_special=True, limit=3, llmc_layout="llama3"
    )


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(
        tmp_path / "corpus", [("train", ["one", "two", "three", "four"]), ("validation", ["five", "six"])]
    )


def test_build_release_takes_limit_like_the_command_line(corpus, tmp_path):
    """--limit was the command line's only; the API, given it, failed with a TypeError."""
    cli_out, api_out = tmp_path / "cli", tmp_path / "api"
    assert (
        main(
            [
                "build",
                "--corpus",
                str(corpus),
                "--tokenizer",
                "byte",
                "--doc-sep",
                "0",
                "--limit",
                "3",
                "--out",
                str(cli_out),
                "--quiet",
            ]
        )
        == 0
    )
    summary = hf_tokbin.build_release(corpus, "byte", api_out, doc_sep=0, limit=3, progress=False)
    assert {split: counts.documents for split, counts in summary.counts.items()} == {"train": 3}
    assert (api_out / "run_config.json").read_bytes() == (cli_out / "run_config.json").read_bytes()


def test_build_release_refuses_a_bad_option_before_any_work(corpus, tmp_path):
    with pytest.raises(BuildError, match="--limit must be a positive number of documents"):
        hf_tokbin.build_release(corpus, "byte", tmp_path / "out", doc_sep=0, limit=0, progress=False)
    assert not (tmp_path / "out").exists()


def test_a_revision_of_a_local_corpus_folder_is_refused_by_the_api_too(corpus, tmp_path):
    """The command line refused it; build_release recorded a build as if the revision had applied (it was ignored)."""
    with pytest.raises(
        CorpusInputError, match="--corpus-revision applies to a Hub corpus only, not to a local folder: got main"
    ):
        hf_tokbin.build_release(corpus, "byte", tmp_path / "out", doc_sep=0, revision="main", progress=False)
    assert not (tmp_path / "out").exists()


def test_plan_build_takes_the_record_or_its_fields(corpus, tmp_path):
    tokenizer = hf_tokbin.resolve_tokenizer("byte", doc_sep=0)
    by_record = hf_tokbin.plan_build(
        corpus, tokenizer, tmp_path / "a", BuildOptions(formats=("llmc",), llmc_separator="after")
    )
    by_fields = hf_tokbin.plan_build(corpus, tokenizer, tmp_path / "a", formats=("llmc",), llmc_separator="after")
    assert by_record.options == by_fields.options and by_record.run_config() == by_fields.run_config()
    config = by_record.run_config()
    assert (config["llmc"]["separator"], config["megatron"]) == ("after", None)


def test_run_config_reads_back_the_options_it_was_written_with(corpus, tmp_path):
    out = tmp_path / "r"
    options = BuildOptions(
        formats=("llmc",), llmc_layout="llama3", max_tokens_per_file=50, shuffle_seed=7, parse_special=True
    )
    hf_tokbin.pipeline.build(
        hf_tokbin.plan_build(corpus, hf_tokbin.resolve_tokenizer("byte", doc_sep=0), out, options), progress=False
    )
    read = RunConfig.read(out / "run_config.json")
    # The separator's place as the plan chose it (the byte tokenizer has no <|begin_of_text|>: the llm.c
    # layout's place).
    assert read.options == BuildOptions(
        formats=("llmc",),
        llmc_layout="llama3",
        llmc_separator="before",
        max_tokens_per_file=50,
        shuffle_seed=7,
        parse_special=True,
    )
    assert (
        read.llmc_layout,
        read.llmc_separator,
        read.max_tokens_per_file,
        read.megatron_dtype_code,
        read.special_tokens,
    ) == ("llama3", "before", 50, None, "parsed")
