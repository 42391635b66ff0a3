"""The trends index: one row per series (a measurement across runs) with its newest value, n, a
sparkline of its newest points and its change against a baseline, judged by farm qualify's rules.

The baseline of a series is the newest saved baseline (``farm baseline save``) whose run measured
it, before its newest point; a series no saved baseline measured is compared with its point before
the newest ("previous run"). The comparison is :func:`farm.results.qualify.compare` on the two runs'
values, threshold 5 % and alpha 0.05 as ``farm qualify``'s defaults, by its rule (farm compare's,
farm.results.ratio): a **regression** only when each side has at least :data:`MIN_VALUES` (5) values
and the ratio's interval lies wholly beyond the threshold the bad way; with fewer a side the change
is shown, "not judged" (a series of one point has nothing to compare).

The series and their sizes come from one GROUP BY over the figures; each series' newest
:data:`SPARK_POINTS` figures from the covering index ``ix_figures_metric``, read backwards; the
values only for the newest figure and the baseline's of each series.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

import attrs
import sqlalchemy as sa

from farm.results import qualify
from farm.results.identity import MetricKey
from farm.results.ratio import MIN_BOOTS
from farm.store import schema

#: points of a series the sparkline draws (the newest)
SPARK_POINTS = 30
#: farm qualify's defaults, which the trends judge by
THRESHOLD, ALPHA = 0.05, 0.05
#: values a side below which a change is reported but never called a regression: the rule's minimum
MIN_VALUES = MIN_BOOTS

_SERIES = ("suite", "benchmark", "metric", "unit", "target", "setup", "params")
#: (benchmark, metric) that are a run's settings, not what it measured: no row (a sweep's requested rate)
SETTINGS = {("sweep", "requested_throughput")}


@attrs.frozen
class Latest:
    run_id: str
    started: str
    n: int
    median: float
    lo: float
    hi: float
    interval: str


@attrs.frozen
class SeriesRow:
    suite: str
    benchmark: str
    metric: str
    unit: str
    target: str
    setup: str
    params: str
    points: int                       # runs that measured it
    latest: Latest
    spark: tuple[float, ...]          # medians of the newest SPARK_POINTS points, oldest first
    against: str = ""                 # "baseline NAME (run)", "previous run (run)", "" (nothing to compare)
    against_run: str = ""
    comparison: qualify.Comparison | None = None

    @property
    def regression(self) -> bool:
        c = self.comparison
        return c is not None and c.verdict == qualify.REGRESSION and min(c.baseline.n, c.candidate.n) >= MIN_VALUES

    @property
    def too_few(self) -> bool:
        """Compared, but with one value on a side: the change is shown, never judged a regression."""
        c = self.comparison
        return c is not None and min(c.baseline.n, c.candidate.n) < MIN_VALUES


def series_rows(c: sa.Connection, baselines: Mapping[str, Sequence[str]] | None = None,
                spark: int = SPARK_POINTS) -> list[SeriesRow]:
    """Every series of the store (``baselines``: run id → the names of the baselines saved from it)."""
    f = schema.figures
    key = [f.c[name] for name in _SERIES]
    groups: dict[tuple, list[Any]] = {}
    totals: dict[tuple, int] = {}
    for row in c.execute(sa.select(*key, sa.func.count()).group_by(*key)):
        totals[tuple(row[:len(_SERIES)])] = row[-1]
    for series in totals:
        if (series[1], series[2]) in SETTINGS:
            continue
        # the series' newest figures, from ix_figures_metric (metric, benchmark, target, setup, started, ...) read
        # backwards: a query per series is a few index pages each; one window function over every figure of the
        # store (100,000 at 10,000 runs) took seconds
        where = [f.c[name] == value for name, value in zip(_SERIES, series)]
        newest = c.execute(sa.select(f.c.id, f.c.run_id, f.c.started, f.c.n, f.c.median, f.c.lo, f.c.hi, f.c.interval)
                           .where(*where).order_by(f.c.started.desc(), f.c.id.desc()).limit(spark)).all()
        groups[series] = list(reversed(newest))

    baselines = baselines or {}
    # the saved baselines' figures of every series, newest run first (a baseline may be older than the spark)
    base_rows: dict[tuple, list[Any]] = {}
    if baselines:
        for row in c.execute(sa.select(*key, f.c.id, f.c.run_id, f.c.started).where(f.c.run_id.in_(list(baselines)))
                             .order_by(f.c.started.desc())):
            base_rows.setdefault(tuple(row[:len(_SERIES)]), []).append(row)

    plans: list[tuple[tuple, list[Any], Any, str]] = []  # series, its points, the figure to compare with, label
    for series, points in groups.items():
        last = points[-1]
        against, label = None, ""
        for b in base_rows.get(series, ()):
            if b.run_id != last.run_id and b.started <= last.started:
                against, label = b, f"baseline {', '.join(baselines[b.run_id])}"
                break
        if against is None and len(points) > 1:
            against, label = points[-2], "previous run"
        plans.append((series, points, against, label))

    wanted = [p[1][-1].id for p in plans] + [p[2].id for p in plans if p[2] is not None]
    values = figure_values(c, wanted)
    out = []
    plans.sort(key=lambda plan: _order(plan[0]))
    for series, points, against, label in plans:
        last = points[-1]
        comparison = None
        if against is not None and values.get(against.id) and values.get(last.id):
            s = dict(zip(_SERIES, series))
            mkey = MetricKey(s["target"], "", s["suite"], s["benchmark"], s["params"], s["metric"], s["unit"])
            comparison = qualify.compare(mkey, s["setup"], s["setup"], values[against.id], values[last.id],
                                         threshold=THRESHOLD, alpha=ALPHA)
        out.append(SeriesRow(*series, points=totals[series],
                             latest=Latest(last.run_id, last.started, last.n, last.median, last.lo, last.hi,
                                           last.interval),
                             spark=tuple(p.median for p in points), against=label,
                             against_run=against.run_id if against is not None else "", comparison=comparison))
    return out


def _order(series: tuple) -> tuple:
    """Series in name order, a parameter's numbers by value (a sweep's 10, 50, 100 Mbit/s, not 10, 100, 50)."""
    import re

    return tuple(tuple((0, float(part), "") if re.fullmatch(r"\d+(\.\d+)?", part) else (1, 0.0, part)
                       for part in re.split(r"(\d+(?:\.\d+)?)", str(field))) for field in series)


def figure_values(c: sa.Connection, ids: Sequence[int], chunk: int = 2000) -> dict[int, list[float]]:
    """The values of the figures ``ids``."""
    f = schema.figures
    out: dict[int, list[float]] = {}
    ids = list(dict.fromkeys(ids))
    for i in range(0, len(ids), chunk):
        for fid, text in c.execute(sa.select(f.c.id, f.c["values"]).where(f.c.id.in_(ids[i:i + chunk]))):
            out[fid] = json.loads(text)
    return out


def metrics_of(rows: Sequence[SeriesRow]):
    """The metrics (:class:`farm.dashboard.data.Trend`) of ``rows``, each with the most runs one of
    its series has (the index reads the store once: no second pass to count each metric's runs)."""
    from .data import Trend

    runs: dict[tuple[str, str, str, str], int] = {}
    for r in rows:
        key = (r.suite, r.benchmark, r.metric, r.unit)
        runs[key] = max(runs.get(key, 0), r.points)
    return [Trend(*key, n) for key, n in sorted(runs.items())]
