"""DPDK inside a KVM guest on the MaaXBoard's EL2 twin (pipelines/dpdk-guest.yaml, docs/dpdk.md): the host
image carries the guest, the guest's NIC is a virtio-net-pci bound to uio_pci_generic in the guest, testpmd's
echo answers the sweep through the host's forwards.

The pipeline's guest-dpdk setup only: its other setup, the kernel's echo in the same guest, is a guest's
sweep as vm-vs-bare's kvm-guest measures it (tests/boot/test_vm_vs_bare.py), and `farm compare` joining a
kernel echo and a DPDK echo per load is tests/boot/test_dpdk.py's (the same join, on the bare twin); each
nested-KVM guest under TCG is minutes of both cores. The test runs in the suite's rest lane
(tests/lanes.py), beside the twins' lane, to keep the lanes even."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from farm.errors import EXIT_OK
from farm.run import run_pipeline


pytestmark = [pytest.mark.boot, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[2]


KERNEL_SETUP = "  - name: guest-kernel\n    guest: {vcpus: 2, memory: 1G}\n"


def test_dpdk_in_a_kvm_guest_answers_the_sweep(tftp_root, tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    text = (ROOT / "pipelines" / "dpdk-guest.yaml").read_text()
    assert KERNEL_SETUP in text, "pipelines/dpdk-guest.yaml's guest-kernel setup changed: update the test"
    pipeline = tmp_path / "dpdk-guest.yaml"
    pipeline.write_text(text.replace(KERNEL_SETUP, "").replace("../", f"{ROOT}/"))
    run = run_pipeline(pipeline, out=tmp_path / "run")
    assert run.status == EXIT_OK, run.info.stages
    with open(run.path / "sweep-maaxboard-twin-guest-dpdk.csv") as f:
        (row,) = list(csv.DictReader(f))
    assert float(row["Receive_Throughput"]) > 0 and row["CPU_Utilisation"] == ""
    console = (run.path / "console" / "maaxboard-twin.log").read_text(errors="replace")
    assert "EAL: Probe PCI driver: net_virtio" in console
    info = json.loads((run.path / "run.json").read_text())
    (boot,) = info["targets"]["maaxboard-twin"]["boots"]
    assert boot["flow"] == "netboot+guest+dpdk"
    topology = boot["topology"]
    assert topology["dpdk"]["pmd"] == "net_virtio" and topology["dpdk"]["binding"] == "uio_pci_generic"
    assert "virtio-net-pci,disable-legacy=on,romfile=,netdev=n0" in topology["guest"]["qemu_command_line"]
    assert topology["dpdk"]["address"] == "10.0.3.15"  # the guest's, reached through the host's forwards
