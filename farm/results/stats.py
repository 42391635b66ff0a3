"""Statistics for qualification: medians, ranges and the two-sided Mann–Whitney U test. Pure, no numpy.

Why these:

* **median** and **min–max range**, not mean and standard deviation: a benchmark on a board has
  outliers (a cache-cold first run, a DHCP renewal in the middle of an iperf3 run) and few repeats
  (3 to 10). The median ignores a single outlier; the min–max range is the honest spread of so few
  values (quartiles of five numbers are mostly interpolation), and it is what the small-sample rule
  of :mod:`farm.results.qualify` compares.
* **Mann–Whitney U** (Wilcoxon rank-sum): no assumption of normality, only of independent
  repeats. Two-sided, because "the candidate differs" is tested first and the direction is judged
  from the medians afterwards.

How the p-value is computed (:func:`mann_whitney_u`):

* **Exact** when the two samples together hold at most :data:`EXACT_MAX_N` values: the null
  distribution of U is enumerated over all ``C(n1 + n2, n1)`` ways to split the pooled ranks. Ties
  get mid-ranks and the enumeration runs over those very mid-ranks, so with ties this is the exact
  *conditional* permutation test, not an approximation; without ties it is the classical exact
  distribution (the same numbers as ``scipy.stats.mannwhitneyu(method="exact")``). Counting is done
  with a dynamic programme over tie groups in integers (mid-ranks doubled), so it is exact
  arithmetic and takes milliseconds at this size.
* **Normal approximation** beyond that, with the tie correction of the variance and a continuity
  correction of 0.5, the formula of ``scipy.stats.mannwhitneyu(method="asymptotic")``.
* Two-sided p = ``min(1, 2 * min(P(U <= u), P(U >= u)))`` for the exact distribution: the
  convention of scipy's exact test (where U is symmetric it is the same as counting both tails)
  and of ``scipy.stats.permutation_test`` when ties make U asymmetric.

:attr:`MannWhitney.min_p` is the smallest p-value the test *could* give for these sample sizes
(and ties): with 3 repeats on each side it is 0.1, so no outcome can be significant at 0.05.
Qualification uses it to decide when to fall back to comparing ranges.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import Iterable, Sequence

import attrs

#: largest n1 + n2 for which the null distribution is enumerated exactly
EXACT_MAX_N = 40


def median(values: Iterable[float]) -> float:
    """Median (mean of the two middle values for an even count); ValueError when empty."""
    data = list(values)
    if not data:
        raise ValueError("median of no values")
    return float(statistics.median(data))


def value_range(values: Iterable[float]) -> tuple[float, float]:
    """``(min, max)``: the spread farm reports and the small-sample rule compares."""
    data = list(values)
    if not data:
        raise ValueError("range of no values")
    return float(min(data)), float(max(data))


def ranges_overlap(a: Sequence[float], b: Sequence[float]) -> bool:
    """Whether the closed ranges ``[min a, max a]`` and ``[min b, max b]`` share a point."""
    (alo, ahi), (blo, bhi) = value_range(a), value_range(b)
    return alo <= bhi and blo <= ahi


def midranks(values: Sequence[float]) -> list[float]:
    """1-based ranks of ``values``, tied values sharing the mean of their positions."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j + 2) / 2
        i = j + 1
    return ranks


@attrs.frozen
class MannWhitney:
    """Result of :func:`mann_whitney_u`.

    ``u`` is the U statistic of the *first* sample (the number of pairs (x, y) with x > y, ties
    counting one half), as scipy reports it; ``method`` is ``"exact"`` or ``"normal"``; ``min_p``
    the smallest two-sided p-value any outcome could reach with these sizes and ties.
    """

    u: float
    p_value: float
    method: str
    min_p: float
    ties: bool

    def can_reach(self, alpha: float) -> bool:
        """Whether some outcome of this test would be significant at ``alpha``."""
        return self.min_p < alpha


def mann_whitney_u(x: Sequence[float], y: Sequence[float], *, exact_max_n: int = EXACT_MAX_N) -> MannWhitney:
    """Two-sided Mann–Whitney U test of ``x`` against ``y`` (see the module docstring for how)."""
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("Mann-Whitney U needs at least one value in each sample")
    if any(math.isnan(v) for v in (*x, *y)):
        raise ValueError("Mann-Whitney U of NaN values")
    pooled = [float(v) for v in (*x, *y)]
    ranks = midranks(pooled)
    u1 = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    groups = _tie_groups(pooled)
    ties = any(size > 1 for size, _ in groups)
    if n1 + n2 <= exact_max_n:
        p, min_p = _exact_p(n1, n2, groups, u1)
        method = "exact"
    else:
        p, min_p = _normal_p(n1, n2, groups, u1)
        method = "normal"
    return MannWhitney(u=u1, p_value=p, method=method, min_p=min_p, ties=ties)


