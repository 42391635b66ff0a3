"""``farm import --frequency``: cycles/byte of an imported capture, as a live run gives them (the real CLI)."""

from __future__ import annotations

import json

import pytest

from farm.measure.params import format_params, parse_params
from farm.results.csvout import read_records
from farm.results.cycles import parse_frequency

from .conftest import ROOT, run_farm

DATA = ROOT / "tests" / "data"


def without_source(params: str) -> str:
    """A cycles/byte figure's params without its cycle source: its throughput's."""
    return format_params({k: v for k, v in parse_params(params).items() if k != "cycles"})


def test_isal_import_with_frequency_gets_cycles_per_byte(tmp_path):
    out = tmp_path / "twin"
    proc = run_farm("import", "isal", str(DATA / "isal-maaxboard-twin.txt"), "--setup", "twin",
                    "--target", "maaxboard-twin", "--frequency", "1.5GHz", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    records = read_records(out / "results.csv")
    throughput = {r.params: r.value for r in records if r.metric == "throughput"}
    # the cycles are the given clock's (a nominal one): that is part of what the figure is
    assert {parse_params(r.params)["cycles"] for r in records if r.metric == "cycles_per_byte"} == {"nominal"}
    cycles = {without_source(r.params): r.value for r in records if r.metric == "cycles_per_byte"}
    assert set(cycles) == set(throughput) and len(cycles) == 26 + 20 + 4
    # crc32_ieee_warm on the twin: 40.02 MB/s -> 1.5e9 / 40.02e6 = 37.48... cycles/byte
    assert throughput["function=crc32_ieee;mode=warm"] == 40.02e6
    assert cycles["function=crc32_ieee;mode=warm"] == pytest.approx(37.4812593703148)
    assert json.loads((out / "run.json").read_text())["frequency_hz"] == 1.5e9


def test_openssl_multi_import_is_per_process(tmp_path):
    out = tmp_path / "multi"
    proc = run_farm("import", "openssl", str(DATA / "openssl-multi2-aes-128-gcm-mr.txt"), "--setup", "m",
                    "--frequency", "1000MHz", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    records = read_records(out / "results.csv")
    pairs = [(t, c) for t in records if t.metric == "throughput"
             for c in records if c.metric == "cycles_per_byte" and without_source(c.params) == t.params]
    assert pairs
    for t, c in pairs:  # two processes summed: each did half the bytes with its own core's cycles
        assert "multi=2" in t.params
        assert c.value == pytest.approx(2 * 1e9 / t.value)


@pytest.mark.parametrize("value, message", [("fast", "is not a frequency"), ("0", "above 0"), ("20GHz", "at most 10 GHz")])
def test_bad_frequency_is_refused_before_anything_is_written(tmp_path, value, message):
    out = tmp_path / "x"
    proc = run_farm("import", "isal", str(DATA / "isal-perf-host.txt"), "--setup", "h", "--frequency", value,
                    "--out", str(out))
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()


def test_frequency_of_a_network_import_is_a_job_error(tmp_path):
    out = tmp_path / "net"
    proc = run_farm("import", "iperf3", str(DATA / "iperf3-tcp.json"), "--setup", "n", "--frequency", "1GHz",
                    "--out", str(out))
    assert proc.returncode == 2, proc.stderr
    assert "--frequency gives cycles/byte of openssl and isal imports only" in proc.stderr
    assert not out.exists()


def test_parse_frequency_units():
    assert parse_frequency("1500000000") == 1.5e9
    assert parse_frequency("1.5 GHz") == 1.5e9
    assert parse_frequency("1200000kHz") == 1.2e9
    assert parse_frequency("800MHz") == 8e8
