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

import attrs

from farm.errors import ParseError
from farm.measure import ImpossibleValue, Measurement, merge_params
from farm.measure.clock import UNIT as CYCLES_UNIT
from farm.measure.clock import Clock, combined_clock, measured_cycles_per_byte, metric_for

BENCHMARK = "isal"
MB = 1_000_000  # ISA-L's perf_print(): total_units / (1000000 * seconds)

# What makes a line a perf line: a name, ":" (or "->" in upstream's igzip_perf, "name : " in
# crc_funcs_perf), then "runtime". The name may follow other text (a console timestamp, a tag),
# so that such a prefix cannot make a result vanish. Anything else in the output is ignored.
_START = re.compile(r"(?:^|\s)(?P<name>[A-Za-z0-9_.+@-]+?)\s*(?::|->)\s*runtime\b")
_NUMBER = r"[0-9]+(?:\.[0-9]+)?"
_TAIL = re.compile(
    rf"runtime\s*=\s*(?P<runtime>[0-9]+)\s+(?P<clock>usecs|ticks)"
    rf"(?:,\s*bandwidth\s+(?P<mb>[0-9]+)\s+MB\s+in\s+(?P<elapsed>{_NUMBER})\s+(?P<per>sec|GC)"
    rf"\s*=\s*(?P<rate>{_NUMBER}|inf|nan)\s+(?P<rate_unit>MB/s|ticks/byte))?\s*$")
_MODES = ("cold", "warm")
# isal_bench's clock line before each perf line (images/src/isal_bench.c):
#   crc32_ieee_cold: cpufreq cpu=0 before_khz=1500000 after_khz=1500000 [migrated=1]
_CPUFREQ = re.compile(r"^(?P<name>[A-Za-z0-9_.+@-]+): cpufreq cpu=(?P<cpu>[0-9]+) "
                      r"before_khz=(?P<before>[0-9]+) after_khz=(?P<after>[0-9]+)(?P<migrated> migrated=1)?$")
# isal_bench's cycle-counter line before each perf line, where perf_event_open gave a cycle counter:
#   crc32_ieee_cold: pmu cycles=201326592 bytes=97509000000 enabled_ns=3000123000 running_ns=3000123000
_PMU = re.compile(r"^(?P<name>[A-Za-z0-9_.+@-]+): pmu cycles=(?P<cycles>[0-9]+) bytes=(?P<bytes>[0-9]+) "
                  r"enabled_ns=(?P<enabled>[0-9]+) running_ns=(?P<running>[0-9]+)$")
#: params ``cycles`` of a cycles/byte record: from the cycle counter, or from the clock (cpufreq) and throughput
CYCLES_PMU, CYCLES_CPUFREQ = "pmu", "cpufreq"
#: the warning of a cycle count the kernel scaled (the counter shared with other events: multiplexed)
WARNING_MULTIPLEXED = "pmu-multiplexed"
# isal_bench's corpus line before a file's igzip tests: "# igzip GPL-3: in_size=35149 out_size=..."
_CORPUS = re.compile(r"^# igzip (?P<file>[A-Za-z0-9_.+-]+): in_size=(?P<size>[0-9]+) ")
#: the igzip tests of isal_bench, per corpus file (``<test>@<file>``); see images/src/isal_bench.c
IGZIP_TESTS = ("igzip_file_perf", "igzip_stateless_file_perf", "isal_stateful_inflate",
               "isal_stateless_inflate")
#: the lab's crypto functions isal_bench measures with OpenSSL (the library is in its
#: ``# crypto: impl=<name>`` line and goes into the records' ``impl``: not isa-l_crypto). The lab's
#: table has isa-l_crypto's multi-buffer ``md5_mb`` and ``sha1_mb``; OpenSSL hashes one buffer at a
#: time, so isal_bench names those ``md5`` and ``sha1``
CRYPTO_FUNCTIONS = ("aes_xts_128_dec", "aes_xts_256_dec", "md5", "sha1", "sha256", "sha512")
_IMPL = re.compile(r"^# crypto: impl=(?P<impl>[a-z0-9.+-]+)(?:\s|$)")
#: the ``file`` of the corpus's weighted average (:func:`corpus_average`)
CORPUS_FILE = "corpus-weighted"

