"""The idle-cycle CPU target of the echo sweep (``cpu_target: true``): ``farm_spin`` on the target,
like ipbench's ``cpu_target`` (cyclesoak).

``farm_spin`` (``images/src/farm_spin.c``) runs one spinner per core at the lowest priority
(SCHED_IDLE, nice 19), each counting its own loop iterations; it runs only when nothing else wants
the core. Before the loads, farm counts what the spinners do in one second of an idle target
(the **calibrated idle rate**, iterations/s). Over a measured window:

* ``idle_cycles``: the iterations the spinners counted in the window;
* ``total_cycles``: the calibrated rate × the window's length (the target's own clock): what they
  would have counted had the target been idle throughout;
* ``cpu_utilisation`` (param ``cpu=farm_spin``) = ``100 × (1 − idle/total)`` (ipbench's formula),
  clamped to 0-100 (the idle rate is one second's, and a window can be idler than the calibration).

They fill the wide CSV's ``Idle_Cycles``/``Total_Cycles`` columns, in spinner **iterations**, not
CPU cycles (unit ``iterations``): only their ratio compares with ipbench's. ``/proc/stat`` is not used
then: it counts the spinners as busy. (``ticks=`` of ``farm_spin -r``, the spinners' own CPU time,
is parsed for a check of the counters; subtracting it from /proc/stat's busy time gave 0 % on the
twin at every load, so farm does not offer that figure.)
"""

from __future__ import annotations

import re

import attrs

from ..errors import ParseError

TOOL = "farm_spin"
UNIT = "iterations"
CALIBRATION_SECONDS = 1

START = (f"kill $(pidof {TOOL}) 2>/dev/null; i=0; while pidof {TOOL} >/dev/null && [ $i -lt 50 ]; "
         f"do i=$((i+1)); usleep 20000; done; {TOOL} -d")
READ = f"{TOOL} -r"
CALIBRATE = f"{READ}; sleep {CALIBRATION_SECONDS}; {READ}"
STOP = f"kill $(pidof {TOOL}) 2>/dev/null; true"

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
