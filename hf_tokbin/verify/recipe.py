"""``hf-tokbin recipe RELEASE --for TARGET``: the exact flags or config lines to train on a release.

A release can pass ``verify`` and still be read wrongly by a trainer started
with the wrong glob, a Megatron blend without weights, a tokenizer whose EOD is
not the release's, or MaxText's folder form where only its blend form gives
Megatron's order. :func:`recipe` writes, from the release's own files, what to
pass to each trainer, names the version of the trainer's source it was checked
against (:data:`CHECKED_AGAINST`), and carries every finding of
``verify --for`` (:mod:`hf_tokbin.verify.compat`, which holds the per-trainer
rules) that is a warning or an error.

Every path printed is absolute, shell lines are quoted with :func:`shlex.quote`
and Python lines with :func:`repr`, so the lines can be pasted as they are.
The globs printed for llm.c, modded-nanogpt and nanoGPT are globbed here and
must select exactly the manifest's files of the split, in its order (a
``glob`` error finding otherwise).
"""

from __future__ import annotations

import glob
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from .._io import read_json
from ..errors import FormatError
from ..formats import llmc, megatron
from ..formats.release import RUN_CONFIG_NAME, SHARDS_DIR, SPLITS
from ..readers.views import find_megatron_pairs
from . import compat
from .compat import ERROR, WARNING, Finding, LoaderSettings

# What each recipe was read from: the trainer's source at this version.
CHECKED_AGAINST = {
    "llmc": "karpathy/llm.c f1e2ace651495b74ae22d45d1723443fd00ecd3a (2025-05-10): train_gpt2.cu main(), train_gpt2.py, llmc/dataloader.h",
    "llmc-llama3": "karpathy/llm.c f1e2ace651495b74ae22d45d1723443fd00ecd3a (2025-05-10): train_llama3.py",
    "modded-nanogpt": "KellerJordan/modded-nanogpt f411b3d346aa52d3504324ca93c230fd84c6c07f (2026-08-01): train_gpt.py Hyperparameters, distributed_data_generator",
    "megatron": "megatron-core 0.16.1 (Megatron-LM tag core_v0.16.1, 55ac7082517c3878ae653c07c09c534b8aed49f6): megatron/training/arguments.py, utils.py get_blend_and_blend_per_split, pretrain_gpt.py",
    "maxtext": "maxtext 0.2.5 from PyPI (Python >= 3.12): input_pipeline/_mmap_datasource.py, configs/base.yml; MaxText's git main at e591f30cbbf2 (2026-08-22) has no Megatron reader",
    "nanogpt": "karpathy/nanoGPT 3adf61e154c3fe3fca428ad6bc3818b27a3b8291 (2025-11-12): train.py get_batch",
}
TARGETS = tuple(CHECKED_AGAINST)
MEGATRON_SEED = 1234  # Megatron-LM --seed default; MaxText's mmap_npy seed default is the same
MODDED_NANOGPT_VAL_BATCH = 4 * 64 * 1024 * 8  # train_gpt.py Hyperparameters.val_batch_size
MODDED_NANOGPT_VAL_TOKENS = 10485760  # train_gpt.py Hyperparameters.val_tokens


@dataclass(frozen=True)
class Recipe:
    """What to pass to one trainer for one release, and what ``verify --for`` found."""

    target: str
    release: Path
    lines: tuple[str, ...]  # the command or config lines, to paste as they are
    notes: tuple[str, ...]  # settings the lines cannot carry (tokenizer, order, versions)
    findings: tuple[Finding, ...] = field(default=())  # warnings and errors of verify --for

    @property
    def checked_against(self) -> str:
        return CHECKED_AGAINST[self.target]

    def has_errors(self) -> bool:
        return compat.has_errors(self.findings)

    def text(self) -> str:
        out = [
            f"# hf-tokbin recipe --for {self.target}: {self.release}",
            f"# checked against {self.checked_against}",
            *self.lines,
        ]
        out += [f"# note: {n}" for n in self.notes]
        out += [f"# {f}" for f in self.findings]
        return "\n".join(out) + "\n"


