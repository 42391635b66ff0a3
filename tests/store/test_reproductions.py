"""The store knows which run reproduces which (migration 0005, a run's reproduction.json at ingest),
farm history shows reproductions beside their original, and the dashboard's run page shows the archived
images (downloads through farm serve and the static site), the command to reproduce, and the verdicts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
import sqlalchemy as sa

from farm.errors import JobError
from farm.results.csvout import read_records
from farm.results.reproduction import dumps, judge
from farm.store import schema
from farm.store.db import current_revision, database_url, engine, head_revision, open_store
from farm.store.ingest import ingest, read_run
from farm.store.reproductions import reproduced_by, reproductions_of
from tests.conftest import ROOT, run_farm
from tests.store.rundirs import make_run

A, B = "20261201-100000-aaaa", "20261202-100000-bbbb"


STEADY = (1.00e8, 1.01e8, 0.99e8, 1.00e8, 1.02e8)  # five boots (one repeat each): enough for a verdict


def pair(tmp_path, new_values=STEADY):
    """An original run and a reproduction of it, with its reproduction.json as farm reproduce writes it."""
    a = make_run(tmp_path / A, A, started="2026-12-01T10:00:00.000+00:00", values={"throughput": list(STEADY)})
    b = make_run(tmp_path / B, B, started="2026-12-02T10:00:00.000+00:00", values={"throughput": list(new_values)})
    rep = judge(read_records(a / "results.csv"), read_records(b / "results.csv"), threshold=0.05,
                original_run_id=A, run_id=B)
    (b / "reproduction.json").write_text(dumps(rep))
    return a, b, rep


def test_migration_0005_adds_reproductions_to_a_store_at_0004_and_takes_it_away(store_env, tmp_path):
    from alembic import command

    from farm.store.db import _alembic_config

    eng = engine(database_url(store_env))
    with eng.begin() as c:
        command.upgrade(_alembic_config(c), "0004")
        assert "reproductions" not in sa.inspect(c).get_table_names()
    open_store(store_env)
    with eng.connect() as c:
        assert current_revision(c) == head_revision()
        assert "ix_reproductions_original" in {i["name"] for i in sa.inspect(c).get_indexes("reproductions")}
    with eng.begin() as c:
        command.downgrade(_alembic_config(c), "0004")
        assert "reproductions" not in sa.inspect(c).get_table_names()


def test_a_reproduction_is_stored_with_its_verdict_and_replaced_with_its_run(store_env, tmp_path):
    a, b, rep = pair(tmp_path)
    eng = open_store(store_env)
    ingest(eng, [a, b])
    ingest(eng, [b])  # again: one reproduction
    with eng.connect() as c:
        [row] = reproductions_of(c, A)
        assert (row.run_id, row.verdict, row.reproduced, row.not_reproduced) == (B, "reproduced", 1, 0)
        assert reproduced_by(c, B).original_run_id == A and reproduced_by(c, A) is None
    (b / "reproduction.json").unlink()
    ingest(eng, [b])
    with eng.connect() as c:
        assert reproductions_of(c, A) == []


def test_a_reproduction_json_that_is_not_farm_s_is_refused_naming_the_field(store_env, tmp_path):
    a, b, _ = pair(tmp_path)
    data = json.loads((b / "reproduction.json").read_text())
    for field, value, words in (("original_run_id", "../x", "original_run_id"), ("verdict", "maybe", "verdict"),
                                ("reproduced", -1, "reproduced"), ("threshold", "5%", "threshold")):
        (b / "reproduction.json").write_text(json.dumps({**data, field: value}))
        with pytest.raises(JobError, match=rf"reproduction.json: {words}"):
            read_run(b)


def test_farm_history_shows_reproductions_beside_their_original(store_env, tmp_path):
    a, b, _ = pair(tmp_path, new_values=tuple(2 * v for v in STEADY))  # not reproduced
    c_run = make_run(tmp_path / "c", "20261203-100000-cccc", started="2026-12-03T10:00:00.000+00:00")
    ingest(open_store(store_env), [a, b, c_run])
    plain = run_farm("history", "throughput", env=store_env)
    assert plain.returncode == 0, plain.stderr
    lines = [line for line in plain.stdout.splitlines() if line.startswith("  ")]
    assert len(lines) == 3 and lines[0].split()[1] == A and "1 reproduction" in lines[0]
    assert lines[1].split()[1] == B and lines[1].endswith(f"reproduces {A}: not reproduced")
    only = run_farm("history", "throughput", "--reproductions", env=store_env).stdout.splitlines()
    assert [line.split()[1] for line in only[1:]] == [A, B] and only[2].startswith("    ")
    as_json = json.loads(run_farm("history", "throughput", "--json", env=store_env).stdout)
    assert as_json["reproductions"] == {B: {"original": A, "verdict": "not reproduced"}}
    assert run_farm("history", "throughput", "--by", "kernel", "--reproductions", env=store_env).returncode == 2


# --- the dashboard ---

@pytest.fixture
def archived_pair(tmp_path, monkeypatch):
    """A run archived for real (a fake image through the real runner and listener) and its reproduction."""
    from farm.archive.reproduce import reproduce
    from tests.unit.archive_helpers import archived_run, values
    from tests.fakes import FakeFlow

    env = {"FARM_DB": str(tmp_path / "results.db"), "FARM_ARCHIVE": str(tmp_path / "archive")}
    run = archived_run(tmp_path, monkeypatch, 4.0, extra="boots: 5\n")
    again = reproduce(run.run_id, out=tmp_path / "again", cache=tmp_path / "empty", flow_for=lambda s: FakeFlow(),
                      registry=values(9.0))
    return env, run, again


def test_the_run_page_shows_its_archived_images_the_command_and_its_reproductions(archived_pair, tmp_path):
    from farm.archive import open_archive

    env, run, again = archived_pair
    record = open_archive().record(run.run_id)
    kernel = record.images["fake"].artifacts["Image"]
    proc = subprocess.Popen([sys.executable, "-m", "farm.cli", "serve", "--port", "0"], cwd=ROOT,
                            env={**os.environ, **env}, stderr=subprocess.PIPE, text=True)

    def get(path: str):
        try:
            with urllib.request.urlopen(f"{base}{path}") as resp:
                return resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as err:
            return err.code, err.headers, err.read()

    try:
        port = re.search(r":(\d+)/", proc.stderr.readline()).group(1)
        base = f"http://127.0.0.1:{port}/"
        status, _, body = get(f"run/{run.run_id}.html")
        page = body.decode()
        assert status == 200 and "Images (archived)" in page and kernel.sha256 in page
        assert f"farm reproduce {run.run_id}" in page
        assert f'href="../archive/{kernel.sha256}/Image"' in page
        assert f'href="../run/{again.run.run_id}.html"' in page and "not reproduced" in page
        status, _, body = get(f"run/{again.run.run_id}.html")
        assert f"reproduces <a href=\"../run/{run.run_id}.html\">{run.run_id}</a>: NOT reproduced" in body.decode()
        status, headers, body = get(f"archive/{kernel.sha256}/Image")
        assert status == 200 and headers["Content-Type"] == "application/octet-stream"
        assert headers["Content-Disposition"] == 'attachment; filename="Image"'
        assert body == (tmp_path / "img" / "Image").read_bytes()
        manifest = record.images["fake"].manifest
        status, headers, body = get(f"archive/{manifest.sha256}/manifest.json")
        assert status == 200 and json.loads(body)["name"] == "fake"
        assert get(f"archive/{'0' * 64}/Image")[0] == 404
        assert get(f"archive/{kernel.sha256}/..%2f..%2fresults.db")[0] == 404
        path = open_archive().object_path(kernel.sha256)
        os.chmod(path, 0o644)
        path.write_bytes(b"X" + path.read_bytes()[1:])
        status, _, body = get(f"archive/{kernel.sha256}/Image")
        assert status == 500 and b"corrupt" in body and b"refused" in body
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_static_site_holds_each_archived_file_once_copied_or_linked(archived_pair, tmp_path):
    from farm.archive import open_archive

    env, run, again = archived_pair
    kernel = open_archive().record(run.run_id).images["fake"].artifacts["Image"]
    assert run_farm("dashboard", "--out", str(tmp_path / "site"), env=env).returncode == 0
    copied = tmp_path / "site" / "archive" / kernel.sha256 / "Image"
    assert copied.read_bytes() == (tmp_path / "img" / "Image").read_bytes() and not copied.is_symlink()
    assert len(list((tmp_path / "site" / "archive").glob(f"{kernel.sha256}/*"))) == 1  # both runs: one copy
    assert f'href="../archive/{kernel.sha256}/Image"' in (tmp_path / "site" / "run" / f"{run.run_id}.html").read_text()
    assert run_farm("dashboard", "--out", str(tmp_path / "linked"), "--files", "link", env=env).returncode == 0
    linked = tmp_path / "linked" / "archive" / kernel.sha256 / "Image"
    assert linked.is_symlink() and linked.resolve() == open_archive().object_path(kernel.sha256).resolve()
    assert run_farm("dashboard", "--out", str(tmp_path / "bare"), "--files", "none", env=env).returncode == 0
    assert not (tmp_path / "bare" / "archive").exists()
    assert "/archive/" not in (tmp_path / "bare" / "run" / f"{run.run_id}.html").read_text()
    with open_store(env).connect() as c:
        assert c.execute(sa.select(sa.func.count()).select_from(schema.reproductions)).scalar_one() == 1
