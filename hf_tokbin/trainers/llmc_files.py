"""The llm.c token files as the llm.c-family trainers (llm.c, modded-nanogpt, nanoGPT) read them.

The files per split in the manifest's order, the token that begins each
document, the vocabulary, and the globs a recipe prints: each glob is globbed
here and must select exactly the manifest's files of the split, in its order
(a ``glob`` error finding otherwise).
"""

from __future__ import annotations

import glob
import shlex
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import FormatError
from ..formats import llmc
from ..formats.release import PARTIAL_NAME, RUN_CONFIG_NAME
from ..formats.run_config import RunConfig
from ..formats.sniff import sniff
from ..readers.views import find_llmc_folder
from .base import ERROR, Finding, Written, raw_header

GPT2_VOCAB = 50257  # llm.c train_gpt2.py GPTConfig, modded-nanogpt GPT(vocab_size=50257), nanoGPT's init_from='gpt2*'


@dataclass(frozen=True)
class LlmcInputs:
    """Files per split (manifest order), or one lone file under split None."""

    splits: list[tuple[str | None, list[Path]]]
    manifest: llmc.TokensManifest | None
    manifest_path: Path | None


def llmc_inputs(path: Path) -> LlmcInputs:
    if path.is_file():
        sniff(path)  # a file that is no token file (a .txt) is named as such, before its bytes are read as a header
        return LlmcInputs([(None, [path])], None, None)
    folder = find_llmc_folder(path)
    manifest_path = folder / llmc.MANIFEST_NAME
    manifest = llmc.TokensManifest.read(manifest_path)
    splits = [(s, [folder / f.name for f in manifest.files if f.split == s]) for s in llmc.SPLITS]
    if (
        path / PARTIAL_NAME
    ).is_file():  # a copy from pull --include: the files it holds (hf-tokbin verify checked them)
        splits = [(s, [f for f in files if f.is_file()]) for s, files in splits]
    return LlmcInputs(splits, manifest, manifest_path)


def document_start_token(path: Path, manifest: llmc.TokensManifest) -> tuple[int | None, str]:
    """The id that begins every llm.c document, and what it is: by run_config.json's layout in a release, else the
    manifest's separator (the llm.c layout: before)."""
    if path.is_dir() and (path / RUN_CONFIG_NAME).is_file():
        config = RunConfig.read(path / RUN_CONFIG_NAME)
        if config.llmc_separator == "after" or config.llmc_sep is None:
            return (
                config.bos_id,
                "BOS (each document's first token; the separator follows documents)"
                if config.bos is not None
                else "first token of each document: text (no BOS, no separator before)",
            )
    return manifest.doc_sep_id, "separator"


def llmc_vocab_size(file: Path, manifest: llmc.TokensManifest | None) -> int:
    """The vocabulary an llm.c file's ids come from: its manifest's, else (a lone file) its header's (slot 3, as we
    write it); 0 if neither says. The manifest first: a URL build's card is written where no token file is."""
    if manifest is not None:
        return manifest.vocab_size
    header = raw_header(file)
    return int(header[3]) if header is not None else 0


def llmc_globs(
    root: Path, findings: list[Finding], check_glob: bool = True
) -> dict[str, tuple[str, list[Path], list[int]]]:
    """Per llm.c split ("train", "val"): the glob selecting its files, the files in manifest order, and their token
    counts.

    The counts are the manifest's (a lone file's header without one): the dataset card's recipes are written at
    the end of a build whose token files may be at a URL, never fetched back. With ``check_glob`` the glob is
    checked here: it must select exactly those files, and sorted (as every loader sorts) in the manifest's order.
    """
    inputs = llmc_inputs(root)
    counts = (
        {}
        if inputs.manifest is None
        else {inputs.manifest_path.parent / f.name: f.n_tokens for f in inputs.manifest.files}
    )
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
        globs[split or "train"] = (
            pattern,
            files,
            [counts[f] if f in counts else llmc.read_header(f).n_tokens for f in files],
        )
    if "train" not in globs:
        raise FormatError(root, "no llm.c train files", hint="build with --format llmc")
    return globs


def file_tokens(globs: dict, split: str) -> list[int]:
    return globs[split][2] if split in globs else []


def llmc_batches(file_tokens: list[int], step_tokens: int) -> int:
    """Batches of ``step_tokens`` (B*T*world) + 1 that llm.c's loaders take from the files in one pass.

    ``dataloader.h``: ``shard_num_samples = (ntok - 1) // (B*T*world)`` per file;
    ``train_gpt2.py`` ``DistributedDataLoader`` moves to the next file when
    ``position + B*T*world + 1 > len(tokens)``: the same count.
    """
    return sum(max(0, n - 1) // step_tokens for n in file_tokens)


def llmc_family(root: Path, globs: dict) -> str:
    """The layout of the release's llm.c files: run_config.json's (no token file is opened: a URL build's card is
    written where none is), else, for a bare token folder, its first file's header."""
    if (root / RUN_CONFIG_NAME).is_file():
        return RunConfig.read(root / RUN_CONFIG_NAME).llmc_layout or "gpt2"
    return llmc.read_header(globs["train"][1][0]).layout.family


def llmc_dtype(root: Path, globs: dict) -> np.dtype:
    """The dtype of the release's llm.c ids: from run_config.json's layout and the manifest's vocabulary (no token file
    is opened: the card is written where none may be), else, for a bare token folder, its first file's header."""
    manifest = llmc_inputs(root).manifest
    if (root / RUN_CONFIG_NAME).is_file() and manifest is not None:
        return llmc.layout_for(manifest.vocab_size, llmc_family(root, globs)).dtype
    return llmc.read_header(globs["train"][1][0]).dtype


def release_vocab_size(root: Path, globs: dict) -> int:
    """The vocabulary of the release's llm.c ids (the first train file's header, else the manifest)."""
    return llmc_vocab_size(globs["train"][1][0], llmc_inputs(root).manifest)


def written(commands: list[list[str]], code: list[str], notes: list[str]) -> Written:
    """An llm.c-family recipe: its shell commands quoted as lines, then its code lines."""
    return Written([shlex.join(c) for c in commands] + code, notes, commands, code)
