"""A ratio with its uncertainty (farm.results.ratio, farm.results.stats.shift_interval): the
Hodges–Lehmann interval of the log ratio checked against scipy's exact Mann–Whitney test (the
interval is the set of shifts that test does not reject), the null distribution against scipy's,
its coverage by simulation, the verdicts, and the reduction to one value per boot."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from farm.results.ratio import (HIGHER, INCONCLUSIVE, LOWER, SAME, Rule, band_verdict, estimate_ratio, per_boot,
                                repeats_in_boot)
from farm.results.stats import mann_whitney_null, ratio_interval, shift_interval

from .test_compare import CRC, rec

stats = pytest.importorskip("scipy.stats")


def test_the_null_distribution_of_u_is_scipys():
    """Every split of the ranks 1..10 into 5 + 5: scipy's exact two-sided p from our counts."""
    counts = mann_whitney_null(5, 5)
    total = math.comb(10, 5)
    assert sum(counts) == total == 252 and counts[:4] == (1, 1, 2, 3)  # the textbook's table
    for first in itertools.combinations(range(1, 11), 5):
        second = [r for r in range(1, 11) if r not in first]
        u = sum(1 for a in first for b in second if a > b)
        ours = min(1.0, 2 * min(sum(counts[:u + 1]), sum(counts[u:])) / total)
        assert ours == pytest.approx(stats.mannwhitneyu(first, second, method="exact").pvalue)