#: isal_bench before it named what ran printed OpenSSL's digests as md5_mb/sha1_mb (:func:`what_ran`)
_OLD_DIGEST_NAME = re.compile(r"(?m)(^|\s)(md5|sha1)_mb_(cold|warm)\b")


def what_ran(text: str) -> str:
    """isal_bench's output (it has a ``# crypto: impl=`` line) with an older isal_bench's
    ``md5_mb_*``/``sha1_mb_*`` (OpenSSL's serial digests) named ``md5_*``/``sha1_*``, as isal_bench
    names them now; upstream isa-l_crypto output (no such line: the multi-buffer functions) as it is."""
    if not any(_IMPL.match(line.strip()) for line in text.splitlines()):
        return text
    return _OLD_DIGEST_NAME.sub(r"\1\2_\3", text)


def parse_perf(text: str, *, params: Mapping[str, Any] | None = None) -> list[Measurement]:
    """Measurements from ISA-L perf output, one per perf line, in the order printed.

    Metric ``throughput`` in ``bytes/s`` (the MB/s figure times 10^6, see the module docstring),
    params ``function`` and ``mode`` merged over ``params``: ``crc32_ieee_cold`` gives function
    ``crc32_ieee``, mode ``cold``. A name without a ``_cold``/``_warm`` suffix (upstream's
    crc_funcs_perf, igzip_perf) keeps its whole name as the function and has no ``mode``.
    isal_bench's igzip tests ``<test>@<file>`` give ``file``; the lab's crypto functions
    (:data:`CRYPTO_FUNCTIONS`) after isal_bench's ``# crypto: impl=openssl-3.0`` line give
    ``impl=openssl-3.0`` (lines of isa-l_crypto's own perf programs have no such line, no ``impl``);
    there, an older isal_bench's ``md5_mb``/``sha1_mb`` (OpenSSL's serial digests) read as ``md5``/``sha1``.

    Lines without ``<name>: runtime`` (at their start or after a space, e.g. behind a console
    timestamp) are ignored: headers, "Start timed tests", make's chatter. A line with it that
    does not end like a perf line or measures a function and mode already measured higher up
    raises :class:`~farm.errors.ParseError` naming its line; one whose rate is not a finite
    positive number raises :class:`~farm.measure.ImpossibleValue` naming its line: a duplicate would otherwise count twice in
    medians. (make's terminal output during ``perf_report`` repeats every line under "Summary:";
    read the ``perf_report_*.perf`` file it writes instead.) Output with no perf line gives
    ``[]``: the caller knows whether it expected some.
    """
    text = what_ran(text)
    measurements: list[Measurement] = []
    seen: dict[tuple[str, str, str | None], int] = {}
    impl = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if impl_line := _IMPL.match(line):
            impl = impl_line["impl"]
            continue
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
        key = (start["name"].split("@", 1)[1] if "@" in start["name"] else "", function, mode)
        if key in seen:
            raise ParseError(f"ISA-L perf output line {number}: {start['name']} already measured "
                             f"on line {seen[key]}")
        seen[key] = number
        found: dict[str, Any] = {"function": function}
        if mode is not None:
            found["mode"] = mode
        if "@" in start["name"]:  # isal_bench's igzip tests: <test>@<corpus file>
            found["file"] = start["name"].split("@", 1)[1]
        if impl and function in CRYPTO_FUNCTIONS:
            found["impl"] = impl
        if tail["rate_unit"] == "MB/s":
            measurements.append(Measurement(BENCHMARK, "throughput", rate * MB, "bytes/s",
                                            merge_params(params, found)))
        else:
            measurements.append(Measurement(BENCHMARK, "ticks_per_byte", rate, "ticks/byte",
                                            merge_params(params, found)))
    return measurements


def _split_name(name: str) -> tuple[str, str | None]:
    """``crc32_ieee_cold`` -> (``crc32_ieee``, ``cold``); no known suffix -> (name, None)."""
    name = name.split("@", 1)[0]
    function, _, suffix = name.rpartition("_")
    if function and suffix in _MODES:
        return function, suffix
    return name, None



