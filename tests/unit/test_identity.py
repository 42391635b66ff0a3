"""One record identity (farm.results.identity.MetricKey): run lengths and measured counts are none of it,
the cycle source and a twin's clock are; compare, qualify and the store's history all key by it."""

from __future__ import annotations

from pathlib import Path

import pytest

import farm.run.runner
from farm.bench.registry import BenchmarkSpec
from farm.images.build import Image
from farm.measure import Measurement
from farm.measure.params import parse_params
from farm.results.compare import compare
from farm.results.csvout import read_records
from farm.results.identity import MetricKey, identity_params
from farm.results.record import Record
from farm.run import run_pipeline
from tests.fakes import FakeFlow, booted_target
from tests.unit.test_runner import ENV

ROOT = Path(__file__).resolve().parents[2]


def rec(params: str, value: float = 1.0, *, run_id: str = "r1", target: str = "maaxboard-twin",
        setup: str = "default", benchmark: str = "sweep", metric: str = "rtt_median", unit: str = "us") -> Record:
    return Record(run_id, "2026-12-01T00:00:00.000+00:00", target, "arm64", setup, "img", "network", benchmark,
                  params, 0, metric, value, unit)


def test_run_lengths_and_measured_counts_are_no_part_of_the_identity():
    old = rec("method=ipbench-echo;n=775;packet_size=1472;requested=10000000")  # written before counts were values
    new = rec("method=ipbench-echo;packet_size=1472;requested=10000000", run_id="r2")
    other_length = rec("duration=5;method=ipbench-echo;packet_size=1472;requested=10000000;warmup=2", run_id="r3")
    assert MetricKey.of(old) == MetricKey.of(new) == MetricKey.of(other_length)
    assert MetricKey.of(old).params == "method=ipbench-echo;packet_size=1472;requested=10000000"
    # what a benchmark's params class says is a run length (iperf3: duration, omit) ...
    assert identity_params("iperf3", "direction=host-to-target;duration=3;omit=1;protocol=tcp") == \
        "direction=host-to-target;protocol=tcp"
    # ... and, for a benchmark farm does not register (a pytest test's), the usual names
    assert identity_params("test_latency", "duration=3;size=64") == "size=64"
    # the method, the implementation and the point are identity
    assert MetricKey.of(rec("method=iperf3-sockperf;packet_size=1472;requested=10000000")) != MetricKey.of(new)


def test_counts_of_a_sweep_point_are_values_of_their_own_and_runs_of_two_lengths_join():
    from farm.measure.farmload import parse_load

    result = parse_load((ROOT / "tests" / "data" / "farm-load-loopback-1G.txt").read_text())
    found = {m.metric: m for m in result.measurements({"requested": 10**9, "packet_size": 1472})}
    assert found["rtt_samples"].value == result.samples and "n" not in found["rtt_median"].params
    short = [rec("method=ipbench-echo;packet_size=1472;requested=10000000", 100.0, run_id="short")]
    long = [rec("method=ipbench-echo;n=9000;packet_size=1472;requested=10000000", 110.0, run_id="long",
                setup="one-core")]
    (row,) = compare([("short", short), ("long", long)]).rows
    assert row.counts == (1, 1) and row.ratio == pytest.approx(1.1)


def booting(emulated: bool):
    return FakeFlow(booted=lambda: booted_target(emulated=emulated))


def crypto(ctx, params):
    """Two throughputs, one with its cycles counted (cycles=pmu), one without (the run's clock gives it)."""
    return [Measurement("aes", "throughput", 1.5e8, "bytes/s", {"algorithm": "aes-128-gcm"}),
            Measurement("aes", "cycles_per_byte", 11.0, "cycles/byte", {"algorithm": "aes-128-gcm", "cycles": "pmu"}),
            Measurement("aes", "throughput", 3e8, "bytes/s", {"algorithm": "sha256"})]


@pytest.fixture
def pipeline(tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setattr(farm.run.runner, "build", lambda request, carried=None: Image(tmp_path, {
        "name": "fake", "arch": "arm64", "key": "k", "kernel": "Image", "initrd": "initrd.cpio.gz"}, cached=True))
    path = tmp_path / "p.yaml"
    path.write_text(f"name: cycles\nimage: {tmp_path / 'fake.yaml'}\ntargets: [{{env: {ENV}}}]\n"
                    "benchmarks: [{aes: {}}]\n")
    return path


def test_a_twins_cycles_per_byte_never_joins_a_boards(pipeline, tmp_path, monkeypatch):
    """The runner says how every cycles/byte figure was found: the counter (``cycles=pmu``, the
    benchmark's own), else the run's clock (here the env file's nominal 1.5 GHz: ``cycles=nominal``);
    on a QEMU twin also ``clock=twin`` (QEMU's virtual counter and clock). Stored, the twin's and the
    board's figures are two history series; compared, never one row."""
    from farm.store.db import open_store
    from farm.store.history import Filters, history
    from farm.store.ingest import ingest

    registry = {"aes": BenchmarkSpec("aes", "crypto", crypto, cycles_per_byte=True)}
    runs = {}
    for name, emulated in (("twin", True), ("board", False)):
        runs[name] = run_pipeline(pipeline, out=tmp_path / name, flow_for=lambda s, e=emulated: booting(e),
                                  registry=registry, listeners=[])
    cycles = {name: sorted(r.params for r in read_records(run.results_csv) if r.unit == "cycles/byte")
              for name, run in runs.items()}
    assert cycles["board"] == ["algorithm=aes-128-gcm;cycles=pmu", "algorithm=sha256;cycles=nominal"]
    assert cycles["twin"] == ["algorithm=aes-128-gcm;clock=twin;cycles=pmu", "algorithm=sha256;clock=twin;cycles=nominal"]
    eng = open_store({"FARM_DB": str(tmp_path / "store.db")})
    ingest(eng, [runs["twin"].path, runs["board"].path])
    with eng.connect() as c:
        series = history(c, Filters(metric="cycles_per_byte"))
    assert sorted((s.params, len(s.points)) for s in series) == [
        ("algorithm=aes-128-gcm;clock=twin;cycles=pmu", 1), ("algorithm=aes-128-gcm;cycles=pmu", 1),
        ("algorithm=sha256;clock=twin;cycles=nominal", 1), ("algorithm=sha256;cycles=nominal", 1)]
    joined = compare([("twin", read_records(runs["twin"].results_csv)),
                      ("board", read_records(runs["board"].results_csv))])
    assert all(not (r.counts[0] and r.counts[1]) for r in joined.rows if r.key.unit == "cycles/byte")
    assert [r.counts for r in joined.rows if r.key.metric == "throughput"] == [(1, 1), (1, 1)]  # throughput joins
    assert parse_params(joined.rows[0].key.params) == {"algorithm": "aes-128-gcm"}
