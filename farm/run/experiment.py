"""The experiment a pipeline runs: how often each setup boots, in which order, how a boot settles
before it is measured, and how a ratio between setups is judged.

    boots: 5                     # each setup booted 5 times (a setup may give its own boots:)
    order: interleaved           # interleaved: A B A B ... (default); shuffled: a random order per round
    seed: 1234                   # shuffled: the seed (default: drawn at the run's start); run.json records it
    repeats_in_boot: 1           # each benchmark this often per boot (their median is the boot's value)
    settle: {cpu_below: 20, for: 3, within: 60}   # before the first benchmark of a boot (false: no settling)
    compare: {min_boots: 5, threshold: 2%}        # a ratio's rule (farm.results.ratio)

Why boots, and why interleaved: what varies between boots (caches, memory placement, the board's or
the twin's host) is the spread a ratio between setups must carry, and a machine drifts over a run
(another job starts, a disk fills, a thermal limit): booting A A A B B B puts the drift between the
setups, A B A B (or a shuffled order within each round) puts it on both sides.
"""

from __future__ import annotations

import random
import secrets
from typing import Any, Sequence

import attrs

from ..results.ratio import Rule
from ..schema import Invalid, number, setting
from ..values import number_problem

INTERLEAVED, SHUFFLED = "interleaved", "shuffled"
ORDERS = (INTERLEAVED, SHUFFLED)
MAX_BOOTS = 1000
MAX_SEED = 2**32 - 1


@attrs.frozen
class SettleRule:
    """A boot has settled when every CPU the benchmarks are measured on (the target's; for a
    target nested on another machine, that machine's too) was busy less than ``cpu_below``
    percent over each ``interval`` for ``seconds`` in a row; it waits at most ``within``
    seconds, then measures anyway and flags the boot's records ``flag=unsettled``. Right after
    boot a twin is still busy (the first sweep points of a boot measured 166-344 ms light-load
    RTTs, two cores at 97-100 %)."""

    SHAPE = "a mapping like {cpu_below: 20, for: 3, within: 60}"

    cpu_below: float = setting(25.0, check=number(0, 100, low_open=True, unit="%"),
                               doc="percent busy each CPU must stay below")
    seconds: float = setting(2.0, key="for", check=number(0, 600, low_open=True, unit="s"),
                             doc="seconds in a row below it")
    within: float = setting(attrs.Factory(lambda rule: max(30.0, rule.seconds), takes_self=True),
                            doc="seconds it waits at most (then measures, flagging the records unsettled); "
                                "default 30, at least 'for'")
    interval: float = setting(0.5, check=number(0.1, 60, unit="s"), doc="seconds of each CPU reading")

    def validate(self, given: Any) -> None:
        if (problem := number_problem(self.within, self.seconds, 3600, unit="s")):
            raise Invalid(f"{problem} (at least 'for')", key="within")

    def describe(self) -> dict[str, Any]:
        return {"cpu_below": self.cpu_below, "for": self.seconds, "within": self.within,
                "interval": self.interval}


@attrs.frozen
class Experiment:
    """A pipeline's experiment design (module docstring)."""

    boots: int = 1  # per setup, unless a setup gives its own
    order: str = INTERLEAVED
    seed: int | None = None  # shuffled: None draws one when the run starts (recorded)
    settle: SettleRule | None = SettleRule()
    compare: Rule = Rule()

    def describe(self, seed: int | None, boots: dict[str, int], repeats_in_boot: int,
                 plan: Sequence[str], benchmarks: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
        """What run.json records of it: the order, the seed used, boots per setup, the rules, the
        boots in the order they ran, and each benchmark with the parameters it ran with, its run
        lengths too (a CI form's short windows are on the record, not only in the pipeline file)."""
        return {"order": self.order, "seed": seed, "boots": boots, "repeats_in_boot": repeats_in_boot,
                "settle": self.settle.describe() if self.settle else None, "compare": self.compare.describe(),
                "plan": list(plan), "benchmarks": [dict(b) for b in benchmarks]}


def boot_order(boots: Sequence[int], order: str, seed: int | None = None) -> list[tuple[int, int]]:
    """The boots of one target, as ``(setup index, boot number)`` in the order they run: round r
    boots each setup that has a boot r; ``interleaved`` in the setups' order (A B A B ...),
    ``shuffled`` in a random order per round (randomized blocks: each round has every setup once,
    so drift still lands on every side, and no setup always follows another), from ``seed``."""
    rng = random.Random(seed) if order == SHUFFLED else None
    plan = []
    for round_ in range(max(boots, default=0)):
        setups = [i for i, n in enumerate(boots) if round_ < n]
        if rng is not None:
            rng.shuffle(setups)
        plan += [(i, round_) for i in setups]
    return plan


def draw_seed() -> int:
    return secrets.randbelow(MAX_SEED + 1)
