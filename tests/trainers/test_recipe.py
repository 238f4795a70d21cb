"""``hf-tokbin recipe``: the printed lines, run against the real readers.

The printed globs are globbed (llm.c, modded-nanogpt), the printed nanoGPT
lines are executed, and the printed Megatron ``--train-data-path`` goes
through megatron-core's own ``get_blend_from_list``,
``BlendedMegatronDatasetBuilder`` and ``GPTDataset`` with the printed
tokenizer flags (``NullTokenizer``): every sample must be a window of the
documents of the pair it was drawn from.
"""

from __future__ import annotations

import ast
import glob
import os
import shlex

import numpy as np
import pytest
from consumer_fixtures import docs_of, write_release

from hf_tokbin.cli import main
from hf_tokbin.errors import FormatError
from hf_tokbin.formats import llmc
from hf_tokbin.trainers import CHECKED_AGAINST, TARGETS, LoaderSettings, recipe

VOCAB, EOT = 50257, 50256  # GPT-2
SMALL = LoaderSettings(batch_size=2, seq_len=8)


def docs(n, seed):
    return docs_of(np.random.default_rng(seed), n, VOCAB, 3, 14, avoid=EOT)


@pytest.fixture
def release(tmp_path):
    """Three train pairs of unequal size and one validation pair; llm.c files that roll over."""
    train = [docs(12, 1), docs(5, 2), docs(20, 3)]
    validation = [docs(8, 4)]
    return write_release(tmp_path / "rel", train, validation, VOCAB, EOT, max_tokens=80), train, validation


def command(r) -> list[str]:
    """The recipe's shell lines as argv (continuation backslashes joined, comments dropped)."""
    return shlex.split(" ".join(line.rstrip("\\") for line in r.lines if not line.startswith("#")))


def flag_values(argv: list[str], flag: str) -> list[str]:
    start = argv.index(flag) + 1
    end = next((i for i in range(start, len(argv)) if argv[i].startswith("--")), len(argv))
    return argv[start:end]


def manifest_files(root, split):
    folder = root / "tokens" / "tok" / "toy"
    manifest = llmc.TokensManifest.read(folder / llmc.MANIFEST_NAME)
    return [str(folder / f.name) for f in manifest.files if f.split == split]


def test_every_target_names_the_version_it_was_checked_against(release):
    root = release[0]
    for target in TARGETS:
        text = recipe(root, target, SMALL).text()
        assert CHECKED_AGAINST[target] in text
    assert "0.2.5" in CHECKED_AGAINST["maxtext"] and "0.16.1" in CHECKED_AGAINST["megatron"]


def test_llmc_globs_select_exactly_the_release_files(release):
    root = release[0]
    r = recipe(root, "llmc", SMALL)
    c_line, py_line = (shlex.split(line) for line in r.lines)
    assert len(manifest_files(root, "train")) > 1
    for split, flag_c, flag_py in (("train", "-i", "--input_bin"), ("val", "-j", "--input_val_bin")):
        pattern = c_line[c_line.index(flag_c) + 1]
        assert pattern == py_line[py_line.index(flag_py) + 1]
        assert sorted(glob.glob(pattern)) == manifest_files(root, split)  # what both loaders do
    assert c_line[c_line.index("-b") + 1] == "2" and c_line[c_line.index("-t") + 1] == "8"
    assert py_line[py_line.index("--total_batch_size") + 1] == "16"  # train_gpt2.py asserts it divides by B*T*world


def test_llmc_world_size_launches_that_many_processes(release):
    r = recipe(release[0], "llmc", LoaderSettings(batch_size=1, seq_len=4, world_size=3))
    c_line, py_line = (shlex.split(line) for line in r.lines)
    assert c_line[:3] == ["mpirun", "-np", "3"] and "--nproc_per_node=3" in py_line
    assert c_line[c_line.index("-d") + 1] == "12"


def test_modded_nanogpt_lines_select_the_files(release):
    root = release[0]
    r = recipe(root, "modded-nanogpt", SMALL)
    values = {}
    for line in r.code:
        if ": str = " in line:
            name, value = line.strip().split(": str = ")
            values[name] = ast.literal_eval(value)
    assert sorted(glob.glob(values["train_files"])) == manifest_files(root, "train")
    assert sorted(glob.glob(values["val_files"])) == manifest_files(root, "val")


