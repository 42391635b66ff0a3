"""A run's time by phase: build, reserve (``--farm``), boot, benchmarks, publish, and the rest (pure).

Each stage of a run is a junit testcase whose classname says what it was (``farm.build``, ``farm.place``,
``farm.boot``, ``farm.bench.<suite>``, ``farm.publish``); a phase is the sum of its stages' seconds.
``other`` is the wall time in no stage: powering a board off after its benchmarks, between stages. A boot's
stage ends when its shell answered and its facts were read, so its benchmarks are not in it.
"""

from __future__ import annotations

from typing import Iterable

PHASES = ("build", "reserve", "boot", "benchmarks", "publish")


def phase_of(classname: str) -> str | None:
    """The phase of a stage by its testcase's classname (None: not a phase's, e.g. ``farm.run``)."""
    if classname.startswith("farm.bench"):
        return "benchmarks"
    return {"farm.build": "build", "farm.place": "reserve", "farm.boot": "boot", "farm.publish": "publish"}.get(classname)


def split(stages: Iterable[tuple[str, float | None]], wall: float | None = None) -> dict[str, float]:
    """``{phase: seconds}`` of (classname, seconds) pairs, the phases that had stages only, in PHASES' order;
    with the run's ``wall`` time, also ``other`` (what no stage covers, never below 0) and ``wall``."""
    sums: dict[str, float] = {}
    for classname, seconds in stages:
        phase = phase_of(classname)
        if phase is not None and seconds is not None:
            sums[phase] = sums.get(phase, 0.0) + float(seconds)
    out = {p: round(sums[p], 3) for p in PHASES if p in sums}
    if wall is not None:
        out["other"] = round(max(0.0, wall - sum(sums.values())), 3)
        out["wall"] = round(wall, 3)
    return out


def describe(phases: dict[str, float]) -> str:
    """One line for people: ``build 0.1 s, boot 4.5 s (41 %), ...``."""
    wall = phases.get("wall")
    parts = []
    for name in (*PHASES, "other"):
        if name in phases:
            share = f" ({100 * phases[name] / wall:.0f} %)" if wall else ""
            parts.append(f"{name} {phases[name]:.1f} s{share}")
    return ", ".join(parts) + (f" of {wall:.1f} s" if wall is not None else "")