@dataclass(frozen=True)
class _Tokenizer:
    """``run_config.json``'s tokenizer fields a recipe names (any may be unknown)."""

    tokenizer_id: str | None
    source: str | None  # "byte", "local" or a Hub repo id
    revision: str | None
    subfolder: str | None
    vocab_size: int | None
    eod_id: int | None


def _read_tokenizer(root: Path) -> _Tokenizer:
    path = root / RUN_CONFIG_NAME
    if not path.is_file():
        return _Tokenizer(None, None, None, None, None, None)
    eod_id, vocab_size = compat._run_config_ids(path)
    tokenizer = read_json(path, FormatError).get("tokenizer")
    tokenizer = tokenizer if isinstance(tokenizer, dict) else {}

    def text(name):
        value = tokenizer.get(name)
        return value if isinstance(value, str) and value else None

    return _Tokenizer(text("tokenizer_id"), text("source"), text("revision"), text("subfolder"), vocab_size, eod_id)


def recipe(
    path: str | os.PathLike,
    target: str,
    settings: LoaderSettings = LoaderSettings(),
    index_dir: str | os.PathLike | None = None,
) -> Recipe:
    """The recipe of ``target`` for the release (or token folder) at ``path``.

    ``index_dir`` is where MaxText's ``mmap_npy`` builds its index files
    (default ``RELEASE/.maxtext-index``: hidden, so no part of the release).
    """
    if target not in CHECKED_AGAINST:
        raise FormatError(None, "unknown recipe target", expected=", ".join(TARGETS), got=target)
    root = Path(path).resolve()
    if not root.exists():
        raise FormatError(root, "no such file or folder")
    findings = [f for f in compat.check(root, target, settings) if f.level in (ERROR, WARNING)]
    if target == "megatron":
        lines, notes = _megatron(root, settings)
    elif target == "maxtext":
        lines, notes = _maxtext(root, settings, Path(index_dir).resolve() if index_dir else root / ".maxtext-index")
    else:
        globs = _llmc_globs(root, findings)
        lines, notes = _LLMC_RECIPES[target](root, globs, settings)
    return Recipe(target, root, tuple(lines), tuple(notes), tuple(findings))


# ------------------------------------------------------------------ llm.c token files


def _llmc_globs(root: Path, findings: list[Finding]) -> dict[str, tuple[str, list[Path]]]:
    """Per llm.c split ("train", "val"): the glob selecting its files, and the files in manifest order.

    The glob is checked here: it must select exactly those files, and sorted
    (as every loader sorts) in the manifest's order.
    """
    inputs = compat._llmc_inputs(root)
    globs = {}
    for split, files in inputs.splits:
        if not files:
            continue
        folder = files[0].parent
        # A lone file is its own pattern; a split is every ``<split>-*.bin`` of the folder (the writer's names).
        pattern = (
            glob.escape(str(files[0])) if split is None else os.path.join(glob.escape(str(folder)), f"{split}-*.bin")
        )
        selected = sorted(glob.glob(pattern))
        if selected != [str(f) for f in files]:
            extra = sorted(set(selected) - {str(f) for f in files})
            problem = f"also selects {extra[:3]}" if extra else "does not select the manifest's files in their order"
            findings.append(
                Finding(ERROR, str(folder), "glob", f"the glob {pattern} {problem}: move the other files away")
            )
        globs[split or "train"] = (pattern, files)
    if "train" not in globs:
        raise FormatError(root, "no llm.c train files", hint="build with --format llmc")
    return globs


def _world(settings: LoaderSettings, command: list[str], launcher: list[str]) -> list[str]:
    return launcher + command if settings.world_size > 1 else command


