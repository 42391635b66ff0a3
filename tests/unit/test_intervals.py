"""n, CV and 95 % intervals: the exact interval of a median, the conservative one of a ratio, and
compare's table with them (the ratio whose interval includes 1.0 is marked)."""

from __future__ import annotations

import csv
import itertools
import math

import pytest

from farm.results.compare import compare
from farm.results.compare_outputs import write_compare
from farm.results.stats import cv, median_interval, ratio_interval

from .test_compare import CRC, rec


def coverage(n: int, k: int) -> float:
    """P(x_(k) <= median <= x_(n+1-k)) for a continuous distribution: 1 - 2 P(B <= k-1)."""
    return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n


@pytest.mark.parametrize("n, k", [(6, 1), (7, 1), (8, 1), (9, 2), (10, 2), (11, 2), (12, 3), (20, 6), (30, 10)])
def test_median_interval_is_the_textbook_order_statistics(n, k):
    # the tables of e.g. Conover, Practical Nonparametric Statistics: for n = 9, [x(2), x(8)] at 96.1 %
    values = [float(v) for v in range(1, n + 1)]
    assert median_interval(values) == (float(k), float(n + 1 - k))
    assert coverage(n, k) >= 0.95 and coverage(n, k + 1) < 0.95  # the narrowest that still covers


def test_median_interval_needs_six_values_and_ignores_order():
    assert [median_interval(range(n)) for n in range(6)] == [None] * 6  # [min, max] of 5: only 93.75 %
    assert median_interval([5, 1, 4, 2, 3, 6, 7]) == (1, 7)


def test_median_interval_covers_the_median_of_a_known_distribution():
    # exhaustively over all 2^10 sign patterns of 10 draws around a median of 0: the interval
    # misses 0 only when at most 1 or at least 9 draws are below it, 22 of 1024 = 2.1 % < 5 %
    misses = 0
    for signs in itertools.product((-1, 1), repeat=10):
        values = [s * (i + 1) for i, s in enumerate(signs)]
        low, high = median_interval(values)
        misses += not low <= 0 <= high
    assert misses == 22


def test_cv():
    assert cv([10.0, 10.0, 10.0]) == 0.0
    assert cv([9.0, 10.0, 11.0]) == pytest.approx(0.1)  # stdev 1, mean 10
    assert cv([5.0]) is None and cv([-1.0, 1.0]) is None


def test_ratio_interval_is_the_hodges_lehmann_interval_of_the_log_ratio():
    base = [100.0, 101, 99, 100, 102, 98, 100]
    twice = [200.0, 202, 198, 200, 204, 196, 200]
    low, high = ratio_interval(base, twice)
    # 7 + 7: k = 9 (P(U <= 8) = 0.0087 * ... <= 0.025 < P(U <= 9)); the 9th smallest and largest of 49 ratios
    ratios = sorted(t / b for b in base for t in twice)
    assert (low, high) == pytest.approx((ratios[8], ratios[-9]))
    assert low < 2 < high
    assert ratio_interval(base[:3], twice[:3]) is None  # 3 + 3 can never reject at 5 %: no interval
    assert ratio_interval([0.0] * 7, twice) is None  # no log of 0


def test_compare_marks_a_ratio_whose_interval_includes_one(tmp_path):
    same = [100.0, 101, 99, 100, 102, 98, 100]
    faster = [150.0, 151, 149, 150, 152, 148, 150]
    a = [rec(CRC, v, target="board", setup="a", repeat=i) for i, v in enumerate(same)]
    b = [rec(CRC, v * 1.01, target="board", setup="b", repeat=i) for i, v in enumerate(same)]
    c = [rec(CRC, v, target="board", setup="c", repeat=i) for i, v in enumerate(faster)]
    paths = write_compare(compare([("a", a), ("b", b)]), tmp_path / "ab")
    md = paths["md"].read_text()
    (line,) = [line for line in md.splitlines() if line.startswith("| storage | isal |")]
    assert "| **inconclusive** 1.01 [0.990–1.03], n 7/7 (the interval straddles 1.0) |" in line
    assert "98 B/s – 102 B/s" in line  # a's median interval: [x(1), x(7)] of 7 values, in human units
    row = next(csv.DictReader(open(paths["csv"])))
    assert row["ratio"] == "inconclusive" and row["ratio_verdict"] == "inconclusive"
    assert float(row["ratio_estimate"]) == pytest.approx(1.01)
    assert float(row["a_ci_low"]) == 98.0 and float(row["a_ci_high"]) == 102.0
    assert float(row["a_cv"]) == pytest.approx(cv(same))
    paths = write_compare(compare([("a", a), ("c", c)]), tmp_path / "ac")
    row = next(csv.DictReader(open(paths["csv"])))
    assert row["ratio_verdict"] == "higher" and float(row["ratio"]) == 1.5
    assert "**inconclusive** 1" not in paths["md"].read_text()


def test_qualify_says_each_sides_interval_where_there_are_enough_repeats():
    from farm.results.qualify import qualify

    from .test_qualify import records

    base = [940e6, 941e6, 939e6, 942e6, 940.5e6, 940e6, 941.5e6]
    q = qualify(records(base), records([v * 0.8 for v in base], run_id="r2"))
    (c,) = q.regressions
    text = c.explain(q.threshold, q.alpha)
    assert "baseline 95 % CI" in text and "candidate 95 % CI" in text
    q5 = qualify(records(base[:5]), records(base[:5], run_id="r2"))
    assert "95 % CI" not in q5.comparisons[0].explain(q5.threshold, q5.alpha)  # 5 values: no interval
