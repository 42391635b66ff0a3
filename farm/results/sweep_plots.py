"""The load-sweep figure: where the target stops keeping up (the knee), how the RTT spreads, and the CPU.

One PNG per target, three panels against the requested load (Mb/s), one colour per setup:

1. received against requested throughput with the ideal ``y = x`` and each series' **knee** marked:
   the highest requested load up to which every point came back at least :data:`KEEP_UP` (95 %) of
   what was asked (:func:`knee`);
2. median RTT with a **percentile band**: p10-p90 of the window's samples where the sweep recorded
   them (``rtt_p10``/``rtt_p90``, farm_load's), else min-max (imported ipbench history has nothing
   else); the legend says which. Log scale when the values span more than a factor of 20;
3. the board's CPU utilisation (%): a guest setup's board's too, not its vCPUs' (``cores=vcpus``).

The figure names what it shows: the run id(s), the image(s) and the date of the records. Repeats
of a point are folded into medians (:func:`farm.results.sweeps.run_sweeps`). The picture is drawn
on a bare :class:`~matplotlib.figure.Figure` (no pyplot state, no display); the data it draws come
from pure functions (:func:`sweep_series`, :func:`knee`) that the tests check on recorded sweeps.
"""

from __future__ import annotations

import math
import os
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Sequence

import attrs

from farm.errors import JobError
from farm.measure.cpustat import CORES, VCPUS
from farm.results.identity import identity_params
from farm.results.record import Record, open_atomic, parse_params

PathLike = str | os.PathLike[str]

KEEP_UP = 0.95  # a point "keeps up" when at least this share of the requested load came back
LOG_SCALE_RATIO = 20.0
_MBIT = 1e6
_NAN = math.nan


@attrs.frozen
class Point:
    requested: float  # bit/s
    received: float = _NAN
    median: float = _NAN  # µs
    low: float = _NAN     # the band's lower edge, µs
    high: float = _NAN
    cpu: float = _NAN     # percent


@attrs.frozen
class Series:
    label: str
    points: tuple[Point, ...]  # by requested load
    band: str                  # "p10–p90" or "min–max"


def knee(points: Sequence[tuple[float, float]], keep_up: float = KEEP_UP) -> tuple[float, float] | None:
    """The knee of achieved vs requested throughput: ``(requested, received)`` of the highest
    requested load up to which every point (by requested load) received at least ``keep_up`` of its
    request, when a higher load then falls short. ``None`` when none falls short (the sweep did not
    reach the target's limit) or the lowest load already does (no load was kept up with)."""
    ordered = sorted((r, a) for r, a in points if math.isfinite(r) and math.isfinite(a) and r > 0)
    last: tuple[float, float] | None = None
    for requested, received in ordered:
        if received < keep_up * requested:
            return last
        last = (requested, received)
    return None


def sweep_series(records: Iterable[Record]) -> dict[str, list[Series]]:
    """Per target, one :class:`Series` per (setup, method) of its sweep records, repeats folded into
    medians. The band is p10-p90 when every point of the series has both, else min-max."""
    groups: dict[tuple[str, str, str], dict[tuple[float, str], list[float]]] = defaultdict(lambda: defaultdict(list))
    repeats: dict[tuple[str, str, str], set[int]] = defaultdict(set)
    for r in records:
        if r.benchmark != "sweep" or r.metric == "failed":
            continue
        params = parse_params(identity_params(r.benchmark, r.params))
        if "requested" not in params or params.get(CORES) == VCPUS:  # the CPU drawn is the board's
            continue
        group = (r.target, r.setup, params.get("method", ""))
        groups[group][(float(params["requested"]), r.metric)].append(r.value)
        repeats[group].add(r.repeat)
    labels = _labels(groups)
    out: dict[str, list[Series]] = {}
    for group, values in groups.items():
        median = {key: statistics.median(v) for key, v in values.items()}
        loads = sorted({requested for requested, _ in median})
        percentiles = all((q, m) in median for q in loads for m in ("rtt_p10", "rtt_p90"))
        low, high = ("rtt_p10", "rtt_p90") if percentiles else ("rtt_min", "rtt_max")
        points = tuple(Point(q, *(median.get((q, m), _NAN) for m in ("received_throughput", "rtt_median", low,
                                                                     high, "cpu_utilisation")))
                       for q in loads)
        n = len(repeats[group])
        label = labels[group] + (f" (median of {n})" if n > 1 else "")
        out.setdefault(group[0], []).append(Series(label, points, "p10–p90" if percentiles else "min–max"))
    return out


def _labels(groups: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str, str], str]:
    """The setup; with its method when a target's setup has several (a live sweep beside history)."""
    groups = list(groups)
    methods: dict[tuple[str, str], set[str]] = defaultdict(set)
    for target, setup, method in groups:
        methods[(target, setup)].add(method)
    return {g: g[1] + (f" [{g[2] or 'no method'}]" if len(methods[g[:2]]) > 1 else "") for g in groups}


