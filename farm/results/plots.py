"""The load-sweep plot: achieved throughput, RTT and CPU against the requested load, per setup.

One PNG, three panels sharing the x axis (requested load, Mb/s), one colour per setup so the board
and its QEMU twin (or today's run and the lab's history) can be compared at a glance:

1. received throughput against requested, with the ideal ``y = x``: where a line leaves the
   diagonal the target stopped keeping up;
2. median RTT with a min-max band (µs); log scale when the values span more than a factor of 20,
   since RTT under saturation is often 100x the idle RTT and would flatten the rest;
3. target CPU utilisation (%), axis 0-105 so a pinned 100 % stays visible.

Drawn on a bare :class:`matplotlib.figure.Figure` with the Agg canvas: no pyplot global state, no
display needed, safe to call from a worker thread.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from farm.errors import JobError
from farm.results.record import open_atomic
from farm.values import path_component

PathLike = str | os.PathLike[str]

LOG_SCALE_RATIO = 20.0  # RTT axis goes logarithmic when max/min exceeds this
_MBIT = 1e6


def plot_sweep(series: Mapping[str, Sequence[Mapping[str, Any]]], path: PathLike, *,
               title: str = "Network load sweep") -> None:
    """Plot wide rows (:func:`farm.results.ipbench.sweep_rows`), one series per setup label, to
    a PNG at ``path`` (replaced atomically).

    A row's missing value (``None`` or absent) drops that point from that panel only. An empty
    ``series``, or one without any requested load, raises :class:`~farm.errors.JobError`: an
    empty picture would look like a result.
    """
    if not series or not any(series.values()):
        raise JobError("plot_sweep: no sweep rows to plot")
    fig = Figure(figsize=(8.5, 10.5), layout="constrained")
    FigureCanvasAgg(fig)
    achieved, rtt, cpu = fig.subplots(3, 1, sharex=True, height_ratios=(1.2, 1.0, 0.8))
    colours = [f"C{i}" for i in range(10)]
    all_x: list[float] = []
    all_rtt: list[float] = []
    packet_sizes: set[int] = set()
    for i, (label, rows) in enumerate(series.items()):
        colour = colours[i % len(colours)]
        rows = sorted(rows, key=lambda r: _value(r, "Requested_Throughput", math.inf))
        x = [_value(r, "Requested_Throughput") / _MBIT for r in rows]
        all_x += [v for v in x if math.isfinite(v)]
        packet_sizes |= {int(v) for r in rows if math.isfinite(v := _value(r, "Packet_Size"))}
        received = [_value(r, "Receive_Throughput") / _MBIT for r in rows]
        achieved.plot(*_present(x, received), "o-", color=colour, label=label, markersize=4)

        median = [_value(r, "Median_RTT") for r in rows]
        low = [_value(r, "Minimum_RTT") for r in rows]
        high = [_value(r, "Maximum_RTT") for r in rows]
        rtt.plot(*_present(x, median), "o-", color=colour, label=f"{label} median", markersize=4)
        rtt.fill_between(*_present(x, low, high), color=colour, alpha=0.15, linewidth=0,
                         label=f"{label} min–max")
        all_rtt += [v for v in median + low + high if math.isfinite(v) and v > 0]

        cpu.plot(*_present(x, [_value(r, "CPU_Utilisation") for r in rows]), "o-", color=colour,
                 label=label, markersize=4)
    if not all_x:
        raise JobError("plot_sweep: no row has a Requested_Throughput")

    top = max(all_x)
    achieved.plot([0, top], [0, top], "--", color="0.45", linewidth=1, label="ideal (received = requested)")
    achieved.set_title("Achieved throughput")
    achieved.set_ylabel("received (Mb/s)")
    achieved.set_ylim(bottom=0)

    rtt.set_title("Round-trip time under load (median, band = min–max)")
    rtt.set_ylabel("RTT (µs)")
    if all_rtt and max(all_rtt) / min(all_rtt) > LOG_SCALE_RATIO:
        rtt.set_yscale("log")
    else:
        rtt.set_ylim(bottom=0)

    cpu.set_title("Target CPU utilisation")
    cpu.set_ylabel("CPU (%)")
    cpu.set_ylim(0, 105)  # a little headroom so a saturated 100 % line stays visible
    cpu.set_xlabel("requested load (Mb/s)")
    cpu.set_xlim(0, top * 1.03)

    for ax in (achieved, rtt, cpu):
        ax.grid(True, which="major", alpha=0.4)
        ax.grid(True, which="minor", alpha=0.12)
        ax.legend(loc="upper left", fontsize="small", framealpha=0.85)
    sizes = ", ".join(f"{s} B" for s in sorted(packet_sizes))
    fig.suptitle(f"{title}\n(packet size {sizes})" if sizes else title, fontsize="large")

    path = Path(path)
    with open_atomic(path, "wb") as f:
        fig.savefig(f, format="png", dpi=110)


def _present(x: list[float], *ys: list[float]) -> tuple[list[float], ...]:
    """Only the points where x and every y are known: a missing measurement joins its
    neighbours instead of cutting the line in two (the marker shows where points are)."""
    keep = [i for i in range(len(x)) if all(math.isfinite(v[i]) for v in (x, *ys))]
    return tuple([v[i] for i in keep] for v in (x, *ys))


def _value(row: Mapping[str, Any], column: str, missing: float = math.nan) -> float:
    value = row.get(column)
    if value is None or value == "":
        return missing
    try:
        return float(value)
    except (TypeError, ValueError):
        raise JobError(f"plot_sweep: {column} is {value!r}, expected a number") from None


def write_run_plots(run_dir: PathLike, records: Sequence[Any]) -> list[Path]:
    """``plots/sweep-<target>.png`` for each target of a run with sweeps, every setup one series
    (repeats folded into medians). Called by :func:`farm.results.report.regenerate`."""
    from . import sweep_plots
    from .sweeps import run_sweeps

    by_target: dict[str, dict[str, Sequence[Mapping[str, Any]]]] = {}
    for sweep in run_sweeps(records):
        label = sweep.setup + (f" (median of {sweep.repeats})" if sweep.repeats > 1 else "")
        by_target.setdefault(sweep.target, {})[label] = sweep.rows
    written = []
    for target, series in by_target.items():
        path = Path(run_dir) / "plots" / f"sweep-{path_component(target, 'target name', f'{run_dir}/results.csv')}.png"
        if path.parent.is_symlink():  # farm writes into its own plots/, not where a link points
            raise JobError(f"{path.parent}: is a symbolic link (to {os.readlink(path.parent)}); farm writes only "
                           "files of its own")
        path.parent.mkdir(parents=True, exist_ok=True)
        sweep_plots.plot_target(records, target, path)  # knee, percentile band, run/image/date
        written.append(path)
    return written
