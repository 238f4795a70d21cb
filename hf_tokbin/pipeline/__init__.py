"""``hf-tokbin build``: a corpus and a tokenizer in, a verified release out, in two steps over an engine.

- :mod:`.plan`: :class:`BuildPlan`, the one frozen record of a build; ``run_config.json`` (:func:`start_release`).
- :mod:`.run`: :func:`run_build`, the one entry (the lock, :func:`plan_build`, the dry run, the two steps);
  :func:`build` runs a plan made already.
- :mod:`.encode`: step 1, :func:`encode_parts`: each part (one corpus shard) to its Megatron pair, its llm.c
  segment and its receipt, last.
- :mod:`.publish`: step 2, :func:`publish_release`: the llm.c files packed from the segments, ``stats.json``, the
  preview (:mod:`.preview`), the card, ``COMPLETE.json`` last.
- :mod:`.shuffle` (``--shuffle-seed``), :mod:`.merge` (``hf-tokbin merge``).

The names below load their module on first use: a worker process that runs step 1 imports :mod:`.encode` alone.
"""

_LAZY = {
    "DEFAULT_BATCH_SIZE": "..formats.build_options",
    "BuildOptions": "..formats.build_options",
    "BuildPlan": ".plan",
    "start_release": ".plan",
    "BuildSummary": ".run",
    "build": ".run",
    "plan_build": ".run",
    "run_build": ".run",
    "encode_parts": ".encode",
    "encode_part": ".encode",
    "publish_release": ".publish",
}


def __getattr__(name: str):
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(_LAZY)
