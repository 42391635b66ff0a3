"""DPDK inside a KVM guest on the MaaXBoard's EL2 twin (pipelines/dpdk-guest.yaml, docs/dpdk.md): the host
image carries the guest, the guest's NIC is a virtio-net-pci bound to uio_pci_generic in the guest, testpmd's
echo answers the sweep through the host's forwards.

Opt-in (``FARM_DPDK_GUEST=1``): the host image (112 MB of cpio, zstd -19) and a nested-KVM guest under TCG
take about 10 minutes here, beyond what CI's suite has room for; run by hand before changing the DPDK or
guest flows (docs/dpdk.md)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from farm.errors import EXIT_OK
from farm.run import run_pipeline

pytestmark = [pytest.mark.boot, pytest.mark.timeout(1500),
              pytest.mark.skipif(os.environ.get("FARM_DPDK_GUEST") != "1",
                                 reason="opt-in: FARM_DPDK_GUEST=1 (about 10 min: a host image and a nested guest)")]

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