def _llmc(root: Path, globs: dict, s: LoaderSettings) -> tuple[list[str], list[str]]:
    train, val = globs["train"][0], globs.get("val", (None,))[0]
    total = s.batch_size * s.seq_len * s.world_size
    c = (
        ["./train_gpt2cu", "-i", train]
        + (["-j", val] if val else [])
        + ["-b", str(s.batch_size), "-t", str(s.seq_len), "-d", str(total)]
    )
    py = ["python", "train_gpt2.py", "--input_bin", train] + (["--input_val_bin", val] if val else [])
    py += ["--batch_size", str(s.batch_size), "--sequence_length", str(s.seq_len), "--total_batch_size", str(total)]
    lines = [
        shlex.join(_world(s, c, ["mpirun", "-np", str(s.world_size)])),
        shlex.join(_world(s, py, ["torchrun", "--standalone", f"--nproc_per_node={s.world_size}"])),
    ]
    notes = [
        "-d / --total_batch_size is B*T*world_size (one step, no gradient accumulation); a multiple of it accumulates",
        "train_gpt2.cu shuffles the file order and the B*T windows inside each file every epoch (dataloader.h, permute_train_loader); "
        "train_gpt2.py reads the files in sorted-name order, the manifest's, from start to end: documents come in the release's order",
    ]
    return lines, notes


def _llmc_llama3(root: Path, globs: dict, s: LoaderSettings) -> tuple[list[str], list[str]]:
    train, val = globs["train"][0], globs.get("val", (None,))[0]
    total = s.batch_size * s.seq_len * s.world_size
    py = ["python", "train_llama3.py", "--input_bin", train] + (["--input_val_bin", val] if val else [])
    py += ["--batch_size", str(s.batch_size), "--sequence_length", str(s.seq_len), "--total_batch_size", str(total)]
    lines = [shlex.join(_world(s, py, ["torchrun", "--standalone", f"--nproc_per_node={s.world_size}"]))]
    notes = [
        "--model (default meta-llama/Meta-Llama-3.1-8B) must be a model of this release's tokenizer",
        "files are read in sorted-name order, the manifest's, from start to end: documents come in the release's order",
    ]
    return lines, notes


