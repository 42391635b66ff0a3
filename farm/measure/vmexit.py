"""kvm-unit-tests ``x86/vmexit``: the cost of one VM exit of each kind, in TSC cycles.

``vmexit.flat`` boots as a guest kernel and prints, from ``do_test()`` in ``x86/vmexit.c``
(kvm-unit-tests master; the format has been the same since the IPI/EOI sub-lines came in 2017)::

    printf("%s %d\\n", test->name, (int)((t2 - t1) / iterations));      -> "cpuid 3374"
    printf("  ipi %s %d\\n", test->name, (int)(tsc_ipi / iterations));  -> "  ipi ipi 5321"
    printf("  eoi %s %d\\n", test->name, (int)(tsc_eoi / iterations));  -> "  eoi self_ipi_tpr 210"
    printf("%s (skipped)\\n", test->name);                              -> "ipi (skipped)"

``t1``/``t2`` are ``rdtsc()`` readings, so a value is TSC cycles per iteration (one exit and its
surroundings), not core clock cycles: on a CPU whose TSC runs at a fixed rate the two differ when
the core is boosted or throttled. The ``ipi``/``eoi`` sub-lines are the part of that time spent
sending the IPI and writing the EOI; they follow their test's line and are only printed when not 0.
The PCI tests name the pci-testdev case first (``pci_next()`` prints ``<case>:`` before the name),
e.g. ``mmio-no-eventfd:pci-mem 41735``; the whole ``<case>:pci-mem`` is the test name here.

Everything else in the console is ignored: the qemu command line, ``enabling apic``, ``smp:
waiting for 1 APs``, ``cr0 = 80010011`` (three words), ``pci-testdev at ...``, ``EXIT: ...``.

Skipped tests (feature absent, e.g. ``tscdeadline`` without TSC-deadline, ``ipi`` with one CPU)
are not measurements: a value of 0 or NaN would pollute medians, compares and gates. They are
returned beside the measurements by :func:`read_vmexit`, so a report can say what did not run.

The self-IPI tests print the interrupt count ``x`` (``printf("%d", x)``, no newline) whenever an
iteration did not see exactly one interrupt, so under nested virtualisation their result line can
start with hundreds of digits: ``000...01000self_ipi_tpr 1054074`` (tests/data/vmexit-x86.txt).
The value is still the test's; the digits are kept out of the name and reported as a warning.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

import attrs

from farm.errors import ParseError
from farm.measure import ImpossibleValue, Measurement, merge_params

BENCHMARK = "vmexit"
_NAME = r"(?:[A-Za-z0-9_.-]+:)?[A-Za-z][A-Za-z0-9_-]*"
# stray: the digits a self-IPI test prints before its own line (see the module docstring)
_RESULT = re.compile(rf"(?P<stray>[0-9]*)(?P<name>{_NAME}) (?P<value>-?[0-9]+)")
_PART = re.compile(rf"\s+(?P<part>ipi|eoi) (?P<name>{_NAME}) (?P<value>-?[0-9]+)")
_SKIPPED = re.compile(rf"(?P<name>{_NAME}) \(skipped\)")
# A line that is about a sub-result but does not read as one: an error, not noise to ignore.
_PART_START = re.compile(r"\s+(?:ipi|eoi) \S")
# A test's line whose value is no whole number (nan, inf, 1e999, 12x, 3.5): an error, not noise to ignore
# (noise is words: "enabling apic", "cr0 = 80010011")
_NOT_A_COUNT = re.compile(rf"[0-9]*(?P<name>{_NAME}) (?P<value>[-+]?(?:[0-9.][^\s]*|(?i:nan|inf|infinity)))")
#: vmexit prints (int) of cycles per iteration: nothing above this is a value it printed
_INT_MAX = 2**31 - 1


@attrs.frozen
class VmexitOutput:
    """What one vmexit output holds: cycles per test (and ipi/eoi part), the skipped tests, and
    warnings about results that were read but deserve a look (each names its line)."""

    measurements: list[Measurement]
    skipped: list[str]
    warnings: list[str] = attrs.field(factory=list)


def parse_vmexit(text: str, *, params: Mapping[str, Any] | None = None) -> list[Measurement]:
    """The measurements of :func:`read_vmexit` (skipped tests left out; use that for them)."""
    return read_vmexit(text, params=params).measurements


def read_vmexit(text: str, *, params: Mapping[str, Any] | None = None) -> VmexitOutput:
    """Measurements from vmexit output (several runs' consoles may be concatenated), the names
    of the tests it skipped and warnings, all in the order printed.

    Each ``<test> <n>`` line gives metric ``cycles`` in ``cycles`` with params ``test``; an
    ``ipi``/``eoi`` sub-line gives the same with params ``test`` and ``part`` (``ipi`` or
    ``eoi``), all merged over ``params``. A negative value raises
    :class:`~farm.measure.ImpossibleValue` naming the line: vmexit casts the per-iteration TSC
    delta to ``int``, so it means the delta overflowed (more than 2^31 cycles per iteration) or
    the TSC went backwards, and no median may count it.

    Errors, as :class:`~farm.errors.ParseError` naming the line: a sub-line that does not parse,
    a sub-line for another test than the line above it, and a test (or part) already measured
    higher up, which would otherwise count twice in medians.
    """
    measurements: list[Measurement] = []
    skipped: list[str] = []
    warnings: list[str] = []
    seen: dict[tuple[str, str | None], int] = {}
    last_test: str | None = None  # the test whose line came last, for its sub-lines
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r\n ").replace("\r", "")
        if (m := _PART.fullmatch(line)) is not None:
            name, part = m["name"], m["part"]
            if name != last_test:
                raise ParseError(f"vmexit output line {number}: {line.strip()!r}: {part} part of "
                                 f"{name!r}, but the line above it is not that test's result")
        elif _PART_START.match(line):
            raise ParseError(f"vmexit output line {number}: cannot parse {line.strip()!r}: "
                             f"expected '  ipi|eoi <test> <cycles>'")
        elif (m := _RESULT.fullmatch(line)) is not None:
            name, part = m["name"], None
            last_test = name
            if m["stray"]:
                warnings.append(f"vmexit output line {number}: {name}: {len(m['stray'])} digits "
                                f"before the result: iterations that did not see exactly one "
                                f"interrupt")
        elif (m := _SKIPPED.fullmatch(line)) is not None:
            skipped.append(m["name"])
            last_test = None
            continue
        elif (m := _NOT_A_COUNT.fullmatch(line)) is not None:
            raise ImpossibleValue("vmexit", f"vmexit output line {number}: {line.strip()!r}: {m['value']!r} is not a "
                                  "whole number of cycles (vmexit prints an int): not a measurement")
        else:
            if line.strip():
                last_test = None
            continue
        key = (name, part)
        if key in seen:
            what = f"{name} {part}" if part else name
            raise ParseError(f"vmexit output line {number}: {what} already measured on line "
                             f"{seen[key]}")
        seen[key] = number
        if m["value"].startswith("-"):
            raise ImpossibleValue("vmexit", f"vmexit output line {number}: {line.strip()!r}: negative cycles "
                                  "(the per-iteration TSC delta overflowed an int, or the TSC went "
                                  "backwards): not a measurement")
        if int(m["value"]) > _INT_MAX:
            raise ImpossibleValue("vmexit", f"vmexit output line {number}: {line.strip()!r}: more cycles than the int "
                                  "vmexit prints can hold: not a measurement")
        found: dict[str, Any] = {"test": name}
        if part:
            found["part"] = part
        measurements.append(Measurement(BENCHMARK, "cycles", float(int(m["value"])), "cycles",
                                        merge_params(params, found)))
    return VmexitOutput(measurements, skipped, warnings)