def parse_clocks(text: str) -> dict[str, Clock]:
    """isal_bench's ``<test>: cpufreq cpu=N before_khz=X after_khz=Y`` lines: the clock of the
    CPU each test ran on, read right before and right after its timed part, by test name as
    printed (``crc32_ieee_cold``, ``igzip_file_perf@GPL-3``). A test without such a line (no
    cpufreq on the target) is absent. A test named twice raises :class:`ParseError`."""
    text = what_ran(text)
    clocks: dict[str, Clock] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        match = _CPUFREQ.match(raw.strip())
        if not match:
            continue
        if match["name"] in clocks:
            raise ParseError(f"ISA-L perf output line {number}: a second cpufreq line for {match['name']}")
        clocks[match["name"]] = Clock(before_hz=int(match["before"]) * 1e3, after_hz=int(match["after"]) * 1e3,
                                      source="cpufreq", migrated=bool(match["migrated"]))
    return clocks


@attrs.frozen
class CycleCount:
    """The CPU cycles of one test's timed part, from the cycle counter (isal_bench's ``pmu`` line)."""

    cycles: int
    bytes: int
    enabled_ns: int
    running_ns: int

    @property
    def multiplexed(self) -> bool:
        """The counter ran for less than the time it was enabled (shared with other events): the
        count is an estimate, scaled by the kernel's times."""
        return self.running_ns < self.enabled_ns

    @property
    def cycles_per_byte(self) -> float:
        scale = self.enabled_ns / self.running_ns if self.multiplexed else 1.0
        return self.cycles * scale / self.bytes


def parse_cycle_counts(text: str) -> dict[str, CycleCount]:
    """isal_bench's ``<test>: pmu cycles=C bytes=B enabled_ns=E running_ns=R`` lines, by test name
    as printed. A test without one (no cycle counter: the program's ``# isal_bench: pmu none``
    line says why) is absent. A test named twice, or a line counting no bytes or with a running
    time above its enabled time, raises :class:`ParseError` naming its line."""
    text = what_ran(text)
    counts: dict[str, CycleCount] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        match = _PMU.match(raw.strip())
        if not match:
            continue
        if match["name"] in counts:
            raise ParseError(f"ISA-L perf output line {number}: a second pmu line for {match['name']}")
        count = CycleCount(int(match["cycles"]), int(match["bytes"]), int(match["enabled"]), int(match["running"]))
        if count.bytes <= 0 or count.cycles <= 0 or not 0 < count.running_ns <= count.enabled_ns:
            raise ParseError(f"ISA-L perf output line {number}: {raw.strip()!r}: not a cycle count "
                             f"(expected cycles and bytes above 0, 0 < running_ns <= enabled_ns)")
        counts[match["name"]] = count
    return counts


def counted_cycles_per_byte(m: Measurement, counts: Mapping[str, CycleCount],
                            sizes: Mapping[str, int]) -> Measurement | None:
    """The cycles/byte sibling of throughput ``m`` from the cycle counter: cycles / bytes of its
    timed part, ``cycles=pmu`` (``warning=pmu-multiplexed`` for a scaled count); for a corpus
    average, the files' figures weighted by file size as the throughput is. None without counts."""
    if m.params.get("file") == CORPUS_FILE:
        mine = {name.split("@", 1)[1]: c for name, c in counts.items() if name.startswith(f"{m.params['function']}@")}
        if not mine or len(mine) != m.params.get("files") or any(f not in sizes for f in mine):
            return None
        value = sum(sizes[f] * c.cycles_per_byte for f, c in mine.items()) / sum(sizes[f] for f in mine)
        multiplexed = any(c.multiplexed for c in mine.values())
    else:
        count = counts.get(perf_name(m))
        if count is None:
            return None
        value, multiplexed = count.cycles_per_byte, count.multiplexed
    params = {**m.params, "cycles": CYCLES_PMU, **({"warning": WARNING_MULTIPLEXED} if multiplexed else {})}
    return Measurement(m.benchmark, metric_for(m.metric), value, CYCLES_UNIT, params)


