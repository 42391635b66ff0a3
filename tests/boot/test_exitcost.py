"""The arm64 exit-cost micro-benchmark under KVM in the EL2 twin, for two host configurations, and
farm compare's ratios between them (pipelines/exitcost.yaml)."""

from __future__ import annotations

import csv

import pytest

from ..conftest import run_farm

pytestmark = pytest.mark.boot


def test_exit_costs_of_two_host_configurations_compare(tmp_path):
    out = tmp_path / "run"
    proc = run_farm("run", "pipelines/exitcost.yaml", "--out", str(out), timeout=1800)
    assert proc.returncode == 0, proc.stderr
    with open(out / "results.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["metric"] == "cycles"]
    tests = {"hvc", "timer-sysreg", "gicd-read", "mmio-qemu"}
    for setup in ("four-cores", "one-core"):
        got = {r["params"].split("test=")[1]: float(r["value"]) for r in rows if r["setup"] == setup}
        assert set(got) == tests and all(v > 0 for v in got.values())
    log = (out / "console" / "maaxboard-twin.log").read_text(errors="replace")
    assert log.count("farm-exitcost: done") == 2 and "at EL1" in log  # a guest's EL1, under KVM at EL2
    proc = run_farm("compare", str(out), "--out", str(tmp_path / "cmp"))
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "cmp" / "compare.csv", newline="") as f:
        compared = [r for r in csv.DictReader(f) if r["benchmark"] == "exitcost" and r["metric"] == "cycles"]
    # one boot a side: each ratio's estimate, and no verdict (n=1 gives no interval)
    assert len(compared) == 4 and all(float(r["ratio_estimate"]) > 0 for r in compared)
    assert {r["ratio"] for r in compared} == {"inconclusive"}
    assert {r["four-cores_n"] for r in compared} == {"1"} and {r["one-core_n"] for r in compared} == {"1"}
