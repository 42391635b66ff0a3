"""Cycles per byte: throughput normalised by the CPU clock, to compare cores rather than clocks.

A Cortex-A53 at 1.3 GHz and its QEMU twin on a 3 GHz x86 host can have equal throughput for
different reasons; ``f / throughput`` says how much work per byte each core does, which is how
crypto and checksum code is usually compared (cycles/byte in the OpenSSL and ISA-L literature).
The frequency is the caller's: the nominal or fixed clock of each target (a governor that
scales the clock makes the result an estimate, and farm does not guess it), or, better, the
clock read on the CPU right before and right after each measurement (:class:`farm.measure.clock.Clock`,
from isal_bench's cpufreq lines): then the figure is of that measurement, and a clock that changed
during it is a warning on the record (``warning=frequency-changed``).

Cycles/byte is the cost **on one core**: a throughput summed over N processes (``openssl speed
-multi N``, params ``multi=N``) is N cores' work, so each process did ``throughput / N`` bytes per
second with its own core's cycles: ``f * N / throughput``.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping

import attrs

from farm.measure.clock import _BYTES_PER_UNIT, UNIT, _check_hz, metric_for, processes
from farm.results.record import Record, parse_params


def cycles_per_byte(records: Iterable[Record],
                    frequency_hz_by_target: Mapping[str, float]) -> list[Record]:
    """One ``cycles_per_byte`` record per throughput record, in input order.

    Every record with unit ``bytes/s`` or ``bit/s`` (``byte/s``, ``bits/s`` too; bits are divided
    by 8) whose target has a frequency in ``frequency_hz_by_target`` gets a sibling: the same
    run, target, setup, suite, benchmark, params, repeat and timestamp, unit ``cycles/byte``,
    value ``f_Hz * processes / bytes_per_second`` (:func:`~farm.measure.clock.processes`: ``multi`` of the params, else
    1), and the metric named by :func:`~farm.measure.clock.metric_for`
    (``throughput`` -> ``cycles_per_byte``). Records in other units, of targets with no
    frequency given, or whose throughput is zero, negative or not finite (no meaningful cost per
    byte) give nothing. The input is not changed and not included: the caller decides whether to
    write both. A throughput record that already has a cycles/byte sibling among ``records`` (a
    benchmark that measured its clock, :func:`~farm.measure.clock.measured_cycles_per_byte`) gets none here. A
    frequency that is not a finite positive number raises
    :class:`~farm.errors.JobError` naming the target.
    """
    for target, frequency in frequency_hz_by_target.items():
        _check_hz(f"target {target!r}", frequency)
    records = list(records)
    # a benchmark that read the clock around each measurement gave its own siblings: keep those
    measured = {(r.run_id, r.target, r.setup, r.suite, r.benchmark, r.repeat, r.metric,
                 _without_warning(r.params)) for r in records if r.unit == UNIT}
    siblings: list[Record] = []
    for record in records:
        if (record.run_id, record.target, record.setup, record.suite, record.benchmark, record.repeat,
                metric_for(record.metric), record.params) in measured:
            continue
        scale = _BYTES_PER_UNIT.get(record.unit)
        frequency = frequency_hz_by_target.get(record.target)
        if scale is None or frequency is None:
            continue
        bytes_per_second = record.value * scale
        if not math.isfinite(bytes_per_second) or bytes_per_second <= 0:
            continue
        siblings.append(attrs.evolve(record, metric=metric_for(record.metric), unit=UNIT,
                                     value=float(frequency) * processes(parse_params(record.params))
                                     / bytes_per_second))
    return siblings


def _without_warning(params: str) -> str:
    """A measured sibling's params without what the measurement added (``warning=``, how its
    cycles were found: ``cycles=pmu|cpufreq``): its throughput's params."""
    return ";".join(item for item in params.split(";")
                    if not item.startswith(("warning=", "cycles="))) if params else params



_FREQUENCY_UNITS = {"hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9}
#: 10 GHz: a CPU clock beyond that is a typo (as farm.run.model's bound)
MAX_FREQUENCY_HZ = 10e9


def parse_frequency(text: str) -> float:
    """A CPU clock given by a person, in Hz: ``1500000000``, ``1.5e9``, ``1500MHz``, ``1.5 GHz``,
    ``1200000kHz``. Not a positive number up to 10 GHz: :class:`ValueError` saying why."""
    raw = text.strip()
    lowered = raw.lower().replace(" ", "")
    scale = 1.0
    for unit in ("khz", "mhz", "ghz", "hz"):
        if lowered.endswith(unit):
            lowered, scale = lowered[: -len(unit)], _FREQUENCY_UNITS[unit]
            break
    try:
        value = float(lowered) * scale
    except ValueError:
        raise ValueError(f"{text!r} is not a frequency (e.g. 1.5GHz, 1500MHz, 1500000000)") from None
    if not math.isfinite(value) or not 0 < value <= MAX_FREQUENCY_HZ:
        raise ValueError(f"{text!r}: expected a CPU clock above 0 and at most 10 GHz")
    return value
