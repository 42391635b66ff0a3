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

from ..config import Node, field, reject_unknown
from ..results.ratio import MIN_BOOTS, Rule
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

    cpu_below: float = 25.0
    seconds: float = 2.0
    within: float = 30.0
    interval: float = 0.5

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


def read_boots(node: Node, key: str, default: int) -> int:
    value = field(node, key, int, default)
    if not 1 <= value <= MAX_BOOTS:
        raise node.error(key, f"must be 1-{MAX_BOOTS}")
    return value


def load_experiment(doc: Node) -> Experiment:
    """The experiment fields of a pipeline file (checked; errors name file:line: field)."""
    if "boots" in doc and "repeats" in doc:
        raise doc.error("repeats", "give 'boots' (its newer name) or 'repeats', not both")
    boots = read_boots(doc, "boots" if "boots" in doc else "repeats", 1)
    order = field(doc, "order", str, INTERLEAVED)
    if order not in ORDERS:
        raise doc.error("order", f"{order!r}: expected interleaved (A B A B ...) or shuffled (a random order "
                                 "per round, from seed)")
    seed = field(doc, "seed", int, None)
    if seed is not None:
        if order != SHUFFLED:
            raise doc.error("seed", "only a shuffled order has a seed (order: shuffled)")
        if not 0 <= seed <= MAX_SEED:
            raise doc.error("seed", f"must be 0-{MAX_SEED}")
    return Experiment(boots, order, seed, _settle(doc), _compare(doc))


def _settle(doc: Node) -> SettleRule | None:
    value = doc.get("settle")
    if value is None or value is True:
        return SettleRule()
    if value is False:
        return None
    if not isinstance(value, Node):
        raise doc.error("settle", "expected a mapping like {cpu_below: 20, for: 3, within: 60}, or false")
    reject_unknown(value, ("cpu_below", "for", "within", "interval"))
    rule = SettleRule()
    below = field(value, "cpu_below", float, rule.cpu_below)
    if (problem := number_problem(below, 0, 100, low_open=True, unit="%")):
        raise value.error("cpu_below", problem)
    seconds = field(value, "for", float, rule.seconds)
    if (problem := number_problem(seconds, 0, 600, low_open=True, unit="s")):
        raise value.error("for", problem)
    interval = field(value, "interval", float, rule.interval)
    if (problem := number_problem(interval, 0.1, 60, unit="s")):
        raise value.error("interval", problem)
    within = field(value, "within", float, max(rule.within, seconds))
    if (problem := number_problem(within, seconds, 3600, unit="s")):
        raise value.error("within", f"{problem} (at least 'for')")
    return SettleRule(below, seconds, within, interval)


def _compare(doc: Node) -> Rule:
    value = field(doc, "compare", Node, None)
    if value is None:
        return Rule()
    reject_unknown(value, ("min_boots", "threshold"))
    min_n = field(value, "min_boots", int, MIN_BOOTS)
    if not 1 <= min_n <= MAX_BOOTS:
        raise value.error("min_boots", f"must be 1-{MAX_BOOTS}")
    threshold = value.get("threshold", 0.0)
    if isinstance(threshold, str):
        from ..errors import JobError
        from ..results.qualify import parse_threshold

        try:
            threshold = parse_threshold(threshold)
        except JobError as exc:
            raise value.error("threshold", str(exc)) from None
    elif isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise value.error("threshold", f"{threshold!r}: expected a fraction like 0.02 or a percentage like 2%")
    if not 0 <= threshold < 1:
        raise value.error("threshold", "must be 0 or more and below 1 (100 %)")
    return Rule(min_n, float(threshold))
