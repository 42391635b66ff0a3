"""ipbench's latency client (``farm_load -m ipbench``) against ipbench's kind of echo (``farm_echo -s``)
on loopback, both built here: each client's window ends on its sample count, samples are taken by
receive time inside it, and the figures are latency.c's, recomputed from the per-sample dump by
farm.measure.ipbench_latency. And the method's defaults are ipbench's."""

from __future__ import annotations

import re
import socket
import subprocess
import time
from decimal import Decimal
from pathlib import Path

import pytest

from farm.bench import echo, ipbench_sweep
from farm.bench.network import SweepParams
from farm.errors import JobError
from farm.measure import BenchmarkError
from farm.measure.ipbench_latency import ClientRun, latency_line

SRC = Path(__file__).resolve().parents[2] / "images" / "src"
_CLIENT = re.compile(r"^client (?P<k>\d+) (?P<kv>.*)$", re.M)


def _port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def generator(tmp_path_factory) -> Path:
    return echo.host_generator(tmp_path_factory.mktemp("gen"))


@pytest.fixture
def responder(tmp_path):
    binary = tmp_path / "farm_echo"
    subprocess.run(["gcc", "-O2", "-Wall", "-o", str(binary), str(SRC / "farm_echo.c")], check=True)
    port = _port()
    proc = subprocess.Popen([str(binary), "-s", "-p", str(port)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith(f"farm_echo: port {port}")
        yield port
    finally:
        proc.kill()
        proc.wait()


def _clients(output: str) -> dict[int, dict[str, Decimal]]:
    return {int(m["k"]): {k: Decimal(v) for k, v in (item.split("=") for item in m["kv"].split())}
            for m in _CLIENT.finditer(output)}


def _spec(given: dict, load_mbps: float) -> ipbench_sweep.PointSpec:
    """A point of a sweep of these params (method ipbench, its defaults), checked as a pipeline file's."""
    return ipbench_sweep.point_spec(SweepParams.of({**given, "loads": [load_mbps]}), load_mbps)


def _ns(text: str) -> int:
    return int(Decimal(text) * 10**9)


def test_each_window_ends_on_its_samples_and_the_figures_are_latency_c(generator, responder, tmp_path):
    spec = _spec({"samples": 6000, "warmup": 0.3, "cooldown": 0.2, "clients": 3}, 30)
    dump = tmp_path / "samples.txt"
    edges: list[str] = []
    output = echo.run_load(spec.argv(str(generator), "127.0.0.1", responder) + ["-o", str(dump)],
                           on_edge=edges.append, timeout=60)
    r = echo.parse_load(output)
    assert edges == ["start", "end"] and r.mode == "ipbench"
    assert (r.samples, r.timeouts, len(r.clients)) == (6000, 0, 3)
    clients = _clients(output)
    assert {k: int(c["samples"]) for k, c in clients.items()} == {0: 2000, 1: 2000, 2: 2000}  # samples // clients
    rows = [line.split() for line in dump.read_text().splitlines()]
    rtts: dict[int, list[int]] = {k: [] for k in clients}
    for k, _seq, tx, rx in rows:
        c = clients[int(k)]
        # by receive time: inside the client's own window (a reply to a packet sent in the warm-up counts)
        assert c["window_start"] <= Decimal(rx) < c["window_end"], (k, rx)
        rtts[int(k)].append((_ns(rx) - _ns(tx)) // 1000)
    runs = [ClientRun(requested=spec.per_client_bps, window_us=int(c["window_us"]), sent=int(c["window_sent"]),
                      rtts_us=rtts[k], size=spec.size) for k, c in sorted(clients.items())]
    line = latency_line(runs)
    assert (r.requested, r.receive, r.send, r.size, r.rtt_min, r.rtt_avg, r.rtt_max, r.rtt_median) == (
        line.requested, line.achieved, line.sent, line.size, line.rtt_min, line.rtt_avg, line.rtt_max, line.rtt_median)
    assert f"{r.rtt_stdev:.2f}" == f"{line.rtt_stdev:.2f}"
    assert r.requested == 30_000_000 and all(int(c["achieved"]) == run.achieved for c, run in
                                             zip((clients[k] for k in sorted(clients)), runs))
    # the window is the sample count's, not a duration: 2000 replies at 10 Mb/s of 1472 B take ~2.4 s
    assert 1.5 < float(r.window_end - r.window_start) < 10


def test_a_window_without_replies_ends_on_the_time_out_and_says_so(generator, tmp_path):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:  # bound, never answers
        silent.bind(("127.0.0.1", 0))
        port = silent.getsockname()[1]
        spec = _spec({"samples": 100, "warmup": 0.1, "cooldown": 0.1, "clients": 2,
                                         "timeout": 0.5}, 1)
        began = time.monotonic()
        output = echo.run_load(spec.argv(str(generator), "127.0.0.1", port), on_edge=lambda e: None, timeout=30)
    assert time.monotonic() - began < 10
    assert re.search(r"^result .* timeouts=2 ", output, re.M), output
    assert [c["timed_out"] for c in _clients(output).values()] == [1, 1]
    with pytest.raises(BenchmarkError, match="no packet came back"):
        echo.parse_load(output)


def test_the_methods_defaults_are_ipbenchs():
    spec = _spec({}, 10)
    assert (spec.samples, spec.warmup, spec.cooldown, spec.clients, spec.size) == (200_000, 10, 10, 4, 1472)
    assert spec.per_client_bps == 2_500_000
    # 50,000 replies at 212 packets/s per client: 236 s; the time-out is ten times that
    assert spec.timeout == 2356
    argv = spec.argv("farm_load", "10.0.0.2", 7)
    assert argv[:3] == ["farm_load", "-m", "ipbench"] and ["-N", "200000"] == argv[argv.index("-N"):][:2]
    assert _spec({"samples": 40, "clients": 4}, 1000).timeout == 60  # at least a minute


@pytest.mark.parametrize("params, message", [
    ({"samples": 3}, "sweep samples 3: fewer than the 4 clients"),
    ({"warmup": -1}, "sweep warmup -1: expected a number >= 0"),
    ({"timeout": 0}, "sweep timeout 0: expected a number > 0"),
    ({"clients": 65}, "sweep clients 65: expected a whole number > 0, at most 64"),
    ({"packet_size": 20}, "sweep packet_size 20: expected 24-65507 bytes"),
])
def test_bad_values_are_job_errors(params, message):
    with pytest.raises(JobError, match=re.escape(message)):
        _spec(params, 10)


def test_ipbenchs_unsigned_variance_and_upper_median():
    # avg = 10 // 3 = 3 (integer), dev = ((3-1)^2 + (3-2)^2 + (3-7)^2) // 3 = 21 // 3 = 7; median sorted[1]
    line = latency_line([ClientRun(requested=5, window_us=1_000_000, sent=3, rtts_us=[7, 1, 2], size=1472)])
    assert (line.rtt_avg, line.rtt_stdev ** 2, line.rtt_median, line.achieved) == (3, pytest.approx(7), 2, 35328)
    assert line.text() == "5,35328,35328,1472,1,3,7,2.65,2"
