"""A run of 5 boots a side through the real runner (a flow that boots nothing, a shell that answers
/proc/stat): summary.md, the store and the dashboard show each ratio with n and its interval, mark
the inconclusive ones, the flagged values and how each boot settled (in Chromium too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.dashboard import site
from farm.measure.cpustat import WINDOW_MARK
from farm.results.record import Measurement
from farm.run import run_pipeline
from farm.store.db import open_store
from farm.store.ingest import ingest
from tests.store.test_dashboard_browser import _follow, _load, browser  # noqa: F401  (a fixture)
from tests.fakes import FakeFlow, ScriptedShell, booted_target, with_facts
from tests.unit.test_runner import ENV, pipeline as pipeline, registry  # noqa: F401  (a fixture)


def idle_cores():
    """A target whose cores are idle: /proc/stat advances 50 idle ticks a core per read."""
    ticks = 0

    def answer(command):
        nonlocal ticks
        if "/proc/stat" not in command:
            return []
        lines = []
        for _ in range(2 if WINDOW_MARK in command else 1):
            ticks += 50
            lines += [f"cpu  0 0 0 {ticks * 2}", f"cpu0 0 0 0 {ticks}", f"cpu1 0 0 0 {ticks}", WINDOW_MARK]
        return lines[:-1]
    return ScriptedShell(with_facts(answer))


def idle_flow():
    return FakeFlow(booted=lambda: booted_target(idle_cores()))


def _speeds():
    """openssl-like throughput: setup a (booted first in each round) at ~100, b at ~63; and a sweep whose
    light load's median RTT is above its saturated point's (a spoiled first point)."""
    calls = {"n": 0}

    def speed(ctx, params):
        calls["n"] += 1
        boot, setup_b = (calls["n"] - 1) // 2, (calls["n"] - 1) % 2
        value = (63.0 if setup_b else 100.0) * (1 + 0.01 * (boot - 2))
        return [Measurement("speed", "throughput", value, "bytes/s", {"algorithm": "sha256"}),
                Measurement("speed", "rtt", 50.0 + boot, "us", {"algorithm": "sha256"})]  # the same on both

    def sweep(ctx, params):
        out = []
        for requested, received, rtt in ((10e6, 10e6, 250_000.0), (500e6, 200e6, 90_000.0)):
            point = {"requested": int(requested), "packet_size": 1472}
            out += [Measurement("echo", m, v, u, point) for m, v, u in (
                ("sent_throughput", requested, "bit/s"), ("received_throughput", received, "bit/s"),
                ("rtt_median", rtt, "us"))]
        return out
    return {"speed": speed, "echo": sweep}


@pytest.fixture
def run_dir(pipeline, tmp_path):  # noqa: F811
    path = pipeline(benchmarks=("speed", "echo"))
    path.write_text(path.read_text() + "boots: 5\nsettle: {cpu_below: 20, for: 1, within: 10}\n")
    run = run_pipeline(path, out=tmp_path / "run", flow_for=lambda s: idle_flow(), registry=registry(**_speeds()))
    assert run.status == 0, run.info.stages
    return run.path


def test_summary_gives_each_ratio_with_n_and_interval_and_marks_what_is_inconclusive(run_dir):
    md = (run_dir / "summary.md").read_text()
    assert "## Experiment" in md and "boots per setup: a 5, b 5; order interleaved" in md
    assert "- 10 boot(s) settled in" in md
    assert "## Setups compared on maaxboard-twin: ratio to a" in md
    (speed,) = [line for line in md.splitlines() if line.startswith("| test.speed | algorithm=sha256 | throughput")]
    assert "| b | 0.630 [0.6" in speed and "| 5/5 | lower |" in speed
    (rtt,) = [line for line in md.splitlines() if line.startswith("| test.speed | algorithm=sha256 | rtt |")]
    assert "**inconclusive** (the interval straddles 1.0)" in rtt
    # the echo's light-load point, every boot of it: above the saturated point's RTT and above a heavier point's
    assert "| **5 rtt_above_heavier, 5 rtt_above_saturation** |" in md
    assert "`rtt_above_saturation`: median RTT at a load the target carried" in md
    assert "`rtt_above_heavier`: median RTT above that of a heavier point that delivered more" in md


def test_the_dashboard_shows_intervals_verdicts_flags_and_settling(run_dir, tmp_path, browser):  # noqa: F811
    from selenium.webdriver.common.by import By

    eng = open_store({"FARM_DB": str(tmp_path / "results.db")})
    ingest(eng, [run_dir])
    run_id = (run_dir / "run.json").read_text().split('"run_id": "')[1].split('"')[0]
    with eng.connect() as c:
        status, html = site.render(c, f"run/{run_id}.html")
        assert status == 200
        assert "Flagged values" in html and "rtt_above_saturation" in html
        assert "boots per setup: a 5, b 5, order interleaved" in html and "<td>yes in " in html
        status, compare = site.render(c, f"compare/{run_id}/a--b.html")
        assert status == 200
        assert "0.630 [0.6" in compare and "<td>lower</td>" in compare
        assert 'class="num inconclusive">inconclusive: ' in compare  # the rtt, the same on both setups
        assert 'class="ci"' in compare  # interval bars on the chart
    out = tmp_path / "site"
    site.write_site(eng, out)
    page = _load(browser, (out / "run" / f"{run_id}.html").as_uri(), "experiment-run", tmp_path)
    assert "Flagged values" in page.find_element(By.TAG_NAME, "main").text
    _follow(browser, page.find_element(By.PARTIAL_LINK_TEXT, "a → b"))
    rows = {tr.find_elements(By.TAG_NAME, "td")[2].text: tr for tr in
            browser.find_elements(By.CSS_SELECTOR, "main table tbody tr")}
    cells = [td.text for td in rows["throughput"].find_elements(By.TAG_NAME, "td")]
    assert cells[4] == cells[6] == "5" and cells[8].startswith("0.630 [0.6") and cells[9] == "lower"
    assert rows["rtt"].find_elements(By.TAG_NAME, "td")[8].text.startswith("inconclusive: 1.000")
    assert browser.find_elements(By.CSS_SELECTOR, "svg.chart.ratio g.ci")
    assert not browser.get_log("browser")
