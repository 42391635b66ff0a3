"""A key figure: what one metric measured under one target, setup and identity params, and its values.

A run's summary (:mod:`farm.results.summary`), the dashboard's run and comparison pages
(:mod:`farm.dashboard`) and the store's history series (:mod:`farm.store.history`) all group by the
one record identity, :class:`~farm.results.identity.MetricKey`: :class:`KeyFigure` is a key with its
values, ``farm.store.history.Series`` a key with its points over runs.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import attrs

from farm.results.identity import MetricKey
from farm.results.stats import Summary

#: the marker metric of a failed benchmark (farm.results.record.FAILED_METRIC; repeated here so
#: this module stays below record)
_FAILED = "failed"
#: the name older callers use for the key
FigureKey = MetricKey


@attrs.frozen
class KeyFigure(MetricKey, Summary):
    """The summary of one metric of one run: all repeats of it under one key (n, median, range, CV and
    interval from :class:`~farm.results.stats.Summary`), and how many of its values carry which sanity
    flag (farm.results.sanity; a flag is never part of the key)."""

    values: tuple[float, ...]
    flags: tuple[tuple[str, int], ...] = ()  # (flag, values flagged with it), by flag

    @property
    def flagged(self) -> str:
        """``"2 rtt_above_saturation"``, ``""`` when no value is flagged."""
        return ", ".join(f"{n} {flag}" for flag, n in self.flags)


def group_figures(rows: Iterable[Any], *, failed: bool = False) -> list[KeyFigure]:
    """``rows`` (records, or store rows with the same attributes) grouped by their
    :class:`~farm.results.identity.MetricKey`, in the order first measured. Values that are not finite
    are no measurement; failed-benchmark markers are left out unless ``failed`` (a run's metrics.txt
    counts them)."""
    from farm.results.sanity import flags_of

    groups: dict[MetricKey, list[float]] = {}
    flags: dict[MetricKey, dict[str, int]] = {}
    for r in rows:
        if (r.metric == _FAILED and not failed) or not math.isfinite(r.value):
            continue
        key = MetricKey.of(r)
        groups.setdefault(key, []).append(r.value)
        for flag in flags_of(r):
            counts = flags.setdefault(key, {})
            counts[flag] = counts.get(flag, 0) + 1
    return [KeyFigure(*key.key, values=tuple(values), flags=tuple(sorted(flags.get(key, {}).items())))
            for key, values in groups.items()]


def key_figures(records: Iterable[Any]) -> list[KeyFigure]:
    """A run's records (farm.results.record.Record) grouped by target, setup, suite, benchmark, params
    (without run lengths), metric and unit, in the order they were first measured (repeats and runs
    pooled), its failed benchmarks too: summary.md's and metrics.txt's figures."""
    return group_figures(records, failed=True)
