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
    return re.findall(r'<td class="num">([0-9.]+)</td></tr>', html)


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
        rows = re.findall(r"<tr><td>(maaxboard-\d)</td>(.*?)</tr>", html)
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
        rows = dict(re.findall(r"<tr><td>(maaxboard-\d)</td>(.*?)</tr>", html))
        assert set(rows) == {"maaxboard-1", "maaxboard-2", "maaxboard-3"}
        assert "ci-host/ci" in rows["maaxboard-1"] and "2025-12-01 10:00:00 UTC" in rows["maaxboard-1"]
        assert '<td class="pass">ok</td>' in rows["maaxboard-1"]
        assert "free" in rows["maaxboard-3"] and '<td class="failure">unhealthy (3' in rows["maaxboard-3"]
        assert "(not on the coordinator)" in rows["maaxboard-2"]
        assert "places.html" in site.site_paths(c)


def test_a_run_page_draws_its_sweep_inline(tmp_path):
    run = make_run(tmp_path / "s", "20261201-100000-swp", started="2026-12-01T10:00:00.000+00:00",
                   sweep_setups=("bare-linux", "kvm-guest"))
    eng = open_store({"FARM_DB": str(tmp_path / "results.db")})
    ingest(eng, [run])
    with eng.connect() as c:
        status, html = site.render(c, "run/20261201-100000-swp.html")
    assert status == 200 and "<h2>Network sweep of maaxboard-twin</h2>" in html
    charts = re.findall(r'<svg class="chart xy".*?</svg>', html)
    assert len(charts) == 2                                   # achieved vs requested, and the RTT
    achieved, rtt = charts
    assert re.findall(r'<polyline points="[^"]+" class="curve (c\d)"', achieved) == ["c0", "c1"]  # a colour a setup
    assert ">bare-linux</text>" in achieved and ">kvm-guest</text>" in achieved                     # the legend
    assert 'class="ideal"' in achieved and 'class="ideal"' not in rtt
    assert "kvm-guest: 50 Mbit/s at 100 Mbit/s" in achieved    # a point's hover text, in human units
    assert "kvm-guest: 800 µs at 10 Mbit/s" in rtt
    # the key figures' params in units too (not requested=10000000)
    assert "packet_size=1472 B; requested=10 Mbit/s</td>" in html and "requested=10000000" not in html
