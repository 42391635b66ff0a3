"""Change points of one series: where its level moved, how much, and how sure that is. Pure: numbers in,
steps out (farm.store.changes gives it the store's series, one value per run).

    steps = change_points([1.00, 1.02, 0.99, ..., 0.81, 0.80, 0.82])   # e.g. per-run medians, oldest first
    steps[0].at, steps[0].ratio, steps[0].interval, steps[0].p_value

**Where** (:func:`candidates`): ruptures' kernel change-point detection with the linear kernel (the
least-squares cost of a change in mean, solved by PELT in ruptures' C code) on the logarithms of the
values (a slower board moves a figure by a factor: a step of -20 % is the same step at any level),
scaled by the series' noise, with a penalty of :data:`PENALTY` × log n per change (BIC's form). The
noise is estimated from the differences of neighbours (their median absolute value), which a step
barely touches, so a large step does not hide itself by inflating the noise.

**Whether** (:func:`change_points`): each candidate is judged by farm's own two-sided Mann–Whitney test
(farm.results.stats) between the values since the previous change and those up to the next; while one has
``p > alpha`` the weakest is dropped and its neighbours judged again on the longer sides (Otava's second
pass does the same with a t-test). A side needs :data:`MIN_SIDE` values. The p-value is the test's at
the place the search chose, so it is smaller than a test at a place fixed in advance would give:
benchmarks/changepoints.py measures the false alarms this gives on series with no change (docs/changes.md).

**How much**: the ratio of the medians after/before and its 95 % interval, the Hodges–Lehmann interval
of the log ratio (:func:`farm.results.stats.ratio_interval`, what compare and qualify report), with n a
side. Values of 0 or below have no log: the search then runs on the values themselves, and the ratio has
no interval.

Why ruptures: it is maintained, needs only numpy and scipy, and installs on Debian 12's Python 3.11;
Apache Otava 0.8.0 pins numpy 2.2 and brings BigQuery and Slack clients, and MongoDB's
signal-processing-algorithms 2.1.6 needs numpy < 2 (docs/changes.md).
"""

from __future__ import annotations

import math
import statistics
from typing import Sequence

import attrs

from farm.results.stats import mann_whitney_u, ratio_interval

#: the most a change's rank test p-value may be for it to be reported: Otava's default; farm changes tests every
#: series of the store, and at 0.01 a series without a change gives up to ~0.5 false alarms per 100 runs
#: (benchmarks/changepoints.py, docs/changes.md)
ALPHA = 0.001
#: the fewest values a side of a change needs (at p <= 0.001 the rank test needs 7 + 7 when the sides are
#: equal, 5 + 16 when one has 5: a change 5 runs from either end of a long series can be found)
MIN_SIDE = 5
#: the cost of one more change, in units of log n (of the noise-scaled least-squares cost)
PENALTY = 2.0
#: how the change points are found and judged, as outputs name it
METHOD = (f"ruptures KernelCPD (linear kernel, PELT) on log values scaled by their noise, penalty {PENALTY:g} log n; "
          f"kept when the two-sided Mann-Whitney test between its sides gives p <= alpha; "
          f"ratio: Hodges-Lehmann interval of the log ratio")


@attrs.frozen
class Step:
    """A change of level: ``values[at]`` is the first value after it. ``before`` and ``after`` are the
    values from the previous change (or the start) and up to the next (or the end)."""

    at: int
    before: tuple[float, ...]
    after: tuple[float, ...]
    p_value: float
    ratio: float | None        # median(after) / median(before); None when before's median is 0
    interval: tuple[float, float] | None  # 95 %, of after / before

    @property
    def n_before(self) -> int:
        return len(self.before)

    @property
    def n_after(self) -> int:
        return len(self.after)


def noise(values: Sequence[float]) -> float:
    """The spread of a series' values about its level, robust to its steps: the median absolute
    difference of neighbours / (0.6745 √2), a standard deviation for normal noise; 0 when most
    neighbours are equal."""
    diffs = [abs(b - a) for a, b in zip(values, values[1:])]
    return statistics.median(diffs) / (0.6745 * math.sqrt(2)) if diffs else 0.0


def _search_scale(values: Sequence[float]) -> list[float]:
    """What the search runs on: logarithms when every value is above 0 (steps as factors)."""
    if all(v > 0 for v in values):
        return [math.log(v) for v in values]
    return [float(v) for v in values]


def candidates(values: Sequence[float], *, min_side: int = MIN_SIDE, penalty: float = PENALTY) -> list[int]:
    """Where the level may have moved: the indices of the first value after each candidate change, in
    order (module docstring); none for a series too short for two sides, or without any spread."""
    import numpy as np
    import ruptures

    n = len(values)
    if n < 2 * min_side:
        return []
    x = _search_scale(values)
    sigma = noise(x)
    if sigma == 0:  # most neighbours equal: scale by the spread there is, if any
        sigma = statistics.pstdev(x)
        if sigma == 0:
            return []
    signal = (np.asarray(x) / sigma).reshape(-1, 1)
    ends = ruptures.KernelCPD(kernel="linear", min_size=min_side).fit(signal).predict(pen=penalty * math.log(n))
    return [int(i) for i in ends[:-1]]  # ruptures ends the list with n


def _p(values: Sequence[float], lo: int, at: int, hi: int) -> float:
    return mann_whitney_u(values[lo:at], values[at:hi]).p_value


def change_points(values: Sequence[float], *, alpha: float = ALPHA, min_side: int = MIN_SIDE,
                  penalty: float = PENALTY) -> list[Step]:
    """The changes of level in ``values`` (oldest first) that pass the rank test at ``alpha``, each with
    its sides, p-value, ratio and interval (module docstring)."""
    values = [float(v) for v in values]
    if any(not math.isfinite(v) for v in values):
        raise ValueError("change points of values that are not finite")
    kept = candidates(values, min_side=min_side, penalty=penalty)
    while kept:  # drop the weakest until every change passes, judging each between its neighbours
        bounds = [0, *kept, len(values)]
        ps = [_p(values, bounds[i], bounds[i + 1], bounds[i + 2]) for i in range(len(kept))]
        weakest = max(range(len(kept)), key=ps.__getitem__)
        if ps[weakest] <= alpha:
            break
        del kept[weakest]
    bounds = [0, *kept, len(values)]
    steps = []
    for i, at in enumerate(kept):
        before, after = tuple(values[bounds[i]:at]), tuple(values[at:bounds[i + 2]])
        mb, ma = statistics.median(before), statistics.median(after)
        steps.append(Step(at, before, after, _p(values, bounds[i], at, bounds[i + 2]),
                          ma / mb if mb else None, ratio_interval(before, after)))
    return steps
