"""``hf-tokbin build``: a corpus and a tokenizer in, a verified release out.

- :mod:`.plan`: :func:`plan_build` checks every input and option before any work; ``run_config.json``.
- :mod:`.encode`: one input shard's ids, in bounded batches (one worker pool for the whole build).
- :mod:`.part`: :func:`build_part`, one part's Megatron pair, llm.c staging pair and receipt (last).
- :mod:`.finish`: :func:`finish_build`, llm.c packing, ``stats.json``, the card, ``COMPLETE.json`` (last).
- :mod:`.job`: :func:`build`, every part on an engine (:mod:`hf_tokbin.engines`), then the finish.
"""

from ..formats.build_options import DEFAULT_BATCH_SIZE, BuildOptions
from .finish import finish_build
from .job import BuildSummary, build
from .part import build_part
from .plan import BuildPlan, plan_build, start_release

__all__ = ["DEFAULT_BATCH_SIZE", "BuildOptions", "BuildPlan", "BuildSummary", "build", "build_part", "finish_build", "plan_build", "start_release"]