def test_a_stray_file_the_glob_would_select_is_an_error(release):
    root = release[0]
    stray = root / "tokens" / "tok" / "toy" / "train-99999.bin"
    llmc.write_tokens(stray, [1, 2, 3], VOCAB)
    r = recipe(root, "llmc", SMALL)
    (finding,) = [f for f in r.findings if f.rule == "glob"]
    assert finding.level == "error" and "train-99999.bin" in finding.message and r.has_errors()


def test_glob_metacharacters_in_the_path_are_escaped(tmp_path):
    root = write_release(tmp_path / "rel[1]", [docs(6, 1), docs(6, 2)], [docs(3, 3)], VOCAB, EOT, max_tokens=40)
    r = recipe(root, "llmc", SMALL)
    pattern = shlex.split(r.lines[0])[2]
    assert sorted(glob.glob(pattern)) == manifest_files(root, "train")


def test_nanogpt_lines_read_each_file_with_its_dtype(release):
    root = release[0]
    r = recipe(root, "nanogpt", SMALL)
    code = "\n".join(line for line in r.code if not line.startswith("#"))
    namespace = {"np": np, "os": os}
    exec(code, namespace)  # the lines as train.py would run them
    expected = {f: llmc.open_tokens(f) for split in ("train", "val") for f in manifest_files(root, split)}
    np.random.seed(0)
    seen = set()
    for split in ("train", "val") * 20:
        data = namespace["token_data"](split)
        assert data.dtype == np.uint16
        (match,) = [f for f in manifest_files(root, split) if np.array_equal(expected[f], data)]
        seen.add(match)
    assert len(seen) > 2  # more than one file per split is drawn


def test_nanogpt_reads_uint32_files(tmp_path):
    big = 70000
    root = write_release(tmp_path / "rel", [docs_of(np.random.default_rng(0), 5, big, 3, 9)], [], big, big - 1)
    r = recipe(root, "nanogpt", SMALL)
    assert any("dtype=np.uint32" in line for line in r.lines)
    namespace = {"np": np, "os": os, "pickle": __import__("pickle")}  # train.py imports these
    exec("\n".join(line for line in r.code if not line.startswith("#")), namespace)
    (file,) = manifest_files(root, "train")
    assert np.array_equal(namespace["token_data"]("train"), llmc.open_tokens(file))
    assert any("no val files" in n for n in r.notes)
    assert np.array_equal(namespace["token_data"]("val"), llmc.open_tokens(file))  # said plainly: val reads train


def test_megatron_data_path_weights_are_tokens_and_prefixes_have_no_suffix(release):
    root, train, validation = release
    argv = command(recipe(root, "megatron", SMALL))
    values = flag_values(argv, "--train-data-path")
    weights, prefixes = values[0::2], values[1::2]
    assert prefixes == [str(root / "shards" / "train" / f"part-{i:06d}") for i in range(3)]
    assert [int(w) for w in weights] == [sum(len(d) + 1 for d in part) for part in train]
    assert flag_values(argv, "--valid-data-path") == [
        str(sum(len(d) + 1 for d in validation[0])),
        str(root / "shards" / "validation" / "part-000000"),
    ]
    assert flag_values(argv, "--tokenizer-type") == ["NullTokenizer"] and flag_values(argv, "--vocab-size") == [
        str(EOT)
    ]


