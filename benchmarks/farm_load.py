#!/usr/bin/env python3
"""How long a job waits for a place and its lock when the farm is busy (issue 17's load test, longer).

    .venv/bin/python benchmarks/farm_load.py [--jobs 20] [--seconds 60] [--hold 0.2] [--runs 3]

A real labgrid coordinator, two exporters with five places each, JOBS processes each looping
reserve → lock → hold HOLD s → release through farm.places.acquired_place (farm.virtual.load).
Prints the machine's load and, per run and as the median of the runs, the holds per second and the
wait (reservation asked → place locked) overall and per priority, as a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from farm.virtual.load import run  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--hold", type=float, default=0.2)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} cores")
    rows = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="farm-load-") as tmp:
            s = run(Path(tmp), jobs=args.jobs, seconds=args.seconds, hold_seconds=args.hold)
        bad = s["overlaps"] + s["wrong_owner"] + s["failed_jobs"] + s["stuck_jobs"] + list(s["held_at_end"])
        if bad or s["priority_order"] != [10.0, 5.0, 0.0]:
            print(f"run {i + 1}: a promise broken: {bad or s['priority_order']}")
            return 1
        rows.append({"holds_per_s": s["holds"] / args.seconds, "median": s["wait"]["all"]["median_s"],
                     "p95": s["wait"]["all"]["p95_s"],
                     **{f"prio{p}": v["median_s"] for p, v in s["wait"]["by_prio"].items()}})
        print(f"run {i + 1}: {rows[-1]}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"\n{args.jobs} jobs, 10 places on 2 exporters, hold {args.hold} s, {args.seconds:g} s per run, "
          f"median of {args.runs} runs\n")
    print("| holds/s | wait median | wait p95 | " + " | ".join(f"median, prio {k[4:]}" for k in rows[0] if k.startswith("prio")) + " |")
    print("|---|---|---|" + "---|" * sum(k.startswith("prio") for k in rows[0]))
    keys = list(rows[0])
    med = {k: statistics.median(r[k] for r in rows) for k in keys}
    print(f"| {med['holds_per_s']:.1f} | {med['median']:.3f} s | {med['p95']:.3f} s | "
          + " | ".join(f"{med[k]:.3f} s" for k in keys if k.startswith("prio")) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
