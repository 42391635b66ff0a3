"""The lab's bare-metal vs VM comparison, end to end on the MaaXBoard's EL2 twin, as a user runs it:
`farm run pipelines/vm-vs-bare.yaml`, then `farm compare` of its run directory; and an interrupt while
the guest boots. The guest runs under KVM inside the twin (the twin's EL2 is emulated by TCG)."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from farm.results.csvout import read_records

from ..conftest import ROOT, run_farm

pytestmark = pytest.mark.boot


@pytest.fixture(scope="module")
def vm_run(tftp_root, tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path_factory.mktemp("vm") / "run"
    return run_farm("run", "pipelines/vm-vs-bare.yaml", "--out", str(out), timeout=900), out


def test_both_setups_are_measured_and_tagged(vm_run):
    proc, out = vm_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = read_records(out / "results.csv")
    by_setup = {s: {r.benchmark for r in records if r.setup == s} for s in ("bare", "kvm-guest")}
    assert by_setup["bare"] == by_setup["kvm-guest"] == {"sweep", "openssl-speed", "isal"}
    cases = {tc.get("name") for tc in ET.parse(out / "junit.xml").getroot().iter("testcase")}
    assert {"boot maaxboard-twin/bare", "boot maaxboard-twin/kvm-guest"} <= cases


def test_run_json_holds_the_topology_and_the_console_the_guest(vm_run):
    proc, out = vm_run
    info = json.loads((out / "run.json").read_text())
    bare, guest = info["targets"]["maaxboard-twin"]["boots"]
    assert bare["flow"] == "netboot" and "topology" not in bare
    topology = guest["topology"]
    assert guest["flow"] == "netboot+guest" and guest["image"].endswith("-host")
    assert topology["guest"]["accel"] == "kvm" and topology["guest"]["vcpus"] == 1
    assert "-enable-kvm" in topology["guest"]["qemu_command"]
    assert topology["guest"]["qemu_version"].startswith("QEMU emulator version")
    assert any("Hyp mode initialized" in line for line in topology["guest"]["host_dmesg"])
    assert len(topology["guest"]["artifacts"]["Image"]["sha256"]) == 64
    assert topology["guest"]["forwards"]  # the sweep's and iperf3's ports, chosen by farm
    assert info["setups"]["kvm-guest"]["guest"]["vcpus"] == 1
    console = (out / "console" / "maaxboard-twin.log").read_text(errors="replace")
    assert console.count("FARM-READY") >= 3  # bare, the host of the guest, the guest
    assert "qemu-system-aarch64" in console


def test_compare_gives_the_vm_over_bare_ratio_for_every_shared_benchmark(vm_run, tmp_path):
    proc, out = vm_run
    compared = run_farm("compare", str(out), "--out", str(tmp_path / "cmp"))
    assert compared.returncode == 0, compared.stderr
    with open(tmp_path / "cmp" / "compare.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["benchmark"] for r in rows} >= {"sweep", "openssl-speed", "isal"}
    # (not of counts: a sweep's late packets or timed-out windows may be none on one side)
    ratios = [float(r["ratio"]) for r in rows if r.get("ratio") not in ("", None) and r["unit"] != "count"]
    assert ratios and all(r > 0 for r in ratios)
    assert (tmp_path / "cmp" / "compare.png").stat().st_size > 0
    assert "kvm-guest" in (tmp_path / "cmp" / "compare.md").read_text()


def test_interrupt_while_the_guest_boots_powers_off_and_keeps_the_results(tftp_root, tmp_path):
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(f"""name: vm-interrupt
image: {ROOT / 'images' / 'maaxboard-bench.yaml'}
targets: [{{env: {ROOT / 'env' / 'qemu-maaxboard-el2.yaml'}}}]
setups: [{{name: bare}}, {{name: kvm-guest, guest: {{vcpus: 1, pin: [1]}}}}]
benchmarks: [{{openssl-speed: {{algorithms: [sha256], seconds: 1}}}}]
""")
    out = tmp_path / "run"
    farm = subprocess.Popen([sys.executable, "-m", "farm.cli", "run", str(pipeline), "--out", str(out)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = out / "console" / "maaxboard-twin.log"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # the guest's QEMU typed on the host's console, not yet ready
        text = log.read_text(errors="replace") if log.exists() else ""
        if "qemu-system-aarch64 -M virt" in text:
            break
        assert farm.poll() is None, farm.communicate()
        time.sleep(0.1)
    else:
        pytest.fail("the guest was never started")
    farm.send_signal(signal.SIGTERM)
    _, stderr = farm.communicate(timeout=120)
    assert farm.returncode == 143, stderr
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "interrupted" and info["stopped_at"] == "boot maaxboard-twin/kvm-guest"
    assert {r.setup for r in read_records(out / "results.csv")} == {"bare"}  # measured before: kept
    left = subprocess.run(["pgrep", "-f", f"tftp={tftp_root}"], capture_output=True, text=True).stdout.split()
    assert not [p for p in left if _is_qemu(int(p))], "the twin is still powered on"


def _is_qemu(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"qemu-system-aarch64")
    except OSError:
        return False
