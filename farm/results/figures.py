"""A key figure: what one metric measured under one target, setup and parameters, and its values.

:class:`FigureKey` is the seven fields that say *what* was measured (target, setup, suite,
benchmark, params, metric, unit). A run's summary (:mod:`farm.results.report`), the dashboard's run
and comparison pages (:mod:`farm.dashboard`) and the store's history series (:mod:`farm.store.history`)
all group by it, so they share this one type: :class:`KeyFigure` is a key with its values,
``farm.store.history.Series`` a key with its points over runs.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable

import attrs

from farm.results.stats import Summary

#: the marker metric of a failed benchmark (farm.results.record.FAILED_METRIC; repeated here so
#: this module stays below record)
_FAILED = "failed"


@attrs.frozen
class FigureKey:
    """What is measured: one metric of one benchmark, on one target and setup, with its parameters."""

    target: str
    setup: str
    suite: str
    benchmark: str
    params: str
    metric: str
    unit: str

    @property
    def key(self) -> tuple[str, str, str, str, str, str, str]:
        return (self.target, self.setup, self.suite, self.benchmark, self.params, self.metric, self.unit)

    @property
    def measurement(self) -> FigureKey:
        """The key alone (of a figure or a series)."""
        return FigureKey(*self.key)


@attrs.frozen
class KeyFigure(FigureKey, Summary):
    """The summary of one metric of one run: all repeats of it under one target, setup and params
    (n, median, range, CV and interval from :class:`~farm.results.stats.Summary`)."""

    values: tuple[float, ...]


def group_figures(rows: Iterable[Any], params: Callable[[str], str] = lambda text: text, *,
                  failed: bool = False) -> list[KeyFigure]:
    """``rows`` (records, or store rows with the same attributes) grouped by :class:`FigureKey`, in
    the order first measured; ``params`` normalises the params text (e.g. without run lengths).
    Values that are not finite are no measurement; failed-benchmark markers are left out unless
    ``failed`` (a run's metrics.txt counts them)."""
    groups: dict[tuple[str, ...], list[float]] = {}
    for r in rows:
        if (r.metric == _FAILED and not failed) or not math.isfinite(r.value):
            continue
        key = (r.target, r.setup, r.suite, r.benchmark, params(r.params), r.metric, r.unit)
        groups.setdefault(key, []).append(r.value)
    return [KeyFigure(*key, values=tuple(values)) for key, values in groups.items()]
