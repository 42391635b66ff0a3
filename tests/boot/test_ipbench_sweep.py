"""ipbench's method on the MaaXBoard twin, for real: the default sweep (``farm_load -m ipbench`` from the
lab host through QEMU's user-mode UDP forward to ``farm_echo -s``, the cpu_target_lukem target over
ipbench's protocol) with a short window gives the lab's wide CSV with CPU, Idle_Cycles and
Total_Cycles; ipbench-echo takes the same CPU target; and iperf3 --bidir as the lab runs it gives both
directions. One boot."""

from __future__ import annotations

import pytest

from farm.bench import echo, ipbench_sweep
from farm.bench.context import BenchContext
from farm.bench.network import Iperf3Params, SweepParams, run_echo_sweep, run_iperf3
from farm.boot.console_log import ConsoleLog
from farm.boot.facts import read_facts
from farm.boot.session import EnvFile, boot_target
from farm.measure.ipbench import WIDE_COLUMNS
from farm.results.ipbench import sweep_rows, write_wide_csv
from farm.results.record import RunContext

pytestmark = pytest.mark.boot


@pytest.fixture(scope="module")
def twin(project_root, maaxboard_image, tftp_root, tmp_path_factory):
    env = EnvFile.load(project_root / "env" / "qemu-maaxboard.yaml")
    with ConsoleLog(tmp_path_factory.mktemp("console")) as console:
        with boot_target(env, maaxboard_image, "t-ipbench", console) as booted:
            yield booted, BenchContext(booted, read_facts(booted.shell))


def test_a_short_ipbench_sweep_gives_the_labs_wide_csv(twin, tmp_path):
    booted, ctx = twin
    params = SweepParams.of({"loads": [1, 20], "samples": 400, "warmup": 1, "cooldown": 1})  # shortened, on the record
    assert params.method == "ipbench" and params.cpu_target  # the defaults
    seen = {}

    def observe(load, result, samples_text, window):
        seen[load] = (result, echo.parse_samples(samples_text), window)
        responder = booted.shell.run("tr '\\0' ' ' < /proc/$(pidof farm_echo)/cmdline")[0][0]
        seen[load] += (responder,)

    measurements = ipbench_sweep.run(ctx, params, observe=observe)
    assert booted.shell.run("pidof farm_lukem")[0] == []  # stopped after the sweep
    for load, (result, samples, window, responder) in seen.items():
        print(f"{load:g} Mb/s: {result}; {window}")
        assert result.mode == "ipbench" and result.samples == 400 and result.timeouts == 0
        assert [c.samples for c in result.clients] == [100, 100, 100, 100]  # samples // clients each
        # RTTs by receive time: every sample came back inside the windows (some sent in a warm-up)
        assert all(result.window_start <= rx < result.window_end for *_, rx in samples)
        assert responder.split()[:4] == ["farm_echo", "-d", "-p", "7"] and "-s" in responder.split()
        # the target's figures span setup to stop: warm-up, window and cool-down at least
        assert window.total / window.hz > 2 and window.counter == "cntvct_el0"
    records = [RunContext("r", "maaxboard-twin", "arm64", "default", "img", "network").record(m) for m in measurements]
    by = {(r.metric, r.params): r for r in records}
    # the window's run lengths on every record; the sample count a value of its own
    point = "cooldown=1.0;method=ipbench;packet_size=1472;requested=1000000;samples=400;timeout=60.0;warmup=1.0"
    assert {m for m, p in by if p == point} >= {
        "requested_throughput", "received_throughput", "sent_throughput", "rtt_min", "rtt_avg", "rtt_max",
        "rtt_stdev", "rtt_median", "cpu_utilisation", "idle_cycles", "total_cycles", "counter_frequency",
        "window_timeouts", "late", "lost", "rtt_samples"}
    assert by[("rtt_samples", point)].value == 400
    assert by[("idle_cycles", point)].unit == "ticks" and by[("counter_frequency", point)].value == 62_500_000
    out = tmp_path / "sweep.csv"
    write_wide_csv(out, sweep_rows(records))
    lines = out.read_text().splitlines()
    assert lines[0] == ",".join((*WIDE_COLUMNS, "Idle_Cycles", "Total_Cycles"))
    rows = [dict(zip(lines[0].split(","), line.split(","))) for line in lines[1:]]
    assert [r["Requested_Throughput"] for r in rows] == ["1000000", "20000000"]
    for row in rows:
        assert all(row[c] != "" for c in row), row
        cpu, idle, total = float(row["CPU_Utilisation"]), int(row["Idle_Cycles"]), int(row["Total_Cycles"])
        assert cpu == pytest.approx(100 * (1 - idle / total))
        # ipbench's integer figures: whole µs and bit/s
        assert all(float(row[c]).is_integer() for c in ("Receive_Throughput", "Minimum_RTT", "Median_RTT"))


