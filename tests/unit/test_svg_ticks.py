"""farm.dashboard.svg's axis ticks: round values (1, 2, 2.5, 5 × 10ⁿ of the unit's base) that cover
the data, never 52.5/105/158 Mbit/s, whatever the span, a zero span and a non-finite value too."""

import math

import pytest

from farm.dashboard.svg import nice_axis, tick_step
from farm.measure.units import human


def test_a_throughput_axis_ticks_at_round_mbits():
    """The span that once gave ticks at 52.5, 105 and 158 Mbit/s."""
    assert tick_step(0, 158e6) == 50e6
    lo, hi, ticks = nice_axis(0, 158e6)
    assert (lo, hi) == (0, 200e6)
    assert [human(t, "bit/s") for t in ticks] == ["0 bit/s", "50 Mbit/s", "100 Mbit/s", "150 Mbit/s", "200 Mbit/s"]


@pytest.mark.parametrize("lo, hi, ticks", [
    (0, 100e6, [0, 25e6, 50e6, 75e6, 100e6]),       # a span that is round already: its own ends
    (0, 47, [0, 10, 20, 30, 40, 50]),
    (0, 7, [0, 2.5, 5, 7.5]),
    (0, 0.3, [0, 0.1, 0.2, 0.3]),                   # no 0.30000000000000004
    (0, 1e-6, [0, 0.25e-6, 0.5e-6, 0.75e-6, 1e-6]),  # µs in seconds
    (0.8e8, 1.06e8, [0.8e8, 0.9e8, 1.0e8, 1.1e8]),  # away from zero: from a round value below
    (-3, 17, [-5, 0, 5, 10, 15, 20]),               # across zero
    (1.2345e-3, 1.2399e-3, [1.234e-3, 1.236e-3, 1.238e-3, 1.240e-3]),  # a narrow span far from zero
])
def test_small_odd_and_narrow_spans(lo, hi, ticks):
    assert nice_axis(lo, hi) == (ticks[0], ticks[-1], ticks)


@pytest.mark.parametrize("lo, hi", [(0, 158e6), (0, 7), (3.3, 9.1), (-3, 17), (0.8e8, 1.06e8), (1, 1e4),
                                    (123.4, 123.9), (0, 2.2e9), (-0.07, -0.01)])
def test_ticks_are_multiples_of_a_round_step_covering_the_data(lo, hi):
    first, last, ticks = nice_axis(lo, hi)
    step = tick_step(lo, hi)
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert any(math.isclose(mantissa, m) for m in (1, 2, 2.5, 5)), step
    assert first <= lo and last >= hi and 4 <= len(ticks) <= 7
    assert all(math.isclose(b - a, step) for a, b in zip(ticks, ticks[1:]))
    assert all(math.isclose(t / step, round(t / step), abs_tol=1e-9) for t in ticks)


@pytest.mark.parametrize("lo, hi, ticks", [
    (0, 0, [0, 0.25, 0.5, 0.75, 1]),   # nothing measured but zeros: 0 to 1
    (5, 5, [5, 6, 7, 8, 9, 10]),       # one value: from it to twice it
    (-2, -2, [-2, -1.5, -1, -0.5, 0]),
    (3, 1, [3, 4, 5, 6]),              # hi below lo: as a zero span at lo
])
def test_a_zero_span_still_has_an_axis(lo, hi, ticks):
    assert nice_axis(lo, hi) == (ticks[0], ticks[-1], ticks)


@pytest.mark.parametrize("lo, hi", [(math.nan, 1.0), (0.0, math.inf), (-math.inf, math.nan)])
def test_a_value_that_is_not_finite_gives_the_unit_axis(lo, hi):
    assert nice_axis(lo, hi) == (0.0, 1.0, [0.0, 1.0])
