"""The dashboard's paths, rendered from a store (SQLite): the static site's files and the live
answers are the same pages; two setups of one run compare like two runs."""

from __future__ import annotations

import re

import attrs
import pytest

from farm.dashboard import site
from farm.results.csvout import append_records, read_records
from farm.store.db import open_store
from farm.store.ingest import ingest
from tests.store.rundirs import make_run

RUN = "20261201-100000-aaaa"


@pytest.fixture
def eng(tmp_path):
    run = make_run(tmp_path / RUN, RUN, started="2026-12-01T10:00:00.000+00:00", setup="bare-linux",
                   values={"throughput": [1.0e8, 1.0e8, 1.0e8]})
    # the same benchmark under a second setup of the run: a guest at 80 %
    append_records(run / "results.csv", [attrs.evolve(r, setup="kvm guest/2", value=r.value * 0.8)
                                         for r in read_records(run / "results.csv")])
    eng = open_store({"FARM_DB": str(tmp_path / "results.db")})
    ingest(eng, [run])
    return eng


def _ratio(html: str) -> list[str]:
    """The ratio column of a comparison (a ratio from too few boots says inconclusive first)."""
    return re.findall(r'<td class="num[^"]*">(?:inconclusive: )?([0-9.]+) [^<]*</td><td[^>]*>[^<]*</td></tr>', html)


def test_two_setups_of_a_run_compare(eng, tmp_path):
    with eng.connect() as c:
        status, run_html = site.render(c, f"run/{RUN}.html")
        assert status == 200
        link = re.search(r'href="\.\./(compare/[^"]+)">bare-linux → kvm guest/2<', run_html)
        assert link, run_html
        status, html = site.render(c, link.group(1).replace("%20", " "))
        assert status == 200 and "Compare bare-linux → kvm guest/2 in" in html
        assert _ratio(html) == ["0.800"]
        status, live = site.render(c, "compare.html", {"a": [RUN], "b": [RUN], "sa": ["bare-linux"],
                                                       "sb": ["kvm guest/2"]}, live=True)
        assert status == 200 and _ratio(live) == ["0.800"]
        assert site.render(c, "compare.html", {"a": [RUN], "b": [RUN], "sa": ["nope"]}, live=True)[0] == 404
    written = site.write_site(eng, tmp_path / "site")
    assert tmp_path / "site" / link.group(1).replace("%20", " ") in written


def test_unknown_paths_are_404(eng):
    with eng.connect() as c:
        for path in ("run/nope.html", "runs-2.html", "runs-x.html", "trend/nope.html", "compare/a--b.html",
                     "../etc/passwd", "compare/x/y--z.html", "a/b/c/d.html"):
            assert site.render(c, path)[0] == 404, path


def test_the_static_site_refuses_a_symlinked_folder(eng, tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "site" / "run").symlink_to(tmp_path / "elsewhere")
    from farm.errors import JobError

    with pytest.raises(JobError, match="symbolic link"):
        site.write_site(eng, tmp_path / "site")
    assert not list((tmp_path / "elsewhere").iterdir())


def test_farm_serve_masks_secrets_it_knows(tmp_path):
    """A run made before a secret was declared holds it in clear; the server knows it now."""
    import os
    import subprocess
    import sys
    import urllib.request

    from tests.conftest import ROOT, run_farm

    secret = "hunter2-lab-password"
    run = make_run(tmp_path / RUN, RUN, started="2026-12-01T10:00:00.000+00:00",
                   console=f"login: root\npassword: {secret}\n")
    env = {"FARM_DB": str(tmp_path / "results.db")}
    assert run_farm("db", "ingest", str(run), env=env).returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "farm.cli", "serve", "--port", "0"], cwd=ROOT,
                            env={**os.environ, **env, "FARM_SECRET_LAB": secret}, stderr=subprocess.PIPE, text=True)
    try:
        port = re.search(r":(\d+)/", proc.stderr.readline()).group(1)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/run/{RUN}.html") as resp:
            html = resp.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert "password: " in html and secret not in html


