"""The x86 twin boots for real as the lab's PCs do: QEMU q35 + SeaBIOS + the NIC's iPXE ROM, Ctrl-B,
dhcp, chain the job's iPXE script over TFTP, our bzImage and initrd, through labgrid. One boot on a lossy
serial line serves the netboot's checks and the two losses farm must ride out (a lost Ctrl-B, a lost letter
of a typed line); the others: a kernel missing from TFTP, and the smoke pipeline over both twins."""

from __future__ import annotations

import csv
import json
import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import attrs
import pytest
from labgrid.driver import QEMUDriver

from farm.bench.network import WAIT_IPERF3_LISTEN
from farm.boot.console_log import ConsoleLog
from farm.boot.facts import read_facts
from farm.boot.ipxedriver import CTRL_B, console_lines
from farm.boot.session import EnvFile, boot_target
from farm.errors import InfrastructureError

from ..conftest import ROOT, run_farm

pytestmark = pytest.mark.boot

TARGET = "x86-twin"


@pytest.fixture(scope="session")
def x86_image():
    """The real x86 benchmark image, from the user's farm cache (built on the first run)."""
    from farm.images.build import build

    return build(ROOT / "images" / "x86-bench.yaml")


@pytest.fixture
def x86_env(project_root) -> EnvFile:
    return EnvFile.load(project_root / "env" / "qemu-x86.yaml")


JOB = "t-x86-lossy"


@attrs.define
class LossyBoot:
    """One boot of the x86 twin on a lossy serial line, shared by the checks below (each x86 boot is half a
    minute of both cores under TCG): the first Ctrl-B is lost, then one letter of the typed ``chain`` line."""

    booted: object
    lost_ctrl_b: list[bytes]
    lost_letter: list[bytes]
    staged: list[str]
    facts: object
    modules: str
    iperf3: str
    lines: list[str]
    tftp_left: list[Path]


@pytest.fixture(scope="module")
def lossy_boot(project_root, x86_image, tftp_root, tmp_path_factory) -> LossyBoot:
    real_write = QEMUDriver.write
    lost_ctrl_b: list[bytes] = []
    lost_letter: list[bytes] = []
    written = bytearray()

    def lossy_write(self, data):
        if data == CTRL_B and not lost_ctrl_b:  # the first Ctrl-B never reaches iPXE
            lost_ctrl_b.append(data)
            return len(data)
        before = len(written)
        written.extend(data)
        # one letter of the typed `chain tftp://…/t-x86-lossy/boot.ipxe` (as once seen here under load): the
        # 'l' of lossy, from whichever piece of the driver's type_chunk carries it
        at = written.find(JOB.encode()[:7])
        if not lost_letter and at >= 0 and at + 6 >= before:
            lost_letter.append(data)
            at = at + 6 - before
            return real_write(self, data[:at] + data[at + 1:]) + 1
        return real_write(self, data)

    env = EnvFile.load(project_root / "env" / "qemu-x86.yaml")
    console_dir = tmp_path_factory.mktemp("console")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(QEMUDriver, "write", lossy_write)
        with ConsoleLog(console_dir) as console:
            with boot_target(env, x86_image, JOB, console) as booted:
                staged = sorted(p.name for p in tftp_root.glob(f"*/{JOB}/*"))
                facts = read_facts(booted.shell)
                modules = "\n".join(booted.run("cat /proc/modules"))
                # iperf3 runs: a one-second TCP run over the target's loopback
                booted.run("iperf3 -s -1 -D")
                booted.run(WAIT_IPERF3_LISTEN, timeout=10)  # -D returns before the server listens
                iperf3 = "\n".join(booted.run("iperf3 -c 127.0.0.1 -t 1", timeout=60))
                print(f"x86 twin: power on to shell in {booted.boot_seconds:.1f} s")
            lines = console_lines(console.path(TARGET).read_text(errors="replace"))
    return LossyBoot(booted, lost_ctrl_b, lost_letter, staged, facts, modules, iperf3, lines,
                     list(tftp_root.glob(f"*/{JOB}")))


def test_x86_twin_netboots_through_ipxe_and_cleans_up(lossy_boot, x86_image):
    boot = lossy_boot
    assert boot.staged == ["boot.ipxe", "bzImage", "initrd.cpio.zst"]  # initrd.compress: zstd
    assert boot.facts.machine == "x86_64"
    assert boot.facts.kernel == x86_image.manifest["kernel_version"]
    assert boot.facts.cpus == 2
    assert boot.facts.address.startswith("10.0.2.")
    assert "virtio_net" in boot.modules  # the NIC driver came from the initrd's modules, loaded by /init
    assert re.search(r"bits/sec\s+receiver", boot.iperf3), boot.iperf3
    lines = boot.lines

    # the whole flow is in the console log, in order: firmware, iPXE's banner, our commands, the
    # script's downloads, Linux's /init
    def index(prefix: str) -> int:
        return next(i for i, line in enumerate(lines) if line.startswith(prefix))

    flow = [index("SeaBIOS"), index("iPXE 1.0"), index("iPXE> dhcp"),
            index("iPXE> chain tftp://${next-server}/"), index("tftp://10.0.2.2/"),
            next(i for i, line in enumerate(lines) if line.endswith("/bzImage... ok")),
            # (its "ok" may lose its last letter as the kernel takes the serial port over: a loaded run
            # logged "... o" and then the reset sequence; the /init that follows came from that initrd)
            next(i for i, line in enumerate(lines) if "/initrd.cpio.zst... o" in line),
            index("FARM-READY")]
    assert flow == sorted(flow)
    assert lines[index("tftp://10.0.2.2/")].endswith(f"/{JOB}/boot.ipxe... ok")
    assert boot.tftp_left == [], "the job's TFTP folder is removed after the boot"


