"""``farm run --resume DIR``: what a resumed run keeps of its run directory (the benchmarks that passed,
and the boots whose benchmarks all passed) and so need not do again."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .rundir import RunDir, RunInfo, Stage, reopen_run
from .runner import plan_boots

if TYPE_CHECKING:
    from ..boot.session import EnvFile
    from .model import Pipeline


def resumed_work(run: RunDir) -> frozenset[tuple[str, str]]:
    """What a resumed run need not do again: the (label, benchmark) pairs that passed there."""
    return frozenset((s.label, s.benchmark) for s in run.passed() if s.label and s.benchmark)


def reopen_passed(path: Path, pipeline: Pipeline, envs: list[EnvFile], seed: int | None) -> RunDir:
    """--resume: keep the benchmarks that passed, and the boots whose benchmarks all passed."""
    plans = plan_boots(pipeline, envs, seed)

    def keep(info: RunInfo) -> Callable[[Stage], bool]:
        passed = {(s.label, s.benchmark) for s in info.stages if s.case.kind == "pass"}
        done_boots = {p.label for p in plans
                      if all((lb, b.name) in passed for b in pipeline.benchmarks for lb in p.bench_labels)}
        return lambda s: s.case.kind == "pass" and bool(s.label) and (
            s.benchmark is not None or (s.case.classname == "farm.boot" and s.label in done_boots))
    return reopen_run(path, pipeline, keep)
