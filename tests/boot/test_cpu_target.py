"""The idle-cycle CPU target on the MaaXBoard twin: farm_spin's utilisation against /proc/stat's, the
same loads in one boot, without and with the spinners."""

from __future__ import annotations

import pytest

from farm.bench.context import BenchContext
from farm.bench.network import SweepParams, run_echo_sweep
from farm.boot.console_log import ConsoleLog
from farm.boot.facts import read_facts
from farm.boot.session import EnvFile, boot_target

pytestmark = pytest.mark.boot


def test_the_cpu_target_agrees_in_trend_with_proc_stat(project_root, maaxboard_image, tftp_root, tmp_path):
    env = EnvFile.load(project_root / "env" / "qemu-maaxboard.yaml")
    params = {"loads": [1, 1000], "duration": 2, "warmup": 1, "cooldown": 1}
    with ConsoleLog(tmp_path / "console") as console:
        with boot_target(env, maaxboard_image, "t-cpu-target", console) as booted:
            ctx = BenchContext(booted, read_facts(booted.shell))
            plain = run_echo_sweep(ctx, SweepParams.of(params))
            spun = run_echo_sweep(ctx, SweepParams.of({**params, "cpu_target": True}))
            left = booted.shell.run("pidof farm_spin")[0]
    assert left == []  # stopped after the sweep
    proc = {m.params["requested"]: m.value for m in plain if m.metric == "cpu_utilisation"}
    target = {m.params["requested"]: m.value for m in spun if m.metric == "cpu_utilisation"}
    assert {m.params.get("cpu") for m in spun if m.metric == "cpu_utilisation"} == {"farm_spin"}
    cycles = {(m.metric, m.params["requested"]): m for m in spun if m.metric in ("idle_cycles", "total_cycles")}
    print(f"/proc/stat {proc}, cpu target {target}")
    low, high = 1_000_000, 1_000_000_000
    assert proc[high] > proc[low] + 5, proc
    assert target[high] > target[low] + 5, target  # the same trend
    for requested in (low, high):
        idle, total = cycles[("idle_cycles", requested)], cycles[("total_cycles", requested)]
        assert idle.unit == total.unit == "iterations" and 0 < idle.value and 0 < total.value
        assert target[requested] == pytest.approx(100 * (1 - idle.value / total.value), abs=1e-9) \
            or (target[requested] == 0 and idle.value > total.value)
    # no /proc/stat figures with the target: they would count the spinners as busy
    assert not any(m.metric.startswith("cpu0") for m in spun)
    # the sweep's second run in this boot reached the responder through the same forward (a second
    # QEMU UDP forward to port 7 was never answered: the spun sweep failed with n=0 before)
