"""``datasets`` builders that read raw corpus inputs, in the shape of datasets' packaged builders.

Used programmatically (datasets 4+ runs no loading scripts)::

    builder = TinyStories(data_files={"train": ["train.txt"]}, cache_dir=tmp)
    for table in builder.as_streaming_dataset(split="train").with_format("arrow").iter(10_000):
        ...
"""

from .corpus_shards import CorpusShards, CorpusShardsConfig, sha256_split
from .tinystories import TinyStories, TinyStoriesConfig, read_stories

__all__ = ["CorpusShards", "CorpusShardsConfig", "TinyStories", "TinyStoriesConfig", "read_stories", "sha256_split"]
