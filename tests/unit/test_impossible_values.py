"""A benchmark whose tool printed an impossible value (NaN, infinite, negative) in a live run is a
failed benchmark with a clear message: a ``metric=failed`` row, never the value."""

from __future__ import annotations

import math

import pytest

from farm.bench.registry import BenchmarkSpec, benchmarks
from farm.errors import EXIT_TEST_FAILURE
from farm.measure import BenchmarkError, ImpossibleValue, Measurement, check_value, impossible
from farm.run.events import Hooks
from farm.run.model import Benchmark
from farm.run.rundir import RunDir, RunInfo
from farm.run.runner import Runner
from farm.results.csvout import read_records
from farm.results.record import RunContext


@pytest.mark.parametrize("value, why", [(math.nan, "is NaN (not measured)"), (math.inf, "is infinite"),
                                        (-math.inf, "is infinite"), (-1.0, "is negative (-1)"), (0.0, None),
                                        (3.5, None)])
def test_impossible(value, why):
    assert impossible(value) == why


def test_check_value_names_where():
    with pytest.raises(ImpossibleValue, match="iperf3: iperf3 JSON end.sum_sent.bits_per_second is negative"):
        check_value("iperf3", "iperf3 JSON end.sum_sent.bits_per_second", -3.0)
    assert issubclass(ImpossibleValue, BenchmarkError)  # the runner's failed-benchmark path


@pytest.mark.parametrize("bad", [math.nan, -1.0, math.inf])
def test_live_benchmark_with_an_impossible_value_is_a_failed_benchmark(tmp_path, monkeypatch, bad):
    def fake_run(ctx, params):  # what a parser without its own check would hand over
        return [Measurement("iperf3", "sent_throughput", 9e8, "bit/s", {"protocol": "tcp"}),
                Measurement("iperf3", "received_throughput", bad, "bit/s", {"protocol": "tcp"})]

    spec = benchmarks()["iperf3"]
    registry = {"iperf3": BenchmarkSpec("iperf3", spec.suite, fake_run, spec.params)}
    run = RunDir(tmp_path, RunInfo(run_id="r1", pipeline="p.yaml", pipeline_name="t", pipeline_sha256="", who="t",
                                   started="", farm_version="", git_sha=None, ci_job=None, envs=[], setups={}))
    rc = RunContext(run_id="r1", target="twin", arch="arm64", setup="default", image="img", suite="network")
    runner = Runner(pipeline=None, run=run, hooks=Hooks([run]), registry=registry)
    runner.run_benchmark(None, Benchmark("iperf3", spec.params()), None, rc, "twin/default")
    (row,) = read_records(tmp_path / "results.csv")
    assert (row.metric, row.value, row.unit) == ("failed", 1.0, "count")
    assert runner.status == EXIT_TEST_FAILURE
    (case,) = run.cases
    assert case.kind == "failure"
    assert f"received_throughput[protocol=tcp] = {bad!r} bit/s: is" in case.message
    assert case.message.endswith("not a measurement")