PLACE_ROW = r'<tr><td>(?:<a href="place/[^"]+\.html">)?(maaxboard-\d)(?:</a>)?</td>(.*?)</tr>'


def test_a_runs_files_are_its_listed_files_only(tmp_path):
    """farm serve answers run/<run>/files/<path> from the run directory: only a file the store lists for
    the run, through no symbolic link, text masked and plain; the static site holds masked copies."""
    import os
    import shutil
    import subprocess
    import sys
    import urllib.error
    import urllib.request

    from tests.conftest import ROOT, run_farm

    secret = "hunter2-lab-password"
    run = make_run(tmp_path / RUN, RUN, started="2026-12-01T10:00:00.000+00:00",
                   console=f"U-Boot 2023.01\npassword: {secret}\n<script>alert(1)</script>\n")
    (run / "plots").mkdir()
    (run / "plots" / "sweep.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 20)
    (run / "summary.md").write_text("# farm run\n")
    (tmp_path / "outside.txt").write_text("not the run's")
    env = {"FARM_DB": str(tmp_path / "results.db")}
    assert run_farm("db", "ingest", str(run), env=env).returncode == 0
    (run / "extra.txt").write_text("made after the ingest: not listed")
    os.symlink(tmp_path / "outside.txt", run / "link.txt")
    (run / "summary.md").unlink()
    os.symlink(tmp_path / "outside.txt", run / "summary.md")  # listed, now a symlink: refused
    proc = subprocess.Popen([sys.executable, "-m", "farm.cli", "serve", "--port", "0"], cwd=ROOT,
                            env={**os.environ, **env, "FARM_SECRET_LAB": secret}, stderr=subprocess.PIPE, text=True)

    def get(path: str):
        try:
            with urllib.request.urlopen(f"{base}{path}") as resp:
                return resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as err:
            return err.code, err.headers, b""

    try:
        port = re.search(r":(\d+)/", proc.stderr.readline()).group(1)
        base = f"http://127.0.0.1:{port}/"
        status, headers, body = get(f"run/{RUN}/files/console/maaxboard-twin.log")
        assert status == 200 and headers["Content-Type"] == "text/plain; charset=utf-8"
        assert b"<script>alert(1)</script>" in body and secret.encode() not in body and b"password: " in body
        assert headers["Content-Security-Policy"].startswith("default-src 'none'")
        assert headers["X-Content-Type-Options"] == "nosniff"
        status, headers, body = get(f"run/{RUN}/files/plots/sweep.png")
        assert status == 200 and headers["Content-Type"] == "image/png" and body.startswith(b"\x89PNG")
        assert get(f"run/{RUN}/files/junit.xml")[1]["Content-Type"] == "text/plain; charset=utf-8"
        for path in ("extra.txt", "link.txt", "summary.md", "../results.db", "%2e%2e/results.db",
                     "console/../run.json", "/etc/passwd", "console"):
            assert get(f"run/{RUN}/files/{path}")[0] == 404, path
        assert get("run/nope/files/run.json")[0] == 404
        shutil.rmtree(run / "console")  # moved away: the store's copy of its end answers
        status, _, body = get(f"run/{RUN}/files/console/maaxboard-twin.log")
        assert status == 200 and b"<script>alert(1)</script>" in body and secret.encode() not in body
    finally:
        proc.terminate()
        proc.wait(timeout=10)

    site_dir = tmp_path / "site"
    env["FARM_SECRET_LAB"] = secret
    assert run_farm("dashboard", "--out", str(site_dir), env=env).returncode == 0
    files = site_dir / "run" / RUN / "files"
    assert sorted(p.relative_to(files).as_posix() for p in files.rglob("*") if p.is_file()) == [
        "console/maaxboard-twin.log", "junit.xml", "plots/sweep.png", "results.csv", "run.json"]
    assert secret not in (files / "console" / "maaxboard-twin.log").read_text()
    page = (site_dir / "run" / f"{RUN}.html").read_text()
    assert f'href="../run/{RUN}/files/plots/sweep.png"' in page and "summary.md (not on disk any more)" in page
    assert run_farm("dashboard", "--out", str(tmp_path / "bare"), "--files", "none", env=env).returncode == 0
    assert not (tmp_path / "bare" / "run" / RUN / "files").exists()
    assert "/files/" not in (tmp_path / "bare" / "run" / f"{RUN}.html").read_text()


def _placed_store(tmp_path, backend_url=None):
    place = {"name": "maaxboard-1", "coordinator": "127.0.0.1:20408", "owner": "ci/lab",
             "tags": {"board": "maaxboard", "note": "<b>bold</b>"}, "health_check": False}
    runs = [make_run(tmp_path / "p1", "20261201-100000-p1", started="2026-12-01T10:00:00.000+00:00", place=place),
            make_run(tmp_path / "p2", "20261202-100000-p2", started="2026-12-02T10:00:00.000+00:00",
                     place={**place, "health": "unhealthy"}, status="infrastructure-error",
                     failure="U-Boot prompt not seen"),
            make_run(tmp_path / "p3", "20261203-100000-p3", started="2026-12-03T10:00:00.000+00:00",
                     place={**place, "name": "maaxboard-2"}),
            make_run(tmp_path / "p4", "20261204-100000-p4", started="2026-12-04T10:00:00.000+00:00")]  # no place
    eng = open_store({"FARM_DB": backend_url or str(tmp_path / "results.db")})
    ingest(eng, runs)
    return eng


def test_the_places_page_from_the_store_and_a_coordinator(tmp_path, store_url):
    """SQLite and PostgreSQL: the runs' place is read from run.json as the store keeps it."""
    from farm.dashboard.data import PlaceNow

    eng = _placed_store(tmp_path, store_url)
    with eng.connect() as c:
        status, html = site.render(c, "places.html")
        assert status == 200
        assert site.NO_COORDINATOR in html
        rows = re.findall(PLACE_ROW, html)
        assert [name for name, _ in rows] == ["maaxboard-1", "maaxboard-2"]
        one = rows[0][1]
        assert "&lt;b&gt;bold&lt;/b&gt;" in one and "<b>bold" not in one   # a tag is text
        assert '<td class="num">2</td>' in one                             # two runs on it
        assert "20261202-100000-p2" in one and "infrastructure-error" in one  # last run, and last failure
        assert "unhealthy (recorded by its last run)" in one

        now = [PlaceNow("maaxboard-1", {"board": "maaxboard"}, "ci-host/ci", 1764583200.0, None, "ok"),
               PlaceNow("maaxboard-3", {"board": "maaxboard"}, None, None, None,
                        "unhealthy (3 infrastructure failures in a row)")]
        status, html = site.render(c, "places.html", places=lambda: (now, "the coordinator at 127.0.0.1:1, now"))
        rows = dict(re.findall(PLACE_ROW, html))
        assert set(rows) == {"maaxboard-1", "maaxboard-2", "maaxboard-3"}
        assert "ci-host/ci" in rows["maaxboard-1"] and "2025-12-01 10:00:00 UTC" in rows["maaxboard-1"]
        assert '<td class="pass">ok</td>' in rows["maaxboard-1"]
        assert "free" in rows["maaxboard-3"] and '<td class="failure">unhealthy (3' in rows["maaxboard-3"]
        assert "(not on the coordinator)" in rows["maaxboard-2"]
        assert "places.html" in site.site_paths(c)
        assert '<a href="place/maaxboard-1.html">maaxboard-1</a>' in html  # a place's page


def test_a_place_page_shows_its_runs_outcomes_and_health_over_time(tmp_path, store_url):
    eng = _placed_store(tmp_path, store_url)
    with eng.connect() as c:
        assert {"place/maaxboard-1.html", "place/maaxboard-2.html"} <= set(site.site_paths(c))
        status, html = site.render(c, "place/maaxboard-1.html")
        assert status == 200 and "<h1>Place maaxboard-1</h1>" in html
        assert ">2 runs</a>: " in html and "1 passed" in html and "1 infrastructure-error" in html
        strip = re.search(r'<svg class="strip".*?</svg>', html).group(0)
        cells = re.findall(r'<rect x="[\d.]+" y="8" width="\d+" height="22" class="(\w+)"><title>([^<]*)</title>', strip)
        assert [(kind, tip.split()[0]) for kind, tip in cells] == [("pass", "20261201-100000-p1"),
                                                                  ("failure", "20261202-100000-p2")]  # oldest first
        assert 'class="health"><title>unhealthy</title>' in strip  # the health the run recorded
        jobs = re.search(r'<table class="runs">.*?</table>', html).group(0)
        assert jobs.index("20261202-100000-p2") < jobs.index("20261201-100000-p1")  # newest first
        assert "20261203-100000-p3" not in html  # another place's
        assert "board=maaxboard note=&lt;b&gt;bold&lt;/b&gt;" in html
        assert site.render(c, "place/nope.html")[0] == 404


def _runs_listed(html: str) -> list[str]:
    table = re.search(r'<table class="runs">.*?</table>', html, re.S).group(0)
    return re.findall(r'<tr><td><a href="[^"]*run/[^"]+\.html">([^<]+)</a>', table)


def test_the_run_list_filters_by_place_status_pipeline_commit_and_date(tmp_path, store_url):
    eng = _placed_store(tmp_path, store_url)
    with eng.connect() as c:
        live = lambda **q: site.render(c, "index.html", {k: [v] for k, v in q.items()}, live=True)  # noqa: E731
        status, html = live(place="maaxboard-1")
        assert status == 200 and _runs_listed(html) == ["20261202-100000-p2", "20261201-100000-p1"]
        assert "2 runs with place maaxboard-1" in html
        assert _runs_listed(live(status="infrastructure-error")[1]) == ["20261202-100000-p2"]
        assert _runs_listed(live(place="maaxboard-1", status="passed")[1]) == ["20261201-100000-p1"]
        assert _runs_listed(live(since="2026-12-02", until="2026-12-03")[1]) == ["20261203-100000-p3",
                                                                                 "20261202-100000-p2"]
        assert len(_runs_listed(live(commit="1111")[1])) == 4 and _runs_listed(live(commit="abcd")[1]) == []
        assert _runs_listed(live(target="maaxboard-twin", setup="default", pipeline="smoke")[1])[0] == "20261204-100000-p4"
        status, html = live(since="yesterday")
        assert status == 400 and "since=&#39;yesterday&#39;: expected a date YYYY-MM-DD" in html
        assert len(_runs_listed(html)) == 4  # the whole list, the filter not applied
        # the live form: a GET form of selects and dates, each value with its count
        assert '<form class="filters" method="get" action="index.html">' in html
        assert '<option value="maaxboard-1">maaxboard-1 (2)</option>' in html
        # the static site: a page per value of a filter, linked from the list
        status, static = site.render(c, "index.html")
        assert "<form" not in static and 'href="runs/place/maaxboard-1/1.html"' in static
        assert "runs/status/passed/1.html" in site.site_paths(c)
        status, html = site.render(c, "runs/place/maaxboard-1/1.html")
        assert status == 200 and _runs_listed(html) == ["20261202-100000-p2", "20261201-100000-p1"]
        assert 'href="../../../run/20261202-100000-p2.html"' in html
        assert site.render(c, "runs/place/nope/1.html")[0] == 404
        assert site.render(c, "runs/place/maaxboard-1/2.html")[0] == 404


def test_a_run_page_draws_its_sweep_inline(tmp_path):
    run = make_run(tmp_path / "s", "20261201-100000-swp", started="2026-12-01T10:00:00.000+00:00",
                   sweep_setups=("bare-linux", "kvm-guest"))
    eng = open_store({"FARM_DB": str(tmp_path / "results.db")})
    ingest(eng, [run])
    with eng.connect() as c:
        status, html = site.render(c, "run/20261201-100000-swp.html")
        status_all, every = site.render(c, "run/20261201-100000-swp/figures.html")
    assert status == 200 and "<h2>Network sweep of maaxboard-twin</h2>" in html
    charts = re.findall(r'<svg class="chart xy".*?</svg>', html)
    assert len(charts) == 2                                   # achieved vs requested, and the RTT
    achieved, rtt = charts
    assert re.findall(r'<polyline points="[^"]+" class="curve (c\d)"', achieved) == ["c0", "c1"]  # a colour a setup
    assert ">bare-linux</text>" in achieved and ">kvm-guest</text>" in achieved                     # the legend
    assert 'class="ideal"' in achieved and 'class="ideal"' not in rtt
    assert "kvm-guest: 50 Mbit/s at 100 Mbit/s" in achieved    # a point's hover text, in human units
    assert "kvm-guest: 800 µs at 10 Mbit/s" in rtt
    # the key figures: a sweep is a row per load with its key columns, the full table behind a link
    sweeps = re.findall(r'<table class="sweep">(.*?)</table>', html)
    assert len(sweeps) == 2  # one per setup
    assert re.findall(r"<th>(\w+)</th>", sweeps[1]) == ["requested", "n", "received_throughput", "rtt_median"]
    assert re.findall(r"<tr><td class=\"num\">([^<]+)</td>", sweeps[1]) == ["10 Mbit/s", "50 Mbit/s", "100 Mbit/s"]
    assert "<td class=\"num\">25 Mbit/s</td><td class=\"num\">800 µs</td>" in sweeps[1]
    assert "all points: method=ipbench-echo; packet_size=1472 B" in html  # n: a count, not identity
    assert 'href="../run/20261201-100000-swp/figures.html">every figure of the run</a>' in html
    # ... in units too (not requested=10000000)
    assert status_all == 200 and every.count("<tr><td>maaxboard-twin</td>") == 19
    assert "packet_size=1472 B; requested=10 Mbit/s</td>" in every and "requested=10000000" not in every


def _many_runs(tmp_path, n: int):
    """``n`` runs a minute apart, ``r000`` the oldest; every 50th failed, the rest passed."""
    runs = []
    for i in range(n):
        hour, minute = 10 + i // 60, i % 60
        runs.append(make_run(tmp_path / f"r{i:03d}", f"20261201-{hour:02d}{minute:02d}00-r{i:03d}",
                             started=f"2026-12-01T{hour:02d}:{minute:02d}:00.000+00:00",
                             status="failed" if i % 50 == 0 else "passed"))
    eng = open_store({"FARM_DB": str(tmp_path / "results.db")})
    ingest(eng, runs)
    return eng


def _pager_links(html: str) -> tuple[str, list[tuple[str, str]]]:
    """A run list's pager: its 'page N of M' and its links (href, text)."""
    nav = re.search(r'<nav class="pages">(page \d+ of \d+):(.*?)</nav>', html)
    assert nav, html
    return nav.group(1), re.findall(r'<a href="([^"]+)"[^>]*>([^<]+)</a>', nav.group(2))


def test_the_run_list_is_paginated_100_runs_a_page(tmp_path):
    """110 runs (107 passed): two pages of the whole list and of the passed ones, static and live; a page
    past the last is 404."""
    import os
    import subprocess
    import sys
    import urllib.error
    import urllib.request

    from tests.conftest import ROOT

    eng = _many_runs(tmp_path, 110)
    newest_first = [f"20261201-{10 + i // 60:02d}{i % 60:02d}00-r{i:03d}" for i in reversed(range(110))]
    passed = [r for r in newest_first if int(r[-3:]) % 50]
    with eng.connect() as c:
        paths = site.site_paths(c)
        assert {"index.html", "runs-2.html", "runs/status/passed/1.html", "runs/status/passed/2.html",
                "runs/status/failed/1.html"} <= set(paths)
        assert "runs-3.html" not in paths and "runs/status/failed/2.html" not in paths

        # the static site: index.html, runs-2.html; a filter value's pages runs/<filter>/<value>/N.html
        status, html = site.render(c, "index.html")
        assert status == 200 and _runs_listed(html) == newest_first[:100]
        assert _pager_links(html) == ("page 1 of 2", [("runs-2.html", "2"), ("runs-2.html", "older ›")])
        status, html = site.render(c, "runs-2.html")
        assert status == 200 and _runs_listed(html) == newest_first[100:]
        assert _pager_links(html) == ("page 2 of 2", [("index.html", "‹ newer"), ("index.html", "1")])
        status, html = site.render(c, "runs/status/passed/2.html")
        assert status == 200 and _runs_listed(html) == passed[100:] and len(passed) == 107
        assert _pager_links(html) == ("page 2 of 2", [("../../../runs/status/passed/1.html", "‹ newer"),
                                                      ("../../../runs/status/passed/1.html", "1")])
        for path in ("runs-3.html", "runs-0.html", "runs/status/passed/3.html", "runs/status/failed/2.html"):
            assert site.render(c, path)[0] == 404, path

        # live: index.html?page=N, the filters kept in the pager's links
        live = lambda **q: site.render(c, "index.html", {k: [v] for k, v in q.items()}, live=True)  # noqa: E731
        status, html = live()
        assert status == 200 and _pager_links(html)[1][0] == ("index.html?page=2", "2")
        status, html = live(page="2")
        assert status == 200 and _runs_listed(html) == newest_first[100:]
        status, html = live(status="passed", page="2")
        assert status == 200 and _runs_listed(html) == passed[100:]
        assert _pager_links(html) == ("page 2 of 2", [("index.html?status=passed", "‹ newer"),
                                                      ("index.html?status=passed", "1")])
        assert _pager_links(live(status="passed")[1])[1][0] == ("index.html?status=passed&amp;page=2", "2")
        for page in ("3", "0", "-1", "two"):
            assert live(page=page)[0] == 404, page
        assert live(status="failed", page="2")[0] == 404  # 3 failed runs: one page

    # farm serve answers the same: page 2, and 404 past the last
    proc = subprocess.Popen([sys.executable, "-m", "farm.cli", "serve", "--port", "0"], cwd=ROOT,
                            env={**os.environ, "FARM_DB": str(tmp_path / "results.db")}, stderr=subprocess.PIPE,
                            text=True)
    try:
        port = re.search(r":(\d+)/", proc.stderr.readline()).group(1)
        base = f"http://127.0.0.1:{port}/"
        with urllib.request.urlopen(base + "index.html?page=2") as resp:
            assert _runs_listed(resp.read().decode()) == newest_first[100:]
        with urllib.request.urlopen(base + "runs-2.html") as resp:
            assert _runs_listed(resp.read().decode()) == newest_first[100:]
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(base + "index.html?page=3")
        assert err.value.code == 404
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_pager_links_the_first_last_and_nearby_pages():
    from farm.dashboard.pages import pager
    from farm.dashboard.render import macro

    def drawn(page: int, pages: int) -> str:
        return macro("macros.html", "pager")(pager(page, pages, str))

    def shown(page: int, pages: int) -> str:
        return re.sub(r"<[^>]+>", "", drawn(page, pages)).split(": ", 1)[1]

    assert pager(1, 1, str) is None and drawn(1, 1) == ""  # one page: no pager
    assert shown(1, 2) == "1 2 older ›"
    assert shown(10, 20) == "‹ newer 1 … 7 8 9 10 11 12 13 … 20 older ›"
    assert shown(20, 20) == "‹ newer 1 … 17 18 19 20"
    assert shown(2, 9) == "‹ newer 1 2 3 4 5 … 9 older ›"
    assert '<b>10</b>' in drawn(10, 20) and 'href="9" rel="prev"' in drawn(10, 20)


#: markup and quotes, as a run id, setup, pipeline, place, params text, who or message may hold them
HOSTILE = """<script>alert("x")</script>'"""
HOSTILE_SHOWN = "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&#39;"  # the templates' escaped text


def test_every_page_shows_names_holding_markup_as_text(tmp_path):
    """Every page of the static site and farm serve's live answers (a filter, a comparison, a place, a 404 and
    an error naming what they were given) show each name a run gives as text: the autoescaping templates
    escape it, quotes too (a name may be written into an attribute)."""
    from farm.dashboard import pages
    from farm.dashboard.data import PlaceNow

    place = {"name": f"mb{HOSTILE}", "coordinator": "c:1", "tags": {"note": HOSTILE}, "health": HOSTILE}
    runs = []
    for i in range(2):
        run = make_run(tmp_path / f"r{i}", f"20261201-10000{i}-{HOSTILE}{i}",
                       started=f"2026-12-0{i + 1}T10:00:00.000+00:00", setup=f"set{HOSTILE}", pipeline=f"pipe{HOSTILE}", who=HOSTILE, place=place,
                       console=f"U-Boot 2023.01\n{HOSTILE}\n", status="failed" if i else "passed",
                       failure=f"boom {HOSTILE}" if i else None, sweep_setups=(f"sweep{HOSTILE}",) if i else ())
        append_records(run / "results.csv", [attrs.evolve(r, params=f"{r.params};note={HOSTILE}")
                                             for r in read_records(run / "results.csv")])
        runs.append(run)
    eng = open_store({"FARM_DB": str(tmp_path / "results.db")})
    ingest(eng, runs)
    first, then = f"20261201-100000-{HOSTILE}0", f"20261201-100001-{HOSTILE}1"
    now = [PlaceNow(place["name"], {"note": HOSTILE}, HOSTILE, 1764583200.0, None, HOSTILE)]
    with eng.connect() as c:
        paths = site.site_paths(c)
        answers = {path: site.render(c, path) for path in paths}
        answers |= {f"live {path}": site.render(c, path, live=True) for path in paths}
        for name, path, query in (("filtered", "index.html", {"pipeline": [f"pipe{HOSTILE}"], "setup": [HOSTILE]}),
                                  ("a bad filter", "index.html", {"since": [HOSTILE]}),
                                  ("compared", "compare.html", {"a": [first], "b": [then]}),
                                  ("no such setup", "compare.html", {"a": [first], "b": [first], "sa": [HOSTILE]}),
                                  ("no such run", "compare.html", {"a": [HOSTILE], "b": [first]}),
                                  ("not found", f"run/{HOSTILE}.html", {})):
            answers[name] = site.render(c, path, query, live=True)
        place_page = next(path for path in paths if path.startswith("place/"))
        for path in ("places.html", place_page):
            answers[f"{path} now"] = site.render(c, path, places=lambda: (now, f"the coordinator at {HOSTILE}"))
    answers["error"] = (500, pages.error_page(f"ValueError: {HOSTILE}"))
    assert {"index.html", "trends.html", "compare.html", "places.html"} <= set(paths)  # every kind of page
    assert {"run", "compare", "trend", "place", "runs"} <= {path.split("/")[0] for path in paths}
    for name, (status, html) in answers.items():
        assert "<script" not in html, name           # farm's pages carry no script: one here is a name let through
        if name.endswith("changes.html"):  # two runs have no change point: the page names nothing (a change's
            assert "<p>0 change points in" in html   # names: tests/store/test_changes.py)
            continue
        assert HOSTILE_SHOWN in html, (name, status)  # and the name is shown, as text
