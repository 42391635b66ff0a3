"""History queries: one metric over time, image, kernel or commit, as series of points.

A series is one (target, setup, suite, benchmark, params, unit); a point is one x value of it (a run
for ``by=time``, an image key, a kernel version or a git commit) with every value measured there:
n, the median and an interval. The interval is the distribution-free 95 % confidence interval of
the median (order statistics of the binomial(n, ½)) when n is large enough for one (n ≥ 6), and the
min–max range otherwise; ``interval`` says which.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import attrs
import sqlalchemy as sa

from farm.errors import JobError
from farm.results.record import FAILED_METRIC, parse_params
from farm.results.stats import median
from farm.store import schema

BY = ("time", "image", "kernel", "commit")
_X_COLUMN = {"image": "image_key", "kernel": "kernel", "commit": "git_sha"}


@attrs.frozen
class Filters:
    metric: str
    suite: str | None = None
    benchmark: str | None = None
    target: str | None = None
    setup: str | None = None
    params: Mapping[str, str] = attrs.field(factory=dict)  # every one of these key=value pairs
    unit: str | None = None


@attrs.frozen
class Point:
    x: str            # run id, image key, kernel version or commit
    first: str        # the earliest run start at this x (ISO time)
    runs: tuple[str, ...]
    values: tuple[float, ...]
    median: float
    lo: float
    hi: float
    interval: str     # ci95 | range

    @property
    def n(self) -> int:
        return len(self.values)

    def as_json(self) -> dict[str, Any]:
        return {"x": self.x, "time": self.first, "runs": list(self.runs), "n": self.n, "median": self.median,
                "lo": self.lo, "hi": self.hi, "interval": self.interval}


@attrs.frozen
class Series:
    target: str
    setup: str
    suite: str
    benchmark: str
    params: str
    metric: str
    unit: str
    points: tuple[Point, ...]

    def label(self) -> str:
        p = f"[{self.params}]" if self.params else ""
        return f"{self.suite}.{self.benchmark} {self.metric}{p} {self.target}/{self.setup} ({self.unit})"

    def as_json(self) -> dict[str, Any]:
        return {"target": self.target, "setup": self.setup, "suite": self.suite, "benchmark": self.benchmark,
                "params": self.params, "metric": self.metric, "unit": self.unit,
                "points": [p.as_json() for p in self.points]}


def median_interval(values: Sequence[float]) -> tuple[float, float, str]:
    """The 95 % distribution-free confidence interval of the median, or the range when n < 6."""
    data = sorted(values)
    n = len(data)
    # largest k with P(B <= k-1) <= 0.025 for B ~ binomial(n, 1/2): the interval is x_(k) .. x_(n+1-k)
    k, cumulative = 0, 0.0
    while True:
        cumulative += math.comb(n, k) / 2 ** n
        if cumulative > 0.025:
            break
        k += 1
    if k == 0:
        return data[0], data[-1], "range"
    return data[k - 1], data[n - k], "ci95"


def make_point(x: str, rows: Iterable[tuple[str, str, float]]) -> Point:
    """A point from ``(run_id, started, value)`` rows."""
    rows = list(rows)
    values = tuple(v for _, _, v in rows)
    runs = tuple(dict.fromkeys(run for run, _, _ in sorted(rows, key=lambda r: r[1])))
    lo, hi, kind = median_interval(values)
    return Point(x, min(s for _, s, _ in rows), runs, values, median(values), lo, hi, kind)


def history(connection: sa.Connection, filters: Filters, by: str = "time") -> list[Series]:
    """The series of ``filters.metric`` (failed-benchmark markers and NaN excluded), points ordered by
    the time they were first measured."""
    if by not in BY:
        raise JobError(f"history --by {by!r}: expected one of {', '.join(BY)}")
    r, runs = schema.records, schema.runs
    x_col = runs.c.run_id if by == "time" else r.c[_X_COLUMN[by]]
    query = (sa.select(r.c.target, r.c.setup, r.c.suite, r.c.benchmark, r.c.params, r.c.unit, x_col.label("x"),
                       runs.c.run_id, r.c.started, r.c.value)
             .join(runs, runs.c.id == r.c.run)
             .where(r.c.metric == filters.metric))
    for name in ("suite", "benchmark", "target", "setup", "unit"):
        if (value := getattr(filters, name)) is not None:
            query = query.where(r.c[name] == value)
    if filters.metric == FAILED_METRIC:
        raise JobError("history: 'failed' marks a failed benchmark, it is not a metric with a history")
    series: dict[tuple[str, ...], dict[str, list[tuple[str, str, float]]]] = {}
    for row in connection.execute(query.order_by(r.c.started)):
        if filters.params and not _params_match(row.params, filters.params):
            continue
        if not math.isfinite(row.value):
            continue
        key = (row.target, row.setup, row.suite, row.benchmark, row.params, row.unit)
        series.setdefault(key, {}).setdefault(row.x or "(unknown)", []).append((row.run_id, row.started, row.value))
    out = []
    for (target, setup, suite, benchmark, params, unit), points in sorted(series.items()):
        made = sorted((make_point(x, rows) for x, rows in points.items()), key=lambda p: (p.first, p.x))
        out.append(Series(target, setup, suite, benchmark, params, filters.metric, unit, tuple(made)))
    return out


def _params_match(text: str, wanted: Mapping[str, str]) -> bool:
    have = parse_params(text)
    return all(have.get(k) == v for k, v in wanted.items())


def parse_param_filters(items: Iterable[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise JobError(f"--param {item!r}: expected KEY=VALUE, e.g. --param algorithm=sha256")
        out[key] = value
    return out


def metrics(connection: sa.Connection) -> list[tuple[str, str, str, str, int]]:
    """Every (suite, benchmark, metric, unit) in the store with how many runs measured it."""
    r = schema.records
    query = (sa.select(r.c.suite, r.c.benchmark, r.c.metric, r.c.unit, sa.func.count(sa.distinct(r.c.run)))
             .where(r.c.metric != FAILED_METRIC)
             .group_by(r.c.suite, r.c.benchmark, r.c.metric, r.c.unit)
             .order_by(r.c.suite, r.c.benchmark, r.c.metric, r.c.unit))
    return [tuple(row) for row in connection.execute(query)]