def _tie_groups(pooled: Sequence[float]) -> list[tuple[int, int]]:
    """``(size, doubled mid-rank)`` of each run of equal values in the sorted pool."""
    data = sorted(pooled)
    groups, i = [], 0
    while i < len(data):
        j = i
        while j + 1 < len(data) and data[j + 1] == data[i]:
            j += 1
        groups.append((j - i + 1, (i + 1) + (j + 1)))  # twice the mean of positions i+1 .. j+1
        i = j + 1
    return groups


def _exact_p(n1: int, n2: int, groups: list[tuple[int, int]], u1: float) -> tuple[float, float]:
    """Exact two-sided p and its smallest possible value, from the enumerated rank-sum counts."""
    counts = _rank_sum_counts(n1, groups)  # doubled rank sum of the first sample -> ways
    total = math.comb(n1 + n2, n1)
    offset = n1 * (n1 + 1)  # doubled n1(n1+1)/2: doubled U = doubled R - offset
    observed = round(2 * u1)  # mid-ranks are halves at worst, so 2*U is an exact integer
    le = sum(c for s, c in counts.items() if s - offset <= observed)
    ge = sum(c for s, c in counts.items() if s - offset >= observed)
    p = min(1.0, 2 * min(le, ge) / total)
    lowest, highest = min(counts), max(counts)
    min_p = min(1.0, 2 * min(counts[lowest], counts[highest]) / total)
    return p, min_p


def _rank_sum_counts(n: int, groups: list[tuple[int, int]]) -> dict[int, int]:
    """How many ways ``n`` of the pooled values can be chosen, by the doubled sum of their ranks.

    A tie group of ``size`` values shares one rank, so choosing ``j`` of them adds ``j * rank`` in
    ``C(size, j)`` ways; walking the groups builds the count table for every (chosen, sum).
    """
    table: list[dict[int, int]] = [defaultdict(int) for _ in range(n + 1)]
    table[0][0] = 1
    for size, rank2 in groups:
        new: list[dict[int, int]] = [defaultdict(int) for _ in range(n + 1)]
        for chosen, sums in enumerate(table):
            if not sums:
                continue
            for j in range(min(size, n - chosen) + 1):
                ways, add, row = math.comb(size, j), j * rank2, new[chosen + j]
                for s, c in sums.items():
                    row[s + add] += c * ways
        table = new
    return dict(table[n])


def _normal_p(n1: int, n2: int, groups: list[tuple[int, int]], u1: float) -> tuple[float, float]:
    """Normal approximation with tie and continuity correction (scipy's ``asymptotic``)."""
    n = n1 + n2
    mu = n1 * n2 / 2
    tie_term = sum(t ** 3 - t for t, _ in groups)
    variance = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)))
    if variance <= 0:  # every value equal: nothing can differ
        return 1.0, 1.0

    def two_sided(u: float) -> float:
        z = (max(u, n1 * n2 - u) - mu - 0.5) / math.sqrt(variance)
        return min(1.0, math.erfc(z / math.sqrt(2)))  # 2 * P(Z > z)

    return two_sided(u1), two_sided(0.0)


#: the confidence of every interval farm reports
CONFIDENCE = 0.95


def cv(values: Iterable[float]) -> float | None:
    """Coefficient of variation: sample standard deviation / mean. None with fewer than two values
    or a mean of 0 (no spread to speak of, or none that a ratio to the mean can express)."""
    values = list(values)
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    if mean == 0:
        return None
    return statistics.stdev(values) / abs(mean)


