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

import functools
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


@functools.lru_cache(maxsize=256)
def mann_whitney_null(n1: int, n2: int) -> tuple[int, ...]:
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
    return tuple(table[n2])


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


# --- Student's t, for the intervals that assume log-normal boots ---------------------------------


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b), by its continued fraction (modified
    Lentz; Press et al., *Numerical Recipes*, §6.4): the one special function Student's t needs,
    and the standard library has none (scipy is not a dependency for one quantile)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    if x > (a + 1) / (a + b + 2):  # the fraction converges fast below this point: use the symmetry
        return 1 - _incomplete_beta(b, a, 1 - x)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)) / a
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    f = d
    for m in range(1, 300):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            f *= c * d
        if abs(c * d - 1) < 1e-14:
            break
    return front * f


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` (> 0, fractional too: Welch's) degrees of freedom."""
    tail = 0.5 * _incomplete_beta(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom: Newton's method on
    :func:`t_cdf` from the normal quantile (a few steps to 1e-12), bisection where a step overshoots."""
    if not 0 < p < 1 or not df > 0:
        raise ValueError(f"t quantile of p={p}, df={df}")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        lo, hi = hi, hi * 2
    t = min(max(statistics.NormalDist().inv_cdf(p), lo), hi)
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    for _ in range(100):
        miss = t_cdf(t, df) - p
        if abs(miss) < 1e-12:
            break
        lo, hi = (t, hi) if miss < 0 else (lo, t)
        density = math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))
        step = t - miss / density
        t = step if lo < step < hi else (lo + hi) / 2
    return t


def welch_ratio_interval(base: Sequence[float], other: Sequence[float],
                         confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """The interval of the ratio ``other / base`` for sides of **unequal spread**: Welch's t interval
    of the difference of the mean logarithms (Satterthwaite's degrees of freedom), exponentiated
    (the ratio of the geometric means). It assumes each side's per-boot values are log-normal (a
    factor's noise), but not that the two spreads are alike, which the Hodges–Lehmann interval does
    (a guest beside bare metal: simulated in benchmarks/interval_coverage.py). None with fewer than
    2 values a side, a value of 0 or below, or no spread on either side."""
    if len(base) < 2 or len(other) < 2 or any(not v > 0 for v in (*base, *other)):
        return None
    la, lb = [math.log(v) for v in base], [math.log(v) for v in other]
    va, vb = statistics.variance(la) / len(la), statistics.variance(lb) / len(lb)
    if va + vb == 0:
        return None
    df = (va + vb) ** 2 / (va ** 2 / (len(la) - 1) + vb ** 2 / (len(lb) - 1))
    half = t_quantile(1 - (1 - confidence) / 2, df) * math.sqrt(va + vb)
    shift = statistics.fmean(lb) - statistics.fmean(la)
    return math.exp(shift - half), math.exp(shift + half)


def prediction_interval(values: Sequence[float], n_new: int = 1,
                        confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Where the geometric mean of ``n_new`` further values would lie, from ``values`` (per-boot
    values, log-normal between boots): ``exp(mean ± t(n-1) · s · sqrt(1/n + 1/n_new))`` of the
    logarithms, the classical normal prediction interval on the log scale. ``farm reproduce`` asks
    it whether an original of fewer boots than the rule's minimum lies within what the
    reproduction measured. None with fewer than 2 values or a value of 0 or below."""
    if len(values) < 2 or n_new < 1 or any(not v > 0 for v in values):
        return None
    logs = [math.log(v) for v in values]
    mean, sd = statistics.fmean(logs), statistics.stdev(logs)
    half = t_quantile(1 - (1 - confidence) / 2, len(logs) - 1) * sd * math.sqrt(1 / len(logs) + 1 / n_new)
    return math.exp(mean - half), math.exp(mean + half)
