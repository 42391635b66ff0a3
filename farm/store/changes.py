"""``farm changes``: the change points of every series of the results store.

A series is one measurement (:class:`~farm.results.identity.MetricKey`) across runs, a point one run: its
median and n, as ``farm history --by time`` shows it (farm.store.history). The change points of the
run medians (farm.results.changes) become :class:`Change` s that name the runs on both sides. The
unit is the run, not the boot: what moves a figure between runs (the image, the kernel, the day, the
board's host) is the spread a change in the history must stand out of, as the spread between boots is
for a comparison of setups.

A change's id is stable: made of its series and the two runs it lies between, so the same change found
again (more runs since, another ``--since``) has the same id.
"""

from __future__ import annotations

import hashlib
import statistics
from datetime import datetime
from typing import Any, Iterable

import attrs
import sqlalchemy as sa

from farm.errors import JobError
from farm.measure import HIGHER_IS_BETTER, LOWER_IS_BETTER
from farm.results.changes import ALPHA, METHOD, MIN_SIDE, Step, change_points
from farm.results.direction import direction
from farm.results.ratio import sig
from farm.results.record import FAILED_METRIC
from farm.store.history import Filters, Point, Series, history, metrics

BETTER, WORSE, UP, DOWN = "better", "worse", "higher", "lower"


@attrs.frozen
class Change:
    """A change point of one series: the runs before and after it (since the previous change, up to the
    next), the ratio after/before of their medians with its 95 % interval, n a side, the rank test's p."""

    series: Series
    before: tuple[Point, ...]
    after: tuple[Point, ...]
    step: Step

    @property
    def id(self) -> str:
        key = "\0".join((*self.series.key, self.before[-1].x, self.after[0].x))
        return hashlib.sha256(key.encode()).hexdigest()[:12]

    @property
    def time(self) -> str:
        """When the new level was first measured (the first run after the change started)."""
        return self.after[0].first

    @property
    def judged(self) -> str:
        """better or worse when the metric's direction is known, else higher or lower."""
        ratio = self.step.ratio
        if ratio is None or ratio == 1:
            return "unchanged"
        higher = ratio > 1
        way = direction(self.series.metric, self.series.unit, self.series.benchmark)
        if way == HIGHER_IS_BETTER:
            return BETTER if higher else WORSE
        if way == LOWER_IS_BETTER:
            return WORSE if higher else BETTER
        return UP if higher else DOWN

    def ratio_text(self) -> str:
        s = self.step
        if s.ratio is None:
            return "no ratio"
        shown = sig(s.ratio)
        if s.interval is not None:
            shown += f" [{sig(s.interval[0])}–{sig(s.interval[1])}]"
        return f"{shown}, n {s.n_before}/{s.n_after}"

    def as_json(self) -> dict[str, Any]:
        s = self.step
        return {"id": self.id, "time": self.time, "last_before": self.before[-1].x, "first_after": self.after[0].x,
                "runs_before": [p.x for p in self.before], "runs_after": [p.x for p in self.after],
                "n_before": s.n_before, "n_after": s.n_after, "ratio": s.ratio,
                "interval": list(s.interval) if s.interval else None, "confidence": 0.95,
                "p_value": s.p_value, "judged": self.judged,
                "median_before": statistics.median(s.before), "median_after": statistics.median(s.after)}


@attrs.frozen
class Found:
    """What :func:`find_changes` looked at and found."""

    searched: int               # how many series were searched
    changes: tuple[Change, ...]
    alpha: float
    min_side: int

    def as_json(self) -> dict[str, Any]:
        by_series: dict[tuple, dict[str, Any]] = {}
        for c in self.changes:
            entry = by_series.setdefault(c.series.key, {**{k: v for k, v in c.series.as_json().items()
                                                             if k != "points"}, "changes": []})
            entry["changes"].append(c.as_json())
        return {"method": METHOD, "alpha": self.alpha, "min_side": self.min_side, "series_searched": self.searched,
                "series": list(by_series.values())}


def check_since(text: str | None) -> str | None:
    """``--since``: an ISO date or time (``2026-12-01``, ``2026-12-01T08:00``), compared with the runs'
    start times as text (ISO times sort as they happen)."""
    if text is None:
        return None
    try:
        datetime.fromisoformat(text)
    except ValueError:
        raise JobError(f"--since {text!r}: expected an ISO date or time, e.g. 2026-12-01 or 2026-12-01T08:00")
    return text


def find_changes(connection: sa.Connection, *, metric: str | None = None, target: str | None = None,
                 setup: str | None = None, benchmark: str | None = None, since: str | None = None,
                 alpha: float = ALPHA, min_side: int = MIN_SIDE) -> Found:
    """The change points of every series the filters select (every metric of the store without ``metric``),
    runs from ``since`` on; series ordered as ``farm history`` orders them, changes oldest first."""
    since = check_since(since)
    names = [metric] if metric else sorted({m for _, _, m, _, _ in metrics(connection) if m != FAILED_METRIC})
    searched, found = 0, []
    for name in names:
        for series in history(connection, Filters(metric=name, benchmark=benchmark, target=target, setup=setup)):
            points = tuple(p for p in series.points if since is None or p.first >= since)
            searched += 1
            found += series_changes(series, points, alpha=alpha, min_side=min_side)
    return Found(searched, tuple(found), alpha, min_side)


def series_changes(series: Series, points: Iterable[Point] | None = None, *, alpha: float = ALPHA,
                   min_side: int = MIN_SIDE) -> list[Change]:
    """The changes of one series (of ``points``, by default all of its points), oldest first."""
    points = tuple(series.points if points is None else points)
    steps = change_points([p.median for p in points], alpha=alpha, min_side=min_side)
    out = []
    for step in steps:
        first_before = step.at - step.n_before
        out.append(Change(series, points[first_before:step.at], points[step.at:step.at + step.n_after], step))
    return out
