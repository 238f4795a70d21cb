"""modded-nanogpt: ``train_gpt.py``.

Checked against KellerJordan/modded-nanogpt at
f411b3d346aa52d3504324ca93c230fd84c6c07f (2026-08-01): ``train_gpt.py``
``Hyperparameters``, ``TRAINING_STAGES``, ``_load_data_shard``, ``Shard``,
``distributed_data_generator``.

- magic-version (error): ``_load_data_shard`` asserts 20240520 and version 1.
- bos-id (error): ``BOS_ID = 50256`` is hard-coded; the release's separator
  (manifest ``doc_sep_id``) must be 50256, or no window is ever aligned.
- no-bos (error): ``Shard.next_batch`` starts every sequence at a BOS position;
  a file without one raises ``StopIteration`` at once and is skipped whole.
- bos-first (warning): tokens before a file's first BOS are never read.
- long-docs (warning): ``Shard.next_batch`` ends a sequence at
  ``cur + max_seq_len``; the rest of a longer document is never trained on.
- vocab (error): the model is built with ``GPT(vocab_size=50257, ...)``.
- single-file (error): with ``align_to_bos`` (the train loader's default),
  ``distributed_data_generator`` preloads the next shard with
  ``next(file_iter)`` right after the first; one train file raises
  ``StopIteration`` inside the generator (a ``RuntimeError``).
- file-order (warning): ``sorted(glob.glob(filename_pattern))``.
- documents-per-micro-batch (error): ``distributed_data_generator`` copies a
  micro-batch's document starts into ``TRAIN_MAX_NUM_DOCS[num_tokens_local]`` slots.
- val-tokens (error, warning), val-documents-per-micro-batch (error): the val
  loader (``align_to_bos=False``) needs a file holding one val micro-batch, and
  as many slots as its micro-batches hold documents
  (``TRAIN_MAX_NUM_DOCS.get(n, next_multiple_of_n(n // 300, n=128))``).

The recipe's step count and ``TRAIN_MAX_NUM_DOCS`` come from where each
document starts in the train and val files: it reads the token files.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from ..formats import llmc
from ..readers.views import scan_positions
from .base import (
    ERROR,
    WARNING,
    Finding,
    LoaderSettings,
    RecipeRequest,
    Trainer,
    Written,
    file_order,
    python_literal,
    raw_header,
    readable_files,
)
from .llmc_files import GPT2_VOCAB, LlmcInputs, document_start_token, file_tokens, llmc_globs, llmc_inputs, written

MODDED_NANOGPT_BOS = 50256  # modded-nanogpt train_gpt.py BOS_ID


# train_gpt.py TRAINING_STAGES: tokens per process per micro-batch (batch_size / 8, whatever the world size:
# grad_accum_steps = 8 // world_size), train_max_seq_len, and TRAIN_MAX_NUM_DOCS[tokens] (documents per
# micro-batch + 1).
MODDED_NANOGPT_STAGES = ((16384, 896, 64), (32768, 2048, 96), (49152, 2048, 128))
MODDED_NANOGPT_VAL_BATCH = 4 * 64 * 1024 * 8  # train_gpt.py Hyperparameters.val_batch_size
MODDED_NANOGPT_VAL_TOKENS = 10485760  # train_gpt.py Hyperparameters.val_tokens
# train_gpt.py TRAINING_STAGES duration; then the extension stage (the last's sizes)
MODDED_NANOGPT_STAGE_DURATIONS = (1 / 3, 1 / 3, 1 / 3)
MODDED_NANOGPT_EXTENSION_STEPS = 15  # Hyperparameters.num_extension_iterations default


def check_modded_nanogpt(path: Path, s: LoaderSettings) -> list[Finding]:
    """modded-nanogpt's ``train_gpt.py``: ``_load_data_shard``, ``Shard.next_batch``,
    ``distributed_data_generator``."""
    findings = []
    inputs = llmc_inputs(path)
    manifest = inputs.manifest
    problem = _bos_id_problem(path, manifest) if manifest is not None else None
    if problem:
        findings.append(Finding(ERROR, str(inputs.manifest_path), "bos-id", problem))
    for split, files in inputs.splits:
        if split == "train" and len(files) == 1:
            findings.append(
                Finding(
                    ERROR,
                    str(files[0]),
                    "single-file",
                    "distributed_data_generator preloads the next shard with next(file_iter) after the first: one "
                    "train file raises StopIteration inside the generator",
                )
            )
        findings += file_order(files, "sorted(glob.glob(...))") if files else []
        for file, tokens in readable_files(
            files,
            llmc.MAGIC,
            llmc.VERSION_UINT16,
            "modded-nanogpt's _load_data_shard",
            "uint16 ids only",
            llmc.open_tokens,
            findings,
        ):
            vocab = int(raw_header(file)[3]) or (manifest.vocab_size if manifest else 0)
            if vocab > GPT2_VOCAB:
                findings.append(
                    Finding(
                        ERROR,
                        str(file),
                        "vocab",
                        f"the model is GPT(vocab_size={GPT2_VOCAB}); this vocabulary has {vocab:,}",
                    )
                )
            findings += _bos_rules(file, tokens, s.seq_len)
            if split == "train":
                findings += _documents_per_micro_batch(file, tokens)
    findings += _modded_val_tokens(inputs, s)
    return findings


def _bos_id_problem(path: Path, manifest: llmc.TokensManifest) -> str | None:
    start, what = document_start_token(path, manifest)
    if start == MODDED_NANOGPT_BOS:
        return None
    return f"train_gpt.py aligns sequences on BOS_ID = {MODDED_NANOGPT_BOS}; this release's {what} is {start}"


def record_problem(root: Path) -> str | None:
    """Why train_gpt.py cannot train on the release, from its records alone: BOS_ID and the model's vocabulary."""
    manifest = llmc_inputs(root).manifest
    if manifest is None:
        return None
    if manifest.vocab_size > GPT2_VOCAB:
        return f"the model is GPT(vocab_size={GPT2_VOCAB}); this vocabulary has {manifest.vocab_size:,}"
    return _bos_id_problem(root, manifest)