def _modded_nanogpt(root: Path, globs: dict, s: LoaderSettings) -> tuple[list[str], list[str]]:
    train, val = globs["train"][0], globs.get("val", (None,))[0]
    lines = ["# train_gpt.py class Hyperparameters: replace these lines", f"    train_files: str = {train!r}"]
    notes = [
        "train_files/val_files are hard-coded (os.path.join(DATA_PATH, 'data/fineweb10B/...')): edit the two lines, or link the files to those names"
    ]
    if val:
        sizes = [llmc.read_header(f).n_tokens for f in globs["val"][1]]
        lines.append(f"    val_files: str = {val!r}")
        # The val loader reads each step's tokens (+1) inside one file and moves on when
        # pos + n + 1 >= len(tokens): a file gives (n_tokens - 2) // val_batch_size whole batches at least.
        usable = sum(max(0, n - 2) // MODDED_NANOGPT_VAL_BATCH for n in sizes) * MODDED_NANOGPT_VAL_BATCH
        if usable:
            lines.append(f"    val_tokens: int = {min(usable, MODDED_NANOGPT_VAL_TOKENS)}")
        notes.append(
            f"val_tokens (default {MODDED_NANOGPT_VAL_TOKENS:,}) must be a multiple of val_batch_size ({MODDED_NANOGPT_VAL_BATCH:,}); "
            f"the val split's {sum(sizes):,} tokens in {len(sizes)} file(s) give {usable:,}"
            + ("" if usable else ": smaller than one val batch, lower val_batch_size (and val_tokens) to fit")
        )
    notes.append("every sequence starts at a BOS (50256): the release's separator, written before each document")
    notes.append(
        "files are read in sorted-name order, the manifest's, from start to end: documents come in the release's order"
    )
    return lines, notes


def _nanogpt(root: Path, globs: dict, s: LoaderSettings) -> tuple[list[str], list[str]]:
    files = {split: pattern for split, (pattern, _) in globs.items()}
    header = llmc.read_header(globs["train"][1][0])
    dtype = header.dtype.name
    lines = [
        "# train.py: add after `data_dir = ...`, then in get_batch(split) replace both np.memmap lines by `data = token_data(split)`",
        "import glob",
        f"token_files = {{{', '.join(f'{split!r}: sorted(glob.glob({pattern!r}))' for split, pattern in files.items())}}}",
        "def token_data(split):",
        "    # one file per batch, chosen in proportion to its tokens; the 1024-byte header is skipped",
        "    files = token_files[split]",
        f"    sizes = np.array([os.path.getsize(f) - {llmc.HEADER_BYTES} for f in files], dtype=np.float64)",
        "    path = files[np.random.choice(len(files), p=sizes / sizes.sum())]",
        f"    return np.memmap(path, dtype=np.{dtype}, mode='r', offset={llmc.HEADER_BYTES})",
        f"# command line: --block_size={s.seq_len} --batch_size={s.batch_size}",
    ]
    notes = [
        f"ids are {dtype} (the header's layout), after a {llmc.HEADER_BYTES}-byte header; nanoGPT's own train.bin has neither"
    ]
    if "val" not in files:
        notes.append(
            "no val files: estimate_loss() calls get_batch('val'); add a validation split or skip evaluation (eval_iters)"
        )
    return lines, notes


_LLMC_RECIPES = {"llmc": _llmc, "llmc-llama3": _llmc_llama3, "modded-nanogpt": _modded_nanogpt, "nanogpt": _nanogpt}


# ------------------------------------------------------------------ Megatron pairs


def _blends(root: Path) -> dict[str, list[tuple[int, str]]]:
    """Per split: (tokens, prefix) of every non-empty pair, in part order; prefixes without .bin/.idx."""
    if (root / SHARDS_DIR).is_dir():
        splits = [(s, find_megatron_pairs(root, s)) for s in SPLITS if (root / SHARDS_DIR / s).is_dir()]
    else:
        splits = [("train", find_megatron_pairs(root))]
    blends = {}
    for split, pairs in splits:
        entries = [(megatron.MegatronPair(idx).n_tokens, str(idx.with_suffix(""))) for idx in pairs]
        blends[split] = [(n, prefix) for n, prefix in entries if n > 0]
    if not blends.get("train"):
        raise FormatError(root, "no Megatron train pairs with tokens", hint="build with --format megatron")
    return blends


def _data_path(blend: list[tuple[int, str]]) -> list[str]:
    """Megatron's weighted form: ``W1 PREFIX1 W2 PREFIX2 ...``, weights = tokens (Megatron normalizes them)."""
    return [x for n, prefix in blend for x in (str(n), prefix)]


def _megatron_tokenizer(tok: _Tokenizer, eod_id: int | None) -> tuple[list[str], list[str]]:
    """The tokenizer flags whose ``eod`` is the release's EOD, and what to check about them."""
    if tok.source not in (None, "byte", "local"):
        model = tok.source if not tok.subfolder else f"DIR/{tok.subfolder}"
        flags = ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", model]
        notes = [f"HuggingFaceTokenizer's eod is the id of its eos_token, which must be {eod_id}"]
        if tok.revision or tok.subfolder:
            notes.append(
                f"to pin the tokenizer the release was built with: hf download {tok.source}{' --revision ' + tok.revision if tok.revision else ''} --local-dir DIR, and pass DIR{'/' + tok.subfolder if tok.subfolder else ''} to --tokenizer-model"
            )
        return flags, notes
    if eod_id is not None and tok.vocab_size is not None and eod_id == tok.vocab_size - 1:
        # NullTokenizer(vocab_size=V) has eod = V and V + 1 ids: exactly this vocabulary.
        return ["--tokenizer-type", "NullTokenizer", "--vocab-size", str(eod_id)], [
            f"NullTokenizer --vocab-size {eod_id} has eod {eod_id} and {eod_id + 1} ids, this vocabulary"
        ]
    if tok.source == "byte":
        return ["--tokenizer-type", "TOKENIZER_TYPE"], [
            f"the byte tokenizer has no Megatron-LM --tokenizer-type with eod {eod_id}: NullTokenizer --vocab-size N has eod N "
            f"and N + 1 ids, so build with --doc-sep-id {tok.vocab_size - 1 if tok.vocab_size else 255} to use it, or pass a tokenizer whose eod is {eod_id}"
        ]
    name = tok.tokenizer_id or "the release's tokenizer"
    return ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", "TOKENIZER_DIR"], [
        f"TOKENIZER_DIR: the folder of {name} (tokenizer.json) the release was built with; its eos_token must be id {eod_id}"
    ]


