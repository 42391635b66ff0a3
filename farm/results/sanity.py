"""Values that break physical sense, and values measured before a boot settled: flagged, not dropped.

A flag is a remark on a record, its ``flag`` param (several joined by ``,``): never part of the record's
identity (farm.results.identity.FLAG), so a flagged value stays in its series and comparison, and
results.csv, summary.md, compare.md and the dashboard say which values carry one and why.

The flags (pure functions of a benchmark run's records):

* ``unsettled``: the boot had not settled when the benchmark ran (farm.run.experiment.SettleRule:
  the target's busiest core stayed above the rule's threshold until its time limit);
* ``rtt_above_saturation``: a sweep point that carried its load (received at least
  :data:`SATURATED` of what was sent) has a median RTT above that of a point that did not (the
  target saturated there, its queues full): a light load cannot wait longer than a saturated one;
  right after boot a twin's first points did (166-344 ms at 10 Mb/s);
* ``rtt_above_heavier``: a point's median RTT is more than :data:`RTT_SLACK` above that of a
  heavier point (more sent) that also delivered more (received more): a lighter load that the target
  served worse in both ways was spoiled (a busy host, a boot not yet quiet), whatever the points'
  saturation (``pipelines/network.yaml`` on the twin: 124 ms at 10 Mb/s against 25-28 ms at 50
  and 100 Mb/s, which the saturation rule missed because no point saturated);
* ``lost_at_light_load``: a point received less than :data:`SATURATED` of what it sent, while a
  heavier point received at least what this one sent: the target carried this load elsewhere in
  the same sweep, so the loss here is not the target's capacity;
* ``received_above_sent``: a point received more than it sent, beyond the window's slack (replies
  to packets sent just before the window: at most the largest RTT's worth of the load, i.e.
  ``rtt_max / window`` of it, and at least 1 %);
* ``nan``: the value is not a number (an import's empty cell; a live benchmark refuses NaN and fails).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import attrs

from farm.measure.params import format_params, parse_params
from farm.results.identity import FLAG, identity_params

UNSETTLED = "unsettled"
RTT_ABOVE_SATURATION = "rtt_above_saturation"
RECEIVED_ABOVE_SENT = "received_above_sent"
RTT_ABOVE_HEAVIER = "rtt_above_heavier"
LOST_AT_LIGHT_LOAD = "lost_at_light_load"
NOT_A_NUMBER = "nan"
#: what each flag means, for the outputs' legends
MEANING = {
    UNSETTLED: "measured before the boot settled (its busiest core above the settle rule until its time limit)",
    RTT_ABOVE_SATURATION: "median RTT at a load the target carried above the median RTT where it saturated",
    RECEIVED_ABOVE_SENT: "received more than sent, beyond the window's slack",
    RTT_ABOVE_HEAVIER: "median RTT above that of a heavier point that delivered more (a spoiled light point)",
    LOST_AT_LIGHT_LOAD: "received far below what it sent, at a load a heavier point of the sweep carried",
    NOT_A_NUMBER: "not a number",
}
#: a sweep point carried its load when it received at least this fraction of what it sent
SATURATED = 0.9
#: how far a lighter point's median RTT may lie above a heavier point's (light-load RTTs are flat:
#: their noise, 25 against 28 ms on the twin, is no spoiled point)
RTT_SLACK = 0.25
#: the least slack of received over sent (a reply or two at a window's edge)
MIN_SLACK = 0.01
#: slack when the window's length is not known
DEFAULT_SLACK = 0.05

_SWEEP_METRICS = ("sent_throughput", "received_throughput", "rtt_median", "rtt_max")


def flags_of(record: Any) -> tuple[str, ...]:
    """The flags of a record (or store row), sorted."""
    text = parse_params(record.params).get(FLAG, "")
    return tuple(sorted(f for f in text.split(",") if f))


def with_flags(record: Any, flags: Iterable[str]) -> Any:
    """``record`` with ``flags`` added to its ``flag`` param (unchanged when there are none)."""
    flags = set(flags)
    if not flags:
        return record
    params = parse_params(record.params)
    params[FLAG] = ",".join(sorted(flags | set(f for f in params.get(FLAG, "").split(",") if f)))
    return attrs.evolve(record, params=format_params(params))


def sweep_flags(records: Sequence[Any], window_seconds: float | None = None) -> dict[str, set[str]]:
    """Per sweep point (its identity params text), the physical-sense flags of its records: one
    sweep's records (one target, setup and boot), any method with the metrics it needs."""
    points: dict[str, dict[str, float]] = {}
    for r in records:
        if r.metric in _SWEEP_METRICS and math.isfinite(r.value):
            points.setdefault(identity_params(r.benchmark, r.params), {})[r.metric] = r.value
    flags: dict[str, set[str]] = {}
    carried, saturated = [], []
    for point, m in points.items():
        sent, received = m.get("sent_throughput"), m.get("received_throughput")
        if sent is None or received is None or sent <= 0:
            continue
        if window_seconds and "rtt_max" in m:
            slack = max(MIN_SLACK, m["rtt_max"] * 1e-6 / window_seconds)
        else:
            slack = DEFAULT_SLACK
        if received > sent * (1 + slack):
            flags.setdefault(point, set()).add(RECEIVED_ABOVE_SENT)
        if "rtt_median" in m:
            (carried if received >= SATURATED * sent else saturated).append((point, m["rtt_median"]))
    if saturated:
        lowest = min(rtt for _, rtt in saturated)
        for point, rtt in carried:
            if rtt > lowest:
                flags.setdefault(point, set()).add(RTT_ABOVE_SATURATION)
    for point, flag in light_load_flags(points):
        flags.setdefault(point, set()).add(flag)
    return flags


