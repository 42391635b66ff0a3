#!/usr/bin/env python3
"""The test suite's time by test group, on a fresh machine's caches or on warm ones.

    .venv/bin/python benchmarks/suite_time.py --fresh [--out DIR] [-- PYTEST ARGS...]
    .venv/bin/python benchmarks/suite_time.py --warm  [--out DIR]

Runs the suite as `make test` does (``.venv/bin/pytest -n 3``: its three lanes side by
side, tests/lanes.py; the whole of it unless pytest arguments follow ``--``), with a JUnit XML report, and sums each testcase's time (setup, call and teardown) by group: the
directory under tests/ (tests/boot, tests/unit, ...; the files at the top of tests/ are "tests/*"), and the
slowest tests, and by lane (tests/lanes.py: the twins' worker, the farm's and the rest's, side by side). The host's
1-minute load is sampled every second (other engineers' QEMUs counted apart), and the machine's CPU time is
read from /proc/stat before and after: the core-minutes of work the run took, and so the shortest any order
of that work could take on this machine's cores (machine-wide: another engineer's work counts too, which
the load figures show).

``--fresh`` is a fresh machine's caches without touching the user's: ``FARM_CACHE`` and ``CCACHE_DIR``
point at new, empty directories under DIR (so every Debian package is downloaded again, every kernel and
image built from nothing, ccache has nothing to hit; the ``--keep-cache`` option leaves them there for a
look). ``--warm`` uses the user's caches as they are (a second run on the same machine, CI's runner that
kept ``~/.cache/farm``).

Writes DIR/report.md (the table), DIR/results.json (every testcase, the samples), DIR/junit.xml and
DIR/pytest.log; prints the table. Exits with pytest's status.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # the suite's own lanes (tests/lanes.py: a light module, time and pathlib)

from tests.lanes import lane  # noqa: E402
from tests.weight import CPU_FIELDS, PROPERTY, busy_seconds, cpu_line, mmss  # noqa: E402
MAKE_TEST = ("-n", "3")  # the Makefile's test target (tests/unit/test_suite_time.py checks)


def group_of(classname: str, file: str | None = None) -> str:
    """The test group of a testcase: ``tests.boot.test_x`` -> ``tests/boot``; ``tests.test_cli`` -> ``tests/*``."""
    parts = (file.replace("/", ".").removesuffix(".py") if file else classname).split(".")
    if len(parts) >= 3 and parts[0] == "tests" and not parts[1].startswith("test_"):
        return f"tests/{parts[1]}"
    return "tests/*"


def read_junit(path: Path) -> list[dict]:
    """Every testcase of a JUnit XML report: name, group, seconds, outcome."""
    cases = []
    for tc in ET.parse(path).getroot().iter("testcase"):
        outcome = next((child.tag for child in tc if child.tag in ("failure", "error", "skipped")), "passed")
        classname = tc.get("classname", "")
        cpu = next((p.get("value") for p in tc.iter("property") if p.get("name") == PROPERTY), None)
        cases.append({"name": f"{classname}::{tc.get('name')}", "group": group_of(classname, tc.get("file")),
                      "seconds": float(tc.get("time") or 0.0), "outcome": outcome,
                      "cpu_seconds": float(cpu) if cpu is not None else None})
    return cases


def by_group(cases: list[dict]) -> list[dict]:
    """Seconds, test count and outcomes per group, slowest first (pure)."""
    groups: dict[str, dict] = {}
    for case in cases:
        g = groups.setdefault(case["group"], {"group": case["group"], "seconds": 0.0, "cpu_seconds": 0.0, "tests": 0,
                                              "outcomes": {}})
        g["seconds"] += case["seconds"]
        g["cpu_seconds"] += case.get("cpu_seconds") or 0.0
        g["tests"] += 1
        g["outcomes"][case["outcome"]] = g["outcomes"].get(case["outcome"], 0) + 1
    return sorted(groups.values(), key=lambda g: -g["seconds"])


def file_of(name: str) -> str:
    """The file of a testcase named ``tests.boot.test_x::test_y`` (or ``tests.unit.test_x.TestClass::test_y``):
    ``tests/boot/test_x.py``."""
    parts = name.split("::")[0].split(".")
    module = next((i for i, part in enumerate(parts) if part.startswith("test_")), len(parts) - 1)
    return "/".join(parts[:module + 1]) + ".py"


def by_lane(cases: list[dict]) -> dict[str, float]:
    """Seconds per lane (tests/lanes.py's ``lane`` of each testcase's file), the longest first (pure)."""
    lanes: dict[str, float] = {}
    for case in cases:
        name = lane(Path(file_of(case["name"])))
        lanes[name] = lanes.get(name, 0.0) + case["seconds"]
    return dict(sorted(lanes.items(), key=lambda kv: -kv[1]))


def cpu_work(before: dict[str, int], after: dict[str, int], hz: int, cores: int) -> dict:
    """Core-seconds by field between two readings, the busy ones summed, and the floor that sets: the work
    spread perfectly over ``cores`` (pure)."""
    spent = {field: (after.get(field, 0) - before.get(field, 0)) / hz for field in CPU_FIELDS}
    busy = busy_seconds(before, after, hz)
    return {"seconds": spent, "busy_seconds": busy, "cores": cores, "floor_seconds": busy / cores}


def render(data: dict) -> str:
    cases, load = data["cases"], data["load"]
    lines = [f"# farm's test suite, {data['mode']} ({data['started']})", "",
             f"`{' '.join(data['command'])}`{' with ' + data['env_note'] if data['env_note'] else ''}", "",
             f"wall time **{mmss(data['wall_seconds'])}** (pytest exit {data['exit']}); CPU time of the suite's "
             f"processes {mmss(data.get('cpu_seconds') or 0)} (user + system, every process pytest waited for: QEMU "
             f"included, a daemon that left its parent not); machine: {os.cpu_count()} CPUs, "
             f"1-minute loadavg min {load['min']:.2f} / median {load['median']:.2f} / max {load['max']:.2f}; other "
             f"engineers' QEMUs running: up to {load['other_qemus_max']} (median {load['other_qemus_median']:.0f}); "
             f"farm at {data['commit']}", "",
             *_work_lines(data),
             "| group | tests | time (sum of tests: the lanes ran side by side) | share | CPU, core-minutes | outcomes |",
             "|---|---|---|---|---|---|"]
    total = sum(c["seconds"] for c in cases) or 1.0
    for g in by_group(cases):
        outcomes = ", ".join(f"{n} {k}" for k, n in sorted(g["outcomes"].items()))
        lines.append(f"| {g['group']} | {g['tests']} | {mmss(g['seconds'])} | {100 * g['seconds'] / total:.0f} % | "
                     f"{g.get('cpu_seconds', 0.0) / 60:.1f} | {outcomes} |")
    cpu_total = sum(c.get("cpu_seconds") or 0.0 for c in cases)
    lines.append(f"| **all** | {len(cases)} | {mmss(total)} | | {cpu_total / 60:.1f} | |")
    if cases:
        lines += ["", "By lane (tests/lanes.py; the longest is the critical path): "
                  + ", ".join(f"{name} {mmss(seconds)}" for name, seconds in by_lane(cases).items())]
    lines += ["", "The slowest tests:", "", "| test | seconds | CPU, core-seconds |", "|---|---|---|"]
    for case in sorted(cases, key=lambda c: -c["seconds"])[:15]:
        lines.append(f"| `{case['name']}` | {case['seconds']:.0f} | {_cpu(case)} |")
    if any(c.get("cpu_seconds") for c in cases):
        lines += ["", "The heaviest tests by CPU (theirs and their reaped children's: tests/weight.py):", "",
                  "| test | CPU, core-seconds | seconds |", "|---|---|---|"]
        for case in sorted(cases, key=lambda c: -(c.get("cpu_seconds") or 0.0))[:15]:
            lines.append(f"| `{case['name']}` | {_cpu(case)} | {case['seconds']:.0f} |")
    return "\n".join(lines) + "\n"


def _cpu(case: dict) -> str:
    return "" if case.get("cpu_seconds") is None else f"{case['cpu_seconds']:.0f}"


def _work_lines(data: dict) -> list[str]:
    work = data.get("cpu_work")
    if not work:
        return []
    spent = work["seconds"]
    return [f"The machine's CPU over the run (/proc/stat): **{work['busy_seconds'] / 60:.1f} core-minutes of work** "
            f"(user {spent['user'] / 60:.1f}, nice {spent['nice'] / 60:.1f}, system {spent['system'] / 60:.1f}; idle "
            f"{spent['idle'] / 60:.1f}), so on its {work['cores']} cores no order of the same work ends under "
            f"{mmss(work['floor_seconds'])}.", ""]


class Load(threading.Thread):
    """The 1-minute load average and other processes' QEMUs (not under the suite's pytest), every second."""

    def __init__(self):
        super().__init__(daemon=True)
        self.samples: list[tuple[float, int]] = []
        self.stopped = threading.Event()
        self.ours: int | None = None  # the suite's pytest: its descendants' QEMUs are the suite's

    def run(self):
        while not self.stopped.wait(1.0):
            self.samples.append((os.getloadavg()[0], self._other_qemus()))

    def _other_qemus(self) -> int:
        parents: dict[int, int] = {}
        qemus: list[int] = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            parents[int(entry)] = int(stat[stat.rindex(")") + 2:].split()[1])
            if comm.startswith("qemu-system"):
                qemus.append(int(entry))

        def ours(pid: int) -> bool:
            for _ in range(64):
                if pid == self.ours:
                    return True
                pid = parents.get(pid, 0)
                if pid <= 1:
                    return False
            return False
        return sum(1 for q in qemus if not ours(q))

    def summary(self) -> dict:
        loads = [s[0] for s in self.samples] or [os.getloadavg()[0]]
        others = [s[1] for s in self.samples] or [0]
        return {"min": min(loads), "median": statistics.median(loads), "max": max(loads),
                "other_qemus_max": max(others), "other_qemus_median": statistics.median(others)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--fresh", action="store_true", help="empty FARM_CACHE and CCACHE_DIR of its own (under --out)")
    mode.add_argument("--warm", action="store_true", help="the user's caches as they are")
    p.add_argument("--out", help="output directory (default results/suite-<mode>-<time>)")
    p.add_argument("--keep-cache", action="store_true", help="--fresh: keep the fresh caches afterwards")
    p.add_argument("pytest_args", nargs="*", help="after --: pytest's arguments (default: the whole suite)")
    args = p.parse_args()
    name = "fresh" if args.fresh else "warm"
    out = Path(args.out or ROOT / "results" / f"suite-{name}-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    note = ""
    if args.fresh:
        for var, sub in (("FARM_CACHE", "farm-cache"), ("CCACHE_DIR", "ccache")):
            (out / sub).mkdir(exist_ok=True)
            env[var] = str(out / sub)
        note = f"FARM_CACHE={out / 'farm-cache'} CCACHE_DIR={out / 'ccache'} (both empty at the start)"
    command = [str(ROOT / ".venv" / "bin" / "pytest"), *MAKE_TEST, f"--junitxml={out / 'junit.xml'}", *args.pytest_args]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    load = Load()
    load.start()
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    cpu_before = cpu_line(Path("/proc/stat").read_text())
    t0 = time.monotonic()
    with open(out / "pytest.log", "wb") as log:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        load.ours = proc.pid
        assert proc.stdout is not None
        for line in proc.stdout:  # the log, and the suite's progress on this terminal
            log.write(line)
            sys.stdout.buffer.write(line)
            sys.stdout.flush()
        code = proc.wait()
    wall = time.monotonic() - t0
    work = cpu_work(cpu_before, cpu_line(Path("/proc/stat").read_text()), os.sysconf("SC_CLK_TCK"), os.cpu_count() or 1)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # pytest and every process it waited for (QEMU too)
    cpu = usage.ru_utime + usage.ru_stime
    load.stopped.set()
    cases = read_junit(out / "junit.xml") if (out / "junit.xml").exists() else []
    data = {"mode": name, "started": started, "command": ["pytest", *MAKE_TEST, *args.pytest_args], "env_note": note,
            "wall_seconds": wall, "cpu_seconds": cpu, "cpu_work": work, "exit": code, "commit": commit, "load": load.summary(), "cases": cases,
            "groups": by_group(cases), "lanes": by_lane(cases), "load_samples": load.samples}
    (out / "results.json").write_text(json.dumps(data, indent=1) + "\n")
    text = render(data)
    (out / "report.md").write_text(text)
    print("\n" + text)
    print(f"(report.md, results.json, junit.xml and pytest.log in {out})")
    if args.fresh and not args.keep_cache:
        for sub in ("farm-cache", "ccache"):
            shutil.rmtree(out / sub, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
