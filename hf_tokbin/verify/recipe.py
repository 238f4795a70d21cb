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
from ..formats.release import (
    COMPLETE_NAME,
    PARTIAL_NAME,
    RECEIPTS_DIR,
    RUN_CONFIG_NAME,
    SHARDS_DIR,
    SPLITS,
    TOKENIZER_DIR,
    TOKENIZER_FILE,
    Receipt,
    pair_path,
    read_partial,
)
from ..readers.views import find_megatron_pairs
from . import compat
from .compat import ERROR, WARNING, Finding, LoaderSettings

# What each recipe was read from: the trainer's source at this version.
CHECKED_AGAINST = {
    "llmc": "karpathy/llm.c f1e2ace651495b74ae22d45d1723443fd00ecd3a (2025-05-10): train_gpt2.cu main(), train_gpt2.py, llmc/dataloader.h",
    "llmc-llama3": "karpathy/llm.c f1e2ace651495b74ae22d45d1723443fd00ecd3a (2025-05-10): train_llama3.py",
    "modded-nanogpt": "KellerJordan/modded-nanogpt f411b3d346aa52d3504324ca93c230fd84c6c07f (2026-08-01): train_gpt.py Hyperparameters, TRAINING_STAGES, distributed_data_generator",
    "megatron": "megatron-core 0.16.1 (Megatron-LM tag core_v0.16.1, 55ac7082517c3878ae653c07c09c534b8aed49f6): megatron/training/arguments.py, training_config.py, utils.py get_blend_and_blend_per_split, pretrain_gpt.py",
    "maxtext": "maxtext 0.2.5 from PyPI (Python >= 3.12): input_pipeline/_mmap_datasource.py, configs/base.yml; MaxText's git main at e591f30cbbf2 (2026-08-22) has no Megatron reader",
    "nanogpt": "karpathy/nanoGPT 3adf61e154c3fe3fca428ad6bc3818b27a3b8291 (2025-11-12): train.py defaults, get_batch, configurator.py",
}
TARGETS = tuple(CHECKED_AGAINST)
MEGATRON_SEED = 1234  # Megatron-LM --seed default; MaxText's mmap_npy seed default is the same
LLMC_SCRATCH_MODEL = "d12"  # llm.c: train_gpt2.py --model d12 and train_gpt2.cu -e d12 build GPT-2 124M with random weights
LLMC_VAL_EVERY = 250  # llm.c's own run scripts evaluate every 250 steps
LLAMA3_MODEL = "meta-llama/Meta-Llama-3.1-8B"  # train_llama3.py asserts args.model is this one


@dataclass(frozen=True)
class Recipe:
    """What to pass to one trainer for one release, and what ``verify --for`` found.

    Every line and note is refused (:class:`FormatError`) if it holds a control
    character: a value from a release (a revision, a source) must not end a
    ``# note:`` line and start a command when the text is pasted into a shell.
    """

    target: str
    release: Path
    lines: tuple[str, ...]  # the command or config lines, to paste as they are
    notes: tuple[str, ...]  # settings the lines cannot carry (tokenizer, order, versions)
    findings: tuple[Finding, ...] = field(default=())  # warnings and errors of verify --for
    commands: tuple[tuple[str, ...], ...] = field(default=())  # the shell commands of ``lines`` as argv
    code: tuple[str, ...] = field(default=())  # the lines of ``lines`` to put in the trainer's source (Python)

    def __post_init__(self):
        for text in (*self.lines, *self.notes, *map(str, self.findings)):
            if not text.isprintable():
                raise FormatError(self.release, "a value taken from the release holds a control character: no recipe is printed for it", got=text[:120])

    @property
    def checked_against(self) -> str:
        return CHECKED_AGAINST[self.target]

    def has_errors(self) -> bool:
        return compat.has_errors(self.findings)

    def text(self) -> str:
        out = [
            f"# hf-tokbin recipe --for {self.target}: {shlex.quote(str(self.release))}",
            f"# checked against {self.checked_against}",
            *self.lines,
        ]
        out += [f"# note: {n}" for n in self.notes]
        out += [f"# {f}" for f in self.findings]
        return "\n".join(out) + "\n"

    def to_record(self) -> dict:
        """What ``recipe --json`` prints."""
        return {
            "target": self.target,
            "release": str(self.release),
            "checked_against": self.checked_against,
            "commands": [list(c) for c in self.commands],
            "lines": list(self.lines),
            "code": list(self.code),
            "notes": list(self.notes),
            "findings": [{"level": f.level, "file": f.file, "rule": f.rule, "message": f.message} for f in self.findings],
        }


@dataclass(frozen=True)
class _Tokenizer:
    """``run_config.json``'s tokenizer fields a recipe names (any may be unknown), and the release's own ``tokenizer/``."""

    tokenizer_id: str | None
    source: str | None  # "byte", "local" or a Hub repo id
    revision: str | None
    subfolder: str | None
    vocab_size: int | None
    eod_id: int | None
    shipped: Path | None = None  # RELEASE/tokenizer, when the release ships its tokenizer.json


