"""farm changes and farm diff on a store filled from recorded runs (tests/data/qualify-twin): the step found
where the runs became slower, none in unchanged runs; what differs between two stored runs."""

from __future__ import annotations

import json

import pytest

from farm.errors import JobError
from farm.store.changes import find_changes
from farm.store.db import open_store
from farm.store.ingest import ingest
from farm.store.runinfo import run_json
from tests.conftest import run_farm
from tests.store.rundirs import recorded_history

SHA256 = "crypto.openssl-speed throughput[algorithm=sha256;block=16384;multi=4] maaxboard-twin/default (bytes/s)"


def _store(root, runs: int, slow_from: int | None):
    """A SQLite store of ``runs`` recorded runs, slower from run ``slow_from`` on: its engine and FARM_DB."""
    env = {"FARM_DB": str(root / "results.db")}
    eng = open_store(env)
    ingest(eng, recorded_history(root / "runs", runs, slow_from=slow_from))
    return eng, env


@pytest.fixture(scope="module")
def slower(tmp_path_factory):
    """16 runs, the later 8 with openssl's four processes on one core (the recorded slow run's boots)."""
    return _store(tmp_path_factory.mktemp("slower"), 16, slow_from=8)


def test_the_step_where_runs_became_slower_is_found_with_its_runs_ratio_and_id(slower):
    eng, _ = slower
    with eng.connect() as connection:
        found = find_changes(connection, metric="throughput")
        later = find_changes(connection, metric="throughput", since="2026-12-01T02:00")
    # both algorithms' throughput fell, at run 8
    assert SHA256 in {c.series.label() for c in found.changes}
    assert found.searched == 2 and len(found.changes) == 2
    for c in found.changes:
        assert (c.before[-1].x, c.after[0].x) == ("20261201-070000-hist07", "20261201-080000-hist08")
        assert (c.step.n_before, c.step.n_after) == (8, 8) and c.judged == "worse"
        low, high = c.step.interval
        assert low <= c.step.ratio <= high < 0.8 and c.step.p_value < 0.001
    # fewer runs before it: the same change, the same id, a side of 6 runs since 02:00
    assert [c.id for c in later.changes] == [c.id for c in found.changes]
    assert {c.step.n_before for c in later.changes} == {6}


def test_farm_changes_text_and_json_name_the_runs_on_both_sides(slower):
    _, env = slower
    text = run_farm("changes", "--metric", "throughput", "--benchmark", "openssl-speed", env=env)
    assert text.returncode == 0, text.stderr
    assert SHA256 in text.stdout and "worse: 0." in text.stdout, text.stdout
    assert "farm diff 20261201-070000-hist07 20261201-080000-hist08" in text.stdout
    assert "farm: 2 change point(s) in 2 series (p <= 0.001, at least 5 runs a side)" in text.stdout
    data = json.loads(run_farm("changes", "--json", env=env).stdout)
    assert data["series_searched"] == 9 and data["alpha"] == 0.001
    (first,), = [s["changes"] for s in data["series"]
                 if (s["metric"], s["params"]) == ("throughput", "algorithm=sha256;block=16384;multi=4")]
    assert first["runs_before"][-1] == "20261201-070000-hist07" and len(first["runs_after"]) == 8
    assert first["interval"][0] <= first["ratio"] <= first["interval"][1] and first["confidence"] == 0.95
    assert len(first["id"]) == 12 and first["judged"] == "worse"


def test_farm_changes_finds_none_in_unchanged_runs(tmp_path):
    _, env = _store(tmp_path, 12, slow_from=None)
    quiet = run_farm("changes", env=env)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout == "farm: 0 change point(s) in 9 series (p <= 0.001, at least 5 runs a side)\n"


def test_farm_diff_of_the_runs_across_the_change_and_of_a_run_that_is_not_there(slower, monkeypatch):
    _, env = slower
    diff = run_farm("diff", "20261201-070000-hist07", "20261201-080000-hist08", env=env)
    assert diff.returncode == 0, diff.stderr
    assert diff.stdout.splitlines() == [
        "farm diff 20261201-070000-hist07 20261201-080000-hist08: 3 input(s) differ",
        "target maaxboard-twin", "  default: cpus                          4 -> 1",
        "  default: online                        0-3 -> 0", "setup default",
        '  bootargs                               [] -> ["maxcpus=1"]']
    monkeypatch.setenv("FARM_DB", env["FARM_DB"])
    with pytest.raises(JobError, match=r"run '20261201-990000-gone': neither a run directory nor a run in the "
                       r"results store .*results\.db \(farm db ingest RUN_DIR adds one\)"):
        run_json("20261201-990000-gone")


def test_the_changes_page_shows_each_change_with_its_runs_and_what_differs_across_it(slower):
    from farm.dashboard import site

    eng, _ = slower
    with eng.connect() as c:
        status, html = site.render(c, "changes.html")
        listed = site.site_paths(c)
    assert status == 200 and "<p>7 change points in 9 series" in html
    row = next(r for r in html.split("<tr") if "algorithm=sha256; block=16384 B; multi=4" in r and "bytes/s" not in r
               and "worse: 0.6" in r)
    assert '<td class="regression">worse: 0.617 [0.473–0.654], n 8/8, p 0.00016' in row
    assert ('<a href="run/20261201-070000-hist07.html">20261201-070000-hist07</a> → '
            '<a href="run/20261201-080000-hist08.html">20261201-080000-hist08</a>') in row
    assert "<li>setup default: bootargs [] → [&#34;maxcpus=1&#34;]</li>" in row  # escaped, as every value
    # the static site has the page, and the comparison of the two runs each change lies between
    assert "changes.html" in listed and "compare/20261201-070000-hist07--20261201-080000-hist08.html" in listed
    assert '<a href="changes.html">Changes</a>' in html and '<tr id="c-d0a81b730e63">' in html
    # the trend page marks the first run after the change, linked to it
    with eng.connect() as c:
        from farm.dashboard import data

        trend = next(t for t in data.trends(c) if (t.benchmark, t.metric) == ("openssl-speed", "throughput"))
        _, page = site.render(c, f"trend/{trend.slug}.html")
    assert page.count('<td class="flag-change"><a href="../changes.html#c-') == 2
    assert ('20261201-080000-hist08</a></td><td>2026-12-01 08:00:00</td>' in page
            and '<a href="../changes.html#c-d0a81b730e63">change d0a81b730e63</a>' in page)


def test_the_changes_page_shows_names_holding_markup_as_text(tmp_path):
    from farm.dashboard import site
    from tests.store.rundirs import make_run
    from tests.store.test_site import HOSTILE, HOSTILE_SHOWN

    runs = [make_run(tmp_path / f"r{i}", f"20261201-{i:02d}0000-{HOSTILE}{i}", started=f"2026-12-01T{i:02d}:00:00.000+00:00",
                     setup=f"set{HOSTILE}", values={"throughput": [(1.0e8 if i < 7 else 0.8e8) * (1 + i % 3 / 100)]})
            for i in range(14)]
    eng = open_store({"FARM_DB": str(tmp_path / "results.db")})
    ingest(eng, runs)
    with eng.connect() as c:
        for live in (False, True):
            status, html = site.render(c, "changes.html", live=live)
            assert status == 200 and "<p>1 change point in 1 series" in html
            assert "<script" not in html and f"set{HOSTILE_SHOWN}" in html and f"{HOSTILE_SHOWN}7</a>" in html
