"""The idle-cycle CPU target (farm.bench.cputarget, images/src/farm_spin.c): its output, the
arithmetic of a window, /proc/stat with the spinners' time as idle, and the wide CSV's columns."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from farm.bench import cputarget
from farm.bench.network import SweepParams
from farm.errors import JobError, ParseError
from farm.results.ipbench import sweep_rows, write_wide_csv
from farm.results.record import Record

DATA = Path(__file__).resolve().parents[1] / "data"
SOURCE = Path(__file__).resolve().parents[2] / "images" / "src" / "farm_spin.c"


def test_the_reads_of_a_real_calibration():
    first, second = cputarget.parse_reads((DATA / "farm-spin-host-calibration.txt").read_text().splitlines())
    assert second.ticks == 58 and second.cores == (1424162816, 694198272)
    assert cputarget.idle_rate(first, second) == pytest.approx((2118361088 - 262144) / 1.002338)


def test_other_lines_are_skipped_and_a_bad_read_is_an_error():
    lines = ["cpu  1 2 3 4", "farm_spin t=10.5 ticks=3 cores=2 count=30 c0=10 c1=20"]
    assert cputarget.parse_reads(lines) == [cputarget.SpinCounts(10.5, 3, 30, (10, 20))]
    with pytest.raises(ParseError, match="per-core counts"):
        cputarget.parse_reads(["farm_spin t=1.0 ticks=0 cores=2 count=31 c0=10 c1=20"])
    with pytest.raises(ParseError, match="not its output"):
        cputarget.parse_reads(["farm_spin t=1.0 ticks=x"])


def test_a_window_half_idle_is_half_utilised():
    rate = 1000.0  # iterations/s idle
    w = cputarget.window(rate, cputarget.SpinCounts(10.0, 0, 0, (0,)), cputarget.SpinCounts(12.0, 100, 1000, (1000,)))
    assert (w.idle, w.total, w.spin_ticks, w.utilisation) == (1000.0, 2000.0, 100, 50.0)
    idler = cputarget.window(rate, cputarget.SpinCounts(0, 0, 0, (0,)), cputarget.SpinCounts(1, 0, 1100, (1100,)))
    assert idler.utilisation == 0.0  # idler than the calibration: clamped, not negative
    with pytest.raises(ParseError, match="backwards"):
        cputarget.window(rate, cputarget.SpinCounts(1, 5, 10, (10,)), cputarget.SpinCounts(2, 4, 20, (20,)))


def test_cpu_target_is_a_boolean_parameter():
    SweepParams.of({"cpu_target": True, "loads": [10]})
    with pytest.raises(JobError, match="cpu_target 'yes'"):
        SweepParams.of({"cpu_target": "yes", "loads": [10]})


def _rec(metric, value, unit):
    return Record(run_id="r", timestamp="2026-12-01T10:00:00.000+00:00", target="t", arch="arm64", setup="s",
                  image="i", suite="network", benchmark="sweep",
                  params="method=ipbench-echo;n=10;packet_size=1472;requested=10000000", repeat=0, metric=metric,
                  value=value, unit=unit)


def test_the_wide_csv_gets_idle_and_total_cycles_when_recorded(tmp_path):
    rows = sweep_rows([_rec("cpu_utilisation", 12.5, "percent"), _rec("idle_cycles", 700.0, "iterations"),
                       _rec("total_cycles", 800.0, "iterations")])
    write_wide_csv(tmp_path / "w.csv", rows)
    header, row = (tmp_path / "w.csv").read_text().splitlines()
    assert header.endswith("Median_RTT,CPU_Utilisation,Idle_Cycles,Total_Cycles")
    assert row.endswith(",12.5,700,800")
    assert "Idle_Cycles" not in sweep_rows([_rec("cpu_utilisation", 12.5, "percent")])[0]


def test_the_spinner_yields_to_work(tmp_path):
    """farm_spin for real on this machine: with a normal-priority busy loop per core beside it, its
    own CPU time (``ticks=``) is a small share. (Before its autogroup got nice 19 it took about half:
    a new session is a scheduling group of its own, which CFS serves as fairly as the load's.) Other
    jobs on this machine only lower its share."""
    binary = tmp_path / "farm_spin"
    subprocess.run(["gcc", "-O2", "-Wall", "-pthread", "-o", str(binary), str(SOURCE)], check=True)
    shm = tmp_path / "counts"
    started = subprocess.run([str(binary), "-d", "-f", str(shm)], capture_output=True, text=True, check=True)
    pid = int(started.stdout.split()[-1])

    def read():
        out = subprocess.run([str(binary), "-r", "-f", str(shm)], capture_output=True, text=True, check=True)
        return cputarget.parse_reads(out.stdout.splitlines())[0]

    try:
        cores = len(read().cores)
        hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(cores)]
        try:
            time.sleep(0.3)
            a = read()
            time.sleep(1.0)
            b = read()
        finally:
            for h in hogs:
                h.kill()
                h.wait()
        available = cores * (b.t - a.t) * 100  # USER_HZ ticks
        assert b.ticks - a.ticks < 0.1 * available, (b.ticks - a.ticks, available)
    finally:
        subprocess.run(["kill", str(pid)])