def _read_tokenizer(root: Path) -> _Tokenizer:
    path = root / RUN_CONFIG_NAME
    shipped = root / TOKENIZER_DIR if (root / TOKENIZER_DIR / TOKENIZER_FILE).is_file() else None
    if not path.is_file():
        return _Tokenizer(None, None, None, None, None, None, shipped)
    eod_id, vocab_size = compat._run_config_ids(path)
    tokenizer = read_json(path, FormatError).get("tokenizer")
    tokenizer = tokenizer if isinstance(tokenizer, dict) else {}

    def text(name):
        value = tokenizer.get(name)
        return value if isinstance(value, str) and value else None

    return _Tokenizer(text("tokenizer_id"), text("source"), text("revision"), text("subfolder"), vocab_size, eod_id, shipped)


def recipe(
    path: str | os.PathLike,
    target: str,
    settings: LoaderSettings = LoaderSettings(),
    index_dir: str | os.PathLike | None = None,
    *,
    with_findings: bool = True,
) -> Recipe:
    """The recipe of ``target`` for the release (or token folder) at ``path``.

    ``index_dir`` is where MaxText's ``mmap_npy`` builds its index files
    (default ``RELEASE/.maxtext-index``: hidden, so no part of the release).
    ``with_findings=False`` skips ``verify --for`` (the dataset card's recipes:
    the build has just checked every byte, and scanning them again costs).
    """
    if target not in CHECKED_AGAINST:
        raise FormatError(None, "unknown recipe target", expected=", ".join(TARGETS), got=target)
    root = Path(path).resolve()
    if not root.exists():
        raise FormatError(root, "no such file or folder")
    findings = [f for f in compat.check(root, target, settings) if f.level in (ERROR, WARNING)] if with_findings else []
    if settings.eod_loss == "mask" and target not in EOD_MASKING_TARGETS:
        findings.append(Finding(ERROR, str(root), "eod-loss", f"{target} has no switch to mask the loss at EOD tokens: use --eod-loss train"))
    if target == "megatron":
        commands, notes = _megatron(root, settings)
        lines = _continued(commands[0], MEGATRON_GROUPS)
    elif target == "maxtext":
        lines, notes = _maxtext(root, settings, Path(index_dir).resolve() if index_dir else root / ".maxtext-index")
        commands = []
    code = []
    if target not in ("megatron", "maxtext"):
        globs = _llmc_globs(root, findings, check_glob=with_findings)
        commands, code, notes = _LLMC_RECIPES[target](root, globs, settings)
        lines = [shlex.join(c) for c in commands] + code
        findings, notes = _fixed_by_the_code(findings, notes, code)
    return Recipe(target, root, tuple(lines), tuple(notes), tuple(findings), tuple(tuple(c) for c in commands), tuple(code))


EOD_MASKING_TARGETS = ("megatron", "maxtext")
# A finding's rule -> the start of the printed code line that fixes it (a trainer's setting the recipe computed).
FIXED_BY_CODE = {
    "documents-per-micro-batch": "TRAIN_MAX_NUM_DOCS = ",
    "val-documents-per-micro-batch": "TRAIN_MAX_NUM_DOCS = ",
    "val-tokens": "    val_batch_size: int = ",
}


def _fixed_by_the_code(findings: list[Finding], notes: list[str], code: list[str]) -> tuple[list[Finding], list[str]]:
    """The findings no printed line fixes, and the notes with one more for each rule a line fixes.

    Pasted as printed, the recipe trains: what it changed is a note, not an error.
    """
    kept, fixed = [], {}  # rule -> (the fixing line's setting, its findings)
    for finding in findings:
        prefix = FIXED_BY_CODE.get(finding.rule)
        line = next((line for line in code if prefix and line.startswith(prefix)), None)
        if line is None:
            kept.append(finding)
        else:
            setting = line.strip().split(" ")[0].rstrip(":")
            fixed.setdefault(finding.rule, (setting, []))[1].append(finding)
    changed = [
        f"changed {setting} (the line above) for {rule} ({len(found)} finding(s) of verify --for): {found[0].message}"
        for rule, (setting, found) in fixed.items()
    ]
    return kept, [*notes, *changed]


def _quoted(value: object) -> str:
    """A value from the release, as it may appear in a note: shell-quoted."""
    return shlex.quote(str(value))


# ------------------------------------------------------------------ llm.c token files


