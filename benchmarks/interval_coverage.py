"""How often the ratio's 95 % interval holds the true ratio: a simulation, printed as tables.

    .venv/bin/python benchmarks/interval_coverage.py [--reps 4000] [--seed 45]

Per-boot values are drawn log-normal (a factor's noise, what a boot does to a throughput or a latency)
around the same median on both sides (true ratio 1), n boots a side, with each side's log-sd given;
the coverage of each interval farm can compute (farm.results.ratio.INTERVALS) is the share of draws
whose interval holds 1.0. A draw with no interval (Hodges-Lehmann from 3 a side) counts apart ("none").
Ties: a column with the values rounded to 2 significant digits, as a coarse counter gives them.

What it showed (docs/experiments.md, "When one side is much noisier"): with equal spreads
Hodges-Lehmann holds its exact claim (96.7 % where it claims 96.8 % at 5 a side) and welch 95.0 %; with
one side 25 times noisier (a guest beside bare metal) Hodges-Lehmann falls to 94.6 % at 5 a side and
90.3 % at 10, welch stays within a point of 95 % (94.8-95.2 %). Not a timed test: the tests check one case of it (tests/unit/test_decision_rule.py).
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from farm.results.stats import CONFIDENCE, mann_whitney_null, ratio_interval, welch_ratio_interval  # noqa: E402

#: (log-sd of A, log-sd of B): equal, a noisier side, a much noisier side (the issue's guest beside bare metal)
SPREADS = ((0.1, 0.1), (0.05, 0.2), (0.02, 0.5))
BOOTS = (3, 4, 5, 6, 8, 10)
METHODS = {"hodges-lehmann": ratio_interval, "welch": welch_ratio_interval}


def claimed(method: str, n: int) -> float:
    """The coverage a method claims at n a side: Hodges-Lehmann's exact one, welch's nominal 95 %."""
    if method != "hodges-lehmann":
        return CONFIDENCE
    counts = mann_whitney_null(n, n)
    total, below, k = math.comb(2 * n, n), 0, 0
    while k < len(counts) and below + counts[k] <= (1 - CONFIDENCE) / 2 * total:
        below += counts[k]
        k += 1
    return 1 - 2 * below / total if k else math.nan


def rounded(values: list[float]) -> list[float]:
    return [float(f"{v:.2g}") for v in values]


def coverage(method: str, n: int, sd_a: float, sd_b: float, reps: int, rng: random.Random,
             ties: bool = False) -> tuple[float, int]:
    """(share of draws with an interval holding 1.0, draws with no interval)."""
    held = none = 0
    for _ in range(reps):
        a = [100 * math.exp(rng.gauss(0, sd_a)) for _ in range(n)]
        b = [100 * math.exp(rng.gauss(0, sd_b)) for _ in range(n)]
        if ties:
            a, b = rounded(a), rounded(b)
        found = METHODS[method](a, b)
        if found is None:
            none += 1
        else:
            held += found[0] <= 1 <= found[1]
    return held / reps, none


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=4000, help="draws per cell (default 4000: +-0.35 points)")
    parser.add_argument("--seed", type=int, default=45)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"coverage of the 95 % interval of the ratio, true ratio 1, {args.reps} draws a cell, seed {args.seed}")
    print(f"standard error of a cell about {100 * math.sqrt(0.95 * 0.05 / args.reps):.2f} points\n")
    for method in METHODS:
        print(f"## {method}\n")
        header = "| boots a side | claimed | " + " | ".join(f"sd {a}/{b}" for a, b in SPREADS) + \
            f" | sd {SPREADS[0][0]}/{SPREADS[0][1]}, ties |"
        print(header)
        print("|---:|---:|" + "---:|" * (len(SPREADS) + 1))
        for n in BOOTS:
            cells = []
            for sd_a, sd_b in SPREADS:
                share, none = coverage(method, n, sd_a, sd_b, args.reps, rng)
                cells.append("none" if none == args.reps else f"{100 * share:.1f} %")
            share, none = coverage(method, n, *SPREADS[0], args.reps, rng, ties=True)
            cells.append("none" if none == args.reps else f"{100 * share:.1f} %")
            claim = claimed(method, n)
            print(f"| {n} | {'-' if math.isnan(claim) else f'{100 * claim:.1f} %'} | " + " | ".join(cells) + " |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
