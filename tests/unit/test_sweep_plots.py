"""The sweep figure (farm.results.sweep_plots): the knee and the band from recorded sweeps, and the
PNG `farm report` draws from a real result directory."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from farm.bench import echo
from farm.results.csvout import read_records
from farm.results.record import Record, RunContext
from farm.results.sweep_plots import knee, plot_sweeps, provenance, sweep_series
from tests.conftest import run_farm

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Path:
    """The lab's ipbench file (13 loads, 10 Mb/s - 1 Gb/s) imported as a user does."""
    out = tmp_path_factory.mktemp("lab") / "lab"
    done = run_farm("import", "ipbench", str(DATA / "ipbench-sample.csv"), "--setup", "lab-2024", "--target",
                    "maaxboard", "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out


def test_the_knee_of_the_lab_sweep(lab):
    """Received is within 0.1 % of requested up to 900 Mb/s, 94 % of it at 1000 Mb/s: the knee is 900."""
    (series,) = sweep_series(read_records(lab / "results.csv"))["maaxboard"]
    found = knee([(p.requested, p.received) for p in series.points])
    assert found == (900e6, 898693848.0)
    assert series.band == "min–max"  # ipbench's files have no percentiles


@pytest.mark.parametrize("points, expected", [
    ([(10, 10), (20, 20), (30, 30)], None),             # never fell short: the limit is beyond the sweep
    ([(10, 5), (20, 6)], None),                         # the lowest load already fell short
    ([(30, 10), (10, 10), (20, 19.5)], (20, 19.5)),     # order of the points does not matter; 97.5 % keeps up
    ([(10, 10), (20, 18), (30, 30)], (10, 10)),         # the first shortfall decides, not a recovery after it
])
def test_knee_cases(points, expected):
    assert knee(points) == expected


def _live_records() -> list[Record]:
    """Two points of a real farm_load run's figures (the captured output) as a sweep's records."""
    result = echo.parse_load((DATA / "farm-load-loopback-percentiles.txt").read_text())
    ctx = RunContext("20261201-120000-abcd", "maaxboard-twin", "arm64", "default", "maaxboard-bench-1a2b", "network")
    records = []
    for requested, received in ((10e6, 10e6), (1000e6, 300e6)):
        point = attrs.evolve(result, requested=requested, receive=received)
        records += [ctx.record(m, "2026-12-01T12:00:00.000+00:00")
                    for m in point.measurements({"requested": int(requested), "packet_size": 200})]
    return records


def test_a_live_sweep_gets_the_percentile_band_and_its_provenance():
    records = _live_records()
    (series,) = sweep_series(records)["maaxboard-twin"]
    assert series.band == "p10–p90"
    assert [(p.low, p.median, p.high) for p in series.points][0] == (23.695, 31.111, 47.245)
    assert knee([(p.requested, p.received) for p in series.points]) == (10e6, 10e6)
    assert provenance(records) == "run 20261201-120000-abcd; image maaxboard-bench-1a2b; date 2026-12-01"


def test_an_empty_sweep_is_an_error_not_a_blank_picture(tmp_path):
    from farm.errors import JobError

    with pytest.raises(JobError, match="no sweep points"):
        plot_sweeps([], tmp_path / "x.png", title="t")
    assert not (tmp_path / "x.png").exists()


def test_farm_report_draws_the_figure(lab):
    done = run_farm("report", str(lab))
    assert done.returncode == 0, done.stderr
    png = lab / "plots" / "sweep-maaxboard.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
