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
