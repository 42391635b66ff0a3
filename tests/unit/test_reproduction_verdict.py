"""farm reproduce's verdict, per figure: the one rule (farm.results.reproduction.figure_verdict, farm
compare's ratio on one value per boot) on values whose answer is known, and the pairing of a
reproduction's figures with the original's."""

from __future__ import annotations

import json
import math

import pytest

from farm.results.identity import MetricKey
from farm.results.record import Record
from farm.results.ratio import Rule
from farm.results.reproduction import (INCONCLUSIVE, NOT_MEASURED, NOT_REPRODUCED, REPRODUCED, dumps, figure_verdict,
                                       judge, junit_cases, line, markdown, pair_targets)

KEY = MetricKey("board", "default", "crypto", "openssl-speed", "algorithm=sha256", "throughput", "bytes/s")


RULE = Rule(min_n=5, threshold=0.05)
STEADY = [100.0, 101.0, 99.0, 100.0, 102.0]  # one value per boot


def test_an_interval_of_new_over_original_within_the_band_is_reproduced_wholly_outside_not():
    v = figure_verdict(KEY, STEADY, [100.0, 101.0, 100.0, 99.0, 101.0], RULE)
    assert v.verdict == REPRODUCED and v.ratio.verdict == "same" and (v.original_n, v.new_n) == (5, 5)
    assert 0.95 <= v.ratio.interval[0] <= v.ratio.interval[1] <= 1.05
    faster = figure_verdict(KEY, STEADY, [120.0, 121.0, 119.0, 122.0, 120.0], RULE)
    assert faster.verdict == NOT_REPRODUCED and "above" in faster.note  # two-sided: better is not the same either
    slower = figure_verdict(KEY, STEADY, [80.0, 81.0, 79.0, 80.0, 82.0], RULE)
    assert slower.verdict == NOT_REPRODUCED and "below" in slower.note


def test_too_few_boots_a_side_or_a_straddling_interval_is_inconclusive_never_reproduced():
    few = figure_verdict(KEY, [100.0], [100.0], RULE)  # a point on the point: still one boot a side
    assert few.verdict == INCONCLUSIVE and "fewer than 5 boots" in few.note and not few.reproduced
    assert figure_verdict(KEY, [100.0], [100.0], Rule(min_n=1, threshold=0.05)).verdict == INCONCLUSIVE  # no interval
    assert figure_verdict(KEY, STEADY[:4], STEADY[:4], Rule(min_n=4, threshold=0.05)).verdict == REPRODUCED
    wide = figure_verdict(KEY, STEADY, [80.0, 120.0, 100.0, 90.0, 110.0], RULE)
    assert wide.verdict == INCONCLUSIVE and "straddles" in wide.note
    zero = figure_verdict(KEY, [0.0] * 5, [0.0] * 5, RULE)  # no log ratio: farm compare's answer too
    assert zero.verdict == INCONCLUSIVE


def test_repeats_inside_one_boot_do_not_narrow_the_verdict():
    """Ten repeats of one boot a side are one value a side (run.json's repeats_in_boot), not ten."""
    original = [record(value=100.0 + i % 2, repeat=i) for i in range(10)]
    new = [record(value=100.5 + i % 2, repeat=i) for i in range(10)]
    pooled = judge(original, new, repeats_in_boot=1)  # as if every repeat were a boot of its own
    assert pooled.figures[0].verdict == REPRODUCED and pooled.figures[0].new_n == 10
    rep = judge(original, new, repeats_in_boot={"r": 10})
    [f] = rep.figures
    assert (f.original_n, f.new_n, f.verdict) == (1, 1, INCONCLUSIVE)
    assert rep.verdict == INCONCLUSIVE and rep.headline().startswith("INCONCLUSIVE: 0 of 1 figure reproduced")
    [case] = junit_cases(rep)
    assert case.kind == "skipped" and "fewer than 5 boots" in case.message
    # five boots of two repeats each: five values a side, each the median of its boot
    five = judge(original, new, repeats_in_boot=2)
    assert (five.figures[0].original_n, five.figures[0].verdict) == (5, REPRODUCED)
    assert five.figures[0].original_median == 100.5


def test_no_new_value_is_not_measured_and_says_why():
    v = figure_verdict(KEY, [100.0], [], RULE, note="its benchmark failed in the new run")
    assert v.verdict == NOT_MEASURED and not v.reproduced and "benchmark failed" in v.explain()
    assert math.isnan(v.new_median)


def record(target="board", arch="arm64", setup="default", metric="throughput", value=100.0, repeat=0,
           params="algorithm=sha256;seconds=1", benchmark="openssl-speed", suite="crypto", unit="bytes/s"):
    return Record("r", "t", target, arch, setup, "img", suite, benchmark, params, repeat, metric, value, unit)


def boots(value=100.0, **fields):
    """Five boots of a figure around ``value`` (STEADY's spread), one record each."""
    return [record(value=value * v / 100, repeat=i, **fields) for i, v in enumerate(STEADY)]


def test_targets_pair_by_name_else_by_architecture_one_to_one():
    assert pair_targets({"a": "arm64", "x": "amd64"}, {"a": "arm64", "pc-2": "amd64"}) == {"a": "a", "x": "pc-2"}
    assert pair_targets({"a": "arm64", "b": "arm64"}, {"c": "arm64", "d": "arm64"}) == {}  # which is which? none
    assert pair_targets({"a": "arm64"}, {"b": "amd64"}) == {}


def test_judge_pairs_figures_by_identity_run_lengths_aside_and_lists_what_is_new_or_gone():
    original = [*boots(100.0), *boots(5.0, metric="cycles_per_byte", unit="cycles/byte"),
                *boots(1e9, benchmark="iperf3", suite="network", metric="sent", params="protocol=tcp")]
    new = [*boots(102.0, target="board-7", params="algorithm=sha256;seconds=3"),  # another run length
           *boots(7.0, target="board-7", metric="cycles_per_byte", unit="cycles/byte"),
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
    rep = judge(boots(100.0), boots(150.0), threshold=0.05, original_run_id="A", run_id="B")
    [f] = rep.figures
    assert "NOT REPRODUCED" in line(f) and "150 B/s" in line(f) and "100 B/s" in line(f)
    [case] = junit_cases(rep)
    assert case.kind == "failure" and "not reproduced" in case.message
    data = json.loads(dumps(rep))
    assert data["verdict"] == "not reproduced" and data["not_reproduced"] == 1
    assert data["figures"][0]["new_median"] == 150.0 and data["figures"][0]["interval"][0] > 1.05
    md = markdown(rep)
    assert "**not reproduced**" in md and "+50.0%" in md


def test_the_run_is_not_reproduced_when_a_figure_failed_else_inconclusive_when_one_could_not_be_told():
    steady = [record(value=v, repeat=i) for i, v in enumerate(STEADY)]
    other = [record(metric="latency", unit="s", value=1.0)]  # one boot only
    rep = judge(steady + other, steady + other)
    assert [f.verdict for f in rep.figures] == [INCONCLUSIVE, REPRODUCED] and rep.verdict == INCONCLUSIVE
    assert not rep.passed and json.loads(dumps(rep))["inconclusive"] == 1
    worse = judge(steady + other, [record(value=v * 0.8, repeat=i) for i, v in enumerate(STEADY)] + other)
    assert worse.verdict == NOT_REPRODUCED


def test_a_run_with_nothing_measured_reproduces_nothing():
    rep = judge([], [record()], threshold=0.05, original_run_id="A")
    assert not rep.passed and "nothing to compare" in rep.headline()
    with pytest.raises(ValueError):
        judge([], [], threshold=-1)
