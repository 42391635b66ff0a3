"""Secrets in the results store and the dashboard (issue 31): a run written before a secret was
declared holds it in clear; once farm knows it, it is in no row of the store, no page, no page's
file name, in none of its escaped forms; and the store's own URL never shows its password."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request

import pytest
import sqlalchemy as sa

from farm.store import schema
from farm.store.db import open_store
from tests.conftest import ROOT, run_farm
from tests.store.rundirs import make_run

# a quote, an apostrophe, an ampersand and a space: every writer escapes it differently
SECRET = "it's a S3cret&key"


def _forms(secret: str) -> set[str]:
    import markupsafe  # the dashboard's templates escape with it: ' is &#39;, " is &#34;

    return {secret, html.escape(secret), html.escape(secret, quote=False), str(markupsafe.escape(secret)),
            json.dumps(secret)[1:-1],
            urllib.parse.quote(secret), urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret),
            secret.replace("'", "&apos;").replace("&", "&amp;")}


def _leaky_run(tmp_path):
    """A run whose console, who, stage message and run.json hold the secret (written before it was one)."""
    run = make_run(tmp_path / "run", "20261201-100000-0123456789ab", started="2026-12-01T10:00:00.000+00:00",
                   console=f"U-Boot 2023.01\n=> setenv password '{SECRET}'\n", who=f"ci {SECRET}",
                   failure=f"openssl speed: token {SECRET} refused", status="failed")
    info = json.loads((run / "run.json").read_text())
    info["ci_job"] = f"job {SECRET}"
    (run / "run.json").write_text(json.dumps(info))
    return run


def test_ingest_masks_every_text_it_stores(tmp_path, store_env):
    run = _leaky_run(tmp_path)
    proc = run_farm("db", "ingest", str(run), env={**store_env, "FARM_SECRET_KEY": SECRET})
    assert proc.returncode == 0, proc.stderr
    eng = open_store(store_env)
    texts = []
    with eng.connect() as c:
        for table in schema.metadata.sorted_tables:
            for row in c.execute(sa.select(table)).mappings():
                texts += [v for v in row.values() if isinstance(v, str)]
    blob = "\n".join(texts)
    assert "*****" in blob
    for form in _forms(SECRET):
        assert form not in blob, form


def test_dashboard_pages_and_their_names_hold_no_secret(tmp_path):
    """The static site and the live server, a secret in the console (HTML-escaped on the page: ``&#39;``)
    and in a run id, which names a page's file (``run/<run id>.html``) and its links."""
    token = "deadbeef-token"
    run = _leaky_run(tmp_path)
    named = make_run(tmp_path / "named", f"20261202-100000-{token}", started="2026-12-02T10:00:00.000+00:00")
    env = {"FARM_DB": str(tmp_path / "results.db")}
    assert run_farm("db", "ingest", str(run), str(named), env=env).returncode == 0  # stored before it was a secret
    secrets_env = {**env, "FARM_SECRET_KEY": SECRET, "FARM_SECRET_TOKEN": token}
    proc = run_farm("dashboard", "--out", str(tmp_path / "site"), env=secrets_env)
    assert proc.returncode == 0, proc.stderr
    files = [p for p in (tmp_path / "site").rglob("*") if p.is_file()]
    assert len(files) > 5
    for path in files:
        name = path.relative_to(tmp_path / "site").as_posix()
        assert token not in name, name
        text = path.read_text(errors="replace")
        for form in _forms(SECRET) | _forms(token):
            assert form not in text, (name, form)
    assert any("*****" in p.read_text() for p in files if p.name.startswith("20261201"))

    proc = subprocess.Popen([sys.executable, "-m", "farm.cli", "serve", "--port", "0"], cwd=ROOT,
                            env={**os.environ, **secrets_env}, stderr=subprocess.PIPE, text=True)
    try:
        port = re.search(r":(\d+)/", proc.stderr.readline()).group(1)
        pages = []
        for path in ("/index.html", "/run/20261201-100000-0123456789ab.html"):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}") as resp:
                pages.append(resp.read().decode())
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert "password" in pages[1]
    for page in pages:
        for form in _forms(SECRET) | _forms(token):
            assert form not in page, form


PASSWORD = "Pg-pa55word"


@pytest.mark.parametrize("url", [
    f"postgresql://farm:{PASSWORD}@127.0.0.1:1/farm?connect_timeout=2",
    f"postgresql://farm@127.0.0.1:1/farm?password={PASSWORD}&connect_timeout=2",
    f"postgresql://farm:{PASSWORD}@127.0.0.1:1x/farm",
    f"mysql://farm:{PASSWORD}@127.0.0.1/farm",
    "postgresql://farm:pw12@127.0.0.1:1/farm?connect_timeout=2",  # too short to mask everywhere: hidden anyway
])
def test_the_store_url_password_is_never_printed(tmp_path, url):
    password = urllib.parse.urlsplit(url).password or PASSWORD
    outputs = [run_farm("history", "throughput", env={"FARM_DB": url}),
               run_farm("db", "upgrade", env={"FARM_DB": url}),
               run_farm("import", "ipbench", str(ROOT / "tests" / "data" / "ipbench-sample.csv"), "--setup", "s",
                        "--out", str(tmp_path / "imp"), env={"FARM_DB": url})]
    for proc in outputs:
        text = proc.stdout + proc.stderr
        assert password not in text and urllib.parse.quote(password) not in text, text
        assert "Traceback" not in text, text
        assert "farm" in text  # it did say something: which store, and why
    assert outputs[0].returncode in (2, 3) and outputs[2].returncode == 0  # the import itself is kept
    assert "not ingested" in outputs[2].stderr
