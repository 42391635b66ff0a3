"""farm_load's output parser, on real output recorded here (tests/data/farm-load-*.txt), the
generator's checks and the host-side build, and the sweep's CPU window and run-length keys."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from farm.bench import echo
from farm.bench.network import SweepParams
from farm.errors import JobError, ParseError
from farm.measure import BenchmarkError, cpustat
from farm.results.record import Record
from farm.results.sweeps import point_params, run_sweeps

DATA = Path(__file__).resolve().parents[1] / "data"


def _text(name: str) -> str:
    return (DATA / name).read_text()


def test_parse_real_100M_run():
    r = echo.parse_load(_text("farm-load-loopback-100M.txt"))
    assert (r.requested, r.size, r.samples, r.lost) == (100e6, 1472, 8492, 0)
    assert r.send == r.receive == 100e6
    assert r.rtt_min <= r.rtt_median <= r.rtt_max and r.rtt_min <= r.rtt_avg <= r.rtt_max
    assert len(r.clients) == 4 and sum(c.window_sent for c in r.clients) == r.samples + r.lost
    # every sample was sent in the window and came back before the load ended
    assert r.window_start <= r.first_tx < r.window_end and r.last_rx <= r.load_end


def test_parse_real_saturated_run_and_measurements():
    r = echo.parse_load(_text("farm-load-loopback-1G.txt"))
    assert r.requested == 1e9 and r.receive < r.send and r.lost > 0
    ms = {m.metric: m for m in r.measurements({"requested": 1000000000, "packet_size": 1472})}
    assert ms["rtt_median"].value == r.rtt_median and ms["rtt_median"].unit == "us"
    assert ms["received_throughput"].value == r.receive and ms["sent_throughput"].unit == "bit/s"
    assert all(m.params == {"requested": 1000000000, "packet_size": 1472, "method": "ipbench-echo"}
               for m in ms.values())  # the sample count is a value of its own, never a param
    assert (ms["rtt_samples"].value, ms["rtt_samples"].unit) == (r.samples, "count")


def test_parse_sample_count_run():
    r = echo.parse_load(_text("farm-load-loopback-samples.txt"))
    assert r.samples == 2000 and len(r.clients) == 2 and r.size == 200


def test_nothing_came_back_is_a_benchmark_failure():
    with pytest.raises(BenchmarkError, match="no packet came back"):
        echo.parse_load(_text("farm-load-no-responder.txt"))


@pytest.mark.parametrize("mangle, match", [
    (lambda t: t.replace("farm_load 1", "hello"), "line 1: not farm_load output"),
    (lambda t: "\n".join(l for l in t.splitlines() if not l.startswith("result")), "no result line"),
    (lambda t: t + t, "second run's header"),
    (lambda t: t.replace(" median=", " median=x"), "median is 'x"),
    (lambda t: t.replace(" median=", " median=-"), "median"),
    (lambda t: t.replace(" n=8492", " n=8491"), "add up"),
    (lambda t: t.replace(" lost=0", ""), "no lost"),
])
def test_bad_output_names_the_line(mangle, match):
    with pytest.raises((ParseError, BenchmarkError), match=match):
        echo.parse_load(mangle(_text("farm-load-loopback-100M.txt")))


def test_load_spec_checks():
    assert echo.load_spec(1e9, duration=2).samples is None
    for kwargs, match in [({"duration": 2, "samples": 10}, "not both"), ({}, "neither"),
                          ({"duration": 2, "size": 10}, "24-65507"), ({"duration": 2, "clients": 0}, "clients"),
                          ({"duration": -1}, "duration"), ({"samples": 1.5}, "whole"),
                          ({"duration": 2, "warmup": True}, "warmup")]:
        with pytest.raises(JobError, match=match):
            echo.load_spec(1e9, **kwargs)


def test_responder_options_are_checked():
    assert "farm_echo -d -p 7 -P 50 -c 1" in echo.responder_command(7, priority=50, cpu=1)
    with pytest.raises(JobError, match="1-99"):
        echo.responder_command(7, priority=100)
    with pytest.raises(JobError, match="echo_cpu"):
        echo.responder_command(7, cpu=-1)


def test_sweep_params_by_method():
    echo_method = {"method": "ipbench-echo"}
    SweepParams.of({**echo_method, "loads": [10, 1000], "duration": 2})
    SweepParams.of({"loads": [10], "samples": 200000, "clients": 4, "echo_priority": 90, "echo_cpu": 0})  # ipbench
    SweepParams.of({"loads": [10], "samples": 4000, "warmup": 1, "cooldown": 1, "timeout": 30, "cpu_target": False})
    SweepParams.of({"method": "iperf3-sockperf", "loads": [10], "duration": 2, "rtt_rate": 100})
    with pytest.raises(JobError, match="rtt_rate not a parameter"):
        SweepParams.of({**echo_method, "loads": [10], "rtt_rate": 100})
    with pytest.raises(JobError, match="sweep method ipbench: duration not a parameter"):
        SweepParams.of({"loads": [10], "duration": 2})  # ipbench's window is a sample count
    with pytest.raises(JobError, match="method 'ping'"):
        SweepParams.of({"method": "ping"})
    with pytest.raises(JobError, match="not both"):
        SweepParams.of({**echo_method, "loads": [10], "duration": 2, "samples": 100})


def test_each_sweep_method_has_its_own_defaults():
    ipbench = SweepParams.of({})
    assert ipbench.method == "ipbench"  # the default method, with ipbench's window and its CPU target
    assert (ipbench.samples, ipbench.warmup, ipbench.cooldown, ipbench.clients, ipbench.packet_size) == \
        (200_000, 10, 10, 4, 1472)
    assert ipbench.cpu_target and ipbench.timeout is None and ipbench.seconds is None and ipbench.given() == {}
    paced = SweepParams.of({"method": "ipbench-echo"})
    assert (paced.samples, paced.warmup, paced.cooldown, paced.seconds, paced.cpu_target) == (None, 1, 1, 5, True)
    assert paced.given() == {"method": "ipbench-echo"}
    sockperf = SweepParams.of({"method": "iperf3-sockperf"})
    assert (sockperf.warmup, sockperf.seconds, sockperf.with_cpu_target) == (1, 5, False)
    # a value given is the value, also where it is another method's default
    short = SweepParams.of({"samples": 4000, "warmup": 1, "cooldown": 1})
    assert (short.samples, short.warmup, short.cooldown) == (4000, 1, 1)
    assert short.given() == {"samples": 4000, "warmup": 1, "cooldown": 1}
    # the window's lengths are run lengths (never a record's identity); the method and point are not
    assert {"samples", "warmup", "cooldown", "timeout", "duration"} <= SweepParams.run_length()
    assert not {"method", "packet_size", "loads"} & SweepParams.run_length()


def test_a_shortened_ipbench_window_joins_the_labs():
    from farm.results.identity import MetricKey

    def rec(params: str) -> Record:
        return Record("r", "t", "tw", "arm64", "s", "img", "network", "sweep", params, 0, "rtt_median", 1.0, "us")

    point = "method=ipbench;packet_size=1472;requested=10000000"
    short = rec(f"cooldown=1.0;{point};samples=400;timeout=60.0;warmup=1.0")
    assert MetricKey.of(short) == MetricKey.of(rec(point))  # a lab import's key: no run lengths
    assert MetricKey.of(rec(point.replace("ipbench", "ipbench-echo"))) != MetricKey.of(rec(point))


def test_host_generator_builds_once_and_runs_against_the_responder(tmp_path):
    """The real generator against the real responder (both built here) on loopback."""
    binary = echo.host_generator(tmp_path)
    assert echo.host_generator(tmp_path) == binary  # cached
    responder = tmp_path / "farm_echo"
    subprocess.run(["gcc", "-O2", "-o", str(responder), str(echo.SOURCE.parent / "farm_echo.c")], check=True)
    port = 17000 + (time.time_ns() // 1000) % 3000
    proc = subprocess.Popen([str(responder), "-p", str(port)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith(f"farm_echo: port {port}")
        edges = []
        spec = echo.load_spec(20e6, duration=0.5, warmup=0.2, cooldown=0.2, clients=3)
        dump = tmp_path / "samples.txt"
        out = echo.run_load(echo.load_command(str(binary), "127.0.0.1", port, spec, dump=str(dump)),
                            on_edge=edges.append, timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert edges == ["start", "end"]
    r = echo.parse_load(out)
    samples = echo.parse_samples(dump.read_text())
    assert len(samples) == r.samples > 0 and {c for c, *_ in samples} == {0, 1, 2}
    assert all(r.window_start <= tx < r.window_end and tx < rx <= r.load_end for _, _, tx, rx in samples)


def test_edited_source_rebuilds_and_a_compile_error_names_it(tmp_path):
    src = tmp_path / "farm_load.c"
    src.write_text("int main(void) { return 0 }\n")
    with pytest.raises(JobError, match="farm_load.c: does not compile"):
        echo.host_generator(tmp_path, src)
    src.write_text("int main(void) { return 0; }\n")
    first = echo.host_generator(tmp_path, src)
    src.write_text("int main(void) { return 1; }\n")
    assert echo.host_generator(tmp_path, src) != first


def test_per_core_proc_stat():
    text = "cpu  10 0 10 80\ncpu0 5 0 5 40\ncpu1 5 0 5 40\nintr 1\n"
    cores = cpustat.parse_proc_stat_cores(text)
    assert set(cores) == {"cpu", "cpu0", "cpu1"} and cores["cpu1"].idle == 40 and cores["cpu"].cpus == 2
    with pytest.raises(ParseError, match="line 3: cpu0 a second time"):
        cpustat.parse_proc_stat_cores("cpu 1 1 1 1\ncpu0 1 1 1 1\ncpu0 1 1 1 1\n")


def _rec(params: str, metric: str, value: float, repeat: int) -> Record:
    return Record(run_id="r", timestamp="t", target="tw", arch="arm64", setup="s", image="i", suite="network",
                  benchmark="sweep", params=params, repeat=repeat, metric=metric, value=value, unit="us")


def test_repeats_with_different_sample_counts_fold_into_one_point():
    assert point_params("method=ipbench-echo;n=5;packet_size=1472;requested=10") == \
        "method=ipbench-echo;packet_size=1472;requested=10"
    recs = [_rec("method=ipbench-echo;n=100;packet_size=1472;requested=10", "rtt_median", 10.0, 0),
            _rec("method=ipbench-echo;n=99;packet_size=1472;requested=10", "rtt_median", 30.0, 1),
            _rec("method=ipbench-echo;n=98;packet_size=1472;requested=10", "rtt_median", 20.0, 2)]
    (sweep,) = run_sweeps(recs)
    assert sweep.rows[0]["Median_RTT"] == 20.0 and sweep.repeats == 3 and sweep.method == "ipbench-echo"


def test_methods_make_separate_sweeps():
    recs = [_rec("method=ipbench;n=100;packet_size=1472;requested=10", "rtt_median", 12.0, 0),
            _rec("method=ipbench-echo;n=100;packet_size=1472;requested=10", "rtt_median", 10.0, 0),
            _rec("method=iperf3-sockperf;n=100;packet_size=1472;requested=10", "rtt_median", 900.0, 0)]
    sweeps = run_sweeps(recs)
    from farm.results.sweeps import wide_csv_name
    # ipbench's figures are the run's wide CSV; farm's variants get their method's name
    assert sorted(wide_csv_name(s) for s in sweeps) == ["sweep-tw-s-ipbench-echo.csv", "sweep-tw-s-iperf3-sockperf.csv",
                                                        "sweep-tw-s.csv"]


def test_compare_joins_runs_whose_sample_counts_differ(tmp_path):
    """Two live sweeps: n= differs at every point, the points still join (run-length params)."""
    import csv
    import sys

    from farm.results.csvout import write_records

    for name, n, value in (("a", 100, 10.0), ("b", 97, 20.0)):
        (tmp_path / name).mkdir()
        r = _rec(f"method=ipbench-echo;n={n};packet_size=1472;requested=10", "rtt_median", value, 0)
        write_records(tmp_path / name / "results.csv", [attrs_evolve(r, run_id=f"run-{name}")])
    proc = subprocess.run([sys.executable, "-m", "farm.cli", "compare", str(tmp_path / "a"), str(tmp_path / "b"),
                           "--out", str(tmp_path / "cmp")], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "cmp" / "compare.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["metric"] == "rtt_median"]
    assert len(rows) == 1 and float(rows[0]["ratio"]) == 2.0, rows


def attrs_evolve(record, **changes):
    import attrs

    return attrs.evolve(record, **changes)


@pytest.mark.parametrize("params, message", [
    ("{loads: [10], echo_priority: 120}", ": benchmarks[0].sweep: echo_priority 120: expected a SCHED_FIFO priority 1-99"),
    ("{loads: [10], rtt_rate: 100}", ": benchmarks[0].sweep: sweep method ipbench: rtt_rate not a parameter"),
    ("{loads: [10], samples: 3}", ": benchmarks[0].sweep: sweep samples 3: fewer than the 4 clients"),
    ("{method: ipbench-echo, loads: [10], duration: 2, samples: 100}", "not both"),
])
def test_bad_sweep_params_are_job_errors_naming_the_line(tmp_path, params, message):
    import sys

    root = Path(__file__).resolve().parents[2]
    text = (root / "pipelines" / "network.yaml").read_text().replace("../", f"{root}/")
    lines = text.splitlines()
    (index,) = [i for i, line in enumerate(lines) if line.startswith("  - sweep:")]
    lines[index] = f"  - sweep: {params}"
    message = f"{index + 1}{message}" if message.startswith(":") else message
    pipeline = tmp_path / "bad.yaml"
    pipeline.write_text("\n".join(lines) + "\n")
    proc = subprocess.run([sys.executable, "-m", "farm.cli", "run", str(pipeline), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, cwd=root, timeout=60)
    assert proc.returncode == 2 and f"{pipeline}:" in proc.stderr and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_parse_real_twin_runs():
    idle = echo.parse_load(_text("farm-load-twin-10M.txt"))
    loaded = echo.parse_load(_text("farm-load-twin-1G.txt"))
    assert idle.lost == 0 and idle.samples == 1700 and idle.receive == pytest.approx(idle.send, rel=0.001)
    assert loaded.receive < 0.2 * loaded.send and loaded.lost > loaded.samples
    assert loaded.rtt_median > 100 * idle.rtt_median
    for r in (idle, loaded):
        assert r.window_start <= r.first_tx < r.window_end and r.last_rx <= r.load_end


def test_the_percentiles_are_those_of_the_samples():
    """p10/p90 of a real run (farm_load with percentiles) are sorted[floor(n p)] of its -o samples, in µs."""
    r = echo.parse_load(_text("farm-load-loopback-percentiles.txt"))
    rtts = sorted(rx - tx for *_, tx, rx in echo.parse_samples(_text("farm-load-loopback-percentiles-samples.txt")))
    assert len(rtts) == r.samples == 2000
    assert r.rtt_p10 == pytest.approx(rtts[200] * 1e6, abs=0.002)
    assert r.rtt_p90 == pytest.approx(rtts[1800] * 1e6, abs=0.002)
    assert r.rtt_min <= r.rtt_p10 <= r.rtt_median <= r.rtt_p90 <= r.rtt_max
    metrics = {m.metric: m for m in r.measurements({"requested": 10_000_000})}
    assert metrics["rtt_p10"].value == r.rtt_p10 and metrics["rtt_p90"].unit == "us"
    # output of a generator built before the percentiles: parsed, without them
    older = echo.parse_load(_text("farm-load-loopback-samples.txt"))
    assert older.rtt_p10 is None and "rtt_p10" not in {m.metric for m in older.measurements()}
