"""Benchmark tools: the commands that run them and pure parsers turning their output into Measurements."""

from __future__ import annotations

from typing import Any, Mapping

from farm.errors import TestFailure


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