def _llmc_globs(root: Path, findings: list[Finding], check_glob: bool = True) -> dict[str, tuple[str, list[Path], list[int]]]:
    """Per llm.c split ("train", "val"): the glob selecting its files, the files in manifest order, and their token counts.

    The counts are the manifest's (a lone file's header without one): the dataset card's recipes are written at
    the end of a build whose token files may be at a URL, never fetched back. With ``check_glob`` the glob is
    checked here: it must select exactly those files, and sorted (as every loader sorts) in the manifest's order.
    """
    inputs = compat._llmc_inputs(root)
    counts = {} if inputs.manifest is None else {inputs.manifest_path.parent / f.name: f.n_tokens for f in inputs.manifest.files}
    globs = {}
    for split, files in inputs.splits:
        if not files:
            continue
        folder = files[0].parent
        # A lone file is its own pattern; a split is every ``<split>-*.bin`` of the folder (the writer's names).
        pattern = glob.escape(str(files[0])) if split is None else llmc.split_glob(folder, split)
        selected = sorted(glob.glob(pattern)) if check_glob else [str(f) for f in files]
        if selected != [str(f) for f in files]:
            extra = sorted(set(selected) - {str(f) for f in files})
            problem = f"also selects {extra[:3]}" if extra else "does not select the manifest's files in their order"
            findings.append(
                Finding(ERROR, str(folder), "glob", f"the glob {pattern} {problem}: move the other files away")
            )
        globs[split or "train"] = (pattern, files, [counts[f] if f in counts else llmc.read_header(f).n_tokens for f in files])
    if "train" not in globs:
        raise FormatError(root, "no llm.c train files", hint="build with --format llmc")
    return globs


def _file_tokens(globs: dict, split: str) -> list[int]:
    return globs[split][2] if split in globs else []


