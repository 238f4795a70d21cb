"""The one way a build runs: its output's lock, its plan, then every part on an engine, then the finish.

:func:`run_build` is what ``build_release`` and ``hf-tokbin build`` both run (``hf_tokbin.api``); :func:`build`
runs a plan made already (``plan_build``). The output's lock is taken here and nowhere else: a local folder's
before the inputs are loaded (a concurrent build refuses at once), a URL's scratch folder once the plan names it.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import BuildError, FormatError
from ..formats.release import (
    COMPLETE_NAME,
    WORK_DIR,
    Complete,
    Receipt,
    SplitCounts,
    counts_table,
    megabytes,
    part_name,
    receipt_path,
)
from .encode import prepare_encoder
from .finish import check_split_totals, finish_build
from .part import build_part
from .plan import BuildPlan, start_release

ENGINES = ("local", "ray")


@dataclass(frozen=True)
class BuildSummary:
    out: str
    counts: dict[str, SplitCounts]
    files: int
    total_bytes: int
    seconds: float
    parts_built: int
    parts_skipped: int
    encoder: str
    documents_by_engine: dict[str, int] = field(default_factory=dict)  # this run's, by engine name
    workers: str = ""  # where the encoding ran: processes and threads

    def table(self) -> str:
        lines = counts_table(self.counts)
        lines.append(
            f"{self.files} files, {megabytes(self.total_bytes)} in {self.out}; "
            f"{self.parts_built} parts built, {self.parts_skipped} skipped; {self.seconds:.1f} s; encoder {self.encoder}"
        )
        if self.documents_by_engine:
            total = sum(self.documents_by_engine.values())
            shares = ", ".join(f"{name} {count:,} ({100 * count / total:.1f}%)" for name, count in self.documents_by_engine.items())
            lines.append(f"documents encoded by {shares}" + (f"; {self.workers}" if self.workers else ""))
        return "\n".join(lines)

    def record(self) -> dict:
        """The summary as a record (``build --json``)."""
        return {
            "out": self.out,
            "splits": {split: c.stats_dict() for split, c in self.counts.items()},
            "files": self.files,
            "bytes": self.total_bytes,
            "seconds": round(self.seconds, 3),
            "parts_built": self.parts_built,
            "parts_skipped": self.parts_skipped,
            "encoder": self.encoder,
            "documents_by_engine": self.documents_by_engine,
            "workers": self.workers,
        }


def build(plan: BuildPlan, engine: str = "local", ray_address: str | None = None, progress: bool = True) -> BuildSummary:
    """Run every part of a planned build (skipping finished ones), then the finish, under the output's lock."""
    planned = contextlib.nullcontext(plan)
    return run_build(plan.out, lambda: planned, engine=engine, ray_address=ray_address, progress=progress)[1]


def run_build(
    out: str | os.PathLike,
    planning: Callable[[], contextlib.AbstractContextManager[BuildPlan]],
    *,
    engine: str = "local",
    ray_address: str | None = None,
    progress: bool = True,
    dry_run: bool = False,
    on_plan: Callable[[BuildPlan], None] | None = None,
) -> tuple[BuildPlan, BuildSummary | str]:
    """``(plan, summary)``: the build ``planning()`` plans (a context manager: its inputs last while it lasts).

    Two builds into the same output would delete each other's temporary files: the second one refuses at once
    (:meth:`hf_tokbin.output.Output.lock`), before it loads its inputs. ``on_plan(plan)`` runs before any work
    (the command line prints the boundary tokens and warnings). ``dry_run``: no lock, nothing written; the
    summary is the plan described (:func:`hf_tokbin.pipeline.dry_run.describe_plan`).
    """
    from ..output import is_url, lock_before_planning

    if engine not in ENGINES:
        raise BuildError(None, "engine must be local or ray", got=engine)
    with contextlib.ExitStack() as held:
        local = not dry_run and not is_url(os.fspath(out))
        if local:  # the lock's one place, for a local folder: before the inputs are loaded
            held.enter_context(lock_before_planning(out))
        plan = held.enter_context(planning())
        if on_plan is not None:
            on_plan(plan)
        if dry_run:
            from .dry_run import describe_plan

            return plan, describe_plan(plan)
        started = time.perf_counter()
        complete = plan.output.read_bytes(COMPLETE_NAME) is not None
        _check_engine(plan, engine, ray_address, complete)
        if not local:  # and for a URL: its scratch folder, named by the plan
            held.enter_context(plan.output.lock())
        if complete:
            return plan, _summarize_complete(plan, started)
        return plan, _build(plan, engine, ray_address, progress, started)


