"""`farm run PIPELINE --farm board=maaxboard`: two pipelines at once, each on its own place."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from ..conftest import ROOT, run_farm

pytestmark = pytest.mark.boot


def test_two_smoke_runs_on_the_farm_at_once(lab, maaxboard_image, tmp_path):
    outs = [tmp_path / f"run-{i}" for i in (1, 2)]
    procs = [subprocess.Popen([sys.executable, "-m", "farm.cli", "run", "pipelines/smoke.yaml",
                               "--farm", "board=maaxboard", "--farm-timeout", "300", "--out", str(out)],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for out in outs]
    results = [p.communicate(timeout=900) for p in procs]
    for proc, (stdout, stderr) in zip(procs, results):
        assert proc.returncode == 0, stderr
    places = set()
    for out in outs:
        run = json.loads((out / "run.json").read_text())
        assert run["status"] == "passed"
        places.add(run["place"]["name"])
        assert [(ROOT / e).resolve() for e in run["envs"]] == [ROOT / "env" / "maaxboard.yaml"]
        suite = ET.parse(out / "junit.xml").getroot()
        assert suite.get("failures") == "0" and suite.get("errors") == "0"
        names = [tc.get("name") for tc in suite.iter("testcase")]
        assert "reserve board=maaxboard" in names and any(n.startswith("network.iperf3 maaxboard") for n in names)
    assert places == {"maaxboard-1", "maaxboard-2"}
    listed = json.loads(run_farm("places", "--json").stdout)
    by_name = {p["name"]: p for p in (listed if isinstance(listed, list) else listed["places"])}
    for name in ("maaxboard-1", "maaxboard-2"):
        assert not by_name[name].get("acquired") and not by_name[name].get("holder"), by_name[name]
