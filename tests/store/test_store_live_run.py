"""farm run ingests its run at the end: the real smoke pipeline on the MaaXBoard twin."""

from __future__ import annotations

import csv

import pytest
import sqlalchemy as sa

from farm.store import schema
from farm.store.db import open_store
from tests.conftest import run_farm

pytestmark = pytest.mark.boot


def test_farm_run_ingests_its_run(project_root, maaxboard_image, tftp_root, tmp_path):
    env = {"FARM_DB": str(tmp_path / "results.db")}
    out = tmp_path / "run"
    proc = run_farm("run", "pipelines/smoke.yaml", "--out", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr and proc.stdout.strip().splitlines()[-1] == str(out)
    with open(out / "results.csv") as f:
        rows = list(csv.DictReader(f))
    eng = open_store(env)
    with eng.connect() as c:
        run = c.execute(sa.select(schema.runs)).one()
        assert (run.run_id, run.kind, run.status, run.junit) == (rows[0]["run_id"], "live", "passed", "pass")
        assert run.kernels == maaxboard_image.manifest["kernel_version"]
        n = c.execute(sa.select(sa.func.count()).select_from(schema.records)).scalar_one()
        assert n == len(rows)
        console = c.execute(sa.select(schema.consoles.c.text)).scalar_one()
        assert "FARM-READY" in console
        shas = set(c.execute(sa.select(schema.images.c.sha256)).scalars())
    assert len(shas) == 2  # the kernel and the initrd
    proc = run_farm("history", "received_throughput", "--benchmark", "iperf3", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
