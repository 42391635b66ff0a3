"""farm reproduce's verdict, per figure: the one rule (farm.results.reproduction.figure_verdict) on
values whose answer is known, and the pairing of a reproduction's figures with the original's."""

from __future__ import annotations

import json
import math

import pytest

from farm.results.identity import MetricKey
from farm.results.record import Record
from farm.results.reproduction import (NOT_MEASURED, NOT_REPRODUCED, REPRODUCED, band, dumps, figure_verdict,
                                       judge, junit_cases, line, markdown, pair_targets)

KEY = MetricKey("board", "default", "crypto", "openssl-speed", "algorithm=sha256", "throughput", "bytes/s")


def test_one_original_value_has_only_the_threshold_for_a_band():
    b = band([100.0], 0.05)
    assert (b.low, b.high, b.interval_kind, b.n) == (95.0, 105.0, "range", 1)
    assert figure_verdict(KEY, [100.0], [104.9], 0.05).verdict == REPRODUCED
    assert figure_verdict(KEY, [100.0], [105.1], 0.05).verdict == NOT_REPRODUCED
    assert figure_verdict(KEY, [100.0], [94.9], 0.05).verdict == NOT_REPRODUCED  # two-sided: worse and better
    assert figure_verdict(KEY, [100.0], [100.0], 0.0).verdict == REPRODUCED


def test_a_few_values_give_their_range_widened_to_the_threshold():
    b = band([90.0, 100.0, 120.0], 0.05)  # n < 6: the min-max range, wider than median +-5 %
    assert (b.low, b.high, b.interval_kind) == (90.0, 120.0, "range")
    assert figure_verdict(KEY, [90.0, 100.0, 120.0], [119.0], 0.05).reproduced
    narrow = band([99.0, 100.0, 101.0], 0.05)  # narrower than the threshold: the threshold's band
    assert (narrow.low, narrow.high) == (95.0, 105.0)


def test_six_values_or_more_give_the_median_s_confidence_interval_not_the_range():
    values = [80.0, 98.0, 99.0, 100.0, 101.0, 102.0, 103.0, 104.0, 130.0]  # n = 9: x(2) .. x(8)
    b = band(values, 0.0)
    assert b.interval_kind == "ci95" and b.interval == (98.0, 104.0) and (b.low, b.high) == (98.0, 104.0)
    assert figure_verdict(KEY, values, [125.0], 0.0).verdict == NOT_REPRODUCED  # inside the range, not the CI
    assert figure_verdict(KEY, values, [97.0, 99.0, 103.0], 0.0).verdict == REPRODUCED  # the new median: 99


def test_no_new_value_is_not_measured_and_says_why():
    v = figure_verdict(KEY, [100.0], [], 0.05, note="its benchmark failed in the new run")
    assert v.verdict == NOT_MEASURED and not v.reproduced and "benchmark failed" in v.explain()
    assert math.isnan(v.new_median)


def test_negative_and_zero_medians_keep_a_band_of_their_own_size():
    b = band([-10.0], 0.1)
    assert (b.low, b.high) == (-11.0, -9.0)
    assert figure_verdict(KEY, [0.0], [0.0], 0.05).reproduced
    assert not figure_verdict(KEY, [0.0], [0.001], 0.05).reproduced


def record(target="board", arch="arm64", setup="default", metric="throughput", value=100.0, repeat=0,
           params="algorithm=sha256;seconds=1", benchmark="openssl-speed", suite="crypto", unit="bytes/s"):
    return Record("r", "t", target, arch, setup, "img", suite, benchmark, params, repeat, metric, value, unit)


def test_targets_pair_by_name_else_by_architecture_one_to_one():
    assert pair_targets({"a": "arm64", "x": "amd64"}, {"a": "arm64", "pc-2": "amd64"}) == {"a": "a", "x": "pc-2"}
    assert pair_targets({"a": "arm64", "b": "arm64"}, {"c": "arm64", "d": "arm64"}) == {}  # which is which? none
    assert pair_targets({"a": "arm64"}, {"b": "amd64"}) == {}


def test_judge_pairs_figures_by_identity_run_lengths_aside_and_lists_what_is_new_or_gone():
    original = [record(value=100.0), record(metric="cycles_per_byte", unit="cycles/byte", value=5.0),
                record(benchmark="iperf3", suite="network", metric="sent", value=1e9, params="protocol=tcp")]
    new = [record(target="board-7", value=102.0, params="algorithm=sha256;seconds=3"),  # another run length
           record(target="board-7", metric="cycles_per_byte", unit="cycles/byte", value=7.0),
           record(target="board-7", benchmark="iperf3", suite="network", metric="failed", value=1.0,
                  params="protocol=tcp", unit="count"),
           record(target="board-7", metric="new_metric", value=1.0)]
    rep = judge(original, new, threshold=0.05, original_run_id="A", run_id="B")
    got = {f.key.metric: f for f in rep.figures}
    assert rep.targets == {"board": "board-7"}
    assert got["throughput"].verdict == REPRODUCED and got["throughput"].new_target == "board-7"
    assert got["cycles_per_byte"].verdict == NOT_REPRODUCED
    assert got["sent"].verdict == NOT_MEASURED and "benchmark failed" in got["sent"].note
    assert [k.metric for k in rep.only_new] == ["new_metric"]
    assert not rep.passed and rep.headline().startswith("NOT reproduced: 1 of 3 figures reproduced")
    assert (rep.count(REPRODUCED), rep.count(NOT_REPRODUCED), rep.count(NOT_MEASURED)) == (1, 1, 1)


def test_every_output_says_the_verdict_with_both_values():
    rep = judge([record(value=100.0)], [record(value=150.0)], threshold=0.05, original_run_id="A", run_id="B")
    [f] = rep.figures
    assert "NOT REPRODUCED" in line(f) and "150 B/s" in line(f) and "100 B/s" in line(f)
    [case] = junit_cases(rep)
    assert case.kind == "failure" and "not reproduced" in case.message
    data = json.loads(dumps(rep))
    assert data["verdict"] == "not reproduced" and data["not_reproduced"] == 1
    assert data["figures"][0]["new_median"] == 150.0 and data["figures"][0]["band"] == [95.0, 105.0]
    md = markdown(rep)
    assert "**not reproduced**" in md and "+50.0%" in md


def test_a_run_with_nothing_measured_reproduces_nothing():
    rep = judge([], [record()], threshold=0.05, original_run_id="A")
    assert not rep.passed and "nothing to compare" in rep.headline()
    with pytest.raises(ValueError):
        judge([], [], threshold=-1)
