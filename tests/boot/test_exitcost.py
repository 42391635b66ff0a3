"""The arm64 exit-cost micro-benchmark under KVM in the EL2 twin (pipelines/exitcost.yaml's first setup),
and farm compare's join of its figures between two runs.

The pipeline compares two host configurations (4 cores vs 1); the test boots one: a setup of ``cpus: 1``
is booted by tests/boot/test_suites.py's sweep, and a second EL2 boot with its nested guest costs ~65
core-seconds for no path of its own."""

from __future__ import annotations

import csv
import shutil

import pytest

from ..conftest import ROOT, run_farm

pytestmark = pytest.mark.boot

TESTS = {"hvc", "timer-sysreg", "gicd-read", "mmio-qemu"}


def test_exit_costs_measured_under_kvm_and_compared(tmp_path):
    text = (ROOT / "pipelines" / "exitcost.yaml").read_text().replace("../", f"{ROOT}/")
    one_core = "  - {name: one-core, cpus: 1}\n"
    assert one_core in text, "pipelines/exitcost.yaml's second setup changed: update this test"
    pipeline = tmp_path / "exitcost.yaml"
    pipeline.write_text(text.replace(one_core, ""))
    out = tmp_path / "run"
    proc = run_farm("run", str(pipeline), "--out", str(out), timeout=1800)
    assert proc.returncode == 0, proc.stderr
    with open(out / "results.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["metric"] == "ticks"]
    got = {r["params"].split("test=")[1]: float(r["value"]) for r in rows if r["setup"] == "four-cores"}
    assert set(got) == TESTS and all(v > 0 for v in got.values())
    log = (out / "console" / "maaxboard-twin.log").read_text(errors="replace")
    assert log.count("farm-exitcost: done") == 1 and "at EL1" in log  # a guest's EL1, under KVM at EL2
    # two runs of it compared (here the run and its copy): the four tests join, one boot a side gives each
    # ratio's estimate and no verdict (n=1 gives no interval)
    shutil.copytree(out, tmp_path / "again")
    proc = run_farm("compare", str(out), str(tmp_path / "again"), "--out", str(tmp_path / "cmp"))
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "cmp" / "compare.csv", newline="") as f:
        compared = [r for r in csv.DictReader(f) if r["benchmark"] == "exitcost" and r["metric"] == "ticks"]
    assert {r["params"].split("test=")[1] for r in compared} == TESTS
    assert all(float(r["ratio_estimate"]) == 1.0 for r in compared)
    assert {r["ratio"] for r in compared} == {"inconclusive"}
