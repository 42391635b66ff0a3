#!/usr/bin/env python3
"""How long a pipeline's experiment takes with N boots a side: its run directories' stages, by phase.

    .venv/bin/python benchmarks/experiment_time.py RUN_DIR [RUN_DIR ...]              # runs made already
    .venv/bin/python benchmarks/experiment_time.py --run pipelines/vm-vs-bare.yaml [--boots 1 5] [--out DIR]

For each run (``--run``: the pipeline run once per ``--boots`` value, its ``boots:`` replaced, into
``--out``, default results/experiment-time) it reads run.json and prints a Markdown table: the run's
wall time, the load average before and after, and per setup the median of its boots' boot stage
(power on to the shell the benchmarks run in, settling included), of its settling and of its
benchmarks per boot; then what N boots a side take, projected from those medians:

    build + N x sum over setups (boot + benchmarks per boot) + publish

(a run's image builds are cached after the first). The machine's load is printed because every
figure moves with it: give it with any time you quote.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def run_once(pipeline: Path, boots: int, out: Path) -> tuple[Path, tuple[float, float]]:
    """Run ``pipeline`` with ``boots:`` set to ``boots`` (a copy beside it, so its relative paths hold)."""
    text = pipeline.read_text()
    text, n = re.subn(r"(?m)^boots: *\d+", f"boots: {boots}", text)
    if not n:
        text += f"\nboots: {boots}\n"
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", dir=pipeline.parent, prefix=f".{pipeline.stem}-",
                                     delete=False) as f:
        f.write(text)
        copy = Path(f.name)
    before = os.getloadavg()[0]
    try:
        run_dir = out / f"{pipeline.stem}-boots{boots}-{time.strftime('%H%M%S')}"
        proc = subprocess.run([sys.executable, "-m", "farm.cli", "run", str(copy), "--out", str(run_dir)],
                              cwd=ROOT, text=True, capture_output=True)
        if proc.returncode != 0:
            print(proc.stderr[-2000:], file=sys.stderr)
    finally:
        copy.unlink()
    return run_dir, (before, os.getloadavg()[0])


def phases(run_dir: Path) -> dict:
    """Per setup: its boots' boot stage seconds, settle seconds and benchmark seconds per boot."""
    info = json.loads((run_dir / "run.json").read_text())
    setups: dict[str, dict[str, list[float]]] = {}
    bench: dict[str, float] = {}
    build = publish = 0.0
    for stage in info.get("stages", []):
        label, seconds = stage.get("label") or "", float(stage.get("seconds") or 0)
        if stage["classname"] == "farm.build":
            build += seconds
        elif stage["classname"] == "farm.publish":
            publish += seconds
        elif stage["classname"] == "farm.boot":
            setup = label.split("/")[1] if "/" in label else label
            setups.setdefault(setup, {"boot": [], "bench": [], "settle": []})["boot"].append(seconds)
        elif stage.get("benchmark"):
            bench[label.split("#")[0]] = bench.get(label.split("#")[0], 0.0) + seconds
    for label, seconds in bench.items():
        setups.setdefault(label.split("/")[1], {"boot": [], "bench": [], "settle": []})["bench"].append(seconds)
    for target in info.get("targets", {}).values():
        for boot in target.get("boots", []):
            if isinstance(boot.get("settle"), dict) and boot.get("setup") in setups:
                setups[boot["setup"]]["settle"].append(float(boot["settle"].get("seconds") or 0))
    started, finished = info.get("started"), info.get("finished")
    from datetime import datetime

    wall = ((datetime.fromisoformat(finished) - datetime.fromisoformat(started)).total_seconds()
            if started and finished else float("nan"))
    return {"run": info.get("run_id"), "status": info.get("status"), "wall": wall, "build": build,
            "publish": publish, "setups": setups, "boots": info.get("experiment", {}).get("boots", {})}


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def report(found: dict, load: tuple[float, float] | None, projected: list[int]) -> str:
    lines = [f"### run {found['run']} ({found['status']}): {found['wall'] / 60:.1f} min wall"
             + (f", load average {load[0]:.1f} before, {load[1]:.1f} after" if load else ""), "",
             "| setup | boots | boot stage s (median) | of it settling s | benchmarks s per boot |",
             "|---|---:|---:|---:|---:|"]
    per_round = 0.0
    for setup, s in found["setups"].items():
        boot, bench, settle = median(s["boot"]), median(s["bench"]), median(s["settle"])
        per_round += boot + bench
        lines.append(f"| {setup} | {len(s['boot'])} | {boot:.1f} | {settle:.1f} | {bench:.1f} |")
    lines += ["", f"build {found['build']:.1f} s, publish {found['publish']:.1f} s; one round of every setup "
              f"{per_round:.0f} s. Projected: " + ", ".join(
                  f"{n} boots a side {(found['build'] + n * per_round + found['publish']) / 60:.1f} min"
                  for n in projected), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", type=Path, help="run directories made already")
    parser.add_argument("--run", type=Path, help="a pipeline to run (once per --boots)")
    parser.add_argument("--boots", type=int, nargs="+", default=[5])
    parser.add_argument("--project", type=int, nargs="+", default=[1, 5, 10])
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "experiment-time")
    args = parser.parse_args(argv)
    done: list[tuple[Path, tuple[float, float] | None]] = [(r, None) for r in args.runs]
    if args.run is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        done += [run_once(args.run.resolve(), n, args.out) for n in args.boots]
    if not done:
        parser.error("give run directories, or --run PIPELINE")
    for run_dir, load in done:
        print(report(phases(run_dir), load, args.project))
    return 0


if __name__ == "__main__":
    sys.exit(main())
