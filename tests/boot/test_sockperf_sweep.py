"""The oldest sweep method, ``iperf3-sockperf``, on the MaaXBoard twin, for real: iperf3 from the lab host to
the twin's iperf3 server at the requested rate, sockperf's probe beside it, the twin's CPU from /proc/stat
around the point, said of which CPU it is (``cores=board``) like the other methods' figures."""

from __future__ import annotations

import pytest

from farm.bench.context import BenchContext
from farm.bench.network import SweepParams, run_iperf3_sweep
from farm.boot.console_log import ConsoleLog
from farm.boot.facts import read_facts
from farm.boot.session import EnvFile, boot_target
from farm.measure import cpustat

pytestmark = pytest.mark.boot


def test_one_point_measures_throughput_rtt_and_the_boards_cpu(project_root, maaxboard_image, tftp_root, tmp_path):
    env = EnvFile.load(project_root / "env" / "qemu-maaxboard.yaml")
    params = SweepParams.of({"method": "iperf3-sockperf", "loads": [2], "duration": 2, "warmup": 0, "rtt_rate": 50})
    with ConsoleLog(tmp_path / "console") as console:
        with boot_target(env, maaxboard_image, "t-sockperf-sweep", console) as booted:
            measurements = run_iperf3_sweep(BenchContext(booted, read_facts(booted.shell)), params)
    by = {m.metric: m for m in measurements}
    assert by["requested_throughput"].value == 2e6
    assert 0 < by["received_throughput"].value <= 1.1 * by["sent_throughput"].value, by
    assert by["rtt_median"].value > 0
    cpu = [m for m in measurements if m.metric == "cpu_utilisation"]
    assert len(cpu) == 1 and cpu[0].params[cpustat.CORES] == cpustat.BOARD and 0 < cpu[0].value <= 100, cpu
    assert all(m.params["method"] == "iperf3-sockperf" and m.params["requested"] == 2_000_000 for m in measurements)