@pytest.fixture
def gloo_group():
    """A torch.distributed group of world size 1 on loopback: megatron-core's blend with a cache asks its rank."""
    dist = pytest.importorskip("torch.distributed")
    if dist.is_initialized():
        yield
        return
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_megatron_core_builds_the_printed_blend_and_samples_windows_of_its_documents(release, tmp_path, gloo_group):
    pytest.importorskip("megatron.core.datasets.blended_megatron_dataset_builder")
    from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
    from megatron.core.datasets.utils import get_blend_from_list
    from megatron.core.tokenizers.text.libraries.null_tokenizer import NullTokenizer

    root, train, validation = release
    argv = command(recipe(root, "megatron", SMALL))
    seq_len = int(flag_values(argv, "--seq-length")[0])
    tokenizer = NullTokenizer(int(flag_values(argv, "--vocab-size")[0]))  # what --tokenizer-type NullTokenizer builds
    assert tokenizer.eod == EOT and tokenizer.vocab_size == VOCAB
    config = GPTDatasetConfig(
        random_seed=int(flag_values(argv, "--seed")[0]),
        sequence_length=seq_len,
        blend_per_split=[
            get_blend_from_list(flag_values(argv, "--train-data-path")),
            get_blend_from_list(flag_values(argv, "--valid-data-path")),
            None,
        ],
        path_to_cache=str(tmp_path / "cache"),
        tokenizer=tokenizer,
        reset_position_ids=True,
        reset_attention_mask=True,
        eod_mask_loss=True,
    )
    n_samples = 40
    train_ds, valid_ds, test_ds = BlendedMegatronDatasetBuilder(
        GPTDataset, [n_samples, 10, None], lambda: True, config
    ).build()
    assert test_ds is None
    totals = np.array([sum(len(d) + 1 for d in part) for part in train], dtype=np.float64)
    assert np.allclose(train_ds.weights, totals / totals.sum())  # drawn in proportion to tokens
    drawn = np.bincount(np.asarray(train_ds.dataset_index[:n_samples]), minlength=3)
    assert np.all(np.abs(drawn - n_samples * totals / totals.sum()) <= 1.5)
    for split_ds, parts in ((train_ds, train), (valid_ds, validation)):
        blended = hasattr(split_ds, "datasets")  # one prefix gives its GPTDataset itself
        assert blended == (len(parts) > 1)
        for i in range(len(split_ds)):
            d, j = (int(split_ds.dataset_index[i]), int(split_ds.dataset_sample_index[i])) if blended else (0, i)
            text, _ = (split_ds.datasets[d] if blended else split_ds)._query_document_sample_shuffle_indices(j)
            assert text.size == seq_len + 1
            assert_window_of(text.tolist(), parts[d])
            sample = split_ds[i]
            assert sample["tokens"].tolist() == text[:-1].tolist()


def test_megatron_core_blend_with_a_cache_needs_a_process_group(release, tmp_path):
    """The recipe's note: without torch.distributed, BlendedDataset asks get_rank() and fails."""
    dist = pytest.importorskip("torch.distributed")
    from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
    from megatron.core.datasets.utils import get_blend_from_list
    from megatron.core.tokenizers.text.libraries.null_tokenizer import NullTokenizer

    assert not dist.is_initialized()
    r = recipe(release[0], "megatron", SMALL)
    assert any("init_process_group" in n for n in r.notes)
    blend = get_blend_from_list(flag_values(command(r), "--train-data-path"))
    config = GPTDatasetConfig(
        random_seed=1234,
        sequence_length=8,
        blend_per_split=[blend, None, None],
        path_to_cache=str(tmp_path / "cache"),
        tokenizer=NullTokenizer(EOT),
        reset_position_ids=False,
        reset_attention_mask=False,
        eod_mask_loss=False,
    )
    with pytest.raises((ValueError, RuntimeError), match="process group"):
        BlendedMegatronDatasetBuilder(GPTDataset, [10, None, None], lambda: True, config).build()


def assert_window_of(window: list[int], documents: list[list[int]]) -> None:
    """``window`` is a slice of documents each ending with EOD: a suffix, whole documents, a prefix."""
    sequences = [d + [EOT] for d in documents]
    pieces, start = [], 0
    for k, token in enumerate(window):
        if token == EOT:
            pieces.append(window[start : k + 1])
            start = k + 1
    tail = window[start:]
    for n, piece in enumerate(pieces):
        if n == 0:
            assert any(seq[len(seq) - len(piece) :] == piece for seq in sequences), piece
        else:
            assert piece in sequences, piece
    if tail:
        if not pieces:  # the whole window is inside one document
            assert any(any(seq[k : k + len(tail)] == tail for k in range(len(seq))) for seq in sequences), tail
        else:
            assert any(seq[: len(tail)] == tail for seq in sequences), tail