def provenance(records: Iterable[Record]) -> str:
    """``run <id>, image <image>, <date>`` of these records (each part the distinct values, in order)."""
    runs, images, dates = {}, {}, {}
    for r in records:
        runs[r.run_id] = None
        images[r.image or "(no image)"] = None
        dates[r.timestamp[:10]] = None
    def part(name: str, values: dict) -> str:
        items = list(values)
        shown = ", ".join(items[:3]) + (f" and {len(items) - 3} more" if len(items) > 3 else "")
        return f"{name}{'s' if len(items) > 1 else ''} {shown}"
    return "; ".join((part("run", runs), part("image", images), part("date", dates)))


def plot_sweeps(series: Sequence[Series], path: PathLike, *, title: str, subtitle: str = "") -> None:
    """Draw ``series`` (see the module docstring) to a PNG at ``path``, replaced atomically. Series
    without any point raise :class:`~farm.errors.JobError`: an empty picture would look like a result."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if not any(s.points for s in series):
        raise JobError("sweep plot: no sweep points to plot")
    fig = Figure(figsize=(8.5, 11), layout="constrained")
    FigureCanvasAgg(fig)
    achieved, rtt, cpu = fig.subplots(3, 1, sharex=True, height_ratios=(1.2, 1.0, 0.8))
    top = max(p.requested for s in series for p in s.points) / _MBIT
    all_rtt: list[float] = []
    for i, s in enumerate(series):
        colour = f"C{i % 10}"
        x = [p.requested / _MBIT for p in s.points]
        achieved.plot(*_present(x, [p.received / _MBIT for p in s.points]), "o-", color=colour, label=s.label,
                      markersize=4)
        k = knee([(p.requested, p.received) for p in s.points])
        if k is not None:
            achieved.plot([k[0] / _MBIT], [k[1] / _MBIT], marker="X", markersize=11, color=colour,
                          markeredgecolor="black", linestyle="none", label=f"{s.label} knee: {k[0] / _MBIT:g} Mb/s")
            achieved.annotate(f"knee {k[0] / _MBIT:g} Mb/s", (k[0] / _MBIT, k[1] / _MBIT), textcoords="offset points",
                              xytext=(-10, 12), ha="right", fontsize="small", color=colour)
        median = [p.median for p in s.points]
        rtt.plot(*_present(x, median), "o-", color=colour, label=f"{s.label} median", markersize=4)
        rtt.fill_between(*_present(x, [p.low for p in s.points], [p.high for p in s.points]), color=colour,
                         alpha=0.18, linewidth=0, label=f"{s.label} {s.band}")
        all_rtt += [v for p in s.points for v in (p.median, p.low, p.high) if math.isfinite(v) and v > 0]
        cpu.plot(*_present(x, [p.cpu for p in s.points]), "o-", color=colour, label=s.label, markersize=4)
    achieved.plot([0, top], [0, top], "--", color="0.45", linewidth=1, label="ideal (received = requested)")
    achieved.set_title(f"Achieved throughput (knee: the last load with ≥ {KEEP_UP:.0%} received before one below)")
    achieved.set_ylabel("received (Mb/s)")
    achieved.set_ylim(bottom=0)
    rtt.set_title("Round-trip time under load (median and band)")
    rtt.set_ylabel("RTT (µs)")
    if all_rtt and max(all_rtt) / min(all_rtt) > LOG_SCALE_RATIO:
        rtt.set_yscale("log")
    else:
        rtt.set_ylim(bottom=0)
    cpu.set_title("Target CPU utilisation (measured window)")
    cpu.set_ylabel("CPU (%)")
    cpu.set_ylim(0, 105)
    cpu.set_xlabel("requested load (Mb/s)")
    cpu.set_xlim(0, top * 1.03)
    for ax in (achieved, rtt, cpu):
        ax.grid(True, which="major", alpha=0.4)
        ax.grid(True, which="minor", alpha=0.12)
        ax.legend(loc="upper left", fontsize="small", framealpha=0.85)
    fig.suptitle(f"{title}\n{subtitle}" if subtitle else title, fontsize="large")
    with open_atomic(Path(path), "wb") as f:
        fig.savefig(f, format="png", dpi=110)


def _present(x: list[float], *ys: list[float]) -> tuple[list[float], ...]:
    keep = [i for i in range(len(x)) if all(math.isfinite(v[i]) for v in (x, *ys))]
    return tuple([v[i] for i in keep] for v in (x, *ys))


def plot_target(records: Sequence[Record], target: str, path: PathLike, *, title: str | None = None) -> None:
    """The figure of one target's sweeps in ``records`` (what :mod:`farm.results.plots` calls)."""
    mine = [r for r in records if r.target == target and r.benchmark == "sweep" and r.metric != "failed"]
    series = sweep_series(mine).get(target, [])
    sizes = sorted({parse_params(r.params).get("packet_size", "") for r in mine} - {""}, key=float)
    subtitle = provenance(mine) + (f"; packet size {', '.join(f'{s} B' for s in sizes)}" if sizes else "")
    plot_sweeps(series, path, title=title or f"Network load sweep: {target}", subtitle=subtitle)
