"""farm.bench.rtt: sockperf 3.7 output captured on 127.0.0.1 (tests/data/sockperf-*), the
statistics, the commands, and one real probe against a local sockperf server when it is installed."""

from __future__ import annotations

import math
import shutil
import socket
import statistics
import subprocess
import time
from pathlib import Path

import pytest

from farm.bench.rtt import (
    RttStats, client_command, measure_rtt, parse_sockperf, parse_sockperf_log, rtt_stats,
    server_command, strip_ansi,
)
from farm.errors import JobError, ParseError
from farm.measure import BenchmarkError

DATA = Path(__file__).resolve().parent.parent / "data"


def read(name: str) -> str:
    return (DATA / name).read_text()


# --- statistics ------------------------------------------------------------------------------


def test_rtt_stats_even_count_median_is_mean_of_middle_two_and_stdev_is_population():
    stats = rtt_stats([40.0, 10.0, 30.0, 20.0])
    assert stats == RttStats(min_us=10.0, avg_us=25.0, max_us=40.0,
                             stdev_us=math.sqrt(125.0), median_us=25.0, samples=4)
    assert stats.stdev_us == pytest.approx(statistics.pstdev([10, 20, 30, 40]))


def test_rtt_stats_odd_count_and_single_sample():
    assert rtt_stats([5, 1, 3]).median_us == 3.0
    assert rtt_stats([7.5]) == RttStats(7.5, 7.5, 7.5, 0.0, 7.5, 1)


def test_rtt_stats_refuses_empty_and_nonsense():
    with pytest.raises(ValueError, match="no RTT samples"):
        rtt_stats([])
    with pytest.raises(ValueError, match="finite"):
        rtt_stats([1.0, math.nan])
    with pytest.raises(ValueError, match="-3"):
        rtt_stats([1.0, -3.0])


def test_measurements_are_sweep_metrics_in_microseconds():
    ms = rtt_stats([10, 20]).measurements({"requested": 100000000, "packet_size": 1472})
    assert [(m.benchmark, m.metric, m.value, m.unit) for m in ms] == [
        ("sweep", "rtt_min", 10.0, "us"), ("sweep", "rtt_avg", 15.0, "us"),
        ("sweep", "rtt_max", 20.0, "us"), ("sweep", "rtt_stdev", 5.0, "us"),
        ("sweep", "rtt_median", 15.0, "us"), ("sweep", "rtt_samples", 2.0, "count")]
    assert all(m.params == {"requested": 100000000, "packet_size": 1472} for m in ms)  # n: a value, not a param


# --- sockperf summary ------------------------------------------------------------------------


def test_parse_full_rtt_summary():
    assert parse_sockperf(read("sockperf-ul-rtt.txt")) == RttStats(
        min_us=12.157, avg_us=401.462, max_us=7511.704, stdev_us=796.625, median_us=17.816,
        samples=549)


def test_parse_latency_summary_is_doubled_to_round_trips():
    # without --full-rtt sockperf prints half round trips ("avg-latency=139.320")
    stats = parse_sockperf(read("sockperf-ul-latency.txt"))
    assert stats.avg_us == pytest.approx(2 * 139.320)
    assert stats.median_us == pytest.approx(2 * 14.195)
    assert stats.min_us == pytest.approx(2 * 6.214)
    assert stats.max_us == pytest.approx(2 * 3060.311)
    assert stats.stdev_us == pytest.approx(2 * 329.136)
    assert stats.samples == 553


def test_the_capture_really_has_colour_escapes():
    text = read("sockperf-ul-rtt.txt")
    assert "\x1b[2;35m" in text and "\x1b" not in strip_ansi(text)


def test_newer_sockperf_average_line_with_more_statistics():
    text = read("sockperf-ul-rtt.txt").replace(
        "(std-dev=796.625)", "(std-dev=796.625, mean-ad=400.1, median-ad=3.2, siqr=270.3, cv=1.984, "
        "std-error=33.999, 99.0% ci=[313.9, 489.0])")
    assert parse_sockperf(text).stdev_us == 796.625


def test_no_server_is_a_benchmark_error_despite_exit_status_0():
    with pytest.raises(BenchmarkError) as info:
        parse_sockperf(read("sockperf-no-server.txt"))
    assert str(info.value) == ("sockperf: No messages were received from the server. "
                               "Is the server down?")


@pytest.mark.parametrize("line, message", [
    ("sockperf: '-i' Invalid address: localhost", "'-i' Invalid address: localhost"),
    ("sockperf: ERROR: Can`t connect socket (errno=111 Connection refused)",
     "Can`t connect socket (errno=111 Connection refused)"),
])
def test_refused_argument_and_errors(line, message):
    with pytest.raises(BenchmarkError) as info:
        parse_sockperf(f"sockperf: == version #3.7-no.git ==\n{line}\n")
    assert info.value.message == message


def test_cut_short_output_names_what_is_missing():
    lines = read("sockperf-ul-rtt.txt").splitlines()
    cut = "\n".join(line for line in lines if "<MIN>" not in line and "percentile 50.000" not in line)
    with pytest.raises(ParseError, match=r"no '<MIN> observation' line, no 'percentile 50.000' line"):
        parse_sockperf(cut)


def test_bad_number_names_the_line():
    text = read("sockperf-ul-rtt.txt").replace("<MAX> observation = 7511.704", "<MAX> observation = 7511,704")
    with pytest.raises(ParseError, match=r"sockperf output line 17: max is '7511,704'"):
        parse_sockperf(text)


