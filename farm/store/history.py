"""History queries: one metric over time, image, kernel or commit, as series of points.

A series is one (target, setup, suite, benchmark, params, unit) of a metric, its params the records'
identity (farm.results.identity: no run lengths, no sample counts, so runs of other lengths are one
series); a point is one x value of it (a run for ``by=time``, an image key, a kernel version or a git
commit) with every value measured there:
n, the median and an interval. The interval is the distribution-free 95 % confidence interval of
the median (order statistics of the binomial(n, ½)) when n is large enough for one (n ≥ 6), and the
min–max range otherwise; ``interval`` says which.
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

import attrs
import sqlalchemy as sa

from farm.errors import JobError
from farm.results.identity import MetricKey
from farm.results.record import FAILED_METRIC, parse_params
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


class Point(NamedTuple):
    """One point of a series (a NamedTuple: a trend of 10,000 runs makes 10,000 of them)."""

    x: str            # run id, image key, kernel version or commit
    first: str        # the earliest run start at this x (ISO time)
    runs: tuple[str, ...]
    median: float
    lo: float
    hi: float
    interval: str     # ci95 | range
    n: int

    def as_json(self) -> dict[str, Any]:
        return {"x": self.x, "time": self.first, "runs": list(self.runs), "n": self.n, "median": self.median,
                "lo": self.lo, "hi": self.hi, "interval": self.interval}


@attrs.frozen
class Series(MetricKey):
    """One measurement (the record identity, :class:`~farm.results.identity.MetricKey`) across runs."""

    points: tuple[Point, ...]

    def label(self) -> str:
        p = f"[{self.params}]" if self.params else ""
        return f"{self.suite}.{self.benchmark} {self.metric}{p} {self.target}/{self.setup} ({self.unit})"

    def as_json(self) -> dict[str, Any]:
        return {"target": self.target, "setup": self.setup, "suite": self.suite, "benchmark": self.benchmark,
                "params": self.params, "metric": self.metric, "unit": self.unit,
                "points": [p.as_json() for p in self.points]}


def _rank(n: int) -> int:
    """The largest k with P(B <= k-1) <= 0.025 for B ~ binomial(n, 1/2) (0: no such interval).
    Exact up to n = 1000 (log-space pmf, so 2**-n does not underflow), the normal approximation
    ``(n - 1.96 sqrt(n)) / 2`` above, where the two agree to a rank."""
    if n > 1000:
        return int((n - 1.959964 * math.sqrt(n)) / 2)
    k, cumulative, log_half_n = 0, 0.0, n * math.log(0.5)
    while k <= n:
        cumulative += math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + log_half_n)
        if cumulative > 0.025:
            break
        k += 1
    return k


def median_interval(values: Sequence[float]) -> tuple[float, float, str]:
    """The 95 % distribution-free confidence interval of the median, ``x_(k) .. x_(n+1-k)``, or the
    range when n < 6 (no such interval exists)."""
    data = sorted(values)
    k = _rank(len(data))
    if k == 0:
        return data[0], data[-1], "range"
    return data[k - 1], data[len(data) - k], "ci95"


def summarise(values: Sequence[float]) -> tuple[float, float, float, str]:
    """``(median, lo, hi, interval)`` of ``values``, sorting them once."""
    data = sorted(values)
    n = len(data)
    middle = data[n // 2] if n % 2 else (data[n // 2 - 1] + data[n // 2]) / 2
    lo, hi, kind = median_interval(data)
    return float(middle), lo, hi, kind


#: the series key: the columns of a figure that are not a point's
_KEY = ("target", "setup", "suite", "benchmark", "params", "unit")
# what the history query reads of a point (all of it in ix_figures_metric), after the series key
# columns the filters leave open and x (by image, kernel or commit; by time x is the run id)
_POINT = ("run_id", "started", "n", "median", "lo", "hi", "interval", "id")
_RUN, _STARTED, _N, _MEDIAN, _LO, _HI, _INTERVAL, _ID = range(len(_POINT))


def history(connection: sa.Connection, filters: Filters, by: str = "time") -> list[Series]:
    """The series of ``filters.metric``, points ordered by the time they were first measured.

    Reads the per-run figures made at ingest (one row per run and measurement) from their index
    alone; a point of one figure is that figure, a point pooling several (a kernel measured by many
    runs) is made anew from their values, which only then are read.

    Why it is fast (a trend of 10,000 runs): the rows are fetched at once, not one by one (through
    psycopg, fetching row by row cost twice the query itself), and only columns that differ between
    rows are read: a key column a filter pins (target, setup, benchmark, suite, unit) comes from the
    filter, and by time the run id is read once, not again as x."""
    if by not in BY:
        raise JobError(f"history --by {by!r}: expected one of {', '.join(BY)}")
    if filters.metric == FAILED_METRIC:
        raise JobError("history: 'failed' marks a failed benchmark, it is not a metric with a history")
    f = schema.figures
    pinned = {name: getattr(filters, name) for name in _KEY if name != "params" and getattr(filters, name) is not None}
    free = [name for name in _KEY if name not in pinned]
    x_cols = [] if by == "time" else [f.c[_X_COLUMN[by]]]
    at = len(free) + len(x_cols)  # where a row's point columns start
    where = [f.c.metric == filters.metric] + [f.c[name] == value for name, value in pinned.items()]
    query = sa.select(*(f.c[name] for name in free), *x_cols, *(f.c[name] for name in _POINT)).where(*where)
    params_at, n_free = free.index("params"), len(free)
    x_at = n_free if x_cols else at + _RUN
    # per series key, per x: the one figure there (a row), or a list of the figures it pools
    series: dict[tuple, dict[str, Any]] = {}
    for row in connection.execute(query.order_by(f.c.started)).all():
        if filters.params and not _params_match(row[params_at], filters.params):
            continue
        points = series.get(key := tuple(row[:n_free]))
        if points is None:
            points = series[key] = {}
        x = row[x_at] or "(unknown)"
        here = points.get(x)
        if here is None:
            points[x] = row
        elif isinstance(here, list):
            here.append(row)
        else:
            points[x] = [here, row]
    pooled = [row[at + _ID] for points in series.values() for rows in points.values() if isinstance(rows, list)
              for row in rows]
    values = _values(connection, pooled, where)
    out = []
    started, run, n, med_at, lo_at, hi_at, kind_at = (at + i for i in (_STARTED, _RUN, _N, _MEDIAN, _LO, _HI,
                                                                        _INTERVAL))
    for free_key, points in sorted(series.items()):
        key = {**pinned, **dict(zip(free, free_key))}
        made = []
        for x, r in points.items():
            if not isinstance(r, list):  # one figure: the point as ingest summarised it
                made.append(Point(x, r[started], (r[run],), r[med_at], r[lo_at], r[hi_at], r[kind_at], r[n]))
            else:
                med, lo, hi, kind = summarise([v for row in r for v in values[row[at + _ID]]])
                made.append(Point(x, r[0][started], tuple(dict.fromkeys(row[run] for row in r)), med, lo, hi,
                                  kind, sum(row[n] for row in r)))
        made.sort(key=_point_order)
        out.append(Series(key["target"], key["setup"], key["suite"], key["benchmark"], key["params"], filters.metric,
                          key["unit"], tuple(made)))
    return out


def _point_order(p: Point) -> tuple[str, str]:
    return p.first, p.x


def _values(connection: sa.Connection, ids: list[int], where: list, chunk: int = 5000) -> dict[int, list[float]]:
    """The values of the figures ``ids``: by id when they are few, else every figure's the query's
    conditions select (one range of the index instead of thousands of lookups)."""
    f = schema.figures
    out: dict[int, list[float]] = {}
    if len(ids) > chunk:
        wanted = set(ids)
        for fid, text in connection.execute(sa.select(f.c.id, f.c["values"]).where(*where)):
            if fid in wanted:
                out[fid] = json.loads(text)
        return out
    for i in range(0, len(ids), chunk):
        for fid, text in connection.execute(sa.select(f.c.id, f.c["values"]).where(f.c.id.in_(ids[i:i + chunk]))):
            out[fid] = json.loads(text)
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
    f = schema.figures
    query = (sa.select(f.c.suite, f.c.benchmark, f.c.metric, f.c.unit, sa.func.count(sa.distinct(f.c.run)))
             .group_by(f.c.suite, f.c.benchmark, f.c.metric, f.c.unit)
             .order_by(f.c.suite, f.c.benchmark, f.c.metric, f.c.unit))
    return [tuple(row) for row in connection.execute(query)]