def _megatron(root: Path, s: LoaderSettings) -> tuple[list[str], list[str]]:
    blends = _blends(root)
    tok = _read_tokenizer(root)
    eod_id = s.eod_id if s.eod_id is not None else tok.eod_id
    tok_flags, notes = _megatron_tokenizer(tok, eod_id)
    args = [
        ["torchrun", f"--nproc_per_node={s.world_size}", "pretrain_gpt.py"],
        ["--train-data-path", *_data_path(blends["train"])],
    ]
    if blends.get("validation"):
        args.append(["--valid-data-path", *_data_path(blends["validation"])])
    args += [
        [
            "--seq-length",
            str(s.seq_len),
            "--micro-batch-size",
            str(s.batch_size),
            "--global-batch-size",
            str(s.batch_size * s.world_size),
            "--seed",
            str(MEGATRON_SEED),
        ],
        tok_flags,
        ["--reset-position-ids", "--reset-attention-mask", "--eod-mask-loss"],
    ]
    lines = [shlex.join(a) + " \\" for a in args]
    lines[-1] = lines[-1][:-2]
    notes = notes + [
        "weights are each pair's tokens, so every pair is drawn in proportion to its size; prefixes carry no .bin/.idx",
        f"or one blend with a split: --data-path {shlex.join(_data_path(blends['train']))} --split 100,0,0 (the release's validation split stays out)",
        "--reset-position-ids --reset-attention-mask --eod-mask-loss are optional; with them attention and positions restart after each EOD",
        "GPTDataset shuffles documents and samples with --seed; samples never cross from one pair into another",
        "megatron-core used directly (BlendedMegatronDatasetBuilder) needs torch.distributed initialised when a blend of several pairs has a path_to_cache "
        "(BlendedDataset._build_indices calls torch.distributed.get_rank()): init_process_group('gloo', world_size=1) in one process",
        "one pair per split instead: hf-tokbin merge RELEASE --out DIR, then DIR/<split> is the only prefix",
    ]
    return lines, notes


def _maxtext(root: Path, s: LoaderSettings, index_dir: Path) -> tuple[list[str], list[str]]:
    blends = _blends(root)
    tok = _read_tokenizer(root)
    eod_id = s.eod_id if s.eod_id is not None else tok.eod_id

    def files(split: str) -> str:
        # MaxText's blend syntax: IDX_k|prefix_k,weight_k;... A lone spec takes no weight: without ';' the ',W' would be part of the path.
        specs = [(f"{index_dir / f'{split}-{k}'}|{prefix}", n) for k, (n, prefix) in enumerate(blends[split])]
        return specs[0][0] if len(specs) == 1 else ";".join(f"{spec},{n}" for spec, n in specs)

    args = ["dataset_type=grain", "grain_file_type=mmap_npy", f"grain_train_files={files('train')}"]
    if blends.get("validation"):
        args.append(f"grain_eval_files={files('validation')}")
    args += [
        f"mmap_eod_id={eod_id if eod_id is not None else 'EOD_ID'}",
        "mmap_split_sentences=false",
        f"max_target_length={s.seq_len}",
        f"data_shuffle_seed={MEGATRON_SEED}",
        "reset_attention_mask=true",
        "eod_mask_loss=false",
        "packing_max_segments_per_sample=0",
    ]
    lines = [shlex.quote(a) + " \\" for a in args]
    lines[-1] = lines[-1][:-2]
    notes = [
        "needs maxtext >= 0.2.5 (Python >= 3.12); MaxText's git main at the commit checked has no mmap/mmap_npy reader",
        "mmap_npy with this blend (one spec per pair, weights = tokens) gives Megatron's sample order for the same prefixes, weights, seed, "
        "seq length and sample count (steps * global batch); the folder form grain_train_files='IDX|DIR/shards/train' does not when a split has several pairs",
        f"{index_dir} must be writable: MaxText builds the document/sample/shuffle .npy indices there on first use",
        f"grain_file_type=mmap with grain_train_files={root / SHARDS_DIR / 'train'} also reads every pair (sorted *.idx), in its own order",
    ]
    if eod_id is None:
        notes.append("EOD_ID unknown (no run_config.json eod_id): pass --eod-id")
    return lines, notes
