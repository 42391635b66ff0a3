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
