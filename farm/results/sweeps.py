"""The sweeps of a run, one per (target, setup), with repeats folded into medians per point.

Both the wide CSVs (the lab's historical form) and the sweep plots are made from these.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Iterable

import attrs

from .ipbench import BENCHMARK, sweep_rows
from .record import Record


@attrs.frozen
class Sweep:
    target: str
    setup: str
    rows: list[dict]  # wide rows, see farm.results.ipbench.sweep_rows
    repeats: int


def run_sweeps(records: Iterable[Record]) -> list[Sweep]:
    groups: dict[tuple[str, str], list[Record]] = defaultdict(list)
    for r in records:
        if r.benchmark == BENCHMARK:
            groups[(r.target, r.setup)].append(r)
    sweeps = []
    for (target, setup), recs in sorted(groups.items()):
        values: dict[tuple[str, str], list[float]] = defaultdict(list)
        first: dict[tuple[str, str], Record] = {}
        for r in recs:
            values[(r.params, r.metric)].append(r.value)
            first.setdefault((r.params, r.metric), r)
        folded = [attrs.evolve(first[key], value=statistics.median(vals), repeat=0) for key, vals in values.items()]
        sweeps.append(Sweep(target, setup, sweep_rows(folded), len({r.repeat for r in recs})))
    return sweeps


def wide_csv_name(sweep: Sweep) -> str:
    from ..values import path_component

    return (f"sweep-{path_component(sweep.target, 'target name', 'results.csv')}-"
            f"{path_component(sweep.setup, 'setup name', 'results.csv')}.csv")
