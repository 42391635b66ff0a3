"""A sweep that failed in one setup (a ``failed`` row in results.csv) leaves the other setup's sweep
published: the wide CSV and plot of the good setup, not an error for the whole publish step (seen when
a guest's echo port was not forwarded: the run's publish failed and lost every wide CSV)."""

from __future__ import annotations

from pathlib import Path

import attrs

from farm.results.csvout import write_records
from farm.results.importers import import_file
from farm.results.ipbench import sweep_rows
from farm.results.publish import publish

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "ipbench-sample.csv"


def test_a_failed_sweep_row_is_not_a_sweep_point(tmp_path):
    good = import_file("ipbench", SAMPLE, setup="bare", target="twin")
    failed = attrs.evolve(good[0], setup="kvm-guest", metric="failed", value=1.0, unit="count",
                          params="duration=2;loads=10,50;packet_size=1472")
    assert sweep_rows(good + [failed]) == sweep_rows(good)
    write_records(tmp_path / "results.csv", good + [failed])
    report = publish(tmp_path)
    assert any(p.name.startswith("sweep-") for p in tmp_path.glob("sweep-*.csv")), report


def test_a_run_whose_only_sweep_failed_publishes_without_an_error(tmp_path):
    """Seen at lab scale (issue 31): a sweep whose responder could not start left only its `failed` row,
    and publishing that run was an *error* testcase ("sweep plot: no sweep points to plot") on top of
    the benchmark's failure."""
    good = import_file("ipbench", SAMPLE, setup="bare", target="twin")
    failed = attrs.evolve(good[0], metric="failed", value=1.0, unit="count",
                          params="duration=1;loads=1,2;packet_size=1472")
    write_records(tmp_path / "results.csv", [failed])
    report = publish(tmp_path)
    assert report.plots == () and not list(tmp_path.glob("sweep-*.csv"))
    assert (tmp_path / "summary.md").is_file()
