"""The sweeps of a run, one per (target, setup), with repeats folded into medians per point.

Both the wide CSVs (the lab's historical form) and the sweep plots are made from these.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Iterable

import attrs

from .ipbench import BENCHMARK, sweep_rows
from .identity import identity_params
from .record import Record, parse_params


def point_params(text: str) -> str:
    """A sweep record's point: its identity params (farm.results.identity)."""
    return identity_params(BENCHMARK, text)


@attrs.frozen
class Sweep:
    target: str
    setup: str
    rows: list[dict]  # wide rows, see farm.results.ipbench.sweep_rows
    repeats: int
    method: str = ""  # the records' method= param ("" for records written before methods were recorded)


def run_sweeps(records: Iterable[Record]) -> list[Sweep]:
    groups: dict[tuple[str, str, str], list[Record]] = defaultdict(list)
    for r in records:
        if r.benchmark == BENCHMARK:
            groups[(r.target, r.setup, parse_params(r.params).get("method", ""))].append(r)
    sweeps = []
    for (target, setup, method), recs in sorted(groups.items()):
        values: dict[tuple[str, str], list[float]] = defaultdict(list)
        first: dict[tuple[str, str], Record] = {}
        for r in recs:
            # repeats of a point fold together (their identity: records written before sample counts
            # were records of their own carry an n= param, which is none of it)
            key = (point_params(r.params), r.metric)
            values[key].append(r.value)
            first.setdefault(key, r)
        folded = [attrs.evolve(first[key], value=statistics.median(vals), repeat=0) for key, vals in values.items()]
        sweeps.append(Sweep(target, setup, sweep_rows(folded), len({r.repeat for r in recs}), method))
    return sweeps


# the sweep of these methods is the run's wide CSV; another method's gets its name as a suffix
# (ipbench's own figures, live or imported; "" for records written before methods were recorded;
# "import:ipbench": imports made before imports became method=ipbench)
_PLAIN_METHODS = ("", "ipbench", "import:ipbench")


def wide_csv_name(sweep: Sweep) -> str:
    from ..values import path_component

    suffix = "" if sweep.method in _PLAIN_METHODS else "-" + sweep.method.replace(":", "-")
    return (f"sweep-{path_component(sweep.target, 'target name', 'results.csv')}-"
            f"{path_component(sweep.setup, 'setup name', 'results.csv')}{suffix}.csv")