def _binomial_cdf_half(k: int, n: int) -> float:
    """P(B <= k) for B ~ Binomial(n, 1/2), exactly (integers, then one division)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n if k >= 0 else 0.0


def median_interval(values: Iterable[float], confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """The distribution-free confidence interval of the median: order statistics
    ``[x_(k), x_(n+1-k)]`` with the largest k for which ``P(B < k) <= (1 - confidence) / 2``,
    B ~ Binomial(n, 1/2) (exact: no assumption on the distribution, only independent repeats; its
    coverage is at least ``confidence``). None when n is too small for any such interval (fewer
    than 6 values at 95 %: even min..max covers only 1 - 2/2^n)."""
    ordered = sorted(values)
    n = len(ordered)
    tail = (1 - confidence) / 2
    k = 0
    while k + 1 <= n // 2 and _binomial_cdf_half(k, n) <= tail:  # P(B <= k) = P(B < k + 1)
        k += 1
    if k == 0:
        return None
    return ordered[k - 1], ordered[n - k]


def mann_whitney_null(n1: int, n2: int) -> list[int]:
    """The exact null distribution of Mann–Whitney's U for samples of ``n1`` and ``n2`` values
    without ties: ``counts[u]`` of the ``C(n1 + n2, n1)`` equally likely splits give U = u
    (u = 0 .. n1 n2). Integers, by the classic recursion over the largest pooled value
    (``f(m, n, u) = f(m - 1, n, u - n) + f(m, n - 1, u)``)."""
    if n1 < 0 or n2 < 0:
        raise ValueError("sample sizes must be 0 or more")
    # table[n][u] for the current m, built up from m = 0 (one way: U = 0)
    table = [[1] for _ in range(n2 + 1)]
    for m in range(1, n1 + 1):
        new = [[1]]  # n = 0: U is 0 whatever m is
        for n in range(1, n2 + 1):
            counts = [0] * (m * n + 1)
            for u, c in enumerate(new[n - 1]):  # the largest value in the second sample
                counts[u] += c
            for u, c in enumerate(table[n]):  # the largest value in the first: it beats all n
                counts[u + n] += c
            new.append(counts)
        table = new
    return table[n2]


@attrs.frozen
class ShiftInterval:
    """:func:`shift_interval`: the Hodges–Lehmann estimate of a shift and its interval.

    ``k``: the interval is the k-th smallest and k-th largest of the ``n1 n2`` differences;
    ``coverage``: the confidence it actually has (exact, without ties: at least the one asked for);
    ``method``: ``"exact"`` (the enumerated null distribution) or ``"normal"`` (its approximation)."""

    estimate: float
    low: float
    high: float
    k: int
    coverage: float
    method: str


def shift_interval(x: Sequence[float], y: Sequence[float], confidence: float = CONFIDENCE, *,
                   exact_max_n: int = EXACT_MAX_N) -> ShiftInterval | None:
    """The Hodges–Lehmann estimate of the shift ``delta`` in ``y ~ x + delta`` and its
    distribution-free confidence interval, the one that inverts the two-sided Mann–Whitney test
    (Hollander & Wolfe, *Nonparametric Statistical Methods*, §4.3; R's ``wilcox.test(conf.int=TRUE)``).

    The ``n1 n2`` differences ``y_j - x_i``, sorted: the estimate is their median, the interval
    ``[d_(k), d_(n1 n2 + 1 - k)]`` with ``k - 1`` the largest u for which ``P(U <= u) <=
    (1 - confidence) / 2`` under the null (exact for ``n1 + n2 <= exact_max_n``; beyond, k is
    ``floor(n1 n2 / 2 - z sqrt(n1 n2 (n1 + n2 + 1) / 12))``). A shift inside the interval is one the
    test does not reject. It assumes independent values and that the two distributions differ by
    the shift only; ties among the data make it approximate (the exact null has no ties). None
    when no outcome of the test could reject at this confidence (3 + 3 values at 95 %, since
    ``P(U = 0) = 1/20``), or a sample is empty or holds NaN."""
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0 or any(math.isnan(v) for v in (*x, *y)):
        return None
    tail = (1 - confidence) / 2
    if n1 + n2 <= exact_max_n:
        counts = mann_whitney_null(n1, n2)
        total = math.comb(n1 + n2, n1)
        below, k = 0, 0
        while k < len(counts) and below + counts[k] <= tail * total:
            below += counts[k]
            k += 1
        coverage, method = 1 - 2 * below / total, "exact"
    else:
        z = statistics.NormalDist().inv_cdf(1 - tail)
        k = math.floor(n1 * n2 / 2 - z * math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12))
        coverage, method = confidence, "normal"
    if k < 1:
        return None
    diffs = sorted(b - a for a in x for b in y)
    return ShiftInterval(median(diffs), diffs[k - 1], diffs[len(diffs) - k], k, coverage, method)


def ratio_interval(base: Sequence[float], other: Sequence[float],
                   confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """The 95 % interval of the ratio ``other / base``: the Hodges–Lehmann interval of the shift of
    the logarithms (:func:`shift_interval` of ``log base`` and ``log other``), exponentiated: the
    factor by which ``other`` differs from ``base`` when they differ by a factor (a scale model,
    what a slower setup does to a throughput or a latency). Exact from 4 values a side (5 a side:
    ``[r_(3), r_(23)]`` of the 25 pairwise ratios, 96.8 %). None when either sample is too small
    for an interval, or holds a value of 0 or below (no logarithm; no ratio to speak of)."""
    if any(v <= 0 for v in (*base, *other)):
        return None
    found = shift_interval([math.log(v) for v in base], [math.log(v) for v in other], confidence)
    if found is None:
        return None
    return math.exp(found.low), math.exp(found.high)


class Summary:
    """n, median and min-max range of ``self.values``: the figures both a run's summary and a
    qualification report give per metric (mixed into their attrs classes); its CV and the 95 %
    interval of the median (:func:`median_interval`) too."""

    values: tuple[float, ...]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def median(self) -> float:
        return median(self.values)

    @property
    def low(self) -> float:
        return value_range(self.values)[0]

    @property
    def high(self) -> float:
        return value_range(self.values)[1]

    @property
    def cv(self) -> float | None:
        return cv(self.values)

    @property
    def interval(self) -> tuple[float, float] | None:
        return median_interval(self.values)
