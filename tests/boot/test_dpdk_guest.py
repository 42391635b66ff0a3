"""DPDK inside a KVM guest on the MaaXBoard's EL2 twin (pipelines/dpdk-guest.yaml, docs/dpdk.md): the host
image carries the guest, the guest's NIC is a virtio-net-pci bound to uio_pci_generic in the guest, testpmd's
echo answers the sweep through the host's forwards; `farm compare` joins the guest's kernel echo and its
DPDK echo per load.

The host image (112 MB of cpio, zstd -19) and a nested-KVM guest under TCG take 7-10 minutes here: the
test runs in the suite's rest lane (tests/lanes.py), beside the twins' lane, to keep the lanes even."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from farm.errors import EXIT_OK
from farm.run import run_pipeline

from ..conftest import run_farm

pytestmark = [pytest.mark.boot, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[2]


def test_dpdk_in_a_kvm_guest_answers_the_sweep(tftp_root, tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    run = run_pipeline(ROOT / "pipelines" / "dpdk-guest.yaml", out=tmp_path / "run")
    assert run.status == EXIT_OK, run.info.stages
    with open(run.path / "sweep-maaxboard-twin-guest-dpdk.csv") as f:
        (row,) = list(csv.DictReader(f))
    assert float(row["Receive_Throughput"]) > 0 and row["CPU_Utilisation"] == ""
    console = (run.path / "console" / "maaxboard-twin.log").read_text(errors="replace")
    assert "EAL: Probe PCI driver: net_virtio" in console
    info = json.loads((run.path / "run.json").read_text())
    boot = info["targets"]["maaxboard-twin"]["boots"][1]
    assert boot["flow"] == "netboot+guest+dpdk"
    topology = boot["topology"]
    assert topology["dpdk"]["pmd"] == "net_virtio" and topology["dpdk"]["binding"] == "uio_pci_generic"
    assert "virtio-net-pci,disable-legacy=on,romfile=,netdev=n0" in topology["guest"]["qemu_command_line"]
    assert topology["dpdk"]["address"] == "10.0.3.15"  # the guest's, reached through the host's forwards
    compared = run_farm("compare", str(run.path), timeout=300)
    assert compared.returncode == 0, compared.stderr
    with open(run.path / "compare" / "compare.csv", newline="") as f:
        rtt = [r for r in csv.DictReader(f) if r["benchmark"] == "sweep" and r["metric"] == "rtt_median"]
    # one load, both setups: joined on one row (the responder is the setup's own, not a key of its own)
    assert len(rtt) == 1 and rtt[0]["guest-kernel_n"] == rtt[0]["guest-dpdk_n"] == "1", rtt