def most_documents_per_micro_batch(tokens: np.ndarray, num_tokens_local: int, max_seq_len: int) -> int:
    """The most BOS-aligned pieces ``Shard.next_batch`` can put in one micro-batch of this file.

    A micro-batch takes documents from a BOS, each cut at ``max_seq_len``, until
    ``num_tokens_local + 1`` tokens are gathered; every start is tried.
    """
    bos = scan_positions(tokens, MODDED_NANOGPT_BOS)
    if bos.size == 0:
        return 0
    pieces = np.minimum(np.diff(np.append(bos, tokens.size)), max_seq_len)
    ends = np.concatenate([[0], np.cumsum(pieces)])
    last = np.searchsorted(ends, ends[:-1] + num_tokens_local + 1, side="left")
    whole = last < ends.size  # a start without enough documents after it ends the shard instead
    return int((last - np.arange(pieces.size))[whole].max()) if whole.any() else 0


class ModdedTrainLoader:
    """train_gpt.py's train loader over the release's train files, call by call, as its code reads them.

    ``distributed_data_generator`` reads the files in order once; each call takes, for every
    process in turn, ``Shard.next_batch``'s windows: one per BOS, cut at ``train_max_seq_len``
    and at ``num_tokens_local + 1`` tokens (the rest of that document is skipped); when the
    file has too few BOS ahead, the call is served from the next file, and past the last file
    the generator fails (``next_shard_getter`` is None). A step is ``8 // world_size`` calls.
    """

    def __init__(self, files: list[np.ndarray], world_size: int):
        self.bos = [scan_positions(t, MODDED_NANOGPT_BOS) for t in files]
        self.sizes = [int(t.size) for t in files]
        self.world_size = world_size
        self._window_ends = {}  # (file, max_seq_len) -> the windows' cumulative lengths, from 0

    def serves(self, scheduled: int, extension: int) -> bool:
        """Whether every call of ``scheduled`` + ``extension`` steps is served (TrainingSchedule's stage boundaries).

        The generator starts with the first stage's sizes; the training loop sends a stage's sizes when they
        differ from the step before's (TrainingManager starts from step 0's stage), as train_gpt.py does.
        """
        ends = [
            0,
            *[round(c * scheduled) for c in itertools.accumulate(MODDED_NANOGPT_STAGE_DURATIONS[:-1])],
            scheduled,
            scheduled + extension,
        ]
        stages = [*MODDED_NANOGPT_STAGES, MODDED_NANOGPT_STAGES[-1]]
        sizes = stages[0][:2]
        previous = stages[next(k for k, end in enumerate(ends[1:]) if 0 < end)][:2] if ends[-1] else sizes
        f, i = 0, 0
        for step in range(ends[-1]):
            stage = stages[next(k for k, end in enumerate(ends[1:]) if step < end)][:2]
            sizes, previous = (stage, stage) if stage != previous else (sizes, previous)
            for _ in range(8 // self.world_size):
                while (taken := self._take(f, i, *sizes)) is None:
                    f, i = f + 1, 0
                    if f == len(self.bos):
                        return False
                i = taken
        return True

    def _take(self, f: int, i: int, tokens_local: int, max_seq_len: int) -> int | None:
        """The BOS index after one call from BOS index ``i`` of file ``f``, or None if the file cannot serve it."""
        key = (f, max_seq_len)
        if key not in self._window_ends:
            lengths = np.minimum(np.diff(np.append(self.bos[f], self.sizes[f])), max_seq_len)
            self._window_ends[key] = np.concatenate(([0], np.cumsum(lengths)))
        ends = self._window_ends[key]
        for _ in range(self.world_size):
            i = int(np.searchsorted(ends, ends[i] + tokens_local + 1, side="left"))
            if i >= ends.size:
                return None
        return i


def modded_train_schedule(files: list[np.ndarray], world_size: int) -> tuple[int, int]:
    """(num_scheduled_iterations, num_extension_iterations): the most scheduled steps the train loader serves, with
    the default 15 extension steps when at least 3 scheduled ones remain, else none. (0, 0) if not one step."""
    loader = ModdedTrainLoader(files, world_size)
    for extension in (MODDED_NANOGPT_EXTENSION_STEPS, 0):
        # Binary search between a count served (lo) and one not (hi): the loader reads fewer tokens than the files
        # hold.
        lo, hi = 0, max(1, sum(loader.sizes) // (MODDED_NANOGPT_STAGES[0][0] * 8))
        if not loader.serves(lo, extension):
            continue
        while loader.serves(hi, extension):
            lo, hi = hi, hi * 2
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if loader.serves(mid, extension) else (lo, mid)
        if extension == 0 or lo >= 3:
            return lo, extension
    return 0, 0


def modded_default_max_num_docs(num_tokens_local: int) -> int:
    """``distributed_data_generator``'s slots for a micro-batch size ``TRAIN_MAX_NUM_DOCS`` lacks (the val loader's):
    ``next_multiple_of_n(num_tokens_local // 300, n=128)``."""
    return -(-(num_tokens_local // 300) // 128) * 128


def most_documents_per_val_micro_batch(files: list[np.ndarray], val_batch_size: int, world_size: int) -> int:
    """The most BOS in one process's micro-batch of the val loader (``align_to_bos=False``: fixed windows of
    ``val_batch_size // 8`` tokens from each file's start, while ``pos + num_tokens + 1 < len(tokens)``)."""
    num_tokens = val_batch_size // max(1, 8 // world_size)
    local = num_tokens // world_size
    most = 0
    for tokens in files:
        bos = scan_positions(tokens, MODDED_NANOGPT_BOS)
        calls = np.arange(0, max(0, tokens.size - num_tokens - 1), num_tokens, dtype=np.int64)
        starts = (calls[:, None] + np.arange(world_size, dtype=np.int64)[None, :] * local).ravel()
        if starts.size:
            most = max(most, int((np.searchsorted(bos, starts + local) - np.searchsorted(bos, starts)).max()))
    return most


def modded_max_num_docs(
    train: list[np.ndarray], val: list[np.ndarray], val_batch_size: int, world_size: int
) -> dict[int, int] | None:
    """``TRAIN_MAX_NUM_DOCS`` with room for the most documents of every train and val micro-batch (slots =
    documents + 1, rounded up to 32); None when train_gpt.py's own table and default serve."""
    table = {n: slots for n, _, slots in MODDED_NANOGPT_STAGES}
    needed = {
        n: 1 + max([most_documents_per_micro_batch(t, n, cap) for t in train] or [0])
        for n, cap, _ in MODDED_NANOGPT_STAGES
    }
    if val_batch_size:
        local = val_batch_size // 8
        needed[local] = max(
            needed.get(local, 0), 1 + most_documents_per_val_micro_batch(val, val_batch_size, world_size)
        )
    if all(k <= table.get(n, modded_default_max_num_docs(n)) for n, k in needed.items()):
        return None
    fixed = {n: max(slots, -(-needed[n] // 32) * 32) for n, slots in table.items()}
    fixed.update(
        {n: -(-k // 32) * 32 for n, k in needed.items() if n not in table and k > modded_default_max_num_docs(n)}
    )
    return fixed


def _documents_per_micro_batch(file: Path, tokens: np.ndarray) -> list[Finding]:
    """``distributed_data_generator`` copies a micro-batch's document starts into ``TRAIN_MAX_NUM_DOCS[tokens]``
    slots."""
    needed = {n: most_documents_per_micro_batch(tokens, n, cap) for n, cap, _ in MODDED_NANOGPT_STAGES}
    over = [(n, k, slots) for (n, _, slots), k in zip(MODDED_NANOGPT_STAGES, needed.values()) if k + 1 > slots]
    if not over:
        return []
    fix = {n: max(slots, -(-(needed[n] + 1) // 32) * 32) for n, _, slots in MODDED_NANOGPT_STAGES}
    n, k, slots = over[0]
    return [
        Finding(
            ERROR,
            str(file),
            "documents-per-micro-batch",
            f"a {n:,}-token micro-batch can hold {k} documents here, TRAIN_MAX_NUM_DOCS gives {slots - 1} "
            f"(the first micro-batch fails: 'The expanded size of the tensor'): set TRAIN_MAX_NUM_DOCS = {fix} "
            "(hf-tokbin recipe prints it)",
        )
    ]


def modded_val_batch(val_files_tokens: list[int], world_size: int) -> tuple[int, int]:
    """The ``val_batch_size`` and ``val_tokens`` the validation files can serve, (0, 0) when none.

    The val loader (``align_to_bos=False``) reads ``val_batch_size // grad_accum_steps``
    tokens (+1) per micro-batch inside one file and moves to the next file when
    ``pos + num_tokens + 1 >= len(tokens)``. The default batch, else the largest
    power-of-two fraction of it (at least 2,048 tokens per process), that fits.
    """
    grad_accum = max(1, 8 // world_size)
    batch = MODDED_NANOGPT_VAL_BATCH
    while batch >= 2048 * 8:
        micro = batch // grad_accum
        micro_batches = sum(max(0, n - 2) // micro for n in val_files_tokens)
        usable = micro_batches // grad_accum * batch
        if usable:
            return batch, min(usable, MODDED_NANOGPT_VAL_TOKENS)
        batch //= 2
    return 0, 0


def _modded_val_tokens(inputs: LlmcInputs, s: LoaderSettings) -> list[Finding]:
    files = dict(inputs.splits).get("val") or []
    if inputs.manifest is None:
        return []
    if not files:
        return [
            Finding(
                WARNING,
                str(inputs.manifest_path),
                "no-val",
                "no val files: train_gpt.py validates at its last step at least; the recipe points val_files at the "
                "train files",
            )
        ]
    sizes = [llmc.read_header(f).n_tokens for f in files]
    batch, _ = modded_val_batch(sizes, s.world_size)
    if batch == 0:
        return [
            Finding(
                ERROR,
                str(files[0].parent),
                "val-tokens",
                f"no val file holds one val micro-batch of {2048 * 8 // max(1, 8 // s.world_size):,}+2 tokens: the "
                "val loader raises StopIteration",
            )
        ]
    findings = _val_documents_per_micro_batch(files, batch, s.world_size)
    if batch != MODDED_NANOGPT_VAL_BATCH:
        return findings + [
            Finding(
                WARNING,
                str(files[0].parent),
                "val-tokens",
                f"the val split ({sum(sizes):,} tokens) is below one default val batch of "
                f"{MODDED_NANOGPT_VAL_BATCH:,} per file: set val_batch_size = {batch} and val_tokens as the recipe "
                "prints",
            )
        ]
    return findings


def _val_documents_per_micro_batch(files: list[Path], batch: int, world_size: int) -> list[Finding]:
    """The val loader copies a micro-batch's BOS positions into ``TRAIN_MAX_NUM_DOCS.get(val_batch_size // 8,
    default)`` slots."""
    local = batch // 8
    most = most_documents_per_val_micro_batch([llmc.open_tokens(f) for f in files], batch, world_size)
    slots = {n: k for n, _, k in MODDED_NANOGPT_STAGES}.get(local, modded_default_max_num_docs(local))
    if most + 1 <= slots:
        return []
    return [
        Finding(
            ERROR,
            str(files[0].parent),
            "val-documents-per-micro-batch",
            f"a {local:,}-token val micro-batch (val_batch_size {batch:,}) holds {most} documents here, train_gpt.py "
            f"gives {slots - 1} "
            f"(the first validation fails: 'The expanded size of the tensor'): add {local}: "
            f"{-(-(most + 1) // 32) * 32} to TRAIN_MAX_NUM_DOCS (hf-tokbin recipe prints it)",
        )
    ]


def _bos_rules(file: Path, tokens: np.ndarray, max_seq_len: int) -> list[Finding]:
    bos = scan_positions(tokens, MODDED_NANOGPT_BOS)
    if bos.size == 0:
        return [
            Finding(
                ERROR,
                str(file),
                "no-bos",
                f"no BOS ({MODDED_NANOGPT_BOS}) in the file: Shard.next_batch raises StopIteration at once and the "
                "file is skipped",
            )
        ]
    findings = []
    if bos[0] > 0:
        findings.append(
            Finding(
                WARNING,
                str(file),
                "bos-first",
                f"the first {int(bos[0]):,} tokens come before the first BOS and are never read",
            )
        )
    lengths = np.diff(np.append(bos, tokens.size))
    long_docs = int(np.count_nonzero(lengths > max_seq_len))
    if long_docs:
        findings.append(
            Finding(
                WARNING,
                str(file),
                "long-docs",
                f"{long_docs:,} of {lengths.size:,} documents are longer than max_seq_len={max_seq_len}: "
                "Shard.next_batch cuts each there, the rest is never trained on",
            )
        )
    return findings


def _modded_nanogpt(root: Path, globs: dict, s: LoaderSettings) -> tuple[list[list[str]], list[str], list[str]]:
    train, val = globs["train"][0], globs.get("val", (None,))[0]
    scheduled, extension = modded_train_schedule([llmc.open_tokens(f) for f in globs["train"][1]], s.world_size)
    lines = [
        "# train_gpt.py class Hyperparameters: replace these lines",
        f"    train_files: str = {python_literal(train)}",
    ]
    lines.append(f"    val_files: str = {python_literal(val or train)}")
    batch, val_tokens = modded_val_batch(file_tokens(globs, "val" if val else "train"), s.world_size)
    if batch:
        lines += [f"    val_tokens: int = {val_tokens}", f"    val_batch_size: int = {batch}"]
    lines += [f"    num_scheduled_iterations: int = {scheduled}", f"    num_extension_iterations: int = {extension}"]
    val_files = [llmc.open_tokens(f) for f in globs["val" if val else "train"][1]]
    fix = modded_max_num_docs([llmc.open_tokens(f) for f in globs["train"][1]], val_files, batch, s.world_size)
    if fix:
        lines += ["# train_gpt.py, the module-level table: replace it", f"TRAIN_MAX_NUM_DOCS = {fix}"]
    notes = [
        "train_files/val_files are hard-coded (os.path.join(DATA_PATH, 'data/fineweb10B/...')): edit the lines above "
        "in the file",
        f"{scheduled:,} scheduled + {extension} extension steps: the most its train loader serves from the train "
        "split in one pass "
        "(a third of the steps at 131,072, 262,144 and 393,216 tokens each; a window per document, cut at 896 then "
        "2,048 tokens; "
        "a file's tail that no longer fits a micro-batch is skipped); its loader does not loop: for more epochs, "
        "iter(files) -> itertools.cycle(files) in distributed_data_generator",
        "from scratch (train_gpt.py always is); it needs CUDA and a world size dividing 8 (grad_accum_steps = 8 // "
        "world_size)",
        "every sequence starts at a BOS (50256): the release's separator, written before each document",
        "files are read in sorted-name order, the manifest's, from start to end: documents come in the release's "
        "order",
        "the loss counts every token, the separator included: train_gpt.py has no EOD loss mask",
    ]
    if not val:
        notes.append("no val files: val_files names the train files, so its val loss is a loss on training data")
    elif not batch:
        notes.append("the val files are too small for any val batch (see the val-tokens finding)")
    command = ["torchrun", "--standalone", f"--nproc_per_node={s.world_size}", "train_gpt.py"]
    return [command], lines, notes


def write_modded_nanogpt(request: RecipeRequest) -> Written:
    globs = llmc_globs(request.root, request.findings, check_glob=request.check_glob)
    return written(*_modded_nanogpt(request.root, globs, request.settings))


MODDED_NANOGPT = Trainer(
    "modded-nanogpt",
    "KellerJordan/modded-nanogpt f411b3d346aa52d3504324ca93c230fd84c6c07f (2026-08-01): "
    "train_gpt.py Hyperparameters, TRAINING_STAGES, distributed_data_generator",
    "llmc",
    check_modded_nanogpt,
    write_modded_nanogpt,
    label="modded-nanogpt",
    llmc_layouts=("gpt2",),
    record_problem=record_problem,
    reads_token_bytes=True,
    # A finding's rule -> the start of the printed code line that fixes it (a setting the recipe computed).
    fixed_by_code={
        "documents-per-micro-batch": "TRAIN_MAX_NUM_DOCS = ",
        "val-documents-per-micro-batch": "TRAIN_MAX_NUM_DOCS = ",
        "val-tokens": "    val_batch_size: int = ",
    },
)
