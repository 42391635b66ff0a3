"""The ipbench "wide" form of a load sweep: one row per requested load, and imports of old results.

The lab's history is CSV written by ipbench's helper scripts (au-ts/ipbench,
``helpers/scripts/latency.sh`` and ``ipbench_benchmark.sh``): a header, then for each load the line
ipbench prints. That is the latency test's ``printf`` (``ipbench2/src/tests/latency/latency.c``,
``latency_output``) of requested, achieved and sent bit/s, packet size, min, average and max RTT as
integers, the standard deviation as ``%.2f`` (population: the variance divides by n) and the median
as an integer (the upper middle sample), followed by the CPU target's ``%.1f`` percent. Units:
bit/s, bit/s, bit/s, bytes, µs (five times), percent.

Variants seen in public copies of those scripts, all accepted by :func:`read_ipbench_csv`:

* the header says ``CPU_utilisation`` (lower-case u) in both au-ts scripts: columns are matched
  without regard to case;
* trailing columns after the ten, e.g. ``Idle_Cycles,Total_Cycles`` or ``Bad_Packets``: ignored;
* no ``CPU_Utilisation`` column but ``Idle_Cycles`` and ``Total_Cycles`` (a public Python wrapper
  around ipbench, repository not identified by our search, writes the header
  ``...,Median_RTT,Bad_Packets,Idle_Cycles,Total_Cycles``): the utilisation is computed as
  ``100 * (1 - idle/total)``, the formula of ipbench's ``cpu_target_lukem``;
* ``latency.sh`` marks a row whose achieved rate is more than 20 % off the requested one with a
  leading ``*`` (its awk ``print "*"$IF``): the mark is dropped, the numbers kept.

A live sweep writes records of benchmark ``sweep`` (suite ``network``) with params ``requested``
(bit/s) and ``packet_size`` (bytes) and the metrics of :data:`METRICS`; imports produce exactly the
same records, so the history and new runs go through the same reports and plots.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import attrs

from farm.measure import ImpossibleValue, check_measurements, iperf3
from farm.measure.cpustat import cycles_utilisation
from farm.errors import JobError, ParseError
from farm.results.record import Measurement, Record, RunContext, parse_params, write_text_atomic

PathLike = str | os.PathLike[str]

BENCHMARK = "sweep"
SUITE = "network"
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
_COLUMN_OF_METRIC = {metric: column for column, (metric, _) in METRICS.items()}
_IDLE, _TOTAL = "Idle_Cycles", "Total_Cycles"
IMPORT_METHOD = "import:ipbench"


# --- records -> wide rows --------------------------------------------------------------------


def sweep_rows(records: Iterable[Record]) -> list[dict[str, float | None]]:
    """Pivot the ``sweep`` records of one sweep into wide rows, one per requested load (and
    packet size, when the sweep has several), sorted by requested load then packet size.

    Each row has every key of :data:`WIDE_COLUMNS`; a metric the sweep did not record is ``None``.
    ``Requested_Throughput`` is the ``requested_throughput`` metric, or the ``requested`` param
    when that metric is absent. Records of other benchmarks are skipped. Two *different* values
    for the same metric of the same point (two setups, runs or repeats mixed together) raise
    :class:`~farm.errors.JobError`: filter the records to one run first, a silent average or
    "last one wins" would hide it.
    """
    rows: dict[tuple[float, float | None], dict[str, float | None]] = {}
    origin: dict[tuple[tuple[float, float | None], str], Record] = {}
    for record in records:
        if record.benchmark != BENCHMARK:
            continue
        params = parse_params(record.params)
        if "requested" not in params:
            raise JobError(f"sweep record {record.run_id}/{record.metric}: params {record.params!r} "
                           "have no requested=<bit/s>")
        requested = _param_number(record, params, "requested")
        size = _param_number(record, params, "packet_size") if "packet_size" in params else None
        key = (requested, size)
        row = rows.setdefault(key, {**dict.fromkeys(WIDE_COLUMNS), "Requested_Throughput": requested,
                                    "Packet_Size": size})
        column = _COLUMN_OF_METRIC.get(record.metric)
        if column is None:
            continue  # loss, jitter, ...: not part of the wide form
        first = origin.setdefault((key, column), record)
        if first is not record and first.value != record.value:
            raise JobError(f"sweep point requested={_text(requested)}: two values of {record.metric} "
                           f"({first.value} from run {first.run_id} setup {first.setup} repeat "
                           f"{first.repeat}, {record.value} from run {record.run_id} setup "
                           f"{record.setup} repeat {record.repeat}); pass one run's records")
        row[column] = record.value
    return [rows[key] for key in sorted(rows, key=lambda k: (k[0], -1 if k[1] is None else k[1]))]


def _param_number(record: Record, params: Mapping[str, str], name: str) -> float:
    try:
        value = float(params[name])
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise JobError(f"sweep record {record.run_id}/{record.metric}: {name}={params[name]!r} "
                       "is not a number")
    return value


def write_wide_csv(path: PathLike, rows: Iterable[Mapping[str, Any]]) -> None:
    """Write rows in the lab's wide form, replacing ``path`` atomically.

    The header is :data:`WIDE_COLUMNS`, then any other keys the rows carry (first seen first),
    so extra columns such as ``Idle_Cycles`` survive a round trip. Whole numbers are written
    without a decimal point, like ipbench; others with ``repr`` (read back bit for bit); ``None``
    as an empty cell.
    """
    rows = list(rows)
    extra = [key for row in rows for key in row if key not in WIDE_COLUMNS]
    columns = list(WIDE_COLUMNS) + list(dict.fromkeys(extra))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(column)) for column in columns])
    write_text_atomic(path, buf.getvalue())


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def _text(value: float) -> str:
    """Whole numbers as integers (``requested=100000000``, as a live sweep writes them)."""
    return str(int(value)) if value.is_integer() else repr(value)


# --- the lab's CSV -> records ----------------------------------------------------------------


def _warn_stderr(text: str) -> None:
    print(f"farm: warning: {text}", file=sys.stderr)


def read_ipbench_csv(path: PathLike, *, setup: str, target: str = "unknown", arch: str = "unknown",
                     image: str = "unknown", cpu_fraction: bool = False,
                     warn: Callable[[str], None] = _warn_stderr) -> list[Record]:
    """Records of benchmark ``sweep`` from a lab CSV in ipbench's wide form (variants: see the
    module docstring), as a live sweep would have written them.

    * ``run_id`` is ``import-`` + the first 12 hex digits of the file's SHA-256, so importing the
      same file twice gives the same records, and a changed file a new run;
    * ``timestamp`` is the file's modification time (UTC), the best guess of when it was measured;
    * params are ``requested=<Requested_Throughput>;packet_size=<Packet_Size>;method=import:ipbench``
      (the method keeps history apart from live sweeps, whose method is ``ipbench-echo``); a point
      that appears again (same load and size) gets the next ``repeat``.
    * a row that lacks only trailing ``Idle_Cycles``/``Total_Cycles`` fields (the lab's DPDK files:
      10 fields under 11 names) is imported with a ``warn`` naming the line; when the utilisation
      had to come from those cycles, that row has no ``cpu_utilisation`` record.
    * ``cpu_fraction=True`` for files whose CPU column is a 0..1 fraction rather than percent (some
      targets' own ipbench CPU responders, e.g. a CAmkES/picoserver echo server, send ``%0.3f`` of
      ``1 - idle/total``); it is scaled by 100. Nothing in the file tells the two apart.

    A required column missing from the header raises :class:`~farm.errors.JobError` naming the file
    and the column; a cell that is not a finite number of 0 or more raises
    :class:`~farm.errors.ParseError` naming the file, line and column. Blank lines are skipped.
    """
    path = Path(path)
    data, text = _read(path)
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if not header or not any(cell.strip() for cell in header):
        raise JobError(f"{path} line 1: empty, expected the header {','.join(WIDE_COLUMNS)}")
    index = _columns(path, header)
    context = _import_context(data, setup=setup, target=target, arch=arch, image=image)
    stamp = _mtime(path)
    records: list[Record] = []
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
                raise ParseError(f"{path} line {line}: {len(row)} fields, the header has {len(header)} "
                                 f"(missing {','.join(missing)})")
            warn(f"{path} line {line}: {len(row)} fields, the header has {len(header)}: no "
                 f"{','.join(missing)}" + ("" if "CPU_Utilisation" in index else "; no CPU_Utilisation for this row"))
        values = {column: _number(path, line, column, row[i], first=(i == 0))
                  for column, i in index.items() if i < len(row)}
        if _TOTAL not in values and "CPU_Utilisation" not in index:
            pass  # the cycle columns are missing from this row: no utilisation
        elif "CPU_Utilisation" not in values:
            try:
                values["CPU_Utilisation"] = cycles_utilisation(values[_IDLE], values[_TOTAL])
            except ValueError as e:
                raise ParseError(f"{path} line {line}: {_IDLE},{_TOTAL}: {e}") from None
        elif cpu_fraction:
            values["CPU_Utilisation"] *= 100.0
        point = (values["Requested_Throughput"], values["Packet_Size"])
        repeat = seen[point] = seen.get(point, -1) + 1
        params = {"requested": _text(point[0]), "packet_size": _text(point[1]), "method": IMPORT_METHOD}
        ctx = attrs.evolve(context, repeat=repeat)
        for column, (metric, unit) in METRICS.items():
            if column not in values:
                continue
            m = Measurement(BENCHMARK, metric, values[column], unit, params)
            records.append(ctx.record(m, timestamp=stamp))
    return records


def _columns(path: Path, header: list[str]) -> dict[str, int]:
    """Column name -> index for the columns we read, matched without regard to case or spaces."""
    position: dict[str, int] = {}
    for i, name in enumerate(header):
        position.setdefault(name.strip().lower(), i)
    wanted = [c for c in WIDE_COLUMNS if c != "CPU_Utilisation"]
    if "cpu_utilisation" in position:
        wanted.append("CPU_Utilisation")
    elif _IDLE.lower() in position and _TOTAL.lower() in position:
        wanted += [_IDLE, _TOTAL]
    else:
        wanted.append("CPU_Utilisation")  # reported missing below
    index: dict[str, int] = {}
    for column in wanted:
        if column.lower() not in position:
            raise JobError(f"{path} line 1: no {column} column (header: {','.join(header)})")
        index[column] = position[column.lower()]
    return index


def _number(path: Path, line: int, column: str, text: str, *, first: bool) -> float:
    cell = text.strip()
    if first and cell.startswith("*"):
        cell = cell[1:]  # latency.sh's mark: achieved rate >20 % off the requested one
    try:
        value = float(cell)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ParseError(f"{path} line {line}: {column} is {text!r}, expected a number")
    if value < 0:
        raise ParseError(f"{path} line {line}: {column} is {text!r}: negative, not a measurement")
    return value


# --- iperf3 output -> records ----------------------------------------------------------------


def import_iperf3(path: PathLike, *, setup: str, target: str = "unknown", arch: str = "unknown",
                  image: str = "unknown") -> list[Record]:
    """Records from a saved iperf3 client output: JSON (``-J``, the text begins with ``{``) or the
    human text of one or several runs pasted together, read by
    :func:`farm.measure.iperf3.parse_json` / :func:`~farm.measure.iperf3.parse_text`.

    Benchmark ``iperf3``, suite ``network``, ``run_id`` ``import-<sha12 of the file>``, timestamp
    the file's modification time. Text runs keep their ``run=<n>`` param and get ``repeat`` = n.
    iperf3's own failure ("unable to connect ...") raises :class:`~farm.bench.BenchmarkError`;
    unreadable output a :class:`~farm.errors.ParseError` prefixed with the file name.
    """
    path = Path(path)
    data, text = _read(path)
    try:
        measurements = check_measurements("iperf3", iperf3.parse_json(text) if text.lstrip().startswith("{")
                                          else iperf3.parse_text(text))
    except ParseError as e:
        raise ParseError(f"{path}: {e}") from None
    except ImpossibleValue as e:  # bad input, not a failed benchmark: exit 2 naming file and line
        raise ParseError(f"{path}: {e.message}") from None
    context = _import_context(data, setup=setup, target=target, arch=arch, image=image)
    stamp = _mtime(path)
    records = []
    for m in measurements:
        ctx = attrs.evolve(context, repeat=int(m.params.get("run", 0)))
        records.append(ctx.record(m, timestamp=stamp))
    return records


# --- shared by the importers -----------------------------------------------------------------


def _read(path: Path) -> tuple[bytes, str]:
    """The file's bytes (for the run id) and its text (a UTF-8 BOM, as spreadsheets write, dropped)."""
    from ..config import read_bytes
    from .importers import MAX_IMPORT_BYTES

    data = read_bytes(path, "captured output", MAX_IMPORT_BYTES)
    try:
        return data, data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ParseError(f"{path}: not UTF-8 text ({e})") from None


def _import_context(data: bytes, *, setup: str, target: str, arch: str, image: str) -> RunContext:
    return RunContext(run_id="import-" + hashlib.sha256(data).hexdigest()[:12], target=target,
                      arch=arch, setup=setup, image=image, suite=SUITE)


def _mtime(path: Path) -> str:
    return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).isoformat(timespec="milliseconds")
