"""farm.measure.units.human: the one way a measured value is shown to a person."""

import math

import pytest

from farm.measure.units import human, human_params, number


@pytest.mark.parametrize("value, unit, shown", [
    (812e6, "bit/s", "812 Mbit/s"),
    (1.23e9, "bytes/s", "1.23 GB/s"),
    (32139119.19, "bytes/s", "32.1 MB/s"),
    (999.0, "bit/s", "999 bit/s"),
    (999.96e6, "bit/s", "1 Gbit/s"),          # rounds into the next prefix, not "1000 Mbit/s"
    (45.2, "us", "45.2 µs"),
    (12200.0, "us", "12.2 ms"),               # was "1.22e+04 us" in a sweep's summary
    (0.5, "us", "500 ns"),
    (3725.0, "s", "3725 s"),
    (0.0035, "s", "3.5 ms"),
    (6.775, "percent", "6.78 %"),
    (0.0, "count", "0"),
    (20615.0, "count", "20615"),
    (1.5e9, "Hz", "1.5 GHz"),
    (46.95, "cycles/byte", "47 cycles/byte"),
    (math.nan, "bit/s", "NaN bit/s"),
])
def test_human(value, unit, shown):
    assert human(value, unit) == shown


def test_number_has_no_exponent_from_one_up():
    assert number(1.22e4) == "12200" and number(123456789.0) == "123456789" and number(0.000123) == "0.000123"
    assert "e" not in number(9.99e13)


def test_params_with_units_are_scaled_sizes_kept_exact():
    assert human_params("method=ipbench-echo;packet_size=1472;requested=10000000") == \
        "method=ipbench-echo; packet_size=1472 B; requested=10 Mbit/s"
    assert human_params("block=16384;direction=encrypt") == "block=16384 B; direction=encrypt"
    assert human_params("requested=fast") == "requested=fast"  # not a number: as it is
    assert human_params("") == ""
