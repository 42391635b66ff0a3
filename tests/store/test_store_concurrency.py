"""Several commands opening a new store at once: one migrates, the others wait or find it done."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT


def test_commands_opening_a_new_store_at_once_all_succeed(store_url):
    env = {**os.environ, "FARM_DB": store_url}
    procs = [subprocess.Popen([sys.executable, "-m", "farm.cli", "db", "upgrade"], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    assert all(rc == 0 for rc, _ in results), results


def test_runs_ingested_at_once_are_all_stored(store_url, tmp_path):
    import sqlalchemy as sa

    from farm.store import schema
    from farm.store.db import open_store
    from tests.store.rundirs import make_run

    env = {**os.environ, "FARM_DB": store_url}
    open_store(env)  # the schema is there: this is about the runs' transactions
    dirs = [make_run(tmp_path / f"r{i}", f"20261201-10000{i}-aaaa", started=f"2026-12-01T10:00:0{i}.000+00:00")
            for i in range(4)]
    procs = [subprocess.Popen([sys.executable, "-m", "farm.cli", "db", "ingest", str(d)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for d in dirs]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    assert all(rc == 0 for rc, _ in results), results
    with open_store(env).connect() as c:
        assert c.execute(sa.select(sa.func.count()).select_from(schema.runs)).scalar_one() == 4
