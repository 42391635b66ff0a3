"""The ipbench-echo sweep (farm's faster variant) on the MaaXBoard twin, for real: the lab host's
farm_load through QEMU's user-mode UDP forward to farm_echo in the twin's initrd."""

from __future__ import annotations

import statistics

import pytest

from farm.bench import echo
from farm.bench.context import BenchContext
from farm.bench.network import SweepParams, run_echo_sweep
from farm.boot.console_log import ConsoleLog
from farm.boot.facts import read_facts
from farm.boot.session import EnvFile, boot_target

pytestmark = pytest.mark.boot


def test_rtt_samples_lie_in_the_load_window_and_saturation_queues(project_root, maaxboard_image, tftp_root,
                                                                   tmp_path):
    env = EnvFile.load(project_root / "env" / "qemu-maaxboard.yaml")
    seen: dict[float, tuple[echo.LoadResult, list]] = {}
    cpu_seconds: dict[float, float] = {}

    def observe(load, result, samples_text, cpu_window):
        seen[load] = (result, echo.parse_samples(samples_text))
        cpu_seconds[load] = cpu_window
        print(f"{load:g} Mb/s: {result}")

    # /proc/stat at the window's edges (the CPU target is tests/boot/test_cpu_target.py's)
    params = {"method": "ipbench-echo", "loads": [1, 1000], "duration": 2, "warmup": 1, "cooldown": 1,
              "cpu_target": False}
    with ConsoleLog(tmp_path / "console") as console:
        with boot_target(env, maaxboard_image, "t-echo-sweep", console) as booted:
            ctx = BenchContext(booted, read_facts(booted.shell))
            measurements = run_echo_sweep(ctx, SweepParams.of(params), observe=observe)
    assert set(seen) == {1.0, 1000.0}
    for load, (result, samples) in seen.items():
        assert len(samples) == result.samples > 0
        # every RTT sample: sent inside the measured window, back before the load stopped
        for _client, _seq, tx, rx in samples:
            assert result.window_start <= tx < result.window_end, (load, tx)
            assert tx < rx <= result.load_end, (load, rx)
        median = statistics.median_high(rx - tx for *_, tx, rx in samples) * 1e6
        assert median == pytest.approx(result.rtt_median, abs=0.01)
    idle, loaded = seen[1.0][0], seen[1000.0][0]
    # 1 Mb/s all comes back: every packet sent in the window, before the load stopped; and what came
    # back in the window (ipbench's receive) is what was sent in it, less its replies that came after
    # it, plus replies to the warm-up that came in it (a busy twin sends them late, in a burst: CI
    # saw receive 2.4 % above send)
    assert idle.lost == 0, idle
    length, bits = idle.window_end - idle.window_start, idle.size * 8
    sent, received = round(idle.send * length / bits), round(idle.receive * length / bits)
    after = sum(1 for *_, tx, rx in seen[1.0][1] if rx >= idle.window_end)
    from_warmup = received - (sent - after)
    assert 0 <= from_warmup <= 1e6 * params["warmup"] / bits + 1, (sent, received, after)
    assert loaded.receive < 0.9 * loaded.requested  # past saturation on the twin
    assert loaded.rtt_median > 10 * idle.rtt_median, (idle.rtt_median, loaded.rtt_median)
    by = {(m.metric, m.params["requested"]): m for m in measurements}
    for requested in (1000000, 1000000000):
        assert by[("rtt_median", requested)].params["method"] == "ipbench-echo"
        assert "n" not in by[("rtt_median", requested)].params  # the sample count is a value of its own
        assert by[("rtt_samples", requested)].value == seen[requested / 1e6][0].samples
        assert 0 <= by[("cpu_utilisation", requested)].value <= 100
        assert {("cpu0_utilisation", requested), ("cpu3_utilisation", requested)} <= set(by)
        # the CPU is read at the window's edges: over ~duration, not warm-up + duration + cool-down
        assert 1.5 < cpu_seconds[requested / 1e6] < 3.0, cpu_seconds