def llmc_batches(file_tokens: list[int], step_tokens: int) -> int:
    """Batches of ``step_tokens`` (B*T*world) + 1 that llm.c's loaders take from the files in one pass.

    ``dataloader.h``: ``shard_num_samples = (ntok - 1) // (B*T*world)`` per file;
    ``train_gpt2.py`` ``DistributedDataLoader`` moves to the next file when
    ``position + B*T*world + 1 > len(tokens)``: the same count.
    """
    return sum(max(0, n - 1) // step_tokens for n in file_tokens)


def _torchrun(s: LoaderSettings, script: list[str]) -> list[str]:
    """``torchrun --standalone --nproc_per_node=N SCRIPT ARGS`` (torchrun runs the script itself), or ``python SCRIPT ARGS``."""
    if s.world_size == 1:
        return ["python", *script]
    return ["torchrun", "--standalone", f"--nproc_per_node={s.world_size}", *script]


def _llmc_schedule(globs: dict, s: LoaderSettings) -> tuple[int, int, int]:
    """(train steps for the epochs, val steps covering the val split, val every): one step is one B*T*world batch."""
    step = s.batch_size * s.seq_len * s.world_size
    steps = s.epochs * llmc_batches(_file_tokens(globs, "train"), step)
    val_steps = llmc_batches(_file_tokens(globs, "val"), step)
    return steps, val_steps, max(1, min(LLMC_VAL_EVERY, steps))


def _llmc(root: Path, globs: dict, s: LoaderSettings) -> tuple[list[list[str]], list[str], list[str]]:
    # Another layout gets its own finding (use llmc-llama3), not this refusal.
    problem = compat.gpt2_scratch_problem(_vocab_size(root, globs)) if _llmc_family(root, globs) == "gpt2" else None
    # Every -e / --model but a .bin checkpoint is a GPT-2 of 50,257 entries (dN, gpt2:dN, gpt3:cN; train_gpt2.py's gpt2*):
    # no line of ours may promise a model these ids do not fit.
    if problem and not (s.init_from or "").endswith(".bin"):
        raise FormatError(root, f"no llm.c recipe for {s.init_from or 'a model from scratch'}: {problem}", hint="fine-tune a .bin checkpoint of this vocabulary (--init-from model.bin), or train with --for nanogpt or megatron")
    train, val = globs["train"][0], globs.get("val", (None,))[0]
    total = s.batch_size * s.seq_len * s.world_size
    steps, val_steps, every = _llmc_schedule(globs, s)
    # train_gpt2.cu's -j defaults to tiny_shakespeare_val.bin and -v 0 divides by zero: without val files, -j
    # names the train files and -m 0 runs no validation batch.
    c = ["./train_gpt2cu", "-i", train, "-j", val or train, "-e", s.init_from or LLMC_SCRATCH_MODEL]
    c += ["-b", str(s.batch_size), "-t", str(s.seq_len), "-d", str(total), "-x", str(steps)]
    c += ["-v", str(every), "-m", str(val_steps if val else 0), "-s", "0"]
    py = ["train_gpt2.py", "--input_bin", train] + (["--input_val_bin", val] if val else [])
    py += ["--model", s.init_from or LLMC_SCRATCH_MODEL, "--overfit_single_batch", "0", "--write_tensors", "0"]
    py += ["--batch_size", str(s.batch_size), "--sequence_length", str(s.seq_len), "--total_batch_size", str(total)]
    py += ["--num_iterations", str(steps), "--val_loss_every", str(every if val else 0), "--val_max_steps", str(val_steps if val else 1)]
    commands = [(["mpirun", "-np", str(s.world_size)] if s.world_size > 1 else []) + c, _torchrun(s, py)]
    notes = [
        f"{steps:,} steps of B*T*world_size = {total:,} tokens: every whole batch of the train split, {s.epochs} time(s) "
        "(-d / --total_batch_size is one step without gradient accumulation)",
        f"{'from scratch: ' + LLMC_SCRATCH_MODEL + ' is GPT-2 124M with random weights' if s.init_from is None else 'fine-tuning ' + _quoted(s.init_from)}; "
        "pass --init-from gpt2 (train_gpt2.py) or a .bin checkpoint (-e) to fine-tune",
        f"validation: {f'{val_steps:,} batches, the whole val split, every {every} steps' if val else 'none (no val files): train_gpt2.cu runs -m 0 batches of its -j, train_gpt2.py none'}",
        "train_gpt2.cu shuffles the file order and the B*T windows inside each file every epoch (dataloader.h, permute_train_loader); "
        "train_gpt2.py reads the files in sorted-name order, the manifest's, from start to end: documents come in the release's order",
        "train_gpt2.py calls tiktoken.get_encoding('gpt2') at start (downloaded once, then cached); its multi-process runs need CUDA (it asserts so)",
        "the loss counts every token, the separator included: llm.c has no EOD loss mask",
    ]
    return commands, [], notes


def _llmc_llama3(root: Path, globs: dict, s: LoaderSettings) -> tuple[list[list[str]], list[str], list[str]]:
    train, val = globs["train"][0], globs.get("val", (None,))[0]
    total = s.batch_size * s.seq_len * s.world_size
    steps, val_steps, every = _llmc_schedule(globs, s)
    py = ["train_llama3.py", "--input_bin", train] + (["--input_val_bin", val] if val else [])
    py += ["--model", LLAMA3_MODEL, "--overfit_single_batch", "0", "--write_tensors", "0"]
    py += ["--batch_size", str(s.batch_size), "--sequence_length", str(s.seq_len), "--total_batch_size", str(total)]
    py += ["--num_iterations", str(steps), "--val_loss_every", str(every if val else 0), "--val_max_steps", str(val_steps if val else 1)]
    notes = [
        f"train_llama3.py only fine-tunes {LLAMA3_MODEL} (it asserts --model is that one; gated weights from the Hub, or --use_hf 0 "
        "--ckpt_dir/--tokenizer_path for Meta's) and only on CUDA (it asserts so): there is no from-scratch option",
        f"{steps:,} steps of B*T*world_size = {total:,} tokens: every whole batch of the train split, {s.epochs} time(s)",
        f"validation: {f'{val_steps:,} batches, the whole val split, every {every} steps' if val else 'none (no val files)'}",
        "files are read in sorted-name order, the manifest's, from start to end: documents come in the release's order",
        "the loss counts every token, the separator included: train_llama3.py has no EOD loss mask",
    ]
    return [_torchrun(s, py)], [], notes


def python_literal(text: str) -> str:
    """``text`` as a Python string literal that a shell, if the line is pasted there by mistake, reads as inert text.

    Always single-quoted, with ``'`` and ``\\`` escaped (``\\x27``, ``\\x5c``):
    ``repr()`` switches to double quotes for a text holding ``'``, and inside
    double quotes bash runs ``$(...)`` and backticks. The folder names in these
    lines come from the release (``tokens/<tokenizer_id>/<dataset>/``).
    """
    return "'" + text.replace("\\", "\\x5c").replace("'", "\\x27") + "'"


def _modded_nanogpt(root: Path, globs: dict, s: LoaderSettings) -> tuple[list[list[str]], list[str], list[str]]:
    train, val = globs["train"][0], globs.get("val", (None,))[0]
    scheduled, extension = compat.modded_train_schedule([llmc.open_tokens(f) for f in globs["train"][1]], s.world_size)
    lines = ["# train_gpt.py class Hyperparameters: replace these lines", f"    train_files: str = {python_literal(train)}"]
    lines.append(f"    val_files: str = {python_literal(val or train)}")
    batch, val_tokens = compat.modded_val_batch(_file_tokens(globs, "val" if val else "train"), s.world_size)
    if batch:
        lines += [f"    val_tokens: int = {val_tokens}", f"    val_batch_size: int = {batch}"]
    lines += [f"    num_scheduled_iterations: int = {scheduled}", f"    num_extension_iterations: int = {extension}"]
    val_files = [llmc.open_tokens(f) for f in globs["val" if val else "train"][1]]
    fix = compat.modded_max_num_docs([llmc.open_tokens(f) for f in globs["train"][1]], val_files, batch, s.world_size)
    if fix:
        lines += ["# train_gpt.py, the module-level table: replace it", f"TRAIN_MAX_NUM_DOCS = {fix}"]
    notes = [
        "train_files/val_files are hard-coded (os.path.join(DATA_PATH, 'data/fineweb10B/...')): edit the lines above in the file",
        f"{scheduled:,} scheduled + {extension} extension steps: the most its train loader serves from the train split in one pass "
        "(a third of the steps at 131,072, 262,144 and 393,216 tokens each; a window per document, cut at 896 then 2,048 tokens; "
        "a file's tail that no longer fits a micro-batch is skipped); its loader does not loop: for more epochs, "
        "iter(files) -> itertools.cycle(files) in distributed_data_generator",
        "from scratch (train_gpt.py always is); it needs CUDA and a world size dividing 8 (grad_accum_steps = 8 // world_size)",
        "every sequence starts at a BOS (50256): the release's separator, written before each document",
        "files are read in sorted-name order, the manifest's, from start to end: documents come in the release's order",
        "the loss counts every token, the separator included: train_gpt.py has no EOD loss mask",
    ]
    if not val:
        notes.append("no val files: val_files names the train files, so its val loss is a loss on training data")
    elif not batch:
        notes.append("the val files are too small for any val batch (see the val-tokens finding)")
    command = ["torchrun", "--standalone", f"--nproc_per_node={s.world_size}", "train_gpt.py"]
    return [command], lines, notes


def _llmc_family(root: Path, globs: dict) -> str:
    """The layout of the release's llm.c files: run_config.json's (no token file is opened: a URL build's card is
    written where none is), else, for a bare token folder, its first file's header."""
    if (root / RUN_CONFIG_NAME).is_file():
        from ..formats.run_config import RunConfig

        return RunConfig.read(root / RUN_CONFIG_NAME).llmc_layout or "gpt2"
    return llmc.read_header(globs["train"][1][0]).layout.family


def _vocab_size(root: Path, globs: dict) -> int:
    """The vocabulary of the release's llm.c ids (the first train file's header, else the manifest)."""
    return compat.llmc_vocab_size(globs["train"][1][0], compat._llmc_inputs(root).manifest)


def _nanogpt(root: Path, globs: dict, s: LoaderSettings) -> tuple[list[list[str]], list[str], list[str]]:
    vocab = _vocab_size(root, globs)
    scratch = s.init_from in (None, "scratch")
    if vocab > compat.GPT2_VOCAB and (s.init_from or "").startswith("gpt2"):
        raise FormatError(root, f"init_from={s.init_from} loads OpenAI's GPT-2 (vocab_size {compat.GPT2_VOCAB:,}) and this vocabulary has {vocab:,}", hint="train from scratch (no --init-from): the recipe sizes the model to the vocabulary")
    files = {split: pattern for split, (pattern, *_) in globs.items()}
    files.setdefault("val", files["train"])  # estimate_loss() calls get_batch('val') at step 0 whatever eval_interval is
    header = llmc.read_header(globs["train"][1][0])
    dtype = header.dtype.name
    lines = [
        "# train.py: add after `data_dir = ...`, then in get_batch(split) replace both np.memmap lines by `data = token_data(split)`",
        "import glob",
        f"token_files = {{{', '.join(f'{python_literal(split)}: sorted(glob.glob({python_literal(pattern)}))' for split, pattern in files.items())}}}",
        "def token_data(split):",
        "    # one file per batch, chosen in proportion to its tokens; the 1024-byte header is skipped",
        "    files = token_files[split]",
        f"    sizes = np.array([os.path.getsize(f) - {llmc.HEADER_BYTES} for f in files], dtype=np.float64)",
        "    path = files[np.random.choice(len(files), p=sizes / sizes.sum())]",
        f"    return np.memmap(path, dtype=np.{dtype}, mode='r', offset={llmc.HEADER_BYTES})",
    ]
    if vocab > compat.NANOGPT_VOCAB and scratch:
        # train.py sizes a from-scratch model by data_dir/meta.pkl, else 50304: these lines precede its meta_path line.
        lines += [
            f"# the vocabulary has {vocab:,} entries, more than train.py's default 50,304: its meta_path line reads this meta.pkl",
            "import tempfile",
            "data_dir = tempfile.mkdtemp(prefix='hf_tokbin-meta-')",
            f"with open(os.path.join(data_dir, 'meta.pkl'), 'wb') as f: pickle.dump({{'vocab_size': {vocab}}}, f)",
        ]
    # One step: gradient_accumulation_steps (divided by the world size in DDP) * world * B * T tokens, drawn at random.
    step = s.batch_size * s.seq_len * s.world_size
    steps = max(1, s.epochs * sum(_file_tokens(globs, "train")) // step)
    val_iters = max(1, min(200, sum(_file_tokens(globs, "val")) // (s.batch_size * s.seq_len))) if "val" in globs else 1
    args = [f"--init_from={s.init_from or 'scratch'}", f"--block_size={s.seq_len}", f"--batch_size={s.batch_size}"]
    args += [f"--gradient_accumulation_steps={s.world_size}", f"--max_iters={steps}", f"--lr_decay_iters={steps}"]
    args += [f"--warmup_iters={min(2000, max(1, steps // 10))}", f"--eval_interval={max(1, min(2000, steps))}", f"--eval_iters={val_iters}"]
    notes = [
        f"ids are {dtype} (the header's layout), after a {llmc.HEADER_BYTES}-byte header; nanoGPT's own train.bin has neither",
        f"{steps:,} steps of {step:,} tokens drawn at random windows: the train split's tokens {s.epochs} time(s) in expectation "
        "(--gradient_accumulation_steps=world_size: one B*T batch per process per step)",
        "from scratch (init_from='scratch'); "
        + ("pass --init-from gpt2 to fine-tune GPT-2" if vocab <= compat.GPT2_VOCAB else f"GPT-2 (50,257 entries) cannot be fine-tuned on this vocabulary of {vocab:,}"),
        "the loss counts every token, the separator included: train.py has no EOD loss mask",
    ]
    if "val" not in globs:
        notes.append("no val files: 'val' reads the train files, so estimate_loss()'s val loss is a loss on training data")
    return [_torchrun(s, ["train.py", *args])], lines, notes


_LLMC_RECIPES = {"llmc": _llmc, "llmc-llama3": _llmc_llama3, "modded-nanogpt": _modded_nanogpt, "nanogpt": _nanogpt}


# ------------------------------------------------------------------ Megatron pairs


def _receipt_blends(root: Path) -> dict[str, list[tuple[int, str]]]:
    """A release's blends from its receipts (each pair's tokens as counted when it was written).

    Every pair a receipt lists must be here (its ``.idx``): a recipe over the
    pairs that happen to be here would train on a subset, or print "no
    validation split", and say neither. Only a partial copy (``pull
    --include``: a valid ``PARTIAL.json`` and no ``COMPLETE.json``) gets the
    pairs it holds.
    """
    partial = not (root / COMPLETE_NAME).exists() and (root / PARTIAL_NAME).is_file()
    if partial:
        read_partial(root)  # a PARTIAL.json that is not one vouches for nothing
    blends = {}
    for path in sorted((root / RECEIPTS_DIR).glob("part-*.json")):
        receipt = Receipt.read(path)
        for split, counts in receipt.splits.items():
            idx = root / pair_path(split, receipt.part, "idx")
            if not counts.total_tokens:
                continue
            if not idx.is_file():
                if partial:
                    continue
                raise FormatError(idx, f"a Megatron pair its receipt lists is missing: the recipe would leave it out of the {split} split", hint="pull or copy the whole release (hf-tokbin verify names what is missing)")
            blends.setdefault(split, []).append((counts.total_tokens, str(idx.with_suffix(""))))
    return blends


def _blends(root: Path) -> dict[str, list[tuple[int, str]]]:
    """Per split: (tokens, prefix) of every non-empty pair, in part order; prefixes without .bin/.idx."""
    if (root / RECEIPTS_DIR).is_dir():
        blends = _receipt_blends(root)
        if not blends.get("train"):
            raise FormatError(root, "no Megatron train pairs with tokens", hint="build with --format megatron")
        return blends
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


def _samples(blend: list[tuple[int, str]], seq_len: int) -> int:
    """GPTDataset's samples per epoch summed over the pairs: ``(tokens - 1) // seq_length`` each (add_extra_token_to_sequence)."""
    return sum(max(0, n - 1) // seq_len for n, _ in blend)


def _megatron_tokenizer(tok: _Tokenizer, eod_id: int | None) -> tuple[list[str], list[str]]:
    """The tokenizer flags whose ``eod`` is the release's EOD, and what to check about them."""
    if eod_id is not None and tok.vocab_size is not None and eod_id == tok.vocab_size - 1 and tok.source in ("byte", "local", None):
        # NullTokenizer(vocab_size=V) has eod = V and V + 1 ids: exactly this vocabulary.
        return ["--tokenizer-type", "NullTokenizer", "--vocab-size", str(eod_id)], [
            f"NullTokenizer --vocab-size {eod_id} has eod {eod_id} and {eod_id + 1} ids, this vocabulary"
        ]
    if tok.shipped is not None:
        return ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", str(tok.shipped)], [
            f"--tokenizer-model is the release's own tokenizer/ (the tokenizer.json the build read, SHA-256 in run_config.json); "
            f"HuggingFaceTokenizer's eod is the id of its eos_token, which must be {eod_id}"
        ]
    if tok.source not in (None, "byte", "local"):
        model = tok.source if not tok.subfolder else f"DIR/{tok.subfolder}"
        flags = ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", model]
        notes = [f"HuggingFaceTokenizer's eod is the id of its eos_token, which must be {eod_id}"]
        if tok.revision or tok.subfolder:
            download = shlex.join(["hf", "download", tok.source, *(["--revision", tok.revision] if tok.revision else []), "--local-dir", "DIR"])
            notes.append(
                f"to pin the tokenizer the release was built with: {download}, and pass DIR{'/' + _quoted(tok.subfolder) if tok.subfolder else ''} to --tokenizer-model"
            )
        return flags, notes
    if tok.source == "byte":
        return ["--tokenizer-type", "TOKENIZER_TYPE"], [
            f"the byte tokenizer has no Megatron-LM --tokenizer-type with eod {eod_id}: NullTokenizer --vocab-size N has eod N "
            f"and N + 1 ids, so build with --doc-sep-id {tok.vocab_size - 1 if tok.vocab_size else 255} to use it, or pass a tokenizer whose eod is {eod_id}"
        ]
    name = _quoted(tok.tokenizer_id) if tok.tokenizer_id else "the release's tokenizer"
    return ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", "TOKENIZER_DIR"], [
        f"TOKENIZER_DIR (this release ships no tokenizer/): the folder of {name} (tokenizer.json) the release was built with; its eos_token must be id {eod_id}"
    ]


# How the Megatron command is broken into continued lines: after the launcher, then before each of these flags.
MEGATRON_GROUPS = ("--train-data-path", "--valid-data-path", "--seq-length", "--eval-iters", "--tokenizer-type", "--reset-position-ids")


def _continued(argv: list[str], breaks: tuple[str, ...]) -> list[str]:
    """``argv`` as shell lines ending in `` \\``, a new line before each flag of ``breaks``."""
    groups = [[]]
    for arg in argv:
        if arg in breaks:
            groups.append([])
        groups[-1].append(arg)
    lines = [shlex.join(g) + " \\" for g in groups if g]
    lines[-1] = lines[-1][:-2]
    return lines


def _megatron(root: Path, s: LoaderSettings) -> tuple[list[list[str]], list[str]]:
    blends = _blends(root)
    tok = _read_tokenizer(root)
    eod_id = s.eod_id if s.eod_id is not None else tok.eod_id
    tok_flags, notes = _megatron_tokenizer(tok, eod_id)
    global_batch = s.batch_size * s.world_size
    train_samples = s.epochs * _samples(blends["train"], s.seq_len)
    val_samples = _samples(blends.get("validation", []), s.seq_len)
    eval_iters = max(1, val_samples // global_batch) if val_samples else 0
    argv = ["torchrun", "--standalone", f"--nproc_per_node={s.world_size}", "pretrain_gpt.py"]
    argv += ["--train-data-path", *_data_path(blends["train"])]
    if eval_iters:
        argv += ["--valid-data-path", *_data_path(blends["validation"])]
    argv += ["--seq-length", str(s.seq_len), "--micro-batch-size", str(s.batch_size), "--global-batch-size", str(global_batch)]
    argv += ["--train-samples", str(train_samples), "--seed", str(MEGATRON_SEED)]
    argv += ["--eval-iters", str(eval_iters)]
    if eval_iters:
        argv += ["--eval-interval", str(max(1, min(1000, train_samples // global_batch)))]
    argv += tok_flags
    argv += ["--reset-position-ids", "--reset-attention-mask"] + (["--eod-mask-loss"] if s.eod_loss == "mask" else [])
    notes = notes + [
        f"--train-samples {train_samples:,}: every pair's (tokens - 1) // seq_length samples, {s.epochs} time(s); "
        "Megatron-LM then wants the schedule in samples too (--lr-decay-samples, --lr-warmup-samples, not the *-iters)",
        (f"--eval-iters {eval_iters} x global batch {global_batch} = the validation split's {val_samples:,} samples" if eval_iters
         else "no validation split: --eval-iters 0, Megatron-LM evaluates nothing"),
        "add the model and optimizer: --num-layers --hidden-size --num-attention-heads --max-position-embeddings (>= --seq-length) --lr "
        "(Megatron-LM requires them; it trains from scratch unless --load names a checkpoint)",
        "weights are each pair's tokens, so every pair is drawn in proportion to its size; prefixes carry no .bin/.idx",
        f"or one blend with a split: --data-path {shlex.join(_data_path(blends['train']))} --split 100,0,0 (the release's validation split stays out)",
        f"EOD loss: {'masked (--eod-mask-loss)' if s.eod_loss == 'mask' else 'trained on, as every recipe here does (--eod-loss mask: --eod-mask-loss)'}; "
        "--reset-position-ids --reset-attention-mask restart attention and positions after each EOD",
        "GPTDataset shuffles documents and samples with --seed; samples never cross from one pair into another",
        "megatron-core used directly (BlendedMegatronDatasetBuilder) needs torch.distributed initialised when a blend of several pairs has a path_to_cache "
        "(BlendedDataset._build_indices calls torch.distributed.get_rank()): init_process_group('gloo', world_size=1) in one process",
        "one pair per split instead: hf-tokbin merge RELEASE --out DIR, then DIR/<split> is the only prefix",
    ]
    return [argv], notes


# maxtext >= 0.2.5's pre-training entry point and its base config, found where pip put the package (no release text in it).
MAXTEXT_LAUNCHER = (
    "python -m maxtext.trainers.pre_train.train "
    '"$(python -c \'import maxtext, os; print(os.path.join(os.path.dirname(maxtext.__file__), "configs", "base.yml"))\')"'
)


def _maxtext(root: Path, s: LoaderSettings, index_dir: Path) -> tuple[list[str], list[str]]:
    blends = _blends(root)
    tok = _read_tokenizer(root)
    eod_id = s.eod_id if s.eod_id is not None else tok.eod_id

    def files(split: str) -> str:
        # MaxText's blend syntax: IDX_k|prefix_k,weight_k;... A lone spec takes no weight: without ';' the ',W' would be part of the path.
        specs = [(f"{index_dir / f'{split}-{k}'}|{prefix}", n) for k, (n, prefix) in enumerate(blends[split])]
        return specs[0][0] if len(specs) == 1 else ";".join(f"{spec},{n}" for spec, n in specs)

    global_batch = s.batch_size * s.world_size
    steps = max(1, s.epochs * _samples(blends["train"], s.seq_len) // global_batch)
    # train.py evaluates only when eval_interval > 0; each evaluation draws eval_steps global batches.
    eval_steps = _samples(blends.get("validation", []), s.seq_len) // global_batch
    args = ["dataset_type=grain", "grain_file_type=mmap_npy", f"grain_train_files={files('train')}"]
    if eval_steps:
        args += [f"grain_eval_files={files('validation')}", f"eval_interval={max(1, min(1000, steps))}", f"eval_steps={eval_steps}"]
    args += [
        f"mmap_eod_id={eod_id if eod_id is not None else 'EOD_ID'}",
        "mmap_split_sentences=false",
        f"max_target_length={s.seq_len}",
        f"per_device_batch_size={s.batch_size}",
        f"steps={steps}",
        f"data_shuffle_seed={MEGATRON_SEED}",
        "reset_attention_mask=true",
        f"eod_mask_loss={'true' if s.eod_loss == 'mask' else 'false'}",
        "packing_max_segments_per_sample=0",
    ]
    if tok.shipped is not None:
        args += ["tokenizer_type=huggingface", f"tokenizer_path={tok.shipped}"]
    lines = [MAXTEXT_LAUNCHER + " \\", *(shlex.quote(a) + " \\" for a in args)]
    lines[-1] = lines[-1][:-2]
    notes = [
        "needs maxtext >= 0.2.5 (Python >= 3.12); MaxText's git main at the commit checked has no mmap/mmap_npy reader",
        f"steps={steps:,} x per_device_batch_size x devices ({global_batch:,} at world size {s.world_size}) samples: the train split {s.epochs} time(s)",
        "the sample order equals Megatron's (hf-tokbin recipe --for megatron with the same -B -T --world-size --epochs): same prefixes, weights, "
        "seed, seq length and sample count (steps * global batch); the folder form grain_train_files='IDX|DIR/shards/train' does not when a split has several pairs",
        f"{_quoted(index_dir)} must be writable: MaxText builds the document/sample/shuffle .npy indices there on first use",
        f"grain_file_type=mmap with grain_train_files={_quoted(root / SHARDS_DIR / 'train')} also reads every pair (sorted *.idx), in its own order",
        f"EOD loss: {'masked' if s.eod_loss == 'mask' else 'trained on'} (eod_mask_loss), as in every recipe here with the same --eod-loss",
        "add the model: model_name=... (or base_emb_dim/base_num_decoder_layers/...) and vocab_size >= the release's, and base_output_directory=...",
        "from scratch: no run_name is given, so MaxText names the run {model_name}_{date and minute}, a new one each run; "
        "MaxText resumes from base_output_directory/run_name/checkpoints whenever a checkpoint is there, so a run_name you add must be a new one",
    ]
    if tok.shipped is None:
        notes.append("this release ships no tokenizer/: set tokenizer_type and tokenizer_path to the tokenizer it was built with")
    if eval_steps:
        notes.append(f"validation: eval_steps={eval_steps:,} x {global_batch:,} samples, the validation split once, every {max(1, min(1000, steps)):,} steps "
                     "(MaxText's eval_interval default -1 never evaluates)")
    else:
        notes.append("no validation split (or none of one global batch): no grain_eval_files, MaxText evaluates nothing (eval_interval stays -1)")
    if eod_id is None:
        notes.append("EOD_ID unknown (no run_config.json eod_id): pass --eod-id")
    return lines, notes
