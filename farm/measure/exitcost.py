"""farm-exitcost (``images/baremetal/exitcost.c``): what a KVM guest exit costs on arm64, read from its console.

The guest prints (one line per test, each test leaving the guest ``iterations`` times in a row, the
whole loop timed by the generic timer's virtual counter)::

    farm-exitcost 1: counter 62500000 Hz, 1000 iterations per test, at EL1
    exit hvc: iterations 1000 ticks 123456
    exit mmio-qemu: skipped (no virtio-mmio transport at 0xa000000)
    farm-exitcost: done

Each test becomes two values of benchmark ``exitcost`` (shaped as the kvm-unit-tests import, farm.measure.vmexit):
``ticks`` — counter ticks per exit (``ticks / iterations``, unit ``ticks``: the generic timer's
virtual counter runs at ``counter_hz``, 62.5 MHz on the twin, not at the CPU's clock, so its ticks are
no cycles), and ``time`` in ns (the same at the counter's frequency). (Before #45 the ticks were
published as ``cycles``: farm's records of then say ``cycles`` for what were ticks.)
Their params: ``test``, ``counter=cntvct`` and ``counter_hz`` (identity: ticks of one counter are not
another's, nor x86's TSC cycles) and ``iterations`` (a run length). Skipped tests are returned apart,
never as a value; a run without its ``done`` line (the guest died mid-way) is a ParseError.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

import attrs

from farm.errors import ParseError
from farm.measure import Measurement, merge_params

BENCHMARK = "exitcost"
COUNTER = "cntvct"
_HEADER = re.compile(r"farm-exitcost (?P<version>\d+): counter (?P<hz>\d+) Hz, (?P<iterations>\d+) iterations per test, "
                     r"at EL(?P<el>\d)")
_RESULT = re.compile(r"exit (?P<test>[a-z][a-z0-9-]*): iterations (?P<iterations>\d+) ticks (?P<ticks>\d+)")
_SKIPPED = re.compile(r"exit (?P<test>[a-z][a-z0-9-]*): skipped \((?P<why>[^)]*)\)")
_DONE = "farm-exitcost: done"


@attrs.frozen
class ExitCost:
    measurements: list[Measurement]
    skipped: dict[str, str]  # test -> why
    counter_hz: int
    el: int


def read_exitcost(text: str, *, params: Mapping[str, Any] | None = None) -> ExitCost:
    """The figures of one farm-exitcost console (see the module docstring); errors name the line."""
    header: re.Match[str] | None = None
    found: list[Measurement] = []
    skipped: dict[str, str] = {}
    seen: dict[str, int] = {}
    done = False
    for number, raw in enumerate(text.replace("\r", "").split("\n"), start=1):
        line = raw.strip()
        if (m := _HEADER.search(line)) is not None:
            if header is not None:
                raise ParseError(f"exitcost output line {number}: a second run's header (one console per run)")
            header = m
            if int(m["hz"]) <= 0:
                raise ParseError(f"exitcost output line {number}: counter of {m['hz']} Hz")
        elif (m := _RESULT.fullmatch(line)) is not None or (s := _SKIPPED.fullmatch(line)) is not None:
            if header is None:
                raise ParseError(f"exitcost output line {number}: {line!r} before the farm-exitcost header")
            test = (m or s)["test"]
            if test in seen:
                raise ParseError(f"exitcost output line {number}: {test} already measured on line {seen[test]}")
            seen[test] = number
            if m is None:
                skipped[test] = s["why"]
                continue
            iterations, ticks, hz = int(m["iterations"]), int(m["ticks"]), int(header["hz"])
            if iterations <= 0:
                raise ParseError(f"exitcost output line {number}: {test} of {iterations} iterations")
            tags = merge_params(params, {"test": test, "counter": COUNTER, "counter_hz": hz, "iterations": iterations})
            per_exit = ticks / iterations
            found += [Measurement(BENCHMARK, "ticks", per_exit, "ticks", tags),
                      Measurement(BENCHMARK, "time", per_exit / hz * 1e9, "ns", tags)]
        elif line.endswith(_DONE):
            done = True
    if header is None:
        raise ParseError("exitcost output: no 'farm-exitcost N: counter ...' header (did the guest start?)")
    if not done:
        raise ParseError("exitcost output: no 'farm-exitcost: done' line: the guest stopped before its last test")
    return ExitCost(found, skipped, int(header["hz"]), int(header["el"]))


def parse_exitcost(text: str, *, params: Mapping[str, Any] | None = None) -> list[Measurement]:
    """The measurements of :func:`read_exitcost`."""
    return read_exitcost(text, params=params).measurements
