"""TinyStories text files as a ``datasets`` builder: one row per story.

The reading rules (the TinyStories rules) and the reader are :mod:`hf_tokbin.corpus.tinystories_text`;
this wraps them for ``datasets`` users. ``hf-tokbin corpus tinystories`` reads with them
directly, without importing ``datasets``.
"""


from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import datasets
import pyarrow as pa
from datasets.builder import Key

from ...errors import CorpusInputError
from ..tinystories_text import DEFAULT_BLOCK_SIZE, DELIMITER, read_stories, read_story_batches, story_tables

__all__ = ["DEFAULT_BLOCK_SIZE", "DELIMITER", "TinyStories", "TinyStoriesConfig", "read_stories", "read_story_batches"]


@dataclass
class TinyStoriesConfig(datasets.BuilderConfig):
    """BuilderConfig for TinyStories text files.

    Args:
        block_size (`int`, defaults to 1 MiB):
            Bytes read from the file at a time. Memory holds a few copies of one
            block; the stories do not depend on it. 0.5-1 MiB blocks stay in
            the CPU cache and read fastest (scripts/bench_corpus.py).
        progress (`bool`, defaults to False):
            Show a tqdm bar of bytes read for each split.
        keep_empty (`bool`, defaults to False):
            Yield empty stories as empty rows instead of dropping them, so
            that the caller can count what it drops.
    """

    block_size: int = DEFAULT_BLOCK_SIZE
    progress: bool = False
    keep_empty: bool = False  # yield empty stories too (the corpus writer drops and counts them)

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.block_size, int) or self.block_size < 1:
            raise CorpusInputError(None, "block_size must be a positive integer", got=self.block_size)


class TinyStories(datasets.ArrowBasedBuilder):
    """Stories of TinyStories-format text files; ``data_files`` maps split names to files."""

    BUILDER_CONFIG_CLASS = TinyStoriesConfig

    def _info(self):
        return datasets.DatasetInfo(features=datasets.Features({"text": datasets.Value("string")}))

    def _split_generators(self, dl_manager):
        if not self.config.data_files:
            raise CorpusInputError(
                None, "TinyStories needs data_files", expected="{split: [paths]}", got=self.config.data_files
            )
        files = dl_manager.download(self.config.data_files)
        return [
            datasets.SplitGenerator(name=split, gen_kwargs={"files": list(paths), "split": split})
            for split, paths in files.items()
        ]

    def _generate_shards(self, files, split):
        yield from files

    def _generate_tables(self, files, split) -> Iterator[tuple[Key, pa.Table]]:
        config = self.config
        for (file_index, batch_index), table in story_tables(
            files, split, config.block_size, config.progress, config.keep_empty
        ):
            yield Key(file_index, batch_index), table
