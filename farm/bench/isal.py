"""ISA-L perf lines: storage-acceleration throughput (CRC, RAID parity, erasure code, deflate).

Both ISA-L's own perf programs (what ``make perf_report`` runs upstream) and our
``images/src/isal_bench.c`` print one line per function and mode through ISA-L's ``perf_print()``
(``include/test.h``), preceded by ``<name>: ``::

    crc32_ieee_cold: runtime =    3294168 usecs, bandwidth 97509 MB in 3.2942 sec = 29600.55 MB/s

Units, read in ISA-L's source (intel/isa-l ``include/test.h``; the same in Debian's 2.30 package,
``/usr/include/isa-l/test.h``): the rate is ``total_bytes / (1000000 * seconds)``, so **MB/s is
10^6 bytes per second**, not MiB/s. Before 2019 (commit 699bb5b "Revamp performance testing to be
time based") the integer after ``bandwidth`` was ``bytes / (1024*1024)`` but the rate already was
``bytes / usecs``, also 10^6 bytes/s; we read only the rate, so both versions give the same
numbers. What "bytes" counts is the program's choice; upstream's (and ours) count everything read
plus everything written (xor_gen: sources + parity; erasure code encode: k + p fragments; decode:
k survivors + the rebuilt ones; CRC and deflate: the input).

Built with ``USE_RDTSC``, ``perf_print()`` prints ``runtime = N ticks, bandwidth X MB in Y GC =
Z ticks/byte`` instead: those lines give metric ``ticks_per_byte`` in ``ticks/byte`` (TSC ticks,
not core cycles). A line with a runtime but no bandwidth part (a program that passed 0 bytes) has
no rate and gives nothing.
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping

from farm.bench import ImpossibleValue, merge_params
from farm.errors import ParseError
from farm.results.record import Measurement

BENCHMARK = "isal"
MB = 1_000_000  # ISA-L's perf_print(): total_units / (1000000 * seconds)

# What makes a line a perf line: a name, ":" (or "->" in upstream's igzip_perf, "name : " in
# crc_funcs_perf), then "runtime". The name may follow other text (a console timestamp, a tag),
# so that such a prefix cannot make a result vanish. Anything else in the output is ignored.
_START = re.compile(r"(?:^|\s)(?P<name>[A-Za-z0-9_.+-]+?)\s*(?::|->)\s*runtime\b")
_NUMBER = r"[0-9]+(?:\.[0-9]+)?"
_TAIL = re.compile(
    rf"runtime\s*=\s*(?P<runtime>[0-9]+)\s+(?P<clock>usecs|ticks)"
    rf"(?:,\s*bandwidth\s+(?P<mb>[0-9]+)\s+MB\s+in\s+(?P<elapsed>{_NUMBER})\s+(?P<per>sec|GC)"
    rf"\s*=\s*(?P<rate>{_NUMBER}|inf|nan)\s+(?P<rate_unit>MB/s|ticks/byte))?\s*$")
_MODES = ("cold", "warm")


def parse_perf(text: str, *, params: Mapping[str, Any] | None = None) -> list[Measurement]:
    """Measurements from ISA-L perf output, one per perf line, in the order printed.

    Metric ``throughput`` in ``bytes/s`` (the MB/s figure times 10^6, see the module docstring),
    params ``function`` and ``mode`` merged over ``params``: ``crc32_ieee_cold`` gives function
    ``crc32_ieee``, mode ``cold``. A name without a ``_cold``/``_warm`` suffix (upstream's
    crc_funcs_perf, igzip_perf) keeps its whole name as the function and has no ``mode``.

    Lines without ``<name>: runtime`` (at their start or after a space, e.g. behind a console
    timestamp) are ignored: headers, "Start timed tests", make's chatter. A line with it that
    does not end like a perf line or measures a function and mode already measured higher up
    raises :class:`~farm.errors.ParseError` naming its line; one whose rate is not a finite
    positive number raises :class:`~farm.bench.ImpossibleValue` naming its line: a duplicate would otherwise count twice in
    medians. (make's terminal output during ``perf_report`` repeats every line under "Summary:";
    read the ``perf_report_*.perf`` file it writes instead.) Output with no perf line gives
    ``[]``: the caller knows whether it expected some.
    """
    measurements: list[Measurement] = []
    seen: dict[tuple[str, str | None], int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        start = _START.search(line)
        if not start:
            continue
        tail = _TAIL.fullmatch(line, start.end() - len("runtime"))
        if not tail:
            raise ParseError(f"ISA-L perf output line {number}: cannot parse {line!r}: expected "
                             f"'<name>: runtime = <n> usecs, bandwidth <n> MB in <s> sec = "
                             f"<x> MB/s'")
        if tail["rate"] is None:
            continue  # runtime only: no bytes were counted, so there is no rate
        if (tail["clock"], tail["per"], tail["rate_unit"]) not in (
                ("usecs", "sec", "MB/s"), ("ticks", "GC", "ticks/byte")):
            raise ParseError(f"ISA-L perf output line {number}: cannot parse {line!r}: mixed units "
                             f"{tail['clock']}, {tail['per']}, {tail['rate_unit']}")
        rate = float(tail["rate"])
        if not math.isfinite(rate) or rate <= 0:
            raise ImpossibleValue("isal", f"ISA-L perf output line {number}: {line!r}: rate {tail['rate']} "
                                  f"is not a positive number: not a measurement")
        function, mode = _split_name(start["name"])
        key = (function, mode)
        if key in seen:
            raise ParseError(f"ISA-L perf output line {number}: {start['name']} already measured "
                             f"on line {seen[key]}")
        seen[key] = number
        found: dict[str, Any] = {"function": function}
        if mode is not None:
            found["mode"] = mode
        if tail["rate_unit"] == "MB/s":
            measurements.append(Measurement(BENCHMARK, "throughput", rate * MB, "bytes/s",
                                            merge_params(params, found)))
        else:
            measurements.append(Measurement(BENCHMARK, "ticks_per_byte", rate, "ticks/byte",
                                            merge_params(params, found)))
    return measurements


def _split_name(name: str) -> tuple[str, str | None]:
    """``crc32_ieee_cold`` -> (``crc32_ieee``, ``cold``); no known suffix -> (name, None)."""
    function, _, suffix = name.rpartition("_")
    if function and suffix in _MODES:
        return function, suffix
    return name, None