@pytest.mark.parametrize("n1, n2", [(4, 4), (5, 5), (5, 7), (8, 6), (10, 10)])
def test_the_interval_is_the_set_of_shifts_scipys_exact_test_does_not_reject(n1, n2):
    rng = random.Random(n1 * 100 + n2)
    x = [rng.gauss(10, 1) for _ in range(n1)]
    y = [rng.gauss(11, 1) for _ in range(n2)]
    found = shift_interval(x, y)
    diffs = sorted(b - a for a in x for b in y)
    gap = min(b - a for a, b in zip(diffs, diffs[1:]) if b > a)
    eps = gap / 10

    def p(shift: float) -> float:
        return stats.mannwhitneyu([v - shift for v in y], x, method="exact").pvalue

    for inside in (found.low + eps, found.high - eps, found.estimate):
        assert p(inside) > 0.05
    for outside in (found.low - eps, found.high + eps):
        assert p(outside) <= 0.05
    assert found.estimate == pytest.approx(sorted(diffs)[len(diffs) // 2] if len(diffs) % 2 else
                                           (diffs[len(diffs) // 2 - 1] + diffs[len(diffs) // 2]) / 2)
    assert found.coverage >= 0.95 and found.method == "exact"


def test_five_boots_a_side_give_the_third_smallest_and_largest_of_25_ratios():
    # Hollander & Wolfe's C_alpha for m = n = 5: P(U <= 2) = 4/252, so k = 3, coverage 1 - 8/252 = 96.8 %
    found = shift_interval([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    assert (found.k, found.low, found.high, found.estimate) == (3, 2, 8, 5)
    assert found.coverage == pytest.approx(1 - 8 / 252)
    assert shift_interval([1, 2, 3], [4, 5, 6]) is None  # P(U = 0) = 1/20 > 2.5 %: no test can reject


def test_the_ratio_interval_is_the_shift_interval_of_the_logs():
    base, other = [100.0, 98, 103, 101, 99], [63.0, 61, 66, 60, 64]
    found = shift_interval([math.log(v) for v in base], [math.log(v) for v in other])
    assert ratio_interval(base, other) == pytest.approx((math.exp(found.low), math.exp(found.high)))
    ratios = sorted(o / b for b in base for o in other)
    assert ratio_interval(base, other) == pytest.approx((ratios[2], ratios[-3]))


def test_the_interval_covers_a_known_ratio_at_least_95_percent_of_the_time():
    rng = random.Random(25)
    trials, misses = 2000, 0
    for _ in range(trials):
        base = [100 * math.exp(rng.gauss(0, 0.1)) for _ in range(5)]
        other = [63 * math.exp(rng.gauss(0, 0.1)) for _ in range(5)]
        low, high = ratio_interval(base, other)
        misses += not low <= 0.63 <= high
    assert misses / trials <= 1 - 0.95  # exact: 1 - 0.968 = 3.2 %, within the simulation's noise
    assert misses / trials >= 0.015


def test_the_large_sample_interval_uses_the_normal_approximation():
    rng = random.Random(3)
    x, y = [rng.gauss(0, 1) for _ in range(30)], [rng.gauss(1, 1) for _ in range(30)]
    found = shift_interval(x, y)
    assert found.method == "normal" and found.k == math.floor(450 - 1.959963984540054 * math.sqrt(900 * 61 / 12))
    eps = 1e-9
    assert stats.mannwhitneyu([v - found.low - eps for v in y], x, method="asymptotic").pvalue > 0.04


def test_verdicts():
    spread = [-0.02, -0.01, 0, 0.01, 0.02]
    base = [100 * (1 + d) for d in spread]
    lower = estimate_ratio(base, [63 * (1 + d) for d in spread])
    assert lower.verdict == LOWER and lower.conclusive and lower.ratio == pytest.approx(0.63)
    assert lower.text() == "0.630 [0.611–0.649], n 5/5"  # 0.63 * 0.99 / 1.02: the 3rd smallest of 25
    assert estimate_ratio(base, [130 * (1 + d) for d in spread]).verdict == HIGHER
    near = estimate_ratio(base, [101 * (1 + d) for d in spread])
    assert near.verdict == INCONCLUSIVE and near.why == "the interval straddles 1.0"
    assert near.text().startswith("inconclusive: 1.01 [")
    assert estimate_ratio(base, [101 * (1 + d) for d in spread], Rule(threshold=0.05)).verdict == SAME
    straddling = estimate_ratio(base, [96 * (1 + d) for d in spread], Rule(threshold=0.05))
    assert straddling.verdict == INCONCLUSIVE and "straddles the band 0.950–1.05" in straddling.why
    few = estimate_ratio(base[:4], [63.0] * 5)
    assert few.verdict == INCONCLUSIVE and few.why == "fewer than 5 boots a side" and few.interval is not None
    assert estimate_ratio(base[:4], [63.0, 62, 64, 61], Rule(min_n=4)).verdict == LOWER
    zero = estimate_ratio([0.0, 1, 2, 3, 4], [1.0, 2, 3, 4, 5])
    assert zero.verdict == INCONCLUSIVE and "0 or below" in zero.why
    assert estimate_ratio([], [1.0]).ratio is None
    assert band_verdict((1.0, 1.0)) == SAME and band_verdict((0.99, 1.0)) == INCONCLUSIVE


def test_values_of_one_boot_are_reduced_to_their_median():
    # run r1: 3 repeats in a boot (repeats 0-2 boot 0, 3-5 boot 1); run r2 has none recorded: one value a boot
    records = [rec(CRC, v, target="t", repeat=i) for i, v in enumerate([1.0, 9.0, 2.0, 5.0, 5.0, 4.0])]
    records += [rec(CRC, v, target="t", repeat=i, run_id="r2") for i, v in enumerate([7.0, 8.0])]
    records.append(rec(CRC, math.nan, target="t", repeat=6))  # boot 2: NaN only, no value
    reduced = per_boot(records, {"r1": 3})
    assert [(r.run_id, r.repeat, r.value) for r in reduced] == [("r1", 0, 2.0), ("r1", 1, 5.0),
                                                                ("r2", 0, 7.0), ("r2", 1, 8.0)]
    assert [r.value for r in per_boot(records, 1)][:3] == [1.0, 9.0, 2.0]


def test_repeats_in_boot_are_read_from_run_json(tmp_path):
    (tmp_path / "run.json").write_text('{"run_id": "r9", "repeats_in_boot": 4}')
    assert repeats_in_boot(tmp_path) == {"r9": 4}
    (tmp_path / "run.json").write_text('{"run_id": "r9", "repeats_in_boot": "x"}')
    assert repeats_in_boot(tmp_path) == {"r9": 1}
    assert repeats_in_boot(tmp_path / "nowhere") == {}