def light_load_flags(points: dict[str, dict[str, float]]) -> list[tuple[str, str]]:
    """``(point, flag)`` of the sweep's spoiled light points (module docstring: ``rtt_above_heavier``,
    ``lost_at_light_load``), from each point's metrics (``sent_throughput``, ``received_throughput``,
    ``rtt_median``)."""
    usable = {p: m for p, m in points.items() if m.get("sent_throughput", 0) > 0 and "received_throughput" in m}
    found = []
    for point, m in usable.items():
        heavier = [h for h in usable.values() if h["sent_throughput"] > m["sent_throughput"]]
        if "rtt_median" in m and any(
                h["received_throughput"] > m["received_throughput"] and "rtt_median" in h
                and m["rtt_median"] > (1 + RTT_SLACK) * h["rtt_median"] for h in heavier):
            found.append((point, RTT_ABOVE_HEAVIER))
        if m["received_throughput"] < SATURATED * m["sent_throughput"] and any(
                h["received_throughput"] >= m["sent_throughput"] for h in heavier):
            found.append((point, LOST_AT_LIGHT_LOAD))
    return found


def flag_records(records: Sequence[Any], *, window_seconds: float | None = None,
                 boot_flags: Iterable[str] = ()) -> list[Any]:
    """A benchmark run's records with their flags: the boot's (``unsettled``), NaN values, and, for a
    sweep, the points that break physical sense (:func:`sweep_flags`)."""
    boot_flags = set(boot_flags)
    points = sweep_flags(records, window_seconds)
    out = []
    for r in records:
        flags = set(boot_flags)
        if isinstance(r.value, float) and math.isnan(r.value):
            flags.add(NOT_A_NUMBER)
        flags |= points.get(identity_params(r.benchmark, r.params), set())
        out.append(with_flags(r, flags))
    return out


def flag_run(records: Sequence[Any]) -> list[Any]:
    """Every benchmark run among a run's records (by run, target, setup, benchmark, repeat) checked as
    :func:`flag_records` does, for records written without flags (an import, an older run)."""
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(records):
        groups.setdefault((r.run_id, r.target, r.setup, r.benchmark, r.repeat), []).append(i)
    out = list(records)
    for indexes in groups.values():
        for i, flagged in zip(indexes, flag_records([records[i] for i in indexes])):
            out[i] = flagged
    return out
