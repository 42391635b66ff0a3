"""The interval of a history point: the distribution-free confidence interval of the median."""

from __future__ import annotations

import pytest
from scipy import stats

from farm.store.history import median_interval


@pytest.mark.parametrize("n", [1, 2, 5])
def test_too_few_values_give_the_range(n):
    assert median_interval([float(v) for v in range(n, 0, -1)]) == (1.0, float(n), "range")


@pytest.mark.parametrize("n", [6, 10, 25, 100])
def test_the_order_statistics_cover_at_least_95_percent(n):
    lo, hi, kind = median_interval([float(v) for v in range(1, n + 1)])
    assert kind == "ci95"
    k = int(lo)  # values are 1..n, so the value is the order statistic's rank
    assert hi == n + 1 - k
    coverage = stats.binom.cdf(n - k, n, 0.5) - stats.binom.cdf(k - 1, n, 0.5)
    assert coverage >= 0.95
    # and it is the narrowest such interval: one rank further in would cover less than 95 %
    assert stats.binom.cdf(n - k - 1, n, 0.5) - stats.binom.cdf(k, n, 0.5) < 0.95