def test_missing_kernel_is_an_infrastructure_error_quoting_ipxe_at_once(x86_env, x86_image, tftp_root, tmp_path,
                                                                        monkeypatch):
    """The staged kernel vanishes before iPXE asks for it: the error says what iPXE said, right away."""
    from farm.boot import staging

    real = staging.JobTFTPProviderDriver.stage_as

    def stage_then_lose(self, filename, folder, name):
        path = real(self, filename, folder, name)
        if name == "bzImage":
            (tftp_root / path).unlink()
        return path

    monkeypatch.setattr(staging.JobTFTPProviderDriver, "stage_as", stage_then_lose)
    start = time.monotonic()
    with ConsoleLog(tmp_path / "console") as console:
        with pytest.raises(InfrastructureError) as info:
            with boot_target(x86_env, x86_image, "t-x86-missing", console):
                pass
    elapsed = time.monotonic() - start
    message = str(info.value)
    assert re.search(r"tftp://10\.0\.2\.2/[^ ]+/t-x86-missing/bzImage\.\.\. No such file or directory "
                     r"\(https?://ipxe\.org/[0-9a-f]{8}\)", message), message
    assert "Could not boot" in message
    # iPXE gives up and returns to its prompt as soon as the TFTP server says no; the strategy's
    # timeouts (tftp 120 s + ready 240 s in env/qemu-x86.yaml) are nowhere near
    assert elapsed < 60, f"took {elapsed:.1f} s"
    assert not list(tftp_root.glob("*/t-x86-missing"))


def test_a_lost_ctrl_b_is_answered_at_ipxes_second_prompt(lossy_boot):
    """The first Ctrl-B is lost on the serial line: iPXE autoboots, finds no boot file (the twin's DHCP
    names none), offers its prompt again, and the boot goes on from there."""
    lines = lossy_boot.lines
    assert lossy_boot.lost_ctrl_b == [CTRL_B]
    nothing = next(i for i, line in enumerate(lines) if line.startswith("Nothing to boot"))
    assert nothing < next(i for i, line in enumerate(lines) if line.startswith("iPXE> chain"))


def test_farm_run_smoke_on_both_twins_as_a_matrix(x86_image, maaxboard_image, tftp_root, tmp_path):
    """One run over the MaaXBoard twin and the PC twin: one results.csv, one junit.xml, both targets."""
    out = tmp_path / "run"
    proc = run_farm("run", "pipelines/smoke.yaml", "--env", "env/qemu-maaxboard.yaml", "--env", "env/qemu-x86.yaml",
                    "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == str(out)
    with open(out / "results.csv") as f:
        rows = list(csv.DictReader(f))
    assert {(r["target"], r["arch"]) for r in rows} == {(TARGET, "amd64"), ("maaxboard-twin", "arm64")}
    for target in (TARGET, "maaxboard-twin"):
        assert {r["benchmark"] for r in rows if r["target"] == target} == {"iperf3", "openssl-speed"}
    cases = [tc.get("name") for tc in ET.parse(out / "junit.xml").getroot().iter("testcase")]
    assert {"build maaxboard-bench", "build x86-bench", f"boot {TARGET}/default", "boot maaxboard-twin/default"} <= set(cases)
    boot = json.loads((out / "run.json").read_text())["targets"][TARGET]["boots"][0]
    assert boot["machine"] == "x86_64" and boot["image"] == x86_image.name
    log = (out / "console" / f"{TARGET}.log").read_text(errors="replace")
    assert "iPXE> chain" in log and "FARM-READY" in log


def test_a_character_lost_in_the_chain_command_is_retyped(lossy_boot):
    """One letter of the typed `chain tftp://…/t-x86-lossy/boot.ipxe` is lost (as once seen here under
    load): iPXE's echo differs, farm erases the line (Ctrl-U) and types it again; nothing is power-cycled.
    (The line goes out in pieces of the driver's type_chunk: the letter is lost from whichever carries it.)"""
    booted, lines = lossy_boot.booted, lossy_boot.lines
    assert len(lossy_boot.lost_letter) == 1 and booted.failed_attempts == []
    assert len(booted.retyped) == 1 and booted.retyped[0].startswith("chain ")
    # iPXE ran the chain once, with the right folder, and never asked for the mangled one
    assert any(line.endswith(f"/{JOB}/boot.ipxe... ok") for line in lines), lines[-30:]
    assert not any("t-x86-ossy" in line and "..." in line for line in lines)
