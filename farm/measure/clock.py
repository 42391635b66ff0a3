"""The CPU clock around a measurement, and the cycles/byte of a throughput measured at it.

Cycles per byte, throughput normalised by the CPU clock, compares cores rather than clocks
(see :mod:`farm.results.cycles`, which gives records of a run cycles/byte at a clock per target).
A clock read on the CPU right before and right after each measurement (:class:`Clock`, e.g. from
isal_bench's cpufreq lines) makes the figure one of that measurement; a clock that changed during
it is a warning on the measurement (``warning=frequency-changed``).

Cycles/byte is the cost **on one core**: a throughput summed over N processes (``openssl speed
-multi N``, params ``multi=N``) is N cores' work, so each process did ``throughput / N`` bytes per
second with its own core's cycles: ``f * N / throughput``.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping

import attrs

from farm.errors import JobError
from farm.measure import Measurement

METRIC = "cycles_per_byte"
UNIT = "cycles/byte"
# throughput units -> bytes per unit: bytes/s as is, bit/s divided by 8
_BYTES_PER_UNIT = {"bytes/s": 1.0, "byte/s": 1.0, "bit/s": 1 / 8, "bits/s": 1 / 8}
#: a clock that moved by more than this (relative) during a measurement gets a warning
CLOCK_TOLERANCE = 0.01
WARNING_CHANGED = "frequency-changed"
WARNING_MIGRATED = "cpu-migrated"


@attrs.frozen
class Clock:
    """The CPU clock around one measurement: read right before and right after it."""

    before_hz: float
    after_hz: float
    source: str = "cpufreq"
    migrated: bool = False  # the process ended on another CPU than it started on

    @property
    def hz(self) -> float:
        """The clock used: the mean of the two readings."""
        return (self.before_hz + self.after_hz) / 2

    @property
    def changed(self) -> bool:
        """The clock moved by more than :data:`CLOCK_TOLERANCE` between the two readings."""
        return abs(self.after_hz - self.before_hz) > CLOCK_TOLERANCE * min(self.before_hz, self.after_hz)


def combined_clock(clocks: Iterable[Clock]) -> Clock | None:
    """One clock for a figure made of several measurements (a corpus average; processes on several
    CPUs): the lowest and the highest reading when any clock moved or they differ by more than the
    tolerance (so the figure is warned about too), else the means. None for no clocks."""
    clocks = list(clocks)
    if not clocks:
        return None
    readings = [hz for c in clocks for hz in (c.before_hz, c.after_hz)]
    migrated = any(c.migrated for c in clocks)
    if any(c.changed for c in clocks) or Clock(min(readings), max(readings)).changed:
        return Clock(before_hz=min(readings), after_hz=max(readings), source=clocks[0].source, migrated=migrated)
    return Clock(before_hz=sum(c.before_hz for c in clocks) / len(clocks),
                 after_hz=sum(c.after_hz for c in clocks) / len(clocks), source=clocks[0].source, migrated=migrated)


def cpufreq_clock(before_khz: Iterable[int], after_khz: Iterable[int]) -> Clock | None:
    """The clock around a measurement from every CPU's ``scaling_cur_freq`` (kHz) read before and
    after it, CPU by CPU (:func:`combined_clock`); None when cpufreq gave nothing or the two
    readings do not list the same CPUs."""
    before, after = list(before_khz), list(after_khz)
    if not before or len(before) != len(after) or min(before + after) <= 0:
        return None
    return combined_clock(Clock(b * 1e3, a * 1e3) for b, a in zip(before, after))


def processes(params: Mapping[str, object]) -> int:
    """How many processes a throughput is the sum of: ``multi`` (openssl speed -multi), else 1."""
    value = params.get("multi", 1)
    try:
        n = int(str(value))
    except ValueError:
        raise JobError(f"params multi={value!r}: expected a whole number of processes") from None
    if n < 1:
        raise JobError(f"params multi={value!r}: expected at least 1 process")
    return n


def measured_cycles_per_byte(m: Measurement, clock: Clock) -> Measurement | None:
    """The cycles/byte sibling of throughput measurement ``m`` at the clock read around it:
    ``clock.hz * processes / bytes_per_second``, the same params, plus ``warning=`` when the
    clock changed during the measurement (``frequency-changed``) or the process moved to another
    CPU (``cpu-migrated``), so that no one reads it as exact. None where :func:`cycles_per_byte`
    gives nothing (another unit, a rate that is not positive and finite)."""
    scale = _BYTES_PER_UNIT.get(m.unit)
    if scale is None:
        return None
    bytes_per_second = m.value * scale
    if not math.isfinite(bytes_per_second) or bytes_per_second <= 0:
        return None
    _check_hz("the measured clock", clock.before_hz)
    _check_hz("the measured clock", clock.after_hz)
    warnings = [w for w, on in ((WARNING_CHANGED, clock.changed), (WARNING_MIGRATED, clock.migrated)) if on]
    params = {**m.params, **({"warning": ",".join(warnings)} if warnings else {})}
    return Measurement(m.benchmark, metric_for(m.metric), clock.hz * processes(m.params) / bytes_per_second,
                       UNIT, params)


def _check_hz(what: str, frequency: object) -> None:
    if (isinstance(frequency, bool) or not isinstance(frequency, (int, float))
            or not math.isfinite(frequency) or frequency <= 0):
        raise JobError(f"frequency of {what}: {frequency!r} is not a positive number of Hz")


def metric_for(metric: str) -> str:
    """The sibling's metric: ``throughput`` in the name becomes ``cycles_per_byte``
    (``throughput`` -> ``cycles_per_byte``, iperf3's ``sent_throughput`` ->
    ``sent_cycles_per_byte``), any other name gets ``_cycles_per_byte`` appended. One rate metric
    per name in, one name out: iperf3's sent and received rates must not collide."""
    if "throughput" in metric:
        return metric.replace("throughput", METRIC, 1)
    return f"{metric}_{METRIC}"

