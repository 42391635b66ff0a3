"""The run's time by phase in run.json (``phases``), kept up to date after every stage: a listener of the
runner's events (farm.run.events). The split itself is farm.results.phases (the dashboard computes the same
from the stored stages).

Told of a stage before the run directory is (both ``tryfirst``; farm.run.run_pipeline registers it
after the run directory, and pluggy calls the later one first), so that the run.json
written for that stage already counts it. A resumed run goes on from the wall time its run.json had.
"""

from __future__ import annotations

import time
from typing import Callable

from ..results.phases import split
from .events import hookimpl
from .rundir import RunInfo, Stage


class PhaseTimes:
    def __init__(self, info: RunInfo, clock: Callable[[], float] = time.monotonic):
        self.info, self.clock = info, clock
        self.t0 = clock()
        self.before = float((info.phases or {}).get("wall", 0.0))  # a resumed run's earlier sessions

    @hookimpl(tryfirst=True)  # registered after the run directory, so called before it
    def stage_ended(self, stage: Stage) -> None:
        pairs = [(s.case.classname, s.case.seconds) for s in (*self.info.stages, stage)]
        self.info.phases = split(pairs, self.before + self.clock() - self.t0)