def test_live_iperf3_bidir_as_the_lab_runs_it(twin):
    booted, ctx = twin
    # the lab: iperf3 -c ... --udp --bidir --bandwidth=200M --length=1472
    ms = run_iperf3(ctx, Iperf3Params.of({"protocol": "udp", "bidir": True, "bitrate": "200M", "length": 1472,
                                          "duration": 3}))
    by = {(m.params["bidir"], m.metric): m for m in ms}
    print({k: v.value for k, v in by.items()})
    assert {d for d, _ in by} == {"client-to-server", "server-to-client"}
    for direction in ("client-to-server", "server-to-client"):
        # both directions carried traffic (how much: QEMU's user-mode network on a shared host)
        assert by[(direction, "sent_throughput")].value > 1e6
        assert by[(direction, "received_throughput")].value > 0
        assert (direction, "loss") in by and (direction, "jitter") in by
        assert by[(direction, "sent_throughput")].params["bitrate"] == "200M"
        assert "direction" not in by[(direction, "sent_throughput")].params


def test_ipbench_echo_takes_the_same_cpu_target_by_default(twin):
    """farm's faster variant with the CPU target (its default) beside /proc/stat (cpu_target: false)."""
    booted, ctx = twin
    # (not saturating: past it, on a busy host, replies take longer than the window and its cool-down,
    # and this method does not count them; test_echo_sweep.py saturates)
    params = {"method": "ipbench-echo", "loads": [1, 100], "duration": 2, "warmup": 1, "cooldown": 1}
    plain = run_echo_sweep(ctx, SweepParams.of({**params, "cpu_target": False}))
    target = run_echo_sweep(ctx, SweepParams.of(params))
    assert booted.shell.run("pidof farm_lukem")[0] == []  # stopped after the sweep
    proc = {m.params["requested"]: m.value for m in plain if m.metric == "cpu_utilisation"}
    lukem_cpu = {m.params["requested"]: m for m in target if m.metric == "cpu_utilisation"}
    print(f"/proc/stat {proc}, cpu_target_lukem { {k: m.value for k, m in lukem_cpu.items()} }")
    assert {m.params.get("cpu") for m in lukem_cpu.values()} == {"lukem"}  # apart from its /proc/stat history
    assert {m.params.get("cpu") for m in plain if m.metric == "cpu_utilisation"} == {None}
    by = {(m.metric, m.params["requested"]): m for m in target}
    for requested in (1_000_000, 100_000_000):
        idle, total = by[("idle_cycles", requested)], by[("total_cycles", requested)]
        assert idle.unit == total.unit == "ticks" and 0 < idle.value <= total.value
        assert lukem_cpu[requested].value == pytest.approx(100 * (1 - idle.value / total.value))
        assert by[("counter_frequency", requested)].value == 62_500_000
        # setup to stop: the whole point (warm-up, window, cool-down), not the window alone
        assert total.value / 62.5e6 > params["warmup"] + params["duration"] + params["cooldown"]
    assert not any(m.metric.startswith("cpu0") for m in target)  # no /proc/stat beside the target
    assert any(m.metric.startswith("cpu0") for m in plain)
