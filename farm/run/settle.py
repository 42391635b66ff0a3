"""A boot settles before its first benchmark (farm.run.experiment.SettleRule).

    settled = settle({"board": read_cores}, SettleRule(cpu_below=20, seconds=3, within=60))
    settled.as_dict()   # run.json's boot record: settled or not, after how long, the busiest core per sample

Window after window of ``interval`` seconds, the CPU times of every CPU the benchmarks are measured on
are read at its start and end (the target's ``/proc/stat``, both reads and the sleep in one command of
shell builtins: no process of farm's runs in the window; a nested target's own CPUs and, through
the channel to the machine it runs on, that machine's cores); a window's figure is its busiest core's
utilisation. The boot has settled after ``seconds`` of windows in a row all below ``cpu_below``; after
``within`` seconds it is measured anyway and its records are flagged ``unsettled``
(farm.results.sanity). A target whose CPU cannot be read (a system image without a shell) is not
waited for; the record says why.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping

import attrs

from ..errors import ParseError
from ..measure.cpustat import CpuTimes, utilisation
from .experiment import SettleRule

Window = Callable[[float], "tuple[Mapping[str, CpuTimes], Mapping[str, CpuTimes]]"]


@attrs.frozen
class Settled:
    settled: bool
    seconds: float
    busiest: tuple[float, ...] = ()  # per window, the busiest core's utilisation, percent
    skipped: str | None = None       # why the CPU was not read (not waited for)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"settled": self.settled, "seconds": round(self.seconds, 2),
                               "busiest_percent": [round(b, 1) for b in self.busiest]}
        if self.skipped:
            out["skipped"] = self.skipped
        return out

    def describe(self) -> str:
        if self.skipped:
            return f"not settled: {self.skipped}"
        last = f", busiest core {self.busiest[-1]:.0f} %" if self.busiest else ""
        return (f"settled in {self.seconds:.1f} s{last}" if self.settled else
                f"NOT settled within {self.seconds:.1f} s{last}: its records are flagged unsettled")


def busiest_core(before: Mapping[str, CpuTimes], after: Mapping[str, CpuTimes]) -> float:
    """The highest utilisation of one core between two snapshots (the aggregate line when a
    snapshot has no per-core lines)."""
    cores = [c for c in before if c != "cpu" and c in after] or ["cpu"]
    return max(utilisation(before[c], after[c]) for c in cores)


def settle(windows: Mapping[str, Window], rule: SettleRule, *,
           clock: Callable[[], float] = time.monotonic) -> Settled:
    """Wait until the boot settles by ``rule`` (module docstring): ``windows`` gives, per CPU, its
    per-core times at the start and the end of a window of ``rule.interval`` seconds."""
    t0 = clock()
    if not windows:
        return Settled(False, 0.0, skipped="no CPU to read (the target has no shell)")
    busiest: list[float] = []
    quiet = 0.0
    while True:
        try:
            spans = {scope: window(rule.interval) for scope, window in windows.items()}
        except Exception as exc:  # noqa: BLE001 - a target without /proc/stat is not waited for
            return Settled(False, clock() - t0, tuple(busiest), skipped=f"cannot read the CPU ({exc})")
        tick = clock()
        try:
            sample = max(busiest_core(*span) for span in spans.values())
        except ParseError:  # no tick elapsed, or a counter went backwards: not a sample
            sample = None
        if sample is not None:
            busiest.append(sample)
            quiet = quiet + rule.interval if sample < rule.cpu_below else 0.0
        if quiet >= rule.seconds - 1e-9:
            return Settled(True, tick - t0, tuple(busiest))
        if tick - t0 >= rule.within:
            return Settled(False, tick - t0, tuple(busiest))
