"""Cycles per byte: throughput normalised by the CPU clock, to compare cores rather than clocks.

A Cortex-A53 at 1.3 GHz and its QEMU twin on a 3 GHz x86 host can have equal throughput for
different reasons; ``f / throughput`` says how much work per byte each core does, which is how
crypto and checksum code is usually compared (cycles/byte in the OpenSSL and ISA-L literature).
The frequency is the caller's: the nominal or fixed clock of each target (a governor that
scales the clock makes the result an estimate, and farm does not guess it).
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping

import attrs

from farm.errors import JobError
from farm.results.record import Record

METRIC = "cycles_per_byte"
UNIT = "cycles/byte"
# throughput units -> bytes per unit: bytes/s as is, bit/s divided by 8
_BYTES_PER_UNIT = {"bytes/s": 1.0, "byte/s": 1.0, "bit/s": 1 / 8, "bits/s": 1 / 8}


def cycles_per_byte(records: Iterable[Record],
                    frequency_hz_by_target: Mapping[str, float]) -> list[Record]:
    """One ``cycles_per_byte`` record per throughput record, in input order.

    Every record with unit ``bytes/s`` or ``bit/s`` (``byte/s``, ``bits/s`` too; bits are divided
    by 8) whose target has a frequency in ``frequency_hz_by_target`` gets a sibling: the same
    run, target, setup, suite, benchmark, params, repeat and timestamp, unit ``cycles/byte``,
    value ``f_Hz / bytes_per_second``, and the metric named by :func:`metric_for`
    (``throughput`` -> ``cycles_per_byte``). Records in other units, of targets with no
    frequency given, or whose throughput is zero, negative or not finite (no meaningful cost per
    byte) give nothing. The input is not changed and not included: the caller decides whether to
    write both. A frequency that is not a finite positive number raises
    :class:`~farm.errors.JobError` naming the target.
    """
    for target, frequency in frequency_hz_by_target.items():
        if (isinstance(frequency, bool) or not isinstance(frequency, (int, float))
                or not math.isfinite(frequency) or frequency <= 0):
            raise JobError(f"frequency of target {target!r}: {frequency!r} is not a positive "
                           f"number of Hz")
    siblings: list[Record] = []
    for record in records:
        scale = _BYTES_PER_UNIT.get(record.unit)
        frequency = frequency_hz_by_target.get(record.target)
        if scale is None or frequency is None:
            continue
        bytes_per_second = record.value * scale
        if not math.isfinite(bytes_per_second) or bytes_per_second <= 0:
            continue
        siblings.append(attrs.evolve(record, metric=metric_for(record.metric), unit=UNIT,
                                     value=float(frequency) / bytes_per_second))
    return siblings


def metric_for(metric: str) -> str:
    """The sibling's metric: ``throughput`` in the name becomes ``cycles_per_byte``
    (``throughput`` -> ``cycles_per_byte``, iperf3's ``sent_throughput`` ->
    ``sent_cycles_per_byte``), any other name gets ``_cycles_per_byte`` appended. One rate metric
    per name in, one name out: iperf3's sent and received rates must not collide."""
    if "throughput" in metric:
        return metric.replace("throughput", METRIC, 1)
    return f"{metric}_{METRIC}"
