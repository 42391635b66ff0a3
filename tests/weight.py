"""The suite's weight, as `make test` prints it at its end: its wall time, the machine's core-minutes of work
while it ran (/proc/stat), and the CPU each test took, so that a test or a change that makes the suite heavier
is seen in the CI log.

A test's CPU is its worker's own (RUSAGE_SELF: pytest, labgrid, the parsers) plus that of every child the
worker reaped while the test ran (RUSAGE_CHILDREN: ``farm run`` in a subprocess and the twins' QEMUs it
powered off, ``farm build`` and its compilers), from the start of its setup to the end of its teardown; a
module-scoped fixture's boots count for the module's first test, as its time does in the JUnit report. What
no test reaps is not counted: a daemon that left its parent (``farm lab up``'s coordinator and exporter), and
the lean kernels' background build (tests/prebuild.py) until a lean test waits for it. The CPU is written
into the JUnit report as the testcase property ``cpu_seconds`` (benchmarks/suite_time.py reads it).

Pure functions here; tests/conftest.py calls them from pytest's hooks.
"""

from __future__ import annotations

import resource
from typing import Iterable

PROPERTY = "cpu_seconds"  # the testcase property of the JUnit report
#: the fields of /proc/stat's ``cpu`` line, in order (proc(5)), and those that are work (guest time is in user)
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
BUSY = ("user", "nice", "system", "irq", "softirq", "steal")


def process_cpu() -> float:
    """User + system seconds of this process and of every child it has reaped."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def cpu_line(stat: str) -> dict[str, int]:
    """The machine's CPU times (clock ticks) from the text of /proc/stat: its all-CPU ``cpu`` line."""
    for line in stat.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            return dict(zip(CPU_FIELDS, map(int, fields[1:1 + len(CPU_FIELDS)])))
    raise ValueError("/proc/stat: no 'cpu' line")


def busy_seconds(before: dict[str, int], after: dict[str, int], hz: int) -> float:
    """Core-seconds of work between two readings of :func:`cpu_line`."""
    return sum(after.get(f, 0) - before.get(f, 0) for f in BUSY) / hz


def mmss(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def summary(wall: float, machine_work: float | None, cores: int, per_test: Iterable[tuple[str, float]],
            heaviest: int = 10) -> list[str]:
    """The lines `make test` ends with: wall time, the machine's core-minutes and the floor they set on its
    cores, the tests' own CPU, and the heaviest tests by CPU (pure)."""
    tests = sorted(per_test, key=lambda t: -t[1])
    own = sum(seconds for _, seconds in tests)
    head = f"suite weight: wall {mmss(wall)}"
    if machine_work is not None:
        head += (f", the machine's work {machine_work / 60:.1f} core-minutes (/proc/stat; on {cores} cores no "
                 f"order of it ends under {mmss(machine_work / cores)})")
    head += f", the tests' own CPU {own / 60:.1f} core-minutes ({len(tests)} tests)"
    lines = [head]
    if tests:
        lines.append(f"the {min(heaviest, len(tests))} heaviest by CPU (core-seconds, with the children they reaped):")
        lines += [f"  {seconds:7.1f}  {name}" for name, seconds in tests[:heaviest]]
    return lines