def _check_engine(plan: BuildPlan, engine: str, ray_address: str | None, complete: bool) -> None:
    if engine == "ray" and plan.out.startswith("memory://"):
        raise BuildError(
            plan.out,
            "--engine ray needs an --out every node can write",
            expected="a shared folder or a URL such as s3://, gs://, file://",
            got="memory:// (one process's memory)",
        )
    if engine == "ray" and not complete:
        from ..engines.ray import check_reachable, import_ray

        import_ray()  # before the first byte of the release is written
        check_reachable(ray_address)


def _summarize_complete(plan: BuildPlan, started: float) -> BuildSummary:
    """A build run again on its complete release: nothing is built; the summary is read back."""
    output = plan.output
    start_release(plan)  # same build? (raises if not); removes stale temporaries
    # A build killed after COMPLETE.json, before its own clean-up, left its work folder: verify would reject it.
    output.remove_tree(WORK_DIR)
    output.discard_work()
    receipts = [_read_record(output, receipt_path(part_name(i)), Receipt.read) for i in range(len(plan.corpus.shards))]
    counts = check_split_totals(plan, receipts)
    return _summary(plan, counts, started, 0, len(receipts))


def _build(plan: BuildPlan, engine: str, ray_address: str | None, progress: bool, started: float) -> BuildSummary:
    from ..engines import connected, run_parts

    start_release(plan)
    plan = prepare_encoder(plan)
    with connected(engine, ray_address):  # one Ray connection for the parts and the pack tasks
        results = run_parts(engine, build_part, plan, list(range(len(plan.corpus.shards))), ray_address=ray_address, progress=progress)
        receipts = [receipt for receipt, _, _ in results]
        built = sum(1 for _, was_built, _ in results if was_built)
        by_engine = (sum(engines[0] for _, _, engines in results), sum(engines[1] for _, _, engines in results))
        counts, _ = finish_build(plan, receipts, engine, ray_address, progress)
    return _summary(plan, counts, started, built, len(results) - built, by_engine, engine)


def _read_record(output, rel: str, reader):
    record = output.read_record(rel, reader)
    if record is None:
        raise FormatError(output.location(rel), "file is missing")
    return record


def _summary(plan: BuildPlan, counts, started: float, built: int, skipped: int, by_engine=(0, 0), engine_name="local") -> BuildSummary:
    complete = _read_record(plan.output, COMPLETE_NAME, Complete.read)
    total = sum(f.size for f in complete.files)
    engine = plan.encoder.engine if plan.encoder is not None else "none (nothing to encode)"
    documents = _documents_by_engine(plan.encoder, by_engine)
    seconds = time.perf_counter() - started
    return BuildSummary(plan.out, counts, len(complete.files) + 1, total, seconds, built, skipped, engine, documents, _workers(plan, engine_name))


def _workers(plan: BuildPlan, engine: str) -> str:
    """Where the documents were encoded, processes and threads: what --num-proc chose."""
    if engine == "ray":
        return "each part a Ray task, its engine's own threads"
    if plan.options.num_proc > 1:
        # gigatoken runs on the calling thread in a worker, and the workers turn tokenizers' threads off (engines.local).
        return f"{plan.options.num_proc} worker processes, one engine thread each"
    return f"this process, the engine's own threads ({os.cpu_count()} cores)"


def _documents_by_engine(encoder, by_engine: tuple[int, int]) -> dict[str, int]:
    """The documents this run encoded, by engine name ("gigatoken", "tokenizers"); none counted: empty."""
    if encoder is None or not sum(by_engine) or not hasattr(encoder, "documents_by_engine"):
        return {}
    names = ("gigatoken", "tokenizers")
    return {name: count for name, count in zip(names, by_engine) if count}



