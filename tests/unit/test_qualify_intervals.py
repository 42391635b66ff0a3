"""qualify's rule ``interval``: with enough repeats the 95 % interval of the ratio candidate/baseline
median decides, not the medians: a regression only when the whole interval lies beyond the
threshold, inconclusive when it straddles it. Synthetic records where the median crosses the
threshold but the interval does not (and the reverse); the real CLI for the outputs."""

from __future__ import annotations

import csv
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from farm.results.qualify import (IMPROVEMENT, INCONCLUSIVE, REGRESSION, RULE_INTERVAL, UNCHANGED,
                                  compare, qualify)
from farm.results.stats import mann_whitney_u

from .test_qualify import records, run_dir

SPREAD = [-4, -3, -2, -1, 0, 1, 2, 3, 4]  # 9 boots a side: the ratio's interval is r_(18), r_(64) of 81


def around(centre, spread=1.0):
    return [centre + spread * d for d in SPREAD]


def test_median_beyond_the_threshold_but_interval_straddling_it_is_inconclusive():
    base, cand = around(100), around(94)  # median -6 %, threshold 5 %; each side spread over +-4
    # the old rule (median beyond the threshold and Mann-Whitney significant) called this a regression
    assert mann_whitney_u(base, cand).p_value < 0.05
    q = qualify(records(base), records(cand, run_id="r2"))
    (c,) = q.comparisons
    assert c.change == pytest.approx(-0.06)
    assert c.rule == RULE_INTERVAL and c.verdict == INCONCLUSIVE
    ratios = sorted(b / a for a in base for b in cand)
    assert c.ratio_interval == pytest.approx((ratios[17], ratios[-18]))  # the Hodges-Lehmann interval, 9 + 9
    assert c.ratio_interval[0] < 0.95 < c.ratio_interval[1]  # straddles the threshold
    assert q.passed and not q.regressions and q.inconclusive == (c,)
    assert "1 inconclusive" in q.headline()
    assert "straddles the threshold band 0.95 – 1.05" in c.explain(q.threshold, q.alpha)


def test_median_within_the_threshold_but_interval_straddling_it_is_inconclusive():
    base, cand = around(100), around(97)  # median -3 %: the old rule said unchanged
    c = qualify(records(base), records(cand, run_id="r2")).comparisons[0]
    assert c.change == pytest.approx(-0.03)
    assert c.verdict == INCONCLUSIVE and c.ratio_interval[0] < 0.95 < c.ratio_interval[1]


def test_interval_wholly_beyond_the_threshold_is_a_regression_in_the_bad_direction_only():
    base, worse, better = around(100, 0.1), around(90, 0.1), around(110, 0.1)
    q = qualify(records(base), records(worse, run_id="r2"))
    (c,) = q.regressions
    assert c.rule == RULE_INTERVAL and c.significant and c.ratio_interval[1] < 0.95
    assert "lies entirely beyond" in c.explain(q.threshold, q.alpha) and not q.passed
    assert qualify(records(base), records(better, run_id="r2")).comparisons[0].verdict == IMPROVEMENT
    # lower is better for cycles/byte: the same numbers the other way round
    cycles = dict(suite="crypto", benchmark="isal", params="function=crc32_ieee;mode=warm",
                  metric="cycles_per_byte", unit="cycles/byte")
    q = qualify(records(base, **cycles), records(better, run_id="r2", **cycles))
    assert [c.verdict for c in q.comparisons] == [REGRESSION]


def test_interval_within_the_threshold_is_unchanged():
    base, cand = around(100, 0.1), around(98, 0.1)  # -2 %, interval [0.976, 0.984]
    c = qualify(records(base), records(cand, run_id="r2")).comparisons[0]
    assert c.rule == RULE_INTERVAL and c.verdict == UNCHANGED and c.significant


def test_too_few_boots_for_the_interval_are_inconclusive():
    base, cand = around(100)[2:6], around(80)[2:6]  # 4 a side: fewer than the 5 boots the rule needs
    c = compare(qualify(records(base), records(cand, run_id="r2")).comparisons[0].key, "default", "default",
                base, cand, threshold=0.05, alpha=0.05)
    assert c.rule == RULE_INTERVAL and c.verdict == INCONCLUSIVE and c.estimate.boots_to_decide == 5


def test_alpha_sets_the_intervals_confidence():
    base, cand = around(100, 0.1)[2:6], around(90, 0.1)[2:6]  # 4 a side: an interval at 95 %, none at 99 %
    key = qualify(records(base), records(cand, run_id="r2")).comparisons[0].key
    assert compare(key, "d", "d", base, cand, threshold=0.05, alpha=0.05, min_boots=4).verdict == REGRESSION
    # at 99 % 4 + 4 boots give no interval: inconclusive
    c = compare(key, "d", "d", base, cand, threshold=0.05, alpha=0.01, min_boots=4)
    assert c.ratio_interval is None and c.verdict == INCONCLUSIVE


def test_cli_shows_the_interval_and_inconclusive_in_markdown_csv_and_junit(tmp_path, monkeypatch):
    monkeypatch.setenv("FARM_BASELINES", str(tmp_path / "store"))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    base = run_dir(tmp_path / "base", records(around(100)) + records(around(50, 0.05), metric="rtt_median", unit="us"))
    cand = run_dir(tmp_path / "cand", records(around(94), run_id="r2")
                   + records(around(60, 0.05), run_id="r2", metric="rtt_median", unit="us"))
    out = tmp_path / "q"
    proc = subprocess.run([sys.executable, "-m", "farm.cli", "qualify", "--baseline", str(base), "--candidate",
                           str(cand), "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr  # the RTT regressed (interval wholly above 1.05)
    assert "Traceback" not in proc.stderr
    md = (out / "qualify.md").read_text()
    assert "## Inconclusive" in md and "## Regressions" in md
    assert "ratio (95% CI)" in md and "0.940 (0.911 – 0.970)" in md and "| interval |" in md
    with open(out / "qualify.csv") as f:
        rows = {r["metric"]: r for r in csv.DictReader(f)}
    assert rows["received_throughput"]["verdict"] == INCONCLUSIVE
    assert float(rows["received_throughput"]["ratio_low"]) == pytest.approx(0.9108910891089108)
    assert rows["rtt_median"]["verdict"] == REGRESSION and rows["rtt_median"]["rule"] == \
        "interval hodges-lehmann 95 %, min 5 boots a side, threshold 5 %"
    cases = {c.get("name").split()[1].split("[")[0]: c for c in ET.parse(out / "junit.xml").getroot().iter("testcase")}
    skipped = cases["received_throughput"].find("skipped")
    assert skipped is not None and "straddles" in skipped.get("message")
    failure = cases["rtt_median"].find("failure")
    assert failure is not None and "95% CI" in failure.get("message")
