"""The benchmark ``console``: a system image's console lines as records (farm.measure.console).

    benchmarks:
      - console: {until: 'powering off', seconds: 60}

It runs on the targets of the flow ``system`` (farm.boot.system) and needs no shell: it reads what the
system printed since the boot (or since the last read) with the setup's ``system.stats`` patterns,
up to the first line matching ``until`` (waited for at most ``seconds``), or, without ``until``,
until the console has been quiet for half a second. A target of another flow has no such console
to read: the run says so (a job error), and a pipeline file is refused it when it is read.
"""

from __future__ import annotations


import attrs

from ..boot.target import ConsoleTarget
from ..errors import JobError, ParseError, TestFailure
from ..measure import BenchmarkError, Measurement
from ..measure.console import BENCHMARK, parse_stats, stats_pattern  # noqa: F401  (BENCHMARK: the registration's name)
from .context import BenchContext
from .params import Params, param

MAX_SECONDS = 86400

#: the lines of farm's stand-in system image (images/baremetal/standin.c), as pipelines/system-standin.yaml
#: reads them: its banner (seen once: which version, at which exception level) and each component's
#: share of the counter ticks
STANDIN_STATS = (
    stats_pattern(r"farm-standin (?P<version>\d+): booted at EL(?P<el>\d)", metric="banner"),
    stats_pattern(r"component (?P<component>\w+): ticks (?P<ticks>\d+) of \d+ \((?P<share>[0-9.]+)%\)",
                  {"ticks": "ticks", "share": "percent"}),
)


def parse_standin(text: str) -> list[Measurement]:
    """The stand-in's console lines as records (what a pipeline's ``system.stats`` makes of them)."""
    return parse_stats(text, STANDIN_STATS)


def _regex(name: str, value: str) -> None:
    from ..schema import regex_problem

    if (problem := regex_problem(value)):
        raise JobError(f"{name}: {problem}")


def _seconds(name: str, value: float) -> None:
    if isinstance(value, bool) or not 0 < value <= MAX_SECONDS:
        raise JobError(f"{name}: {value!r}: expected seconds, > 0 and <= {MAX_SECONDS}")


@attrs.frozen(kw_only=True)
class ConsoleParams(Params):
    """``console: {...}`` of a pipeline (see the module docstring)."""

    LABEL = "console"

    until: str | None = param(None, kind=str, run_length=True, check=_regex,
                              doc="a regex: read up to the first line matching it (the system's last stats line)")
    seconds: int | float = param(30, kind=(int, float), run_length=True, check=_seconds,
                                 doc="how long to wait for `until` (without it: at most, for a quiet console)")

    def requires(self) -> tuple[type, ...]:
        return (ConsoleTarget,)


def run_console(ctx: BenchContext, params: ConsoleParams) -> list[Measurement]:
    """The setup's stats patterns read on the system's console."""
    console = ctx.console_target  # a setup whose flow has none was refused when the pipeline file was read
    try:
        return console.stats(until=params.until, seconds=float(params.seconds))
    except BenchmarkError:
        raise
    except (ParseError, TestFailure) as exc:  # a line it cannot read, a fatal line, no `until` line
        raise BenchmarkError("console", str(exc)) from None
