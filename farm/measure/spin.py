"""``farm_spin -r``'s counts read (pure), and the CPU utilisation of a window from them (ipbench's
``cpu_target`` formula). The idle-cycle target itself is run by :mod:`farm.bench.cputarget`, which says
what the figures are.
"""

from __future__ import annotations

import re

import attrs

from ..errors import ParseError

TOOL = "farm_spin"
UNIT = "iterations"

_LINE = re.compile(r"^farm_spin t=(?P<t>\d+(?:\.\d+)?) ticks=(?P<ticks>\d+) cores=(?P<cores>\d+) "
                   r"count=(?P<count>\d+)(?P<rest>(?: c\d+=\d+)*)$")


@attrs.frozen
class SpinCounts:
    """One ``farm_spin -r``: the target's monotonic time (s), the spinners' CPU ticks, their counts."""

    t: float
    ticks: int
    count: int
    cores: tuple[int, ...]


def parse_reads(lines: list[str]) -> list[SpinCounts]:
    """Every ``farm_spin t=…`` line of a command's output, in order; other lines are skipped (they
    are the other commands' of the same shell line); a malformed one raises ParseError naming it."""
    out = []
    for line in lines:
        line = line.strip()
        if not line.startswith("farm_spin t="):
            continue
        m = _LINE.match(line)
        if not m:
            raise ParseError(f"farm_spin -r: not its output: {line[:100]!r}")
        cores = tuple(int(v.split("=")[1]) for v in m["rest"].split())
        if len(cores) != int(m["cores"]) or sum(cores) != int(m["count"]):
            raise ParseError(f"farm_spin -r: cores={m['cores']} count={m['count']} but the per-core counts "
                             f"are {cores}: {line[:100]!r}")
        out.append(SpinCounts(float(m["t"]), int(m["ticks"]), int(m["count"]), cores))
    return out


def idle_rate(first: SpinCounts, second: SpinCounts) -> float:
    """Iterations per second of the spinners on an idle target (the calibration)."""
    return _rate(first, second, "calibration")


def _rate(a: SpinCounts, b: SpinCounts, what: str) -> float:
    if b.t <= a.t or b.count < a.count:
        raise ParseError(f"farm_spin {what}: the counters did not advance ({a} -> {b}): did farm_spin restart?")
    rate = (b.count - a.count) / (b.t - a.t)
    if rate <= 0:
        raise ParseError(f"farm_spin {what}: the spinners counted nothing in {b.t - a.t:.2f} s")
    return rate


@attrs.frozen
class Window:
    idle: float   # iterations counted in the window
    total: float  # calibrated rate x the window's length
    spin_ticks: int  # the spinners' CPU ticks in the window

    @property
    def utilisation(self) -> float:
        return min(100.0, max(0.0, 100.0 * (1.0 - self.idle / self.total)))


def window(rate: float, start: SpinCounts, end: SpinCounts) -> Window:
    if end.t <= start.t or end.count < start.count or end.ticks < start.ticks:
        raise ParseError(f"farm_spin window: the counters went backwards ({start} -> {end})")
    return Window(float(end.count - start.count), rate * (end.t - start.t), end.ticks - start.ticks)
