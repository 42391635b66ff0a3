"""Benchmark tools: the commands that run them and pure parsers turning their output into Measurements."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from farm.errors import TestFailure
from farm.results.record import Measurement, impossible


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


def merge_params(passed: Mapping[str, Any] | None, found: Mapping[str, Any]) -> dict[str, Any]:
    """Caller's ``params`` plus what the parser found in the output; the parser wins on a clash
    because it describes what was actually measured, not what was asked for."""
    return {**(passed or {}), **found}


class ImpossibleValue(BenchmarkError):
    """A tool printed a value no measurement can have: NaN, infinite or negative (see
    :func:`farm.results.record.impossible`). In a live run it is a failed benchmark (a
    ``metric=failed`` record, never the value); an import turns it into a
    :class:`~farm.errors.ParseError` naming the file and line."""


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
