"""One key type for what a figure measures (farm.results.identity.MetricKey): a run's summary, compare,
qualify, the dashboard and the store's series share it."""

from types import SimpleNamespace

import attrs

from farm.dashboard import data
from farm.results.figures import key_figures
from farm.results.compare import compare
from farm.results.figures import KeyFigure, group_figures
from farm.results.identity import MetricKey
from farm.results.qualify import qualify
from farm.results.record import Record
from farm.store.history import Point, Series


def _row(value, metric="throughput", params="block=16"):
    return SimpleNamespace(target="t", setup="s", suite="crypto", benchmark="openssl-speed", params=params,
                           metric=metric, unit="bytes/s", value=value)


def test_report_dashboard_and_store_share_one_key_type():
    rec = Record("r1", "2026-12-01T00:00:00+00:00", "t", "arm64", "s", "img", "crypto", "openssl-speed",
                 "block=16;seconds=1", 0, "throughput", 5.0, "bytes/s")
    (summary,) = key_figures([rec])
    (page,) = data.figures_of([_row(5.0)])
    series = Series("t", "s", "crypto", "openssl-speed", "block=16", "throughput", "bytes/s",
                    (Point("r1", "2026", ("r1",), 5.0, 5.0, 5.0, "range", 1),))
    assert type(summary) is type(page) is KeyFigure
    assert isinstance(series, MetricKey) and isinstance(summary, MetricKey)
    # the run length (seconds=1) is not part of what was measured: all three name the same measurement
    assert summary.measurement == page.measurement == series.measurement == MetricKey.of(rec)
    assert summary.key == ("t", "s", "crypto", "openssl-speed", "block=16", "throughput", "bytes/s")
    other = Record("r2", "2026-12-01T00:00:00+00:00", "t", "arm64", "s2", "img", "crypto", "openssl-speed",
                   "block=16;seconds=3", 0, "throughput", 6.0, "bytes/s")
    (row,) = compare([("a", [rec]), ("b", [other])]).rows  # joined across setups: the key without where
    assert type(row.key) is MetricKey and row.key == summary.anywhere
    (judged,) = qualify([rec], [attrs.evolve(other, setup="s")]).comparisons  # the setup is paired apart
    assert type(judged.key) is MetricKey and judged.key == summary.on("t")


def test_group_figures_pools_repeats_and_leaves_out_failures_and_nan():
    rows = [_row(1.0), _row(3.0), _row(2.0), _row(float("nan")), _row(1.0, metric="failed")]
    (fig,) = group_figures(rows)
    assert fig.values == (1.0, 3.0, 2.0) and fig.median == 2.0 and fig.n == 3
    assert [f.metric for f in group_figures(rows, failed=True)] == ["throughput", "failed"]
