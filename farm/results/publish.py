"""Everything a run directory shows humans and CI, made from its records alone (so ``farm report``
can make it again): the sweeps in the lab's wide CSV form, plots, summary.md, metrics.txt."""

from __future__ import annotations

import os
from pathlib import Path

from .ipbench import write_wide_csv
from .report import Report, regenerate
from .rundata import read_run_records
from .sweeps import run_sweeps, wide_csv_name


def publish(run_dir: str | os.PathLike[str], *, step_summary: str | os.PathLike[str] | None = None) -> Report:
    """The run's files (``farm run``'s publish stage and ``farm report`` alike). ``step_summary``:
    where summary.md is appended too (``farm report``); a run's job summary is the runner's, written
    once by :func:`farm.results.report.write_summary` after this stage is recorded."""
    run_dir = Path(run_dir)
    records = read_run_records(run_dir) if (run_dir / "results.csv").exists() else []
    for sweep in run_sweeps(records):
        write_wide_csv(run_dir / wide_csv_name(sweep, str(run_dir / "results.csv")), sweep.rows)
    return regenerate(run_dir, step_summary=step_summary)