def corpus_sizes(text: str) -> dict[str, int]:
    """isal_bench's ``# igzip <file>: in_size=<bytes> ...`` lines: each corpus file's size."""
    sizes: dict[str, int] = {}
    for raw in text.splitlines():
        match = _CORPUS.match(raw.strip())
        if match:
            sizes[match["file"]] = int(match["size"])
    return sizes


def corpus_average(measurements: list[Measurement], sizes: Mapping[str, int]) -> list[Measurement]:
    """Per igzip test, the throughput over the corpus as a weighted average of the files'
    throughputs, weighted by file size: ``sum(size_i * rate_i) / sum(size_i)`` (the lab's
    "weighted average" over the Calgary corpus). ``file`` is :data:`CORPUS_FILE`, ``files`` the
    number of files averaged. A test measured on a file of unknown size is not averaged (raises
    :class:`ParseError`: its weight is unknown); a test on fewer than two files gives nothing."""
    by_test: dict[tuple[str, tuple[tuple[str, Any], ...]], list[Measurement]] = {}
    for m in measurements:
        if m.metric != "throughput" or "file" not in m.params or m.params.get("function") not in IGZIP_TESTS:
            continue
        rest = tuple(sorted((k, v) for k, v in m.params.items() if k != "file"))
        by_test.setdefault((m.params["function"], rest), []).append(m)
    out: list[Measurement] = []
    for (_function, rest), ms in by_test.items():
        if len(ms) < 2:
            continue
        missing = [m.params["file"] for m in ms if m.params["file"] not in sizes]
        if missing:
            raise ParseError(f"ISA-L perf output: no '# igzip {missing[0]}: in_size=' line: "
                             f"its weight in the corpus average is unknown")
        weights = [sizes[m.params["file"]] for m in ms]
        value = sum(w * m.value for w, m in zip(weights, ms)) / sum(weights)
        out.append(Measurement(BENCHMARK, "throughput", value, ms[0].unit,
                               {**dict(rest), "file": CORPUS_FILE, "files": len(ms)}))
    return out


def perf_name(m: Measurement) -> str:
    """The name isal_bench printed for measurement ``m``: ``crc32_ieee_cold``, ``igzip_file_perf@GPL-3``."""
    name = m.params["function"] + (f"_{m.params['mode']}" if "mode" in m.params else "")
    return f"{name}@{m.params['file']}" if "file" in m.params else name


def clock_of(m: Measurement, clocks: Mapping[str, Clock]) -> "Clock | None":
    """The clock around measurement ``m``; for a corpus average, the files' clocks together: the
    lowest and the highest of their readings when they differ by more than the tolerance (so the
    average is warned about too), else the means. None when a clock is missing."""
    if m.params.get("file") != CORPUS_FILE:
        return clocks.get(perf_name(m))
    prefix = f"{m.params['function']}@"
    mine = [clock for name, clock in clocks.items() if name.startswith(prefix)]
    if not mine or len(mine) != m.params.get("files"):
        return None
    return combined_clock(mine)


def isal_measurements(text: str) -> list[Measurement]:
    """Throughput (per test, and the corpus averages) and measured cycles/byte from isal_bench's
    output or an upstream ``perf_report`` (pure): what a live run records and ``farm import isal``
    imports. Cycles/byte comes from the cycle counter where the test has a ``pmu`` line
    (``cycles=pmu``), else from the clock read around it and the throughput (``cycles=cpufreq``,
    a clock that moved is a warning), else not from here (the run's clock, farm.results.cycles)."""
    measurements = parse_perf(text)
    sizes = corpus_sizes(text)
    measurements += corpus_average(measurements, sizes)
    clocks, counts = parse_clocks(text), parse_cycle_counts(text)
    cycles = []
    for m in measurements:
        if m.metric != "throughput":
            continue
        sibling = counted_cycles_per_byte(m, counts, sizes)
        if sibling is None and (clock := clock_of(m, clocks)):
            sibling = measured_cycles_per_byte(m, clock)
            if sibling is not None:
                sibling = Measurement(sibling.benchmark, sibling.metric, sibling.value, sibling.unit,
                                      {**sibling.params, "cycles": CYCLES_CPUFREQ})
        if sibling:
            cycles.append(sibling)
    return measurements + cycles
