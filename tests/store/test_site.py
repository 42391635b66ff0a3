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
