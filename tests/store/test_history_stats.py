"""The interval of a history point: the distribution-free confidence interval of the median."""

from __future__ import annotations

import pytest
from scipy import stats

from farm.store.history import median_interval


@pytest.mark.parametrize("n", [1, 2, 5])
def test_too_few_values_give_the_range(n):
    assert median_interval([float(v) for v in range(n, 0, -1)]) == (1.0, float(n), "range")


@pytest.mark.parametrize("n", [6, 10, 25, 100, 999, 1001, 5000])
def test_the_order_statistics_cover_at_least_95_percent(n):
    lo, hi, kind = median_interval([float(v) for v in range(1, n + 1)])
    assert kind == "ci95"
    k = int(lo)  # values are 1..n, so the value is the order statistic's rank
    assert hi == n + 1 - k
    coverage = stats.binom.cdf(n - k, n, 0.5) - stats.binom.cdf(k - 1, n, 0.5)
    assert coverage >= 0.95
    # and it is the narrowest such interval (above 1000, within a rank): further in covers less than 95 %
    inner = 1 if n <= 1000 else 2
    assert stats.binom.cdf(n - k - inner, n, 0.5) - stats.binom.cdf(k + inner - 1, n, 0.5) < 0.95


@pytest.mark.parametrize("n", [1, 2, 7, 10, 1001])
def test_summarise_is_the_median_and_the_interval(n):
    import random
    import statistics

    from farm.store.history import summarise

    values = [random.Random(i).uniform(0, 100) for i in range(n)]
    med, lo, hi, kind = summarise(values)
    assert med == statistics.median(values)
    assert (lo, hi, kind) == median_interval(values)
