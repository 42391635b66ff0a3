"""The DPDK setup on the MaaXBoard twin, for real (images/maaxboard-dpdk.yaml, farm.boot.dpdk).

Three boots in all: the pipeline pipelines/dpdk.yaml (kernel echo, then DPDK echo: two boots) through the
real runner and ``farm compare``; and one boot shared by the error tests, which take the flow's steps one
by one on it (a PMD the image lacks, a NIC that cannot be bound, DPDK exiting mid-sweep, no hugepages:
in that order, as the NIC is DPDK's after the third). Each error is a DpdkError of its kind, with what
said so on the console log."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import attrs
import pytest

from farm.bench import ipbench_sweep
from farm.bench.context import BenchContext
from farm.bench.network import SweepParams
from farm.boot import dpdk
from farm.boot.console_log import ConsoleLog
from farm.boot.flow import BootRequest, NetbootFlow
from farm.boot.session import EnvFile
from farm.errors import EXIT_OK, EXIT_TEST_FAILURE, TestFailure
from farm.boot.dpdk_settings import DpdkSettings
from farm.images.cpio import read_newc
from farm.images.image import read_initrd
from farm.run import run_pipeline

from ..conftest import run_farm

pytestmark = [pytest.mark.boot, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[2]
SWEEP = {"loads": [2, 5], "packet_size": 1472, "samples": 400, "timeout": 2, "warmup": 1, "cooldown": 1}


@pytest.fixture(scope="module")
def dpdk_image():
    from farm.images.build import build

    return build(ROOT / "images" / "maaxboard-dpdk.yaml")


@pytest.fixture(scope="module")
def pipeline_run(dpdk_image, tftp_root, tmp_path_factory, monkeypatch_module):
    monkeypatch_module.delenv("GITHUB_STEP_SUMMARY", raising=False)
    out = tmp_path_factory.mktemp("dpdk-run") / "run"
    return run_pipeline(ROOT / "pipelines" / "dpdk.yaml", out=out)


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_the_dpdk_echo_answers_the_sweep_with_the_wide_csv_and_its_topology(pipeline_run):
    run = pipeline_run
    assert run.status == EXIT_OK, run.info.stages
    rows = {}
    for setup in ("kernel", "dpdk"):
        with open(run.path / f"sweep-maaxboard-twin-{setup}.csv") as f:
            rows[setup] = list(csv.DictReader(f))
        assert [int(r["Requested_Throughput"]) for r in rows[setup]] == [2_000_000, 5_000_000]
        for row in rows[setup]:
            # answered (how much comes back through the twin's user network depends on the host's load)
            assert float(row["Receive_Throughput"]) > 0 and float(row["Send_Throughput"]) > 0, (setup, row)
            assert 0 < float(row["Minimum_RTT"]) <= float(row["Median_RTT"]) <= float(row["Maximum_RTT"])
    # the kernel's echo has the CPU target's utilisation; the busy-polling one reports none (documented)
    assert all(0 < float(r["CPU_Utilisation"]) <= 100 for r in rows["kernel"])
    assert all(r["CPU_Utilisation"] == "" for r in rows["dpdk"]) and "Idle_Cycles" not in rows["dpdk"][0]
    console = (run.path / "console" / "maaxboard-twin.log").read_text(errors="replace")
    assert "EAL: Probe PCI driver: net_virtio (1af4:1041) device: 0000:00:01.0" in console
    info = json.loads((run.path / "run.json").read_text())
    kernel_boot, dpdk_boot = info["targets"]["maaxboard-twin"]["boots"]
    assert kernel_boot["flow"] == "netboot" and dpdk_boot["flow"] == "netboot+dpdk"
    topology = dpdk_boot["topology"]["dpdk"]
    assert topology["version"].startswith("22.11") and dpdk_boot["dpdk_version"] == topology["version"]
    assert (topology["pmd"], topology["binding"], topology["port"], topology["lcores"],
            topology["forwarding_lcores"]) == ("net_virtio", "uio_pci_generic", "0000:00:01.0", [0, 1], [1])
    assert topology["replaced_driver"] == "virtio-pci" and topology["kernel_driver"] == "virtio_net"
    assert topology["hugepages"]["total"] >= 64 and topology["responder"] == "dpdk-testpmd-5tswap"
    assert "busy-polling" in topology["cpu"]
    assert info["setups"]["dpdk"]["dpdk"]["pmd"] == "net_virtio"
    # the polling core is left out of the settle rule: the boot settled
    assert dpdk_boot["settle"]["settled"], dpdk_boot["settle"]
    from farm.results.csvout import read_records

    records = [r for r in read_records(run.results_csv) if r.benchmark == "sweep"]
    assert {r.setup for r in records if "responder=dpdk-testpmd-5tswap" in r.params} == {"dpdk"}
    assert not [r for r in records if r.setup == "dpdk" and r.metric == "cpu_utilisation"]


def test_farm_compare_gives_dpdk_over_kernel_per_load(pipeline_run):
    proc = run_farm("compare", str(pipeline_run.path), timeout=300)
    assert proc.returncode == 0, proc.stderr
    table = (pipeline_run.path / "compare" / "compare.md").read_text()
    for requested in (2000000, 5000000):
        line = next(line for line in table.splitlines()
                    if f"requested={requested}" in line and "| rtt_median |" in line)
        cells = [c.strip() for c in line.split("|")]
        assert "(1)" in cells[6] and "(1)" in cells[7], line  # both columns have the point: joined


# --- the errors, on one shared boot ---------------------------------------------------------------------


@attrs.define
class Shared:
    booted: object
    console: Path
    address: str

    def console_text(self) -> str:
        return self.console.read_text(errors="replace")


@pytest.fixture(scope="module")
def shared(dpdk_image, tftp_root, tmp_path_factory):
    env = EnvFile.load(ROOT / "env" / "qemu-maaxboard.yaml")
    folder = tmp_path_factory.mktemp("dpdk-console")
    with ConsoleLog(folder) as console:
        flow = NetbootFlow(cpus=2, twin_nic=dpdk.TWIN_NIC)
        with flow.boot(BootRequest(env, dpdk_image, "t-dpdk-errors", console)) as booted:
            yield Shared(booted, folder / "maaxboard-twin.log", booted.read_facts().address)


def test_the_initrd_is_fit_for_eal(dpdk_image, shared):
    names = {e.path.lstrip("/") for e in read_newc(read_initrd(dpdk_image.initrd))}
    assert "lib/aarch64-linux-gnu/libgcc_s.so.1" in names  # glibc's pthread_cancel dlopens it
    assert "usr/lib/aarch64-linux-gnu/dpdk/pmds-23.0/librte_net_virtio.so.23" in names
    out = shared.booted.run("stat -c %a /; readlink /var/run")
    assert out == ["755", "/run"]  # EAL refuses a world-writable /; its runtime directory is /var/run/dpdk


def test_a_pmd_the_image_lacks_is_a_pmd_error(shared):
    echo = dpdk.DpdkEcho(DpdkSettings(pmd="net_enetfec", binding="none"), shared.booted.shell)
    with pytest.raises(dpdk.PmdError, match="unknown PMD net_enetfec in this image") as caught:
        echo.pmd()
    assert isinstance(caught.value, TestFailure)
    assert "farm-dpdk-pmd none" in shared.console_text()


def test_a_nic_that_cannot_be_bound_is_a_bind_error(shared):
    echo = dpdk.DpdkEcho(DpdkSettings(port="0000:00:1f.0"), shared.booted.shell)
    nic, port = echo.nic()
    assert nic is None and port == "0000:00:1f.0"
    with pytest.raises(dpdk.BindError, match="NIC 0000:00:1f.0 cannot be bound to uio_pci_generic: no PCI device"):
        echo.bind(port)
    assert "farm-dpdk-bind: no-device" in shared.console_text()
    # the kernel's NIC is untouched
    assert any(n.address for n in dpdk.parse_nics(shared.booted.run(dpdk.nics_command())))


def test_dpdk_exiting_mid_sweep_is_dpdk_exited(shared):
    echo = dpdk.DpdkEcho(DpdkSettings(), shared.booted.shell)
    fields = dpdk.start_echo(echo, {})
    assert fields["reach_address"] == shared.address
    booted = attrs.evolve(shared.booted, **fields)
    ctx = BenchContext(booted, booted.read_facts())
    points = []

    def kill_after_the_first_point(load, result, samples, window):
        points.append((load, result.receive))
        shared.booted.run(f"kill -9 $(pidof {dpdk.TESTPMD})")

    with pytest.raises(dpdk.DpdkExited, match=r"is gone: it no longer answers.*farm-dpdk-exit 137"):
        ipbench_sweep.run(ctx, SweepParams.of(SWEEP), observe=kill_after_the_first_point)
    assert len(points) == 1 and points[0][1] > 0  # it answered the first point, then the sweep stopped
    console = shared.console_text()
    assert "EAL: Probe PCI driver: net_virtio" in console and "farm-dpdk-alive no" in console


def test_no_hugepages_is_no_hugepages(shared):
    echo = dpdk.DpdkEcho(DpdkSettings(port="0000:00:01.0"), shared.booted.shell)
    # 200 GB on a 1 GB twin: refused before the kernel is asked (it would OOM-kill the shell trying)
    with pytest.raises(dpdk.NoHugepages, match=r"asked for 100000 pages of 2 MiB \(200000 MB\), the target has "
                                               r"[0-9]+ MB available"):
        echo.hugepages(100000)
    assert shared.booted.run("echo ok") == ["ok"]  # the shell lives
    # none at all: EAL itself says so (the NIC is DPDK's since the test before; bound again, as it is)
    shared.booted.run(f"rm -f {dpdk.HUGETLBFS}/*; echo 0 > {dpdk.HUGEPAGES_DIR}/nr_hugepages")
    echo.bind("0000:00:01.0")
    with pytest.raises(dpdk.NoHugepages, match="no hugepages: EAL could not get its memory") as caught:
        echo.start("0000:00:01.0")
    assert "hugepage" in str(caught.value).lower()
    assert "farm-dpdk-ready exited" in shared.console_text()


def test_a_dpdk_error_at_boot_fails_the_setup_through_the_runner_with_the_console_kept(dpdk_image, tftp_root,
                                                                                     tmp_path, monkeypatch):
    """The flow's error as the runner reports it: the boot stage a junit failure naming the PMD, exit 1,
    the console log in the run directory holding what the target said."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    pipeline = tmp_path / "dpdk-enetfec.yaml"
    pipeline.write_text(f"name: dpdk-enetfec\nimage: {ROOT / 'images' / 'maaxboard-dpdk.yaml'}\n"
                        f"targets: [{{env: {ROOT / 'env' / 'qemu-maaxboard.yaml'}}}]\n"
                        "setups:\n  - {name: enetfec, cpus: 2, dpdk: {pmd: net_enetfec, binding: none}}\n"
                        f"benchmarks:\n  - sweep: {json.dumps(SWEEP)}\nsettle: false\n")
    run = run_pipeline(pipeline, out=tmp_path / "run")
    assert run.status == EXIT_TEST_FAILURE
    junit = (run.path / "junit.xml").read_text()
    assert "<failure" in junit and "unknown PMD net_enetfec in this image" in junit
    console = (run.path / "console" / "maaxboard-twin.log").read_text(errors="replace")
    assert "farm-dpdk-pmd none" in console