def test_maxtext_blend_syntax_one_spec_per_pair(release, tmp_path):
    root, train, validation = release
    r = recipe(root, "maxtext", SMALL, index_dir=tmp_path / "idx")
    launcher, argv = command(r)[:4], command(r)[4:]
    assert launcher[:3] == ["python", "-m", "maxtext.trainers.pre_train.train"]
    args = dict(a.split("=", 1) for a in argv)
    assert (
        args["grain_file_type"] == "mmap_npy"
        and args["mmap_eod_id"] == str(EOT)
        and args["mmap_split_sentences"] == "false"
    )
    specs = args["grain_train_files"].split(";")
    assert len(specs) == 3
    for k, spec in enumerate(specs):
        index, rest = spec.split("|")
        prefix, weight = rest.rsplit(",", 1)  # MaxText's _parse_weighted_mixture uses rfind(",")
        assert index == str(tmp_path / "idx" / f"train-{k}")
        assert prefix == str(root / "shards" / "train" / f"part-{k:06d}") and os.path.isfile(prefix + ".idx")
        assert int(weight) == sum(len(d) + 1 for d in train[k])
    # a lone pair takes no weight: without ';' MaxText reads the whole string as one spec
    assert (
        args["grain_eval_files"]
        == f"{tmp_path / 'idx' / 'validation-0'}|{root / 'shards' / 'validation' / 'part-000000'}"
    )


def test_findings_of_verify_for_are_carried(release):
    root = release[0]
    r = recipe(root, "modded-nanogpt", SMALL)
    assert {f.rule for f in r.findings} >= {"long-docs"}
    assert all(f.level in ("error", "warning") for f in r.findings)


def test_cli_prints_the_recipe_and_exits_by_findings(release, capsys):
    root = release[0]
    assert main(["recipe", str(root), "--for", "megatron", "-T", "8", "-B", "2"]) == 0
    out = capsys.readouterr().out
    assert "--train-data-path" in out and CHECKED_AGAINST["megatron"] in out
    assert main(["recipe", str(root), "--for", "llmc-llama3", "-T", "8"]) == 1  # seed-000 files: magic-version errors
    assert "magic-version" in capsys.readouterr().out
    assert main(["recipe", str(root / "nowhere"), "--for", "llmc"]) == 1
    assert "no such file or folder" in capsys.readouterr().err


def test_unknown_target_is_one_clear_error(release):
    with pytest.raises(FormatError, match="unknown recipe target"):
        recipe(release[0], "gpt-neox")


@pytest.mark.parametrize(
    "max_tokens, world_size, val_batch, val_tokens",
    [(10_000_000, 1, 2_097_152, 2_097_152), (1_000_001, 1, 2_097_152, 2_097_152), (1_000_001, 8, 524_288, 1_572_864)],
)
def test_modded_nanogpt_val_batches_fit_inside_each_file(tmp_path, max_tokens, world_size, val_batch, val_tokens):
    """Three validation documents of 1,000,000 ids: 3,000,003 tokens, in one file or in three.

    The val loader reads val_batch_size // (8 // world_size) tokens + 1 per micro-batch inside one file: at world
    size 8 a file of 1,000,001 tokens holds no micro-batch of 2,097,152 nor of 1,048,576, one of 524,288.
    """
    rng = np.random.default_rng(5)
    val = [rng.integers(0, EOT, 1_000_000).tolist() for _ in range(3)]
    root = write_release(tmp_path / "rel", [docs(4, 1), docs(4, 2)], [val], VOCAB, EOT, max_tokens=max_tokens)
    r = recipe(root, "modded-nanogpt", LoaderSettings(batch_size=2, seq_len=8, world_size=world_size))
    printed = {
        line.split(":")[0].strip(): line.split("=")[1].strip() for line in r.code if line.strip().startswith("val_")
    }
    assert printed["val_batch_size"] == str(val_batch) and printed["val_tokens"] == str(val_tokens)
    assert int(printed["val_tokens"]) % int(printed["val_batch_size"]) == 0  # train_gpt.py asserts it
    # The printed val_batch_size fixes verify --for's finding: a note of the change, no finding left.
    assert any("for val-tokens" in note for note in r.notes) == (val_batch != 2_097_152)
    assert not any(f.rule == "val-tokens" for f in r.findings)


def test_megatron_tokenizer_flags_follow_the_releases_tokenizer(tmp_path):
    """A built release: the byte tokenizer with its last id as EOD is NullTokenizer; another EOD cannot be."""
    from release_fixtures import stories, write_corpus

    from hf_tokbin.pipeline import build, plan_build
    from hf_tokbin.tokenizer import resolve_tokenizer

    corpus = write_corpus(tmp_path / "corpus", [("train", stories(20, 1)), ("validation", stories(5, 2))])
    for eod, expected in ((255, ["NullTokenizer"]), (0, ["TOKENIZER_TYPE"])):
        out = tmp_path / f"eod{eod}"
        build(plan_build(corpus, resolve_tokenizer("byte", doc_sep_id=eod), out), progress=False)
        r = recipe(out, "megatron", SMALL)
        argv = command(r)
        assert flag_values(argv, "--tokenizer-type") == expected
        if eod == 255:
            assert flag_values(argv, "--vocab-size") == ["255"]
        else:
            assert any("build with --doc-sep-id 255" in n for n in r.notes)
        assert flag_values(argv, "--train-data-path")[1] == str(out / "shards" / "train" / "part-000000")


