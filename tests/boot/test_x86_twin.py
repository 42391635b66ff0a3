"""The x86 twin boots for real as the lab's PCs do: QEMU q35 + SeaBIOS + the NIC's iPXE ROM, Ctrl-B,
dhcp, chain the job's iPXE script over TFTP, our bzImage and initrd, through labgrid."""

from __future__ import annotations

import csv
import json
import re
import time
import xml.etree.ElementTree as ET

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


def test_x86_twin_netboots_through_ipxe_and_cleans_up(x86_env, x86_image, tftp_root, tmp_path):
    with ConsoleLog(tmp_path / "console") as console:
        with boot_target(x86_env, x86_image, "t-x86-boot-1", console) as booted:
            staged = sorted(p.name for p in tftp_root.glob("*/t-x86-boot-1/*"))
            assert staged == ["boot.ipxe", "bzImage", "initrd.cpio.zst"]  # initrd.compress: zstd
            facts = read_facts(booted.shell)
            assert facts.machine == "x86_64"
            assert facts.kernel == x86_image.manifest["kernel_version"]
            assert facts.cpus == 2
            assert facts.address.startswith("10.0.2.")
            # the NIC driver came from the initrd's modules, loaded by /init
            assert "virtio_net" in "\n".join(booted.run("cat /proc/modules"))
            # iperf3 runs: a one-second TCP run over the target's loopback
            booted.run("iperf3 -s -1 -D")
            booted.run(WAIT_IPERF3_LISTEN, timeout=10)  # -D returns before the server listens
            out = "\n".join(booted.run("iperf3 -c 127.0.0.1 -t 1", timeout=60))
            assert re.search(r"bits/sec\s+receiver", out), out
            print(f"x86 twin: power on to shell in {booted.boot_seconds:.1f} s")
        lines = console_lines(console.path(TARGET).read_text(errors="replace"))
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
    assert lines[index("tftp://10.0.2.2/")].endswith("/t-x86-boot-1/boot.ipxe... ok")
    assert not list(tftp_root.glob("*/t-x86-boot-1")), "the job's TFTP folder is removed after the boot"


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


def test_a_lost_ctrl_b_is_answered_at_ipxes_second_prompt(x86_env, x86_image, tftp_root, tmp_path, monkeypatch):
    """The first Ctrl-B is lost on the serial line: iPXE autoboots, finds no boot file (the twin's DHCP
    names none), offers its prompt again, and the boot goes on from there."""
    real_write = QEMUDriver.write
    lost: list[bytes] = []

    def lose_first_ctrl_b(self, data):
        if data == CTRL_B and not lost:
            lost.append(data)
            return len(data)
        return real_write(self, data)

    monkeypatch.setattr(QEMUDriver, "write", lose_first_ctrl_b)
    with ConsoleLog(tmp_path / "console") as console:
        with boot_target(x86_env, x86_image, "t-x86-late", console) as booted:
            assert booted.run("uname -m") == ["x86_64"]
        lines = console_lines(console.path(TARGET).read_text(errors="replace"))
    assert lost == [CTRL_B]
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


def test_a_character_lost_in_the_chain_command_is_retyped(x86_env, x86_image, tftp_root, tmp_path, monkeypatch):
    """One letter of the typed `chain tftp://…/t-x86-lossy/boot.ipxe` is lost (as once seen here under
    load): iPXE's echo differs, farm erases the line (Ctrl-U) and types it again; nothing is power-cycled.
    (The line goes out in pieces of the driver's type_chunk: the letter is lost from whichever carries it.)"""
    real_write = QEMUDriver.write
    lost: list[bytes] = []
    written = bytearray()

    def lose_one_letter(self, data):
        before = len(written)
        written.extend(data)
        at = written.find(b"t-x86-lossy"[:7])  # up to the 'l' of lossy
        if not lost and at >= 0 and at + 6 >= before:
            lost.append(data)
            at = at + 6 - before  # the 'l', in this write
            return real_write(self, data[:at] + data[at + 1:]) + 1
        return real_write(self, data)

    monkeypatch.setattr(QEMUDriver, "write", lose_one_letter)
    with ConsoleLog(tmp_path / "console") as console:
        with boot_target(x86_env, x86_image, "t-x86-lossy", console) as booted:
            assert booted.run("uname -m") == ["x86_64"]
        lines = console_lines(console.path(TARGET).read_text(errors="replace"))
    assert len(lost) == 1 and booted.failed_attempts == []
    assert len(booted.retyped) == 1 and booted.retyped[0].startswith("chain ")
    # iPXE ran the chain once, with the right folder, and never asked for the mangled one
    assert any(line.endswith("/t-x86-lossy/boot.ipxe... ok") for line in lines), lines[-30:]
    assert not any("t-x86-ossy" in line and "..." in line for line in lines)
