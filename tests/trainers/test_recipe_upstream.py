"""Every printed recipe line, parsed as the trainer at the named commit parses it.

The trainers that are not packages (llm.c, modded-nanogpt, nanoGPT, Megatron-LM's
``pretrain_gpt.py``) are recorded below as facts read from their source at the
commit ``CHECKED_AGAINST`` names (fetched with ``git show COMMIT:FILE``): each
flag's name, type and default, and what a default does. A printed line is parsed
against that record the way the program parses its own command line (argparse,
llm.c's C option loop, nanoGPT's ``configurator.py``), so a line naming a flag the
program lacks, or leaving a flag at a default that trains on one batch, loads a
pretrained model or reads another dataset, fails here. torchrun's argv goes
through ``torch.distributed.run``'s own parser.
"""

from __future__ import annotations

import argparse
import ast

import numpy as np
import pytest
from consumer_fixtures import docs_of, write_release

from hf_tokbin.formats import llmc, megatron
from hf_tokbin.trainers import CHECKED_AGAINST, LoaderSettings, recipe
from hf_tokbin.trainers.llmc_files import llmc_batches

VOCAB, EOT = 50257, 50256

# karpathy/llm.c f1e2ace651495b74ae22d45d1723443fd00ecd3a train_gpt2.py (and train_llama3.py) argparse: name -> (type,
# default).
TRAIN_GPT2_PY = {
    "input_bin": (str, "dev/data/tinyshakespeare/tiny_shakespeare_val.bin"),  # another dataset
    "input_val_bin": (str, ""),
    "output_dir": (str, ""),
    "model": (str, "gpt2"),  # OpenAI's pretrained GPT-2; "d12".."d48" are random weights
    "batch_size": (int, 4),
    "sequence_length": (int, 64),
    "total_batch_size": (int, 256),
    "num_iterations": (int, 10),
    "inference_only": (int, 0),
    "learning_rate": (float, 1e-4),
    "warmup_iters": (int, 0),
    "learning_rate_decay_frac": (float, 1.0),
    "weight_decay": (float, 0.0),
    "grad_clip": (float, 1.0),
    "val_loss_every": (int, 0),
    "val_max_steps": (int, 20),
    "sample_every": (int, 0),
    "overfit_single_batch": (int, 1),  # 1: train_loader.reset() before every step, one batch forever
    "tensorcores": (int, 0),
    "device": (str, ""),
    "compile": (int, 0),
    "flash": (int, 0),
    "dtype": (str, "float32"),
    "zero_stage": (int, 0),
    "write_tensors": (int, 1),  # 1: writes gpt2_124M.bin etc. and a debug state before training
}
TRAIN_GPT2_PY_MODELS = {"gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "d12", "d24", "d36", "d48"}  # asserted
TRAIN_LLAMA3_PY = {
    **{k: v for k, v in TRAIN_GPT2_PY.items() if k != "flash"},
    "model": (str, "meta-llama/Meta-Llama-3.1-8B"),
    "use_hf": (int, 1),
    "ckpt_dir": (str, None),
    "tokenizer_path": (str, None),
    "learning_rate": (float, 1e-5),
    "dtype": (str, "bfloat16"),
    "write_tensors": (int, 0),
}
# train_gpt2.cu main(): the option loop reads "-x VALUE" pairs (one dash, one or two letters); letter(s) -> (variable,
# default).
TRAIN_GPT2_CU = {
    "i": ("train_data_pattern", "dev/data/tinyshakespeare/tiny_shakespeare_train.bin"),
    "j": ("val_data_pattern", "dev/data/tinyshakespeare/tiny_shakespeare_val.bin"),
    "e": ("load_filename", "gpt2_124M_bf16.bin"),  # a .bin loads those weights; "d12" is a descriptor: random init
    "o": ("output_log_dir", None),
    "b": ("B", 4),
    "t": ("T", 1024),
    "d": ("total_batch_size", -1),
    "x": ("max_steps", -1),
    "v": ("val_loss_every", 20),  # step % val_loss_every: 0 divides by zero
    "m": ("val_max_steps", 20),
    "s": ("sample_every", 20),
    "a": ("overfit_single_batch", 0),
    "l": ("learning_rate", 3e-4),
    "u": ("warmup_iterations", 0),
    "h": ("hellaswag_eval", 0),
    "z": ("zero_stage", 0),
}
# KellerJordan/modded-nanogpt f411b3d346aa52d3504324ca93c230fd84c6c07f train_gpt.py class Hyperparameters: name ->
# type.
MODDED_HYPERPARAMETERS = {
    "train_files": str,
    "val_files": str,
    "val_tokens": int,
    "val_batch_size": int,
    "num_scheduled_iterations": int,
    "num_extension_iterations": int,
    "run_id": str,
    "val_loss_every": int,
    "save_checkpoint": bool,
    "run_evals": bool,
    "bigram_vocab_size": int,
    "bigram_dim": int,
    "bigram_sign_table_rows": int,
}
MODDED_TRAIN_MAX_NUM_DOCS_KEYS = {16384, 32768, 49152}
MODDED_BOS_ID = 50256
# distributed_data_generator: max_num_docs = TRAIN_MAX_NUM_DOCS.get(num_tokens_local,
# next_multiple_of_n(num_tokens_local // 300, n=128)),
# for the val loader too (num_tokens_local = val_batch_size // 8); a micro-batch with as many BOS as slots or more
# fails.
MODDED_DEFAULT_MAX_NUM_DOCS = lambda num_tokens_local: -(-(num_tokens_local // 300) // 128) * 128  # noqa: E731
# train_gpt.py TRAINING_STAGES: (duration, batch_size, train_max_seq_len); the last is the extension stage. A step is
# grad_accum_steps = 8 // world_size calls of the train loader, each taking batch_size // 8 tokens + 1 per process.
MODDED_TRAINING_STAGES = [
    (1 / 3, 8 * 2048 * 8, 896),
    (1 / 3, 16 * 2048 * 8, 2048),
    (1 / 3, 24 * 2048 * 8, 2048),
    (None, 24 * 2048 * 8, 2048),
]
# karpathy/nanoGPT 3adf61e154c3fe3fca428ad6bc3818b27a3b8291 train.py globals configurator.py may override: name ->
# default.
NANOGPT_CONFIG = {
    "out_dir": "out", "eval_interval": 2000, "log_interval": 1, "eval_iters": 200, "eval_only": False,
    "always_save_checkpoint": True, "init_from": "scratch", "wandb_log": False, "wandb_project": "owt",
    "wandb_run_name": "gpt2", "dataset": "openwebtext", "gradient_accumulation_steps": 40, "batch_size": 12,
    "block_size": 1024, "n_layer": 12, "n_head": 12, "n_embd": 768, "dropout": 0.0, "bias": False,
    "learning_rate": 6e-4, "max_iters": 600000, "weight_decay": 1e-1, "beta1": 0.9, "beta2": 0.95,
    "grad_clip": 1.0, "decay_lr": True, "warmup_iters": 2000, "lr_decay_iters": 600000, "min_lr": 6e-5,
    "backend": "nccl", "device": "cuda", "dtype": "bfloat16", "compile": True,
}  # fmt: skip
# NVIDIA/Megatron-LM core_v0.16.1 (55ac7082) megatron/training arguments.py / training_config.py: the flags recipes
# print.
MEGATRON_FLAGS = {
    "--train-data-path": {"nargs": "*"},
    "--valid-data-path": {"nargs": "*"},
    "--seq-length": {"type": int},
    "--micro-batch-size": {"type": int},
    "--global-batch-size": {"type": int},
    "--train-samples": {"type": int},
    "--train-iters": {"type": int},
    "--seed": {"type": int, "default": 1234},
    "--eval-iters": {"type": int, "default": 100},
    "--eval-interval": {"type": int},
    "--tokenizer-type": {"type": str},
    "--tokenizer-model": {"type": str},
    "--vocab-size": {"type": int},
    "--reset-position-ids": {"action": "store_true"},
    "--reset-attention-mask": {"action": "store_true"},
    "--eod-mask-loss": {"action": "store_true"},
}


def docs(n, seed, low=3, high=14):
    return docs_of(np.random.default_rng(seed), n, VOCAB, low, high, avoid=EOT)


@pytest.fixture(params=["with-val", "no-val"])
def release(tmp_path, request):
    validation = [docs(30, 4)] if request.param == "with-val" else []
    root = write_release(tmp_path / "rel", [docs(40, 1), docs(25, 2)], validation, VOCAB, EOT, max_tokens=200)
    return root, bool(validation)


SETTINGS = [LoaderSettings(batch_size=2, seq_len=8), LoaderSettings(batch_size=1, seq_len=4, world_size=2, epochs=3)]


def torchrun(argv: list[str]):
    """``argv`` parsed by torchrun's own parser: (its namespace, the script's argv)."""
    from torch.distributed.run import get_args_parser

    assert argv[0] == "torchrun"
    ns = get_args_parser().parse_args(argv[1:])
    return ns, [ns.training_script, *ns.training_script_args]


def launched(argv: list[str], s: LoaderSettings) -> list[str]:
    """The script's argv of a ``python SCRIPT`` or ``torchrun ... SCRIPT`` line, checking the launcher starts N
    processes."""
    if s.world_size == 1 and argv[0] == "python":
        return argv[1:]
    ns, script = torchrun(argv)
    assert ns.standalone and int(ns.nproc_per_node) == s.world_size and not ns.no_python and not ns.module
    assert script[0].endswith(
        ".py"
    )  # torchrun runs the script itself: `torchrun ... python X.py` made `python` the script
    return script


def argparse_of(table: dict) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(exit_on_error=False)
    for name, (kind, default) in table.items():
        parser.add_argument(f"--{name}", type=kind, default=default)
    return parser


def release_batches(root, split, s: LoaderSettings) -> int:
    folder = root / "tokens" / "tok" / "toy"
    manifest = llmc.TokensManifest.read(folder / llmc.MANIFEST_NAME)
    sizes = [f.n_tokens for f in manifest.files if f.split == split]
    return llmc_batches(sizes, s.batch_size * s.seq_len * s.world_size)


@pytest.mark.parametrize("s", SETTINGS)
def test_train_gpt2_py_line_trains_from_scratch_on_every_batch(release, s):
    root, has_val = release
    r = recipe(root, "llmc", s)
    script = launched(list(r.commands[1]), s)
    assert script[0] == "train_gpt2.py"
    args = argparse_of(TRAIN_GPT2_PY).parse_args(script[1:])  # an unknown flag raises
    assert args.overfit_single_batch == 0 and args.write_tensors == 0
    assert args.model in TRAIN_GPT2_PY_MODELS and args.model.startswith("d")  # random weights
    assert args.input_bin != TRAIN_GPT2_PY["input_bin"][1]
    assert 1 <= args.sequence_length <= 1024 and args.total_batch_size % (s.batch_size * s.seq_len * s.world_size) == 0
    steps = args.num_iterations * args.total_batch_size // (s.batch_size * s.seq_len * s.world_size)
    assert steps == s.epochs * release_batches(root, "train", s) > 0
    if has_val:
        assert args.val_loss_every > 0 and args.val_max_steps == release_batches(root, "val", s)
    else:
        assert args.input_val_bin == "" and args.val_loss_every == 0  # no val loader at all


@pytest.mark.parametrize("s", SETTINGS)
def test_train_gpt2_cu_line_reads_only_the_release(release, s):
    root, has_val = release
    r = recipe(root, "llmc", s)
    argv = list(r.commands[0])
    if s.world_size > 1:
        assert argv[:3] == ["mpirun", "-np", str(s.world_size)]
        argv = argv[3:]
    assert argv[0] == "./train_gpt2cu" and len(argv) % 2 == 1
    values = {}
    for flag, value in zip(argv[1::2], argv[2::2]):  # the C loop: i += 2, "-x" or "-xy"
        assert flag.startswith("-") and len(flag) in (2, 3) and flag[1:] in TRAIN_GPT2_CU, flag
        values[flag[1:]] = value
    given = {TRAIN_GPT2_CU[k][0]: v for k, v in values.items()}
    assert {"train_data_pattern", "val_data_pattern", "load_filename", "max_steps"} <= set(given)
    assert not given["load_filename"].endswith(".bin")  # a descriptor: random weights
    assert given["val_data_pattern"] != TRAIN_GPT2_CU["j"][1] and int(given["val_loss_every"]) > 0
    assert int(given["total_batch_size"]) == s.batch_size * s.seq_len * s.world_size
    assert int(given["max_steps"]) == s.epochs * release_batches(root, "train", s)
    assert int(given["val_max_steps"]) == (release_batches(root, "val", s) if has_val else 0)
    assert given.get("overfit_single_batch", "0") == "0" and given["sample_every"] == "0"


def test_train_llama3_py_line_names_its_only_model_and_every_batch(release):
    root, _ = release
    s = SETTINGS[1]
    r = recipe(root, "llmc-llama3", s)
    script = launched(list(r.commands[0]), s)
    args = argparse_of(TRAIN_LLAMA3_PY).parse_args(script[1:])
    assert script[0] == "train_llama3.py" and args.overfit_single_batch == 0
    assert args.model == "meta-llama/Meta-Llama-3.1-8B" and any("no from-scratch option" in n for n in r.notes)
    assert args.num_iterations == s.epochs * release_batches(root, "train", s)


@pytest.mark.parametrize("s", SETTINGS)
def test_nanogpt_line_is_read_by_its_configurator(release, s):
    root, has_val = release
    r = recipe(root, "nanogpt", s)
    script = launched(list(r.commands[0]), s)
    assert script[0] == "train.py"
    config = dict(NANOGPT_CONFIG)
    for arg in script[1:]:  # configurator.py, as it reads sys.argv
        assert arg.startswith("--") and "=" in arg
        key, val = arg.split("=")
        key = key[2:]
        assert key in config, f"Unknown config key: {key}"
        try:
            attempt = ast.literal_eval(val)
        except (SyntaxError, ValueError):
            attempt = val
        assert type(attempt) is type(config[key]), key
        config[key] = attempt
    assert config["init_from"] == "scratch"
    assert config["gradient_accumulation_steps"] % s.world_size == 0
    per_step = config["gradient_accumulation_steps"] * config["batch_size"] * config["block_size"]
    train_tokens = sum(
        f.n_tokens
        for f in llmc.TokensManifest.read(root / "tokens/tok/toy/_MANIFEST.json").files
        if f.split == "train"
    )
    assert config["max_iters"] == config["lr_decay_iters"] == s.epochs * train_tokens // per_step
    assert config["warmup_iters"] <= config["max_iters"] and config["eval_interval"] <= config["max_iters"]


@pytest.mark.parametrize("s", SETTINGS)
def test_modded_nanogpt_lines_name_its_hyperparameters(release, s):
    root, has_val = release
    r = recipe(root, "modded-nanogpt", s)
    (command,) = r.commands
    ns, script = torchrun(list(command))
    assert script == ["train_gpt.py"] and int(ns.nproc_per_node) == s.world_size
    for line in r.code:
        if line.startswith("#"):
            continue
        if line.startswith("TRAIN_MAX_NUM_DOCS"):
            assert MODDED_TRAIN_MAX_NUM_DOCS_KEYS <= set(ast.literal_eval(line.split("=", 1)[1].strip()))
            continue
        name, rest = line.strip().split(": ", 1)
        kind, value = rest.split(" = ", 1)
        assert MODDED_HYPERPARAMETERS[name].__name__ == kind
        assert isinstance(ast.literal_eval(value), MODDED_HYPERPARAMETERS[name])


def test_modded_nanogpt_short_documents_get_room_in_the_table(tmp_path):
    rng = np.random.default_rng(3)
    short = [rng.integers(0, EOT, 140).tolist() for _ in range(300)]
    root = write_release(tmp_path / "rel", [short, short], [short], VOCAB, EOT)
    r = recipe(root, "modded-nanogpt", LoaderSettings(seq_len=896))
    (line,) = [c for c in r.code if c.startswith("TRAIN_MAX_NUM_DOCS")]
    table = ast.literal_eval(line.split("=", 1)[1].strip())
    assert table[16384] >= -(-16385 // 141) + 1  # the documents of one micro-batch, plus the slot train_gpt.py keeps
    # The printed table fixes verify --for's finding: a note of the change, no error left.
    assert any("for documents-per-micro-batch" in note for note in r.notes)
    assert not any(f.rule == "documents-per-micro-batch" for f in r.findings)


def megatron_args(r):
    (argv,) = r.commands
    ns, script = torchrun(list(argv))
    assert script[0] == "pretrain_gpt.py" and ns.standalone
    parser = argparse.ArgumentParser(exit_on_error=False)
    for flag, kw in MEGATRON_FLAGS.items():
        parser.add_argument(flag, **kw)
    return parser.parse_args(script[1:])


@pytest.mark.parametrize("eod_loss", ["train", "mask"])
def test_megatron_line_parses_and_its_samples_cover_the_release(release, tmp_path, eod_loss):
    pytest.importorskip("megatron.core.datasets.blended_megatron_dataset_builder")
    import torch.distributed as dist
    from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
    from megatron.core.datasets.utils import get_blend_from_list
    from megatron.core.tokenizers.text.libraries.null_tokenizer import NullTokenizer

    root, has_val = release
    s = LoaderSettings(batch_size=2, seq_len=8, world_size=2, eod_loss=eod_loss)
    r = recipe(root, "megatron", s)
    args = megatron_args(r)
    assert args.train_iters is None and args.train_samples > 0  # sample-based, as validate_args wants one of them
    assert args.eod_mask_loss == (eod_loss == "mask")
    assert (args.eval_iters > 0) == has_val and (args.valid_data_path is not None) == has_val
    assert args.global_batch_size == s.batch_size * s.world_size
    config = GPTDatasetConfig(
        random_seed=args.seed,
        sequence_length=args.seq_length,
        blend_per_split=[get_blend_from_list(args.train_data_path), get_blend_from_list(args.valid_data_path), None],
        path_to_cache=None,
        tokenizer=NullTokenizer(args.vocab_size),
        reset_position_ids=args.reset_position_ids,
        reset_attention_mask=args.reset_attention_mask,
        eod_mask_loss=args.eod_mask_loss,
    )
    sizes = [args.train_samples, args.eval_iters * args.global_batch_size if has_val else None, None]
    assert not dist.is_initialized()
    train_ds, valid_ds, _ = BlendedMegatronDatasetBuilder(GPTDataset, sizes, lambda: True, config).build()
    assert len(train_ds) >= args.train_samples  # the blend may round up; training reads the first train_samples
    # Every pair gives one epoch of distinct samples: (tokens - 1) // seq_length each, give or take the blend's
    # rounding.
    weights = [int(w) for w in args.train_data_path[0::2]]
    drawn = np.asarray(train_ds.dataset_index[: args.train_samples])
    for k, tokens in enumerate(weights):
        picked = np.asarray(train_ds.dataset_sample_index[: args.train_samples])[drawn == k]
        assert len(np.unique(picked)) == len(picked)  # distinct batches
        assert abs(len(picked) - (tokens - 1) // args.seq_length) <= 1
    if has_val:
        assert len(valid_ds) >= args.eval_iters * args.global_batch_size


def test_maxtext_and_megatron_use_the_same_eod_loss_policy(release):
    root, _ = release
    for policy, flag in (("train", "false"), ("mask", "true")):
        s = LoaderSettings(batch_size=2, seq_len=8, eod_loss=policy)
        maxtext = dict(line.rstrip(" \\").strip("'").split("=", 1) for line in recipe(root, "maxtext", s).lines[1:])
        assert maxtext["eod_mask_loss"] == flag
        assert megatron_args(recipe(root, "megatron", s)).eod_mask_loss == (policy == "mask")
        llmc_recipe = recipe(root, "llmc", s)
        refused = [f for f in llmc_recipe.findings if f.rule == "eod-loss"]
        assert [f.level for f in refused] == (
            ["error"] if policy == "mask" else []
        )  # llm.c cannot mask: refused, not ignored


def test_every_target_names_the_commit_of_its_facts():
    for target, commit in (
        ("llmc", "f1e2ace651495b74ae22d45d1723443fd00ecd3a"),
        ("modded-nanogpt", "f411b3d346aa52d3504324ca93c230fd84c6c07f"),
        ("nanogpt", "3adf61e154c3fe3fca428ad6bc3818b27a3b8291"),
        ("megatron", "55ac7082517c3878ae653c07c09c534b8aed49f6"),
    ):
        assert commit in CHECKED_AGAINST[target]


def modded_train_loader_serves(files: list[np.ndarray], scheduled: int, extension: int, world_size: int) -> bool:
    """Whether train_gpt.py's train loader serves every call of the schedule, read document by document as its
    ``Shard.next_batch`` does (a window per BOS, cut at max_seq_len and at the micro-batch's end; a shard without
    enough BOS ahead is left for the next file) and ``distributed_data_generator`` (files in order, no second pass)."""
    from itertools import accumulate

    ends = [
        0,
        *[round(c * scheduled) for c in accumulate(d for d, _, _ in MODDED_TRAINING_STAGES[:-1])],
        scheduled + extension,
    ]
    stage_of = lambda step: MODDED_TRAINING_STAGES[next(k for k, end in enumerate(ends[1:]) if step < end)][1:]  # noqa: E731
    shards = iter(files)
    tokens, i = next(shards), 0
    sent = MODDED_TRAINING_STAGES[0][
        1:
    ]  # distributed_data_generator(TRAINING_STAGES[0].batch_size, ...train_max_seq_len)
    manager = stage_of(0) if ends[-1] else sent  # TrainingManager.reset: training_schedule.lookup(0)
    for step in range(ends[-1]):
        if stage_of(step) != manager:  # advance_schedule: train_loader_send_args
            sent = manager = stage_of(step)
        batch_size, max_seq_len = sent
        for _ in range(8 // world_size):
            while (taken := _next_batch(tokens, i, batch_size // 8, max_seq_len, world_size)) is None:
                tokens, i = next(shards, None), 0
                if tokens is None:
                    return False  # the generator's next_shard_getter is None: TypeError
            i = taken
    return True


def _next_batch(tokens: np.ndarray, i: int, num_tokens_local: int, max_seq_len: int, world_size: int) -> int | None:
    bos = np.flatnonzero(tokens == MODDED_BOS_ID).tolist()
    idx = i
    for _ in range(world_size):
        cur_len = 0
        while cur_len <= num_tokens_local:
            if idx >= len(bos):
                return None
            cur = bos[idx]
            idx += 1
            end = min(
                bos[idx] if idx < len(bos) else tokens.size, cur + max_seq_len, cur + num_tokens_local - cur_len + 1
            )
            cur_len += end - cur
    return idx


@pytest.mark.slow
@pytest.mark.parametrize("world_size", [1, 8])
def test_modded_nanogpt_steps_are_served_by_its_loader_with_long_documents(tmp_path, world_size):
    """Documents longer than train_max_seq_len give the loader fewer tokens than they hold (each window is cut at
    896, then 2,048, and the rest of the document is skipped), and each file's tail is left when a micro-batch no
    longer fits:
    the printed steps must be ones the loader serves (ran by hand: the 2 steps printed for 280 documents of 3,000-6,000
    tokens ran out in step 1 with 'NoneType' object is not callable)."""
    rng = np.random.default_rng(11)
    long_docs = docs_of(rng, 320, VOCAB, 3000, 6000, avoid=EOT)
    root = write_release(
        tmp_path / "rel", [long_docs[:160], long_docs[160:]], [docs(30, 4)], VOCAB, EOT, max_tokens=750_000
    )
    r = recipe(root, "modded-nanogpt", LoaderSettings(world_size=world_size))
    values = {
        line.strip().split(":")[0]: int(line.rsplit("= ", 1)[1]) for line in r.code if "_iterations: int" in line
    }
    scheduled, extension = values["num_scheduled_iterations"], values["num_extension_iterations"]
    files = [llmc.open_tokens(f) for f in sorted((root / "tokens/tok/toy").glob("train-*.bin"))]
    assert len(files) >= 2 and scheduled >= 1
    assert modded_train_loader_serves(files, scheduled, extension, world_size)
    assert not modded_train_loader_serves(files, scheduled + 1, extension, world_size)  # and it reads about all it can


def modded_val_bos_most(files: list[np.ndarray], val_tokens: int, val_batch_size: int, world_size: int) -> int:
    """The most BOS in one process's val micro-batch, as the val loader (align_to_bos=False) reads its val_steps
    calls."""
    grad_accum = 8 // world_size
    num_tokens = val_batch_size // grad_accum
    local = num_tokens // world_size
    shards = iter(files)
    tokens, pos, most = next(shards), 0, 0
    for _ in range(grad_accum * val_tokens // val_batch_size):
        if pos + num_tokens + 1 >= len(tokens):
            tokens, pos = next(shards), 0
        for rank in range(world_size):
            inputs = tokens[pos + rank * local : pos + rank * local + local]
            most = max(most, int(np.count_nonzero(inputs == MODDED_BOS_ID)))
        pos += num_tokens
    return most


@pytest.mark.slow
def test_modded_nanogpt_val_micro_batches_of_short_documents_get_room_in_the_table(tmp_path):
    """Ran by hand: a val split of 2.2 M tokens in ~140-token documents got val_batch_size 1,048,576 and the default
    table: the first validation (step 0) failed with 'The expanded size of the tensor (511) must match the existing
    size (958)'."""
    rng = np.random.default_rng(5)
    short = lambda n: [rng.integers(0, EOT, 140).tolist() for _ in range(n)]  # noqa: E731
    root = write_release(tmp_path / "rel", [short(5000), short(5000)], [short(8600)], VOCAB, EOT, max_tokens=1_300_000)
    r = recipe(root, "modded-nanogpt", LoaderSettings(seq_len=896))
    values = {line.strip().split(":")[0]: line.rsplit("= ", 1)[1] for line in r.code if ": int = " in line}
    val_tokens, val_batch = int(values["val_tokens"]), int(values["val_batch_size"])
    (line,) = [c for c in r.code if c.startswith("TRAIN_MAX_NUM_DOCS")]
    table = ast.literal_eval(line.split("=", 1)[1].strip())
    local = val_batch // 8
    files = [llmc.open_tokens(f) for f in sorted((root / "tokens/tok/toy").glob("val-*.bin"))]
    assert modded_val_bos_most(files, val_tokens, val_batch, 1) + 1 <= table.get(
        local, MODDED_DEFAULT_MAX_NUM_DOCS(local)
    )


# maxtext 0.2.5 (PyPI; Python >= 3.12, so not in this project's test extras) configs/base.yml: key -> default. Read by
# hand: pyconfig.initialize(["train.py", base.yml, *the recipe's key=value lines, "hardware=cpu",
# "skip_jax_distributed_system=true"]) accepted every printed key; trainers/pre_train/train.py evaluates only when
# eval_interval > 0, and make_grain_eval_iterator draws eval_steps * global batch samples per evaluation.
MAXTEXT_CONFIG = {
    "dataset_type": "synthetic", "grain_file_type": "arrayrecord", "grain_train_files": "", "grain_eval_files": "",
    "mmap_eod_id": 0, "mmap_split_sentences": False, "max_target_length": 2048, "per_device_batch_size": 12.0,
    "steps": 150_001, "data_shuffle_seed": 0, "reset_attention_mask": True, "eod_mask_loss": False,
    "packing_max_segments_per_sample": 25, "tokenizer_type": "sentencepiece", "tokenizer_path": "", "run_name": "",
    "eval_interval": -1, "eval_steps": -1, "vocab_size": 32_000, "hardware": "tpu",
}  # fmt: skip


def maxtext_config(lines: list[str]) -> dict:
    """The printed ``key=value`` lines over MaxText's defaults; a key base.yml lacks fails (pyconfig refuses it)."""
    import shlex

    config = dict(MAXTEXT_CONFIG)
    assert lines[0].startswith(
        "python -m maxtext.trainers.pre_train.train "
    )  # the launcher and base.yml, then the keys
    for arg in shlex.split(" ".join(line.rstrip("\\").strip() for line in lines[1:])):
        key, value = arg.split("=", 1)
        assert key in MAXTEXT_CONFIG, f"not a MaxText 0.2.5 key: {key}"
        config[key] = value
    return config


def test_maxtext_lines_wire_validation_over_the_whole_split(release):
    root, has_val = release
    s = LoaderSettings(batch_size=2, seq_len=8)
    config = maxtext_config(list(recipe(root, "maxtext", s).lines))
    assert config["grain_file_type"] == "mmap_npy" and int(config["steps"]) > 0
    assert (
        config["run_name"] == ""
    )  # MaxText then names the run {model_name}_{date-time}: a new run, never a resumed one
    if has_val:
        pairs = [megatron.MegatronPair(idx) for idx in sorted((root / "shards" / "validation").glob("*.idx"))]
        val_samples = sum(
            max(0, p.n_tokens - 1) // s.seq_len for p in pairs
        )  # GPTDataset's / mmap_npy's samples per pair
        assert config["grain_eval_files"] and int(config["eval_interval"]) > 0  # -1 never evaluates
        assert int(config["eval_steps"]) == val_samples // s.batch_size > 0  # the whole split, once per evaluation
    else:
        assert config["grain_eval_files"] == "" and int(config["eval_interval"]) == -1
