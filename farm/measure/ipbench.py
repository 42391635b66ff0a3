"""The lab's ipbench CSVs (the "wide" form of a load sweep: one row per requested load), read (pure).

The lab's history is CSV written by ipbench's helper scripts (au-ts/ipbench,
``helpers/scripts/latency.sh`` and ``ipbench_benchmark.sh``): a header, then for each load the line
ipbench prints. That is the latency test's ``printf`` (``ipbench2/src/tests/latency/latency.c``,
``latency_output``) of requested, achieved and sent bit/s, packet size, min, average and max RTT as
integers, the standard deviation as ``%.2f`` (population: the variance divides by n) and the median
as an integer (the upper middle sample), followed by the CPU target's ``%.1f`` percent. Units:
bit/s, bit/s, bit/s, bytes, µs (five times), percent.

Variants seen in public copies of those scripts, all accepted by :func:`parse_csv`:

* the header says ``CPU_utilisation`` (lower-case u) in both au-ts scripts: columns are matched
  without regard to case; the lab's QEMU/KVM table spells it ``CPU_Utilsation``
  (``../shared/data/lab``): read as ``CPU_Utilisation`` (:data:`SPELLINGS`);
* trailing ``Idle_Cycles,Total_Cycles`` (the CPU target's counts, in ticks of the target's counter)
  and ``Bad_Packets``: imported too (:data:`EXTRA_COLUMNS`), and written back by the wide form; any
  other column is named in a warning, not imported;
* no ``CPU_Utilisation`` column, or an empty cell in it, but ``Idle_Cycles`` and ``Total_Cycles``
  (the seL4/sDDF echo server's benchmark, au-ts/sddf ``examples/echo_server/benchmark.py``, writes
  ``...,Median_RTT,Bad_Packets,Idle_Cycles,Total_Cycles``; ipbench's controller with that target
  prints ``...,Median_RTT,,IDLE,TOTAL``): the utilisation is computed as ``100 * (1 - idle/total)``,
  the formula of ipbench's ``cpu_target_lukem``;
* ``latency.sh`` marks a row whose achieved rate is more than 20 % off the requested one with a
  leading ``*`` (its awk ``print "*"$IF``): the mark is dropped, the numbers kept.

A live sweep writes records of benchmark ``sweep`` (suite ``network``) with params ``requested``
(bit/s) and ``packet_size`` (bytes) and the metrics of :data:`METRICS`; imports produce exactly the
same measurements, so the history and new runs go through the same reports and plots. The wide
form written back from records is :mod:`farm.results.ipbench`.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Callable

from farm.errors import JobError, ParseError
from farm.measure import Measurement
from farm.measure.cpustat import cycles_utilisation

#: the benchmark whose records these are: the load sweep (live, ``farm.bench.network``, or imported)
BENCHMARK = "sweep"
WIDE_COLUMNS = (
    "Requested_Throughput", "Receive_Throughput", "Send_Throughput", "Packet_Size",
    "Minimum_RTT", "Average_RTT", "Maximum_RTT", "Stdev_RTT", "Median_RTT", "CPU_Utilisation",
)
# wide column -> (metric, unit); Packet_Size is a parameter of the point, not a measurement
METRICS: dict[str, tuple[str, str]] = {
    "Requested_Throughput": ("requested_throughput", "bit/s"),
    "Receive_Throughput": ("received_throughput", "bit/s"),
    "Send_Throughput": ("sent_throughput", "bit/s"),
    "Minimum_RTT": ("rtt_min", "us"),
    "Average_RTT": ("rtt_avg", "us"),
    "Maximum_RTT": ("rtt_max", "us"),
    "Stdev_RTT": ("rtt_stdev", "us"),
    "Median_RTT": ("rtt_median", "us"),
    "CPU_Utilisation": ("cpu_utilisation", "percent"),
}
_IDLE, _TOTAL = "Idle_Cycles", "Total_Cycles"
#: the lab's columns beyond the ten, kept on import: column -> (metric, unit)
EXTRA_COLUMNS: dict[str, tuple[str, str]] = {
    _IDLE: ("idle_cycles", "ticks"),
    _TOTAL: ("total_cycles", "ticks"),
    "Bad_Packets": ("bad_packets", "count"),
}
#: other spellings of a column the lab's own files use (lower case) -> the column they mean
SPELLINGS = {"cpu_utilsation": "cpu_utilisation"}
#: the method of imported records: ipbench's own figures, which a live ``method: ipbench`` sweep
#: measures with the same definitions (docs/network.md), so the two join in ``farm compare``
IMPORT_METHOD = "ipbench"
#: how the parser's messages name what they read (the importer puts the file's name before it)
WHERE = "ipbench CSV"


def parse_csv(text: str, *, cpu_fraction: bool = False,
              warn: Callable[[str], None] = lambda text: None) -> list[tuple[int, Measurement]]:
    """(repeat, measurement) of benchmark ``sweep`` for each value of a lab CSV in ipbench's wide
    form (variants: see the module docstring), as a live sweep would have measured them.

    * params are ``requested=<Requested_Throughput>;packet_size=<Packet_Size>;method=ipbench``
      (ipbench's definitions: a live ``method: ipbench`` sweep joins them, farm's variants such as
      ``ipbench-echo`` never do); a point that appears again (same load and size) gets the next
      ``repeat``.
    * every column of :data:`METRICS` and :data:`EXTRA_COLUMNS` the file has becomes a measurement
      (``Idle_Cycles``/``Total_Cycles`` in ``ticks``, ``Bad_Packets`` a ``count``); another column
      is named in one ``warn`` and not imported.
    * a row that lacks only trailing ``Idle_Cycles``/``Total_Cycles`` fields (the lab's DPDK files:
      10 fields under 11 names) is imported with a ``warn`` naming the line; when the utilisation
      had to come from those cycles, that row has no ``cpu_utilisation`` record.
    * ``cpu_fraction=True`` for files whose CPU column is a 0..1 fraction rather than percent (some
      targets' own ipbench CPU responders, e.g. a CAmkES/picoserver echo server, send ``%0.3f`` of
      ``1 - idle/total``); it is scaled by 100. Nothing in the file tells the two apart.

    A required column missing from the header raises :class:`~farm.errors.JobError` naming the
    column; a cell that is not a finite number of 0 or more raises :class:`~farm.errors.ParseError`
    naming the line and column (the importer adds the file). Blank lines are skipped.
    """
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if not header or not any(cell.strip() for cell in header):
        raise JobError(f"{WHERE} line 1: empty, expected the header {','.join(WIDE_COLUMNS)}")
    index = _columns(header)
    known = {c.lower() for c in (*WIDE_COLUMNS, *EXTRA_COLUMNS)} | set(SPELLINGS)
    unknown = [name.strip() for name in header if name.strip() and name.strip().lower() not in known]
    if unknown:
        warn(f"{WHERE} line 1: column(s) {', '.join(unknown)} not imported (not ipbench's)")
    found: list[tuple[int, Measurement]] = []
    seen: dict[tuple[float, float], int] = {}
    for row in reader:
        line = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        missing = [header[i].strip() for i in range(len(row), len(header))]
        if missing:
            cycles = {_IDLE.lower(), _TOTAL.lower()}
            required = [name for name in missing if name.lower() not in cycles]
            if required or any(i >= len(row) for column, i in index.items() if column.lower() not in cycles):
                raise ParseError(f"{WHERE} line {line}: {len(row)} fields, the header has {len(header)} "
                                 f"(missing {','.join(missing)})")
            warn(f"{WHERE} line {line}: {len(row)} fields, the header has {len(header)}: no "
                 f"{','.join(missing)}" + ("" if "CPU_Utilisation" in index else "; no CPU_Utilisation for this row"))
        cycles_here = _IDLE in index and _TOTAL in index and index[_TOTAL] < len(row)
        values = {column: _number(line, column, row[i], first=(i == 0))
                  for column, i in index.items()
                  if i < len(row) and not (column == "CPU_Utilisation" and cycles_here and not row[i].strip())}
        if _TOTAL not in values and "CPU_Utilisation" not in values:
            pass  # the cycle columns are missing from this row: no utilisation
        elif "CPU_Utilisation" not in values:
            try:
                values["CPU_Utilisation"] = cycles_utilisation(values[_IDLE], values[_TOTAL])
            except ValueError as e:
                raise ParseError(f"{WHERE} line {line}: {_IDLE},{_TOTAL}: {e}") from None
        elif cpu_fraction:
            values["CPU_Utilisation"] *= 100.0
        point = (values["Requested_Throughput"], values["Packet_Size"])
        repeat = seen[point] = seen.get(point, -1) + 1
        params = {"requested": number_text(point[0]), "packet_size": number_text(point[1]), "method": IMPORT_METHOD}
        extras = sorted((c for c in EXTRA_COLUMNS if c in values), key=index.__getitem__)  # the file's order
        found += [(repeat, Measurement(BENCHMARK, metric, values[column], unit, params))
                  for column, (metric, unit) in (*METRICS.items(), *((c, EXTRA_COLUMNS[c]) for c in extras))
                  if column in values]
    return found


def _columns(header: list[str]) -> dict[str, int]:
    """Column name -> index for the columns we read, matched without regard to case or spaces."""
    position: dict[str, int] = {}
    for i, name in enumerate(header):
        spelt = name.strip().lower()
        position.setdefault(SPELLINGS.get(spelt, spelt), i)
    wanted = [c for c in WIDE_COLUMNS if c != "CPU_Utilisation"]
    cycles = _IDLE.lower() in position and _TOTAL.lower() in position
    if "cpu_utilisation" in position or not cycles:
        wanted.append("CPU_Utilisation")  # without it and without the cycles: reported missing below
    index: dict[str, int] = {}
    for column in wanted:
        if column.lower() not in position:
            raise JobError(f"{WHERE} line 1: no {column} column (header: {','.join(header)})")
        index[column] = position[column.lower()]
    for column in EXTRA_COLUMNS:
        if column.lower() in position and (column not in (_IDLE, _TOTAL) or cycles):
            index[column] = position[column.lower()]
    return index


def _number(line: int, column: str, text: str, *, first: bool) -> float:
    cell = text.strip()
    if first and cell.startswith("*"):
        cell = cell[1:]  # latency.sh's mark: achieved rate >20 % off the requested one
    try:
        value = float(cell)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ParseError(f"{WHERE} line {line}: {column} is {text!r}, expected a number")
    if value < 0:
        raise ParseError(f"{WHERE} line {line}: {column} is {text!r}: negative, not a measurement")
    return value


def number_text(value: float) -> str:
    """Whole numbers as integers (``requested=100000000``, as a live sweep writes them)."""
    return str(int(value)) if value.is_integer() else repr(value)
