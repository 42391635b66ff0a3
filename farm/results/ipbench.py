"""The lab's wide form of a load sweep, written from records: one row per requested load.

The lab's history is CSV written by ipbench's helper scripts (au-ts/ipbench,
``helpers/scripts/latency.sh`` and ``ipbench_benchmark.sh``): a header, then for each load the line
ipbench prints (columns and units: :mod:`farm.measure.ipbench`, which reads such files). A sweep's
records (live, or imported with ``farm import ipbench``) pivot back into that form here, so old and
new results diff.
"""

from __future__ import annotations

import csv
import io
import math
import os
from typing import Any, Iterable, Mapping

from farm.errors import JobError
from farm.measure.cpustat import CORES, VCPUS
from farm.measure.ipbench import BENCHMARK, EXTRA_COLUMNS, METRICS, WIDE_COLUMNS, number_text
from farm.results.record import Record, parse_params, write_text_atomic

PathLike = str | os.PathLike[str]
_COLUMN_OF_METRIC = {metric: column for column, (metric, _) in METRICS.items()}
#: optional trailing columns, in a row only when the sweep recorded them (the CPU target's counts, an
#: import's Bad_Packets)
_OPTIONAL_COLUMNS = {metric: column for column, (metric, _) in EXTRA_COLUMNS.items()}
#: a guest setup's figures of its vCPUs (``cores=vcpus``): columns of their own after the lab's, whose
#: ``CPU_Utilisation`` (and the CPU target's counts) is the board's (``cores=board``, or none said)
GUEST_CPU_COLUMNS = {"cpu_utilisation": "Guest_CPU_Utilisation", "idle_cycles": "Guest_Idle_Cycles",
                     "total_cycles": "Guest_Total_Cycles"}


# --- records -> wide rows --------------------------------------------------------------------


#: the row a failed benchmark leaves in results.csv (farm.run.runner)
FAILED_METRIC = "failed"


def sweep_rows(records: Iterable[Record]) -> list[dict[str, float | None]]:
    """Pivot the ``sweep`` records of one sweep into wide rows, one per requested load (and
    packet size, when the sweep has several), sorted by requested load then packet size.

    Each row has every key of :data:`WIDE_COLUMNS`; a metric the sweep did not record is ``None``.
    ``Idle_Cycles``/``Total_Cycles`` (the CPU target's, :mod:`farm.bench.lukem`) and ``Bad_Packets``
    (an import's) are keys of a row only when the sweep recorded them.
    ``CPU_Utilisation`` is the board's CPU: a record saying ``cores=board``, or nothing (the lab's, older
    farm's); a guest's vCPUs' figures (``cores=vcpus``) are ``Guest_CPU_Utilisation`` (and
    ``Guest_Idle_Cycles``/``Guest_Total_Cycles`` from a CPU target in the guest), after the others.
    ``Requested_Throughput`` is the ``requested_throughput`` metric, or the ``requested`` param
    when that metric is absent. Records of other benchmarks are skipped. Two *different* values
    for the same metric of the same point (two setups, runs or repeats mixed together) raise
    :class:`~farm.errors.JobError`: filter the records to one run first, a silent average or
    "last one wins" would hide it.
    """
    rows: dict[tuple[float, float | None], dict[str, float | None]] = {}
    origin: dict[tuple[tuple[float, float | None], str], Record] = {}
    for record in records:
        if record.benchmark != BENCHMARK or record.metric == FAILED_METRIC:  # a failed sweep has no points
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
        if params.get(CORES) == VCPUS:
            column = GUEST_CPU_COLUMNS.get(record.metric)
        else:
            column = _COLUMN_OF_METRIC.get(record.metric) or _OPTIONAL_COLUMNS.get(record.metric)
        if column is None:
            continue  # loss, jitter, ...: not part of the wide form
        first = origin.setdefault((key, column), record)
        if first is not record and first.value != record.value:
            raise JobError(f"sweep point requested={number_text(requested)}: two values of {record.metric} "
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
