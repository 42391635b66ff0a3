"""The load-sweep plots of a run and of a comparison: both drawn by :mod:`farm.results.sweep_plots` (one
figure: achieved throughput with its knee, RTT median and band, CPU, against the requested load).

:func:`write_run_plots` draws a run's (``plots/sweep-<target>.png``, from its records: the p10-p90
band where the sweep recorded it); :func:`plot_sweep` draws wide rows (the lab's form,
:func:`farm.results.ipbench.sweep_rows`: what ``farm compare`` has of each column), min-max band.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from farm.errors import JobError
from farm.values import path_component

from . import sweep_plots

PathLike = str | os.PathLike[str]


def plot_sweep(series: Mapping[str, Sequence[Mapping[str, Any]]], path: PathLike, *,
               title: str = "Network load sweep") -> None:
    """Plot wide rows, one series per label, to a PNG at ``path`` (replaced atomically).

    A row's missing value (``None`` or absent) drops that point from that panel only. An empty
    ``series``, or one without any requested load, raises :class:`~farm.errors.JobError`: an
    empty picture would look like a result.
    """
    if not series or not any(series.values()):
        raise JobError("plot_sweep: no sweep rows to plot")
    drawn = [sweep_plots.Series(label, tuple(sorted(
        (sweep_plots.Point(requested, *(_value(r, c) for c in ("Receive_Throughput", "Median_RTT", "Minimum_RTT",
                                                                "Maximum_RTT", "CPU_Utilisation")))
         for r in rows if math.isfinite(requested := _value(r, "Requested_Throughput"))),
        key=lambda p: p.requested)), "min–max") for label, rows in series.items()]
    if not any(s.points for s in drawn):
        raise JobError("plot_sweep: no row has a Requested_Throughput")
    sizes = sorted({int(v) for rows in series.values() for r in rows if math.isfinite(v := _value(r, "Packet_Size"))})
    sweep_plots.plot_sweeps(drawn, path, title=title,
                            subtitle=f"packet size {', '.join(f'{s} B' for s in sizes)}" if sizes else "")


def _value(row: Mapping[str, Any], column: str) -> float:
    value = row.get(column)
    if value is None or value == "":
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        raise JobError(f"plot_sweep: {column} is {value!r}, expected a number") from None


def write_run_plots(run_dir: PathLike, records: Sequence[Any]) -> list[Path]:
    """``plots/sweep-<target>.png`` for each target of a run with sweeps, every setup one series
    (repeats folded into medians). Called by :func:`farm.results.report.regenerate`."""
    from .sweeps import run_sweeps

    written = []
    for target in dict.fromkeys(sweep.target for sweep in run_sweeps(records)):
        path = Path(run_dir) / "plots" / f"sweep-{path_component(target, 'target name', f'{run_dir}/results.csv')}.png"
        if path.parent.is_symlink():  # farm writes into its own plots/, not where a link points
            raise JobError(f"{path.parent}: is a symbolic link (to {os.readlink(path.parent)}); farm writes only "
                           "files of its own")
        path.parent.mkdir(parents=True, exist_ok=True)
        sweep_plots.plot_target(records, target, path)  # knee, percentile band, run/image/date
        written.append(path)
    return written
