"""``repeats_in_boot: N``: each benchmark N times in one boot, records repeat boot * N + i (the twin, for real)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from farm.results.csvout import read_records

from ..conftest import ROOT, run_farm

pytestmark = pytest.mark.boot


def test_isal_three_times_in_one_boot(maaxboard_image, tftp_root, tmp_path):
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(f"""name: in-boot
image: {ROOT / 'images' / 'maaxboard-bench.yaml'}
targets: [{{env: {ROOT / 'env' / 'qemu-maaxboard.yaml'}}}]
setups: [{{name: default}}]
repeats_in_boot: 3
benchmarks: [{{isal: {{seconds: 0.2, only: crc32_ieee_warm, corpus: []}}}}]
""")
    out = tmp_path / "run"
    proc = run_farm("run", str(pipeline), "--out", str(out), timeout=600)
    assert proc.returncode == 0, proc.stderr
    records = read_records(out / "results.csv")
    throughput = [r for r in records if r.metric == "throughput"]
    # seconds= on the record: how long the function was timed (a run length, not in the key)
    assert [(r.params, r.repeat) for r in throughput] == [("function=crc32_ieee;mode=warm;seconds=0.2", i) for i in range(3)]
    assert len({r.value for r in throughput}) == 3  # three measurements, not one copied
    cycles = [r for r in records if r.metric == "cycles_per_byte"]
    assert [r.repeat for r in cycles] == [0, 1, 2]  # from the twin's cycle counter (no cpufreq there)
    run = json.loads((out / "run.json").read_text())
    assert run["repeats_in_boot"] == 3 and len(run["targets"]["maaxboard-twin"]["boots"]) == 1
    names = [tc.get("name") for tc in ET.parse(out / "junit.xml").getroot().iter("testcase")]
    assert [n for n in names if n.startswith("storage.isal")] == [
        f"storage.isal maaxboard-twin/default#{i}" for i in range(3)]
    summary = (out / "summary.md").read_text()
    assert "| 95 % CI |" in summary
