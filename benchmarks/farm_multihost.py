#!/usr/bin/env python3
"""The farm at lab scale while the lab fails (issue 31), the full form of tests/farm/test_multihost.py.

    sudo .venv/bin/python benchmarks/farm_multihost.py [--runs 3] [--jobs 20] [--hosts 3] [--places 4]
                                                       [--generators 2] [--form full|short]

Each run brings up a multi-host virtual farm (farm.virtual.multihost: lab hosts, stand-in boards and
load generators in network namespaces around one coordinator), starts JOBS `farm run --farm` jobs at
priorities 10/5/0/0, half sweeping through the load generator reserved with their board, and makes
the lab fail under them (farm.virtual.multiload.faults: a board that never boots, an exporter
killed, a load generator lost mid-sweep, the coordinator restarted, a host's network cut for 30 s;
the full form leaves 20 s between them). Prints the machine's load before and after, every run's
jobs, holds, faults and outcomes, and a Markdown table of the medians of the runs (docs/farm.md).
Exit 1 when a run broke a promise (a double hold, a job that did not end passed, a run written
half, a place not healthy at the end).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from farm.virtual.multiload import promises_broken, report, run  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--hosts", type=int, default=3)
    parser.add_argument("--places", type=int, default=4)
    parser.add_argument("--generators", type=int, default=2)
    parser.add_argument("--form", choices=("full", "short"), default="full")
    parser.add_argument("--json", type=Path, help="write every run's summary here")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} cores")
    rows, summaries, broken = [], [], 0
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="farm-multihost-") as tmp:
            s = run(Path(tmp) / "farm", jobs=args.jobs, hosts=args.hosts, places_per_host=args.places,
                    generators=args.generators, form=args.form, say=lambda text: None)
        summaries.append(s)
        print(f"\n--- run {i + 1} ---\n{report(s)}")
        for line in promises_broken(s):
            print(f"BROKEN: {line}")
            broken += 1
        w = s["wait_for_a_place"]
        o = s["outcomes"]
        rows.append({"seconds": s["seconds"], "attempts": s["attempts"],
                     "double": sum(len(v) for v in s["double_holds"].values()),
                     "first": o["passed first time"], "retried": o["passed after a class-3 retry"],
                     "wait": w.get("median_s", 0.0), "p95": w.get("p95_s", 0.0),
                     **{f"prio{p}": v["median_s"] for p, v in w["by_prio"].items()}})
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        args.json.write_text(json.dumps(summaries, indent=2) + "\n")
    med = {k: statistics.median(r[k] for r in rows if k in r) for k in rows[0]}
    prios = [k for k in rows[0] if k.startswith("prio")]
    print(f"\n{args.jobs} jobs, {args.hosts} lab hosts x {args.places} places, {args.generators} load generators, "
          f"{args.form} form, median of {args.runs} runs\n")
    print("| run time | attempts | passed first time | passed after a class-3 retry | double holds | wait median | "
          "wait p95 | " + " | ".join(f"wait median, prio {k[4:]}" for k in prios) + " |")
    print("|---" * (7 + len(prios)) + "|")
    print(f"| {med['seconds']:.0f} s | {med['attempts']:.0f} | {med['first']:.0f} | {med['retried']:.0f} | "
          f"{med['double']:.0f} | {med['wait']:.1f} s | {med['p95']:.1f} s | "
          + " | ".join(f"{med[k]:.1f} s" for k in prios) + " |")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