def test_megatron_hub_tokenizer_is_named_with_its_pinned_revision(release):
    import json

    root = release[0]
    config = json.loads((root / "run_config.json").read_text())
    commit = "a" * 40
    config["tokenizer"].update(
        {"tokenizer_id": "gpt2", "source": "openai-community/gpt2", "revision": commit, "subfolder": None}
    )
    (root / "run_config.json").write_text(json.dumps(config))
    r = recipe(root, "megatron", SMALL)
    argv = command(r)
    assert flag_values(argv, "--tokenizer-type") == ["HuggingFaceTokenizer"]
    assert flag_values(argv, "--tokenizer-model") == ["openai-community/gpt2"]
    assert any(f"eos_token, which must be {EOT}" in n for n in r.notes)
    assert any(f"--revision {commit} --local-dir DIR" in n for n in r.notes)


HOSTILE = {
    "revision": "main\necho pwned > PWNED_REVISION\n",
    "source": "evil/x$(echo pwned > PWNED_SOURCE);echo pwned > PWNED_SEMICOLON",
    "subfolder": "sub`echo pwned > PWNED_SUBFOLDER`",
}


@pytest.mark.parametrize(
    "fields", [{"revision": HOSTILE["revision"]}, {"source": HOSTILE["source"], "subfolder": HOSTILE["subfolder"]}]
)
@pytest.mark.parametrize("target", TARGETS)
def test_a_hostile_releases_recipe_pasted_into_bash_runs_nothing(release, tmp_path, capsys, fields, target):
    """run_config.json written directly (no build, no read-side validation): the printed text is pasted into bash.

    bash runs with an empty PATH, so no command of the recipe itself starts; `echo` and `>` are bash's own,
    so a value that escaped its quoting would leave a PWNED_* file.
    """
    import json
    import subprocess

    root = release[0]
    config = json.loads((root / "run_config.json").read_text())
    config["tokenizer"].update({"source": "openai-community/gpt2", "revision": "a" * 40, **fields})
    (root / "run_config.json").write_text(json.dumps(config))
    try:
        code = main(["recipe", str(root), "--for", target, "-T", "8", "-B", "2"])
    except FormatError:
        code = None
    out, err = capsys.readouterr()
    if "\n" in fields.get("revision", "") and target == "megatron":
        assert code == 1 and out == "" and "control character" in err  # refused, one line
    if out:  # the Python lines (nanoGPT, modded-nanogpt) go into train.py, not the shell: repr() quotes them
        python = recipe(root, target, SMALL).code
        out = "\n".join(line for line in out.splitlines() if line not in python) + "\n"
    shell = tmp_path / "shell"
    shell.mkdir()
    (shell / "bin").mkdir()
    env = {"PATH": str(shell / "bin"), "HOME": str(shell)}
    assert subprocess.run(["/bin/bash", "-n"], input=out, text=True, cwd=shell, env=env).returncode == 0
    subprocess.run(["/bin/bash"], input=out, text=True, cwd=shell, env=env, capture_output=True)
    assert sorted(p.name for p in shell.iterdir()) == ["bin"]  # nothing ran


def test_recipe_json_carries_the_commands_as_argv(release, capsys):
    import json

    root = release[0]
    assert main(["recipe", str(root), "--for", "llmc", "-T", "8", "-B", "2", "--epochs", "2", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    text = recipe(root, "llmc", LoaderSettings(batch_size=2, seq_len=8, epochs=2))
    assert (
        record["commands"] == [list(c) for c in text.commands] and record["checked_against"] == CHECKED_AGAINST["llmc"]
    )
    assert [shlex.join(c) for c in record["commands"]] == record["lines"]
    c_line = record["commands"][0]
    assert c_line[c_line.index("-x") + 1] == str(
        2 * int(recipe(root, "llmc", SMALL).commands[0][c_line.index("-x") + 1])
    )
    assert record["findings"] == [] and record["release"] == str(root)
