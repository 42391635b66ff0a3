"""What a measurement is, and the pure functions that read tools' outputs into measurements.

This package sits below both :mod:`farm.bench` (which runs the tools on a target) and
:mod:`farm.results` (which stamps measurements into records and publishes them): it imports
neither. Each tool's module here holds its output parser and its command line builder, all pure:
:mod:`.iperf3` (and :mod:`.iperf3_notebook`, the lab's annotated runs), :mod:`.openssl`, :mod:`.isal`,
:mod:`.vmexit`, :mod:`.cpustat` (``/proc/stat``), :mod:`.ipbench` (the lab's wide CSV),
:mod:`.farmload` (``farm_load``'s output, both methods), :mod:`.sockperf`,
:mod:`.ipbench_latency` (ipbench's latency figures as its code computes them), :mod:`.lukem` (the
``cpu_target_lukem`` CPU target's replies), :mod:`.console` (a system image's console lines, by the
pipeline's patterns), :mod:`.exitcost` (farm-exitcost's per-exit ticks) and :mod:`.clock` (the CPU clock
around a measurement and the cycles/byte it gives).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

import attrs

from farm.errors import TestFailure


@attrs.frozen
class Measurement:
    """What a parser found: ``benchmark`` measured ``metric`` = ``value`` ``unit`` under ``params``."""

    benchmark: str
    metric: str
    value: float
    unit: str
    params: Mapping[str, Any] = attrs.field(factory=dict)


def impossible(value: float) -> str | None:
    """Why ``value`` cannot be a measurement, or None when it can be one.

    Every quantity farm records (rates, times, RTTs, cycles, ticks, percentages, counts) is a
    finite number of 0 or more: NaN means nothing was measured, an infinity a division by a zero
    time, a negative value an overflow or a clock that went backwards. None of them may enter a
    median or a gate as if it were measured.
    """
    if math.isnan(value):
        return "is NaN (not measured)"
    if math.isinf(value):
        return "is infinite"
    if value < 0:
        return f"is negative ({value:g})"
    return None


class BenchmarkError(TestFailure):
    """A benchmark tool ran and reported its own failure (e.g. iperf3 "unable to connect to server").

    It is a :class:`~farm.errors.TestFailure` (exit code 1, kind "test"), not a parse error: the
    output was read fine, it just says the benchmark did not produce a result. ``tool`` and
    ``message`` are kept apart so reports can show the tool's own words unchanged.
    """

    def __init__(self, tool: str, message: str) -> None:
        super().__init__(tool, message)  # both in args, so the error pickles and copies
        self.tool = tool
        self.message = message

    def __str__(self) -> str:
        return f"{self.tool}: {self.message}"


class ImpossibleValue(BenchmarkError):
    """A tool printed a value no measurement can have: NaN, infinite or negative (see
    :func:`impossible`). In a live run it is a failed benchmark (a ``metric=failed`` record, never
    the value); an import turns it into a :class:`~farm.errors.ParseError` naming the file and line."""


def merge_params(passed: Mapping[str, Any] | None, found: Mapping[str, Any]) -> dict[str, Any]:
    """Caller's ``params`` plus what the parser found in the output; the parser wins on a clash
    because it describes what was actually measured, not what was asked for."""
    return {**(passed or {}), **found}


def check_value(tool: str, where: str, value: float) -> float:
    """``value`` when it can be a measurement; else :class:`ImpossibleValue` naming ``where``
    (``"iperf3 output line 12: receiver rate"``, ``"iperf3 JSON end.sum_sent.bits_per_second"``)."""
    why = impossible(float(value))
    if why is not None:
        raise ImpossibleValue(tool, f"{where} {why}: not a measurement")
    return value


def check_measurements(tool: str, measurements: Iterable[Measurement]) -> list[Measurement]:
    """Every measurement checked (the backstop behind the parsers' own checks, which name lines)."""
    out = list(measurements)
    for m in out:
        params = ";".join(f"{k}={v}" for k, v in sorted(m.params.items()))
        check_value(tool, f"{m.benchmark} {m.metric}{f'[{params}]' if params else ''} = {m.value!r} {m.unit}:",
                    m.value)
    return out


# which way a unit is better, for farm qualify (the registrations declare it per unit:
# farm.bench.registry); a unit of no known direction is compared, never a regression
HIGHER_IS_BETTER = 1
LOWER_IS_BETTER = -1
UNKNOWN_DIRECTION = 0
