"""farm.results.plots: the sweep PNG of wide rows (what farm compare has), from the sample lab CSV
(tests/data/ipbench-sample.csv), drawn by the one sweep figure (farm.results.sweep_plots)."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.image import imread

from farm.errors import JobError
from farm.results.importers import import_file
from farm.results.ipbench import sweep_rows
from farm.results.plots import plot_sweep

DATA = Path(__file__).resolve().parent.parent / "data"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def board_rows() -> list[dict]:
    return sweep_rows(import_file("ipbench", DATA / "ipbench-sample.csv", setup="maaxboard"))


def twin_rows() -> list[dict]:
    """A QEMU-like series: saturates at 420 Mb/s, slower RTT, busier CPU."""
    rows = []
    for row in board_rows():
        twin = dict(row)
        twin["Receive_Throughput"] = min(row["Requested_Throughput"], 420e6)
        twin["Median_RTT"] = row["Median_RTT"] * 4
        twin["Minimum_RTT"] = row["Minimum_RTT"] * 3
        twin["Maximum_RTT"] = row["Maximum_RTT"] * 5
        twin["CPU_Utilisation"] = min(100.0, row["CPU_Utilisation"] * 2.2)
        rows.append(twin)
    return rows


def test_two_setups_in_one_png(tmp_path):
    out = tmp_path / "sweep.png"
    plot_sweep({"maaxboard (lab history)": board_rows(), "qemu twin": twin_rows()}, out)
    data = out.read_bytes()
    assert data.startswith(PNG_MAGIC)
    assert len(data) > 40_000  # three panels of lines, bands, text: not an empty canvas
    height, width, _ = imread(out).shape
    assert (width, height) == (935, 1210)  # 8.5 x 11 in at 110 dpi: sweep_plots' figure
    assert not list(tmp_path.glob(".*.tmp"))  # written atomically, no leftovers


def test_gaps_and_a_single_point(tmp_path):
    rows = board_rows()
    for row in rows[::2]:
        row["Median_RTT"] = row["CPU_Utilisation"] = None
    out = tmp_path / "gaps.png"
    plot_sweep({"partial": rows, "one point": board_rows()[:1]}, out)
    assert out.read_bytes().startswith(PNG_MAGIC)


def test_nothing_to_plot(tmp_path):
    with pytest.raises(JobError, match="no sweep rows"):
        plot_sweep({}, tmp_path / "x.png")
    with pytest.raises(JobError, match="no sweep rows"):
        plot_sweep({"a": []}, tmp_path / "x.png")
    with pytest.raises(JobError, match="Median_RTT is 'fast'"):
        plot_sweep({"a": [{**board_rows()[0], "Median_RTT": "fast"}]}, tmp_path / "x.png")
    assert not list(tmp_path.iterdir())
