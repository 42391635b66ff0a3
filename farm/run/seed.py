"""The seed of a run's shuffled boot order: a new run's (given, the pipeline's, or one drawn now), and the
one a run recorded in run.json, which ``--resume`` and ``farm reproduce`` keep."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import JobError
from .experiment import SHUFFLED, draw_seed
from .rundir import RunInfo

if TYPE_CHECKING:
    from .model import Pipeline


def run_seed(pipeline: Pipeline, given: int | None = None) -> int | None:
    """The seed of a new run's boot order: ``given`` (farm reproduce: the original run's), else the
    pipeline's, else (shuffled) one drawn now."""
    if pipeline.experiment.order != SHUFFLED:
        return None
    for seed in (given, pipeline.experiment.seed):
        if seed is not None:
            return seed
    return draw_seed()


def recorded_seed(run_dir: Path) -> int | None:
    """The seed run.json recorded (a resumed run keeps its order)."""
    try:
        seed = RunInfo.read(run_dir / "run.json").experiment.get("seed")
    except JobError:
        return None
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else None
