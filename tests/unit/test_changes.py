"""farm.results.changes on synthetic series with known steps (fixed seeds)."""

from __future__ import annotations

import random

import pytest

from farm.results.changes import MIN_SIDE, change_points, noise


def _series(levels: list[tuple[int, float]], cv: float, seed: int) -> list[float]:
    """``n`` values at each ``level`` in turn, with normal noise of coefficient of variation ``cv``."""
    rng = random.Random(seed)
    return [level * (1 + rng.gauss(0, cv)) for n, level in levels for _ in range(n)]


def test_a_step_is_found_where_it_is_with_its_ratio_interval_and_sides():
    (step,) = change_points(_series([(30, 1000.0), (20, 800.0)], cv=0.05, seed=1))
    assert step.at == 30 and (step.n_before, step.n_after) == (30, 20)
    low, high = step.interval
    assert low < 0.8 < high and low <= step.ratio <= high and high < 0.9
    assert step.p_value < 1e-6


def test_two_steps_each_judged_between_its_neighbours():
    steps = change_points(_series([(25, 100.0), (25, 130.0), (25, 100.0)], cv=0.03, seed=2))
    assert [s.at for s in steps] == [25, 50]
    assert [(s.n_before, s.n_after) for s in steps] == [(25, 25), (25, 25)]
    assert steps[0].ratio > 1.2 and steps[1].ratio < 0.85


def test_noise_alone_is_rarely_a_change():
    # 40 series without a step: 2 false alarms (one a series of 20 runs at CV 20 % splits 13/7 at p 0.0002);
    # ruptures' candidates alone would be 6, the rank test's judgement keeps 2 (at --alpha 0.01: 3)
    found = [len(change_points(_series([(n, 50.0)], cv=cv, seed=seed)))
             for seed in range(20) for n, cv in ((20, 0.20), (100, 0.10))]
    assert sum(found) <= 2


def test_too_short_constant_and_non_positive_series():
    assert change_points([1.0, 2.0, 1.0] * 3) == []  # fewer than two sides of MIN_SIDE
    assert change_points([5.0] * 40) == []
    # values of 0 or below: searched as they are, a ratio without interval (no log ratio)
    (step,) = change_points([0.0, -1.0, 1.0, 0.5, -0.5, 0.2, -0.2] * 3 + [10.0, 11.0, 9.0, 10.5, 9.5, 10.2, 9.8] * 3)
    assert step.at == 21 and step.interval is None


def test_a_step_needs_enough_runs_a_side():
    # 4 runs after a step of 30 %: fewer than MIN_SIDE, not a change point; 5 are
    assert MIN_SIDE == 5
    base = _series([(30, 1000.0)], cv=0.02, seed=4)
    assert change_points(base + [700.0, 705.0, 698.0, 702.0]) == []
    assert [s.at for s in change_points(base + [700.0, 705.0, 698.0, 702.0, 701.0])] == [30]


def test_noise_is_robust_to_a_step_and_values_must_be_finite():
    steady = _series([(50, 1.0)], cv=0.05, seed=5)
    stepped = steady[:25] + [v * 3 for v in steady[25:]]
    assert noise(stepped) < 2 * noise(steady)
    with pytest.raises(ValueError, match="not finite"):
        change_points([1.0] * 10 + [float("nan")])