def test_two_runs_pasted_together():
    with pytest.raises(ParseError, match=r"second avg value \(first on line 13\)"):
        parse_sockperf(read("sockperf-ul-rtt.txt") * 2)


def test_several_servers_are_refused():
    text = read("sockperf-ul-rtt.txt").replace("Server No: 0", "Server No: 1")
    with pytest.raises(ParseError, match=r"line 11: statistics for server 1"):
        parse_sockperf(text)


# --- sockperf --full-log ---------------------------------------------------------------------


def test_full_log_rows_and_their_agreement_with_the_summary():
    log = read("sockperf-ul-rtt-log.csv")
    rtts = parse_sockperf_log(log)
    assert len(rtts) == 549
    assert rtts[:3] == [649.371, 15.072, 602.522]
    assert rtts[-1] == 21.112
    summary = parse_sockperf(read("sockperf-ul-rtt.txt"))
    ours = rtt_stats(rtts)
    # same samples: mean and (odd n) median agree with sockperf; its std-dev is the n-1 one
    assert ours.avg_us == pytest.approx(summary.avg_us, abs=0.001)
    assert ours.median_us == summary.median_us
    assert statistics.stdev(rtts) == pytest.approx(summary.stdev_us, abs=0.001)
    assert ours.stdev_us == pytest.approx(summary.stdev_us * math.sqrt(548 / 549), abs=0.001)
    assert ours.min_us == pytest.approx(summary.min_us, abs=0.0015)  # log and summary round apart


def test_full_log_rtt_is_rx_minus_tx():
    for line in read("sockperf-ul-rtt-log.csv").splitlines()[22:30]:
        _, tx, rx, rtt = (float(f) for f in line.split(","))
        assert rtt == pytest.approx((rx - tx) * 1e6, abs=0.002)


def test_full_log_without_table_is_empty_and_bad_rows_name_the_line():
    assert parse_sockperf_log(read("sockperf-no-server.txt")) == []
    broken = read("sockperf-ul-rtt-log.csv").replace("1, 2.405121635, 2.405136707, 15.072",
                                                     "1, 2.405121635 2.405136707, 15.072")
    with pytest.raises(ParseError, match=r"sockperf log line 23: 3 fields, expected 4"):
        parse_sockperf_log(broken)


# --- commands --------------------------------------------------------------------------------


def test_client_command():
    assert client_command("127.0.0.1", 11111, rate_pps=200, size=1472, duration=5,
                          full_log="/tmp/x.csv") == [
        "sockperf", "under-load", "-i", "127.0.0.1", "-p", "11111", "-t", "5", "--mps", "200",
        "-m", "1472", "--reply-every", "1", "--full-rtt", "--full-log", "/tmp/x.csv"]


@pytest.mark.parametrize("kwargs, message", [
    ({"host": "localhost"}, "IPv4 address"),
    ({"host": "-i"}, "IPv4 address"),
    ({"port": 0}, "1-65535"),
    ({"rate_pps": 0}, "whole number of packets/s, 1-1000000"),
    ({"rate_pps": 10.5}, "whole number of packets/s, 1-1000000"),
    ({"rate_pps": 10**7}, "whole number of packets/s, 1-1000000"),
    ({"size": 13}, "14-65507"),
    ({"size": 65508}, "14-65507"),
    ({"duration": 1.5}, "truncates fractions"),
    ({"duration": 0}, "whole seconds, 1-86400"),
    ({"duration": 10**9}, "whole seconds, 1-86400"),
])
def test_client_command_refuses_what_sockperf_would_misread(kwargs, message):
    args = {"host": "10.0.2.15", "port": 11111, "rate_pps": 100, "size": 1472, "duration": 3, **kwargs}
    host, port = args.pop("host"), args.pop("port")
    with pytest.raises(JobError, match=message):
        client_command(host, port, **args)


def test_server_command():
    assert server_command() == ["sockperf", "server", "-i", "0.0.0.0", "-p", "11111"]
    assert server_command(7000, bind="127.0.0.1", daemonize=True)[-1] == "--daemonize"
    with pytest.raises(JobError):
        server_command(70000)


# --- a real probe on 127.0.0.1 ---------------------------------------------------------------


def test_measure_rtt_without_sockperf_installed(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BenchmarkError, match="not installed"):
        measure_rtt("127.0.0.1", 9, rate_pps=10, size=64, duration=1)


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_udp_bound(port: int) -> None:
    wanted = f":{port:04X} "
    for _ in range(100):  # up to 2 s
        if any(wanted in line.split()[1] + " " for line in Path("/proc/net/udp").read_text().splitlines()[1:]):
            return
        time.sleep(0.02)
    raise AssertionError(f"sockperf server did not bind UDP port {port}")


@pytest.mark.skipif(shutil.which("sockperf") is None, reason="sockperf not installed")
def test_measure_rtt_against_a_local_sockperf_server():
    port = _free_udp_port()
    server = subprocess.Popen(server_command(port, bind="127.0.0.1"), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        _wait_udp_bound(port)
        stats = measure_rtt("127.0.0.1", port, rate_pps=200, size=64, duration=1)
    finally:
        server.terminate()
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=5)
    assert stats.samples > 50  # ~0.55 s of a 1 s run at 200/s
    assert 0 < stats.min_us <= stats.median_us <= stats.max_us
    assert stats.min_us <= stats.avg_us <= stats.max_us
