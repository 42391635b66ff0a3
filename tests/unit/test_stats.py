"""farm.results.stats: known values, a brute-force enumeration, and scipy on the same samples."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from farm.results.stats import (EXACT_MAX_N, mann_whitney_u, median, midranks, ranges_overlap,
                                value_range)


def test_median_and_range():
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5
    assert median([7]) == 7.0
    assert value_range([3.0, -1.0, 2.0]) == (-1.0, 3.0)
    with pytest.raises(ValueError):
        median([])
    with pytest.raises(ValueError):
        value_range([])


def test_ranges_overlap():
    assert ranges_overlap([1, 3], [3, 5])          # touching counts as overlapping
    assert ranges_overlap([1, 10], [4, 5])
    assert not ranges_overlap([1, 2.9], [3, 5])
    assert not ranges_overlap([6, 7], [3, 5])


def test_midranks_share_ties():
    assert midranks([10, 20, 20, 5, 20]) == [2.0, 4.0, 4.0, 1.0, 4.0]
    assert midranks([1.5]) == [1.0]


def test_completely_separated_samples():
    # the smallest possible two-sided p of n1 = n2 = 3 is 2 / C(6, 3) = 0.1: never below 0.05
    r = mann_whitney_u([1, 2, 3], [4, 5, 6])
    assert (r.u, r.p_value, r.min_p, r.method, r.ties) == (0.0, 0.1, 0.1, "exact", False)
    assert not r.can_reach(0.05)
    r = mann_whitney_u([5, 6, 7, 8], [1, 2, 3, 4])
    assert r.u == 16.0
    assert r.p_value == pytest.approx(2 / 70)
    assert r.can_reach(0.05)


def test_textbook_example():
    # the example of scipy's mannwhitneyu documentation (ages of male / female staff):
    # U1 = 17, exact two-sided p = 0.1111
    r = mann_whitney_u([19, 22, 16, 29, 24], [20, 11, 17, 12])
    assert r.u == 17.0
    assert r.p_value == pytest.approx(0.11111, abs=1e-5)


def test_identical_and_constant_samples():
    r = mann_whitney_u([1, 2, 3], [1, 2, 3])
    assert r.p_value == 1.0 and r.ties
    r = mann_whitney_u([5, 5, 5], [5, 5])
    assert (r.p_value, r.min_p) == (1.0, 1.0)
    r = mann_whitney_u([5.0] * 30, [5.0] * 30)  # normal approximation, zero variance
    assert (r.method, r.p_value) == ("normal", 1.0)


def test_one_value_each():
    r = mann_whitney_u([1.0], [2.0])
    assert (r.p_value, r.min_p) == (1.0, 1.0)


def test_bad_input():
    with pytest.raises(ValueError):
        mann_whitney_u([], [1.0])
    with pytest.raises(ValueError):
        mann_whitney_u([math.nan], [1.0])


def _brute_force(x, y):
    """Two-sided p by listing every split of the pooled values (no shortcuts, no scipy)."""
    pooled = list(x) + list(y)
    ranks = midranks(pooled)

    def u_of(indices):
        return sum(ranks[i] for i in indices) - len(x) * (len(x) + 1) / 2

    observed = u_of(range(len(x)))
    us = [u_of(c) for c in itertools.combinations(range(len(pooled)), len(x))]
    le = sum(u <= observed + 1e-9 for u in us) / len(us)
    ge = sum(u >= observed - 1e-9 for u in us) / len(us)
    p = min(1.0, 2 * min(le, ge))
    lo, hi = min(us), max(us)
    min_p = min(1.0, 2 * min(sum(abs(u - lo) < 1e-9 for u in us), sum(abs(u - hi) < 1e-9 for u in us)) / len(us))
    return p, min_p


@pytest.mark.parametrize("x,y", [
    ([1, 2, 3], [4, 5, 6]),
    ([1, 4, 6, 9], [2, 3, 5]),
    ([1, 2, 2, 3], [2, 3, 3, 4, 5]),          # ties across the samples
    ([7, 7, 7, 1], [7, 2, 7]),
    ([0.5], [0.1, 0.2, 0.9, 0.95]),
    ([3, 1, 4, 1, 5, 9], [2, 6, 5, 3, 5, 8, 9]),
])
def test_exact_equals_brute_force(x, y):
    r = mann_whitney_u(x, y)
    p, min_p = _brute_force(x, y)
    assert r.method == "exact"
    assert r.p_value == pytest.approx(p, abs=1e-12)
    assert r.min_p == pytest.approx(min_p, abs=1e-12)


def test_normal_approximation_beyond_the_exact_limit():
    x = list(range(EXACT_MAX_N // 2 + 1))
    y = [v + 0.5 for v in x]
    assert mann_whitney_u(x, y).method == "normal"
    assert mann_whitney_u(x[:-1], y[:-1]).method == "exact"


# --- scipy on the same samples ---------------------------------------------------------------

@pytest.fixture
def scipy_stats():
    return pytest.importorskip("scipy.stats", reason="scipy is in the test extra")


def test_no_ties_matches_scipy_exact(scipy_stats):
    rng = random.Random(1)
    for _ in range(200):
        n1, n2 = rng.randint(1, 12), rng.randint(1, 12)
        x = [rng.random() for _ in range(n1)]
        y = [rng.random() + rng.choice([0, 0.3, 1]) for _ in range(n2)]
        ours = mann_whitney_u(x, y)
        theirs = scipy_stats.mannwhitneyu(x, y, alternative="two-sided", method="exact")
        assert ours.u == pytest.approx(theirs.statistic)
        assert ours.p_value == pytest.approx(theirs.pvalue, abs=1e-12), (x, y)


def test_ties_match_scipy_exact_permutation_test(scipy_stats):
    rng = random.Random(2)
    for _ in range(60):
        n1, n2 = rng.randint(2, 7), rng.randint(2, 7)
        x = [rng.randint(0, 4) for _ in range(n1)]
        y = [rng.randint(1, 5) for _ in range(n2)]
        ours = mann_whitney_u(x, y)
        # n_resamples above C(14, 7) = 3432: scipy enumerates every split, so this is exact too
        theirs = scipy_stats.mannwhitneyu(x, y, alternative="two-sided",
                                          method=scipy_stats.PermutationMethod(n_resamples=10_000))
        assert ours.u == pytest.approx(theirs.statistic)
        assert ours.p_value == pytest.approx(theirs.pvalue, abs=1e-12), (x, y)


def test_large_samples_match_scipy_asymptotic(scipy_stats):
    rng = random.Random(3)
    for _ in range(50):
        n1, n2 = rng.randint(21, 60), rng.randint(21, 60)
        x = [rng.randint(0, 30) for _ in range(n1)]   # plenty of ties: the tie correction matters
        y = [rng.randint(3, 33) for _ in range(n2)]
        ours = mann_whitney_u(x, y)
        assert ours.method == "normal"
        theirs = scipy_stats.mannwhitneyu(x, y, alternative="two-sided", method="asymptotic")
        assert ours.p_value == pytest.approx(theirs.pvalue, rel=1e-9, abs=1e-15)
