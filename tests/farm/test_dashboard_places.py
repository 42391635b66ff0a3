"""The dashboard's places page against the virtual lab's real labgrid coordinator: `farm dashboard
--coordinator` writes who holds each place, since when, and its health, as the coordinator says."""

from __future__ import annotations

import re

import pytest

from farm.coordinator import Coordinator
from farm.places import set_health

from ..conftest import run_farm

pytestmark = pytest.mark.boot  # the virtual lab (coordinator, exporter, QEMU twins)


def _rows(html: str) -> dict[str, str]:
    return dict(re.findall(r'<tr><td>(?:<a href="place/[^"]+\.html">)?(maaxboard-\d)(?:</a>)?</td>(.*?)</tr>', html))


def test_places_page_shows_holder_and_health_from_the_coordinator(lab, tmp_path):
    env = {"FARM_DB": str(tmp_path / "results.db")}
    locked = run_farm("lock", lab.places[0], "--job", "dash-test", env=env)
    assert locked.returncode == 0, locked.stderr
    with Coordinator(lab.coordinator) as coord:
        set_health(coord, lab.places[1], "unhealthy")

    proc = run_farm("dashboard", "--out", str(tmp_path / "site"), "--coordinator", lab.coordinator, env=env)
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "site" / "places.html").read_text()
    assert f"the coordinator at {lab.coordinator}, now" in html
    rows = _rows(html)
    assert set(rows) == set(lab.places)
    held, sick = rows[lab.places[0]], rows[lab.places[1]]
    assert re.search(r'<td class="held">[^<]+/[^<]+</td><td>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC</td>', held), held
    assert '<td class="pass">ok</td>' in held and "board=maaxboard" in held
    assert "<td>free</td>" in sick and '<td class="failure">unhealthy' in sick

    # no coordinator answering: the page says so, the site is still written (exit 0)
    proc = run_farm("dashboard", "--out", str(tmp_path / "site2"), "--coordinator", "127.0.0.1:9", env=env)
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "site2" / "places.html").read_text()
    assert "the coordinator at 127.0.0.1:9 did not answer" in html


def test_farm_serve_asks_the_coordinator_at_each_load(lab, tmp_path):
    """farm serve answers from a thread of its HTTP server: the coordinator client works there too,
    and a lock taken after the server started shows on the next load."""
    import os
    import subprocess
    import sys
    import urllib.request

    from ..conftest import ROOT

    env = {"FARM_DB": str(tmp_path / "results.db")}
    proc = subprocess.Popen([sys.executable, "-m", "farm.cli", "serve", "--port", "0", "--coordinator",
                             lab.coordinator], cwd=ROOT, env={**os.environ, **env}, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert match, line
        url = f"http://127.0.0.1:{match.group(1)}/places.html"
        with urllib.request.urlopen(url, timeout=60) as resp:
            rows = _rows(resp.read().decode())
        assert "<td>free</td>" in rows[lab.places[0]]
        locked = run_farm("lock", lab.places[0], "--job", "serve-test", env=env)
        assert locked.returncode == 0, locked.stderr
        with urllib.request.urlopen(url, timeout=60) as resp:
            rows = _rows(resp.read().decode())
        assert re.search(r'<td class="held">[^<]+/[^<]+</td>', rows[lab.places[0]]), rows
    finally:
        proc.terminate()
        proc.wait(timeout=10)
