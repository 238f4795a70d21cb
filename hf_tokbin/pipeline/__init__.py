"""``hf-tokbin build``: a corpus and a tokenizer in, a verified release out.

- :mod:`.plan`: :func:`plan_build` checks every input and option before any work; ``run_config.json``.
- :mod:`.encode`: one input shard's ids, in bounded batches (one worker pool for the whole build).
- :mod:`.part`: :func:`build_part`, one part's Megatron pair, llm.c staging pair and receipt (last).
- :mod:`.finish`: :func:`finish_build`, llm.c packing, ``stats.json``, the card, ``COMPLETE.json`` (last).
- :mod:`.run`: :func:`run_build` (the lock, the plan, every part on an engine, then the finish) and :func:`build`.
"""

from ..formats.build_options import DEFAULT_BATCH_SIZE, BuildOptions
from .finish import finish_build
from .part import build_part
from .plan import BuildPlan, plan_build, start_release
from .run import BuildSummary, build, run_build

__all__ = ["DEFAULT_BATCH_SIZE", "BuildOptions", "BuildPlan", "BuildSummary", "build", "build_part", "finish_build", "plan_build", "run_build", "start_release"]
