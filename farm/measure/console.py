"""Console lines as measurements: what a system image prints of itself (its per-component statistics,
its banner), read by patterns the pipeline gives.

    pattern = stats_pattern(r"component (?P<component>\\w+): ticks (?P<ticks>\\d+) \\((?P<utilisation>[0-9.]+)%\\)",
                            units={"ticks": "ticks", "utilisation": "percent"})
    parse_stats("farm-standin: component fill: ticks 1234 (21.7%)", [pattern])
    # -> console ticks=1234 ticks, console utilisation=21.7 percent, both with params component=fill

A pattern is a regular expression searched in each console line (``\\r`` and the line end dropped).
Its named groups listed in ``units`` are values (a metric each, named as the group, or
``<metric>_<group>`` with the pattern's ``metric``); its other named groups are params of those
values (which component, which core). A pattern with no ``units`` says a line was seen: one value 1
(unit ``count``) of its ``metric`` per line, its groups as params (a banner's version, the exception
level a system started at). A line may match several patterns; each pattern counts once per line.

A value group that does not read as a number, and a second value of one metric and params in one read
(the same component printed twice: which one would the median take?) are a
:class:`~farm.errors.ParseError` naming both lines.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

import attrs

from farm.errors import JobError, ParseError
from farm.measure import Measurement, merge_params

BENCHMARK = "console"
SEEN_UNIT = "count"
_METRIC = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
_UNIT = re.compile(r"[A-Za-z%/][A-Za-z0-9%/._-]{0,31}")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


@attrs.frozen
class StatsPattern:
    """One pattern of a pipeline's ``stats`` (see the module docstring)."""

    regex: re.Pattern[str] = attrs.field(eq=False)
    units: Mapping[str, str] = attrs.field(factory=dict)
    metric: str = ""

    @property
    def text(self) -> str:
        return self.regex.pattern

    def describe(self) -> dict[str, Any]:
        return {"pattern": self.text, "units": dict(self.units), **({"metric": self.metric} if self.metric else {})}


def stats_pattern(pattern: str, units: Mapping[str, str] | None = None, metric: str = "") -> StatsPattern:
    """A checked :class:`StatsPattern`; a JobError says what is wrong (the caller names the field)."""
    from farm.schema import regex_problem

    if (problem := regex_problem(pattern)):
        raise JobError(f"pattern {problem}")
    regex = re.compile(pattern)
    units = dict(units or {})
    groups = set(regex.groupindex)
    for group, unit in units.items():
        if group not in groups:
            raise JobError(f"units.{group}: the pattern has no group (?P<{group}>...) "
                           f"(its named groups: {', '.join(sorted(groups)) or 'none'})")
        if not isinstance(unit, str) or not _UNIT.fullmatch(unit):
            raise JobError(f"units.{group}: {unit!r} is not a unit (e.g. ticks, percent, bytes, count)")
    if metric and not _METRIC.fullmatch(metric):
        raise JobError(f"metric {metric!r}: expected a name of letters, digits and _")
    if not units and not metric:
        raise JobError("a pattern needs units (its value groups and their units, e.g. {ticks: ticks}) or, for "
                       "a line that is only seen (a banner), a metric to count it under")
    return StatsPattern(regex, units, metric)


def parse_stats(text: str, patterns: Iterable[StatsPattern], *, params: Mapping[str, Any] | None = None,
                what: str = "console") -> list[Measurement]:
    """The measurements the ``patterns`` find in ``text`` (console output), merged over ``params``
    (a sweep point's, say), in the order printed; ``what`` names the text in errors."""
    patterns = list(patterns)
    found: list[Measurement] = []
    seen: dict[tuple[str, tuple], int] = {}
    for number, raw in enumerate(text.replace("\r", "").split("\n"), start=1):
        line = raw.rstrip()
        for pattern in patterns:
            match = pattern.regex.search(line)
            if match is None:
                continue
            tags = {k: v for k, v in match.groupdict().items() if k not in pattern.units and v is not None}
            merged = merge_params(params, tags)
            if not pattern.units:
                values = [(pattern.metric, 1.0, SEEN_UNIT)]
            else:
                values = []
                for group, unit in pattern.units.items():
                    value = match.group(group)
                    if value is None:  # an optional group that did not take part
                        continue
                    if not _NUMBER.fullmatch(value.strip()):
                        raise ParseError(f"{what} line {number}: {line.strip()!r}: {group} {value!r} is not a number")
                    metric = f"{pattern.metric}_{group}" if pattern.metric else group
                    values.append((metric, float(value), unit))
            for metric, value, unit in values:
                key = (metric, tuple(sorted((k, str(v)) for k, v in merged.items())))
                if key in seen:
                    raise ParseError(f"{what} line {number}: {line.strip()!r}: {metric} "
                                     f"{_where(merged)}already read on line {seen[key]}")
                seen[key] = number
                found.append(Measurement(BENCHMARK, metric, value, unit, merged))
    return found


def _where(params: Mapping[str, Any]) -> str:
    return f"of {', '.join(f'{k}={v}' for k, v in sorted(params.items()))} " if params else ""
