"""`farm run --resume RUN_DIR`: finish a run whose later stages failed, without re-measuring the rest."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from farm.results.csvout import read_records

from ..conftest import ROOT, run_farm

pytestmark = pytest.mark.boot


def test_resume_measures_only_what_failed(maaxboard_image, tftp_root, tmp_path):
    out = tmp_path / "run"
    # first run: the target's iperf3 server never starts, so iperf3 fails and openssl passes
    broken = tmp_path / "broken.py"
    broken.write_text(f"""
import sys
from farm.bench import network
network.start_iperf3_server = lambda ctx: None
from farm.cli import main
sys.exit(main(["run", "pipelines/smoke.yaml", "--out", {str(out)!r}]))
""")
    first = subprocess.run([sys.executable, str(broken)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert first.returncode == 1, first.stderr
    openssl_before = [r for r in read_records(out / "results.csv") if r.benchmark == "openssl-speed"]
    assert openssl_before

    second = run_farm("run", "pipelines/smoke.yaml", "--resume", str(out))
    assert second.returncode == 0, second.stderr
    assert "crypto.openssl-speed maaxboard-twin/default: done in the resumed run, skipped" in second.stderr
    records = read_records(out / "results.csv")
    assert [r for r in records if r.benchmark == "openssl-speed"] == openssl_before, "not measured again"
    assert not [r for r in records if r.metric == "failed"]
    assert any(r.benchmark == "iperf3" and r.metric == "received_throughput" and r.value > 0 for r in records)
    suite = ET.parse(out / "junit.xml").getroot()
    assert suite.get("failures") == "0" and suite.get("errors") == "0"
    names = [tc.get("name") for tc in suite.iter("testcase")]
    assert names.count("crypto.openssl-speed maaxboard-twin/default") == 1
    assert names.count("network.iperf3 maaxboard-twin/default") == 1
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "passed" and len(run["resumed"]) == 1


def test_resume_refuses_a_changed_pipeline(tmp_path):
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text((ROOT / "pipelines" / "smoke.yaml").read_text().replace("../", str(ROOT) + "/"))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text(json.dumps({"run_id": "x", "pipeline_sha256": "0" * 64}))
    proc = run_farm("run", str(pipeline), "--resume", str(tmp_path / "run"))
    assert proc.returncode == 2
    assert "cannot resume: run with another version of" in proc.stderr
