"""The hook at the end of farm run/import/qualify: a store that fails is a warning, never a lost run;
FARM_DB=none turns it off."""

from __future__ import annotations

from farm.store.db import database_url
from tests.conftest import ROOT, run_farm

DATA = ROOT / "tests" / "data"


def _import(out, env):
    return run_farm("import", "ipbench", str(DATA / "ipbench-sample.csv"), "--setup", "lab", "--out", str(out),
                    env=env)


def test_a_store_that_fails_is_a_warning_and_the_run_is_kept(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    proc = _import(tmp_path / "out", {"FARM_DB": str(blocker / "results.db")})  # its directory cannot be made
    assert proc.returncode == 0, proc.stderr
    assert "farm: warning: results store:" in proc.stderr and "not ingested" in proc.stderr
    assert f"farm db ingest {tmp_path / 'out'}" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert (tmp_path / "out" / "results.csv").is_file() and proc.stdout.strip() == str(tmp_path / "out")


def test_a_postgres_server_that_is_not_there_is_a_warning(tmp_path):
    proc = _import(tmp_path / "out", {"FARM_DB": f"postgresql://farm@/farm?host={tmp_path}&connect_timeout=2"})
    assert proc.returncode == 0, proc.stderr
    assert "not ingested" in proc.stderr and (tmp_path / "out" / "results.csv").is_file()


def test_farm_db_none_turns_the_store_off(tmp_path):
    env = {"FARM_DB": "none", "HOME": str(tmp_path)}
    proc = _import(tmp_path / "out", env)
    assert proc.returncode == 0 and "warning" not in proc.stderr
    assert not list(tmp_path.rglob("*.db"))
    proc = run_farm("history", "throughput", env=env)
    assert proc.returncode == 2 and "the results store is off (FARM_DB=none)" in proc.stderr


def test_database_url():
    assert database_url({}).endswith("/.local/share/farm/results.db")
    assert database_url({"FARM_DB": "OFF"}) is None
    assert database_url({"FARM_DB": "postgresql://u@h/db"}) == "postgresql+psycopg://u@h/db"
    assert database_url({"FARM_DB": "/x/y.db"}) == "sqlite:////x/y.db"
    assert database_url({"FARM_DB": "sqlite:///rel.db"}) == "sqlite:///rel.db"


def test_a_store_a_newer_farm_migrated_is_refused_untouched(tmp_path):
    import sqlalchemy as sa

    from farm.store.db import engine, open_store

    env = {"FARM_DB": str(tmp_path / "results.db")}
    eng = open_store(env)
    with eng.begin() as c:
        c.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
    proc = run_farm("history", "throughput", env=env)
    assert proc.returncode == 3, proc.stderr
    assert "revision 9999, which this farm does not know" in proc.stderr and "Traceback" not in proc.stderr
    with engine(f"sqlite:///{tmp_path / 'results.db'}").connect() as c:
        assert c.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one() == "9999"


def test_a_store_that_is_not_there_is_one_line(tmp_path):
    env = {"FARM_DB": f"postgresql://farm@/farm?host={tmp_path}&connect_timeout=2"}
    for argv in (("history", "throughput"), ("db", "ingest", str(tmp_path)),
                 ("dashboard", "--out", str(tmp_path / "d"))):
        proc = run_farm(*argv, env=env)
        assert proc.returncode == 3, proc.stderr
        assert proc.stderr.startswith("farm: infrastructure error: results store postgresql+psycopg://farm@/farm")
        assert "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_serve_on_a_port_in_use_is_a_job_error(tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        proc = run_farm("serve", "--port", str(s.getsockname()[1]), env={"FARM_DB": str(tmp_path / "r.db")},
                        timeout=60)
    assert proc.returncode == 2 and "serve: cannot listen on 127.0.0.1:" in proc.stderr
