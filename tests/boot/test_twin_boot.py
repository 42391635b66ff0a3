"""The MaaXBoard twin boots for real: QEMU + Debian's U-Boot + TFTP + our initrd, through labgrid."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET

import pytest

from farm.boot.console_log import ConsoleLog
from farm.boot.facts import read_facts
from farm.boot.session import EnvFile, boot_target
from farm.errors import InfrastructureError
from farm.measure.params import format_params, parse_params

from ..conftest import run_farm

pytestmark = pytest.mark.boot


def test_twin_netboots_to_a_shell_and_cleans_up(project_root, maaxboard_image, tftp_root, tmp_path):
    env = EnvFile.load(project_root / "env" / "qemu-maaxboard.yaml")
    with ConsoleLog(tmp_path / "console") as console:
        with boot_target(env, maaxboard_image, "t-boot-1", console) as booted:
            staged = sorted(p.name for p in (tftp_root).glob("*/t-boot-1/*"))
            assert staged == ["Image", "initrd.cpio.zst"]  # images/maaxboard-bench.yaml: initrd.compress: zstd
            facts = read_facts(booted.shell)
            assert facts.cpus == 4
            assert facts.kernel == maaxboard_image.manifest["kernel_version"]
            assert facts.machine == "aarch64"
            assert facts.address.startswith("10.0.2.")
            # the NIC driver came from the initrd's modules, loaded by /init
            assert "virtio_net" in "\n".join(booted.run("cat /proc/modules"))
            assert booted.run("iperf3 --version")[0].startswith("iperf 3")
        log = console.path("maaxboard-twin").read_text(errors="replace")
    # the whole flow is in the console log, in order
    for marker in ("U-Boot 20", "Hit any key to stop autoboot", "tftpboot", "Starting kernel", "FARM-READY"):
        assert marker in log, marker
    assert log.index("tftpboot") < log.index("Starting kernel") < log.index("FARM-READY")
    assert not list(tftp_root.glob("*/t-boot-1")), "the job's TFTP folder is removed after the boot"


def test_missing_tftp_file_is_an_infrastructure_error_with_the_uboot_line(project_root, maaxboard_image, tftp_root,
                                                                         tmp_path, monkeypatch):
    """The staged kernel vanishes before U-Boot asks for it: the error says what U-Boot said."""
    from farm.boot import staging

    real = staging.JobTFTPProviderDriver.stage_as

    def stage_then_lose(self, filename, folder, name):
        path = real(self, filename, folder, name)
        if name == "Image":
            (tftp_root / path).unlink()
        return path

    monkeypatch.setattr(staging.JobTFTPProviderDriver, "stage_as", stage_then_lose)
    env = EnvFile.load(project_root / "env" / "qemu-maaxboard.yaml")
    with ConsoleLog(tmp_path / "console") as console:
        with pytest.raises(InfrastructureError) as info:
            with boot_target(env, maaxboard_image, "t-boot-missing", console):
                pass
    message = str(info.value)
    assert "tftpboot" in message and "Image" in message
    assert "not found" in message.lower() or "error" in message.lower()


def test_farm_run_smoke_publishes_junit_csv_and_console(smoke_run, maaxboard_image):
    proc, out = smoke_run
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == str(out)

    suite = ET.parse(out / "junit.xml").getroot()
    assert suite.get("failures") == "0" and suite.get("errors") == "0"
    names = [tc.get("name") for tc in suite.iter("testcase")]
    assert names[0] == "build" and names[1].startswith("boot maaxboard-twin")
    assert any(n.startswith("network.iperf3") for n in names)
    assert any(n.startswith("crypto.openssl-speed") for n in names)

    with open(out / "results.csv") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["run_id", "timestamp", "target", "arch", "setup", "image", "suite", "benchmark",
                             "params", "repeat", "metric", "value", "unit"]
    received = [float(r["value"]) for r in rows if r["benchmark"] == "iperf3" and r["metric"] == "received_throughput"]
    assert received and all(v > 0 for v in received)
    openssl = {r["params"]: float(r["value"]) for r in rows
               if r["benchmark"] == "openssl-speed" and r["metric"] == "throughput"}
    assert len(openssl) == 2 and all(v > 0 for v in openssl.values())
    assert {r["unit"] for r in rows if r["metric"] == "throughput"} == {"bytes/s"}
    # every throughput has its cycles/byte at the frequency run.json names
    # ... and says where its cycles came from: the pipeline's nominal clock, on a twin (never a board's figure)
    cycles = {r["params"]: float(r["value"]) for r in rows if r["metric"] == "cycles_per_byte"}
    assert all(p.endswith("clock=twin;cycles=nominal") or "clock=twin;cycles=nominal;" in p for p in cycles)
    cycles = {format_params({k: v for k, v in parse_params(p).items() if k not in ("clock", "cycles")}): v
              for p, v in cycles.items()}
    assert set(cycles) == set(openssl)
    for params, bytes_per_second in openssl.items():
        assert cycles[params] == pytest.approx(1.5e9 / bytes_per_second)
    assert {r["target"] for r in rows} == {"maaxboard-twin"} and {r["arch"] for r in rows} == {"arm64"}

    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "passed"
    kernel = maaxboard_image.manifest["kernel"]
    assert run["images"]["maaxboard-bench"]["artifacts"][kernel]["sha256"] == \
        maaxboard_image.manifest["artifacts"][kernel]["sha256"]
    boot = run["targets"]["maaxboard-twin"]["boots"][0]
    assert boot["cpus"] == 4 and boot["setup"] == "default"
    # the twin has no cpufreq and arm64 has no "cpu MHz": the env file's nominal 1.5 GHz, said so
    assert boot["frequency_hz"] == 1.5e9 and boot["frequency_source"] == "env"
    log = (out / "console" / "maaxboard-twin.log").read_text(errors="replace")
    assert "Starting kernel" in log and "FARM-READY" in log


def test_farm_run_with_image_boots_it_without_building(project_root, maaxboard_image, tftp_root, tmp_path):
    """A CI job's artifact: booted as given, never rebuilt (an empty FARM_CACHE: a build would download)."""
    out = tmp_path / "run"
    cache = tmp_path / "empty-cache"
    proc = run_farm("run", "pipelines/smoke.yaml", "--image", str(maaxboard_image.path), "--out", str(out),
                    env={"FARM_CACHE": str(cache)})
    assert proc.returncode == 0, proc.stderr
    assert f"build: --image {maaxboard_image.path} (maaxboard-bench, arm64): not rebuilt" in proc.stderr
    assert not (cache / "images").exists() and not (cache / "debs").exists()
    info = json.loads((out / "run.json").read_text())
    assert info["images"]["maaxboard-bench"]["given"] is True
    assert info["images"]["maaxboard-bench"]["dir"] == str(maaxboard_image.path)
    cases = {c.get("name"): c for c in ET.parse(out / "junit.xml").getroot().iter("testcase")}
    assert "build" in cases and cases["build"].find("error") is None


def test_farm_boot_verbose_shows_labgrid_steps_and_console(project_root, maaxboard_image, tftp_root, tmp_path):
    proc = run_farm("-vv", "boot", "--env", "env/qemu-maaxboard.yaml", "--image", str(maaxboard_image.path),
                    "--log-dir", str(tmp_path / "console"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    err = proc.stderr
    assert "UBootNetbootStrategy.transition(status='shell')" in err  # labgrid's step log of the strategy
    assert "stage_as" in err
    assert "CONSOLE" in err and "FARM-READY" in err  # -vv: the serial console's lines too
    assert "booted in" in err


def test_power_off_does_not_hang_when_the_guest_floods_an_unread_console(project_root, maaxboard_image, tftp_root,
                                                                         tmp_path):
    """Seen in CI after a kernel panic: nobody reads the serial socket while the guest goes on printing,
    the socket fills, QEMU's vCPU retries its write holding QEMU's big lock, and labgrid's QMP `quit`
    is never answered (labgrid waits for it with no bound). Power off must end anyway, at once."""
    import threading
    import time

    env = EnvFile.load(project_root / "env" / "qemu-maaxboard.yaml")
    took: list[float] = []
    with ConsoleLog(tmp_path / "console") as console:
        with boot_target(env, maaxboard_image, "t-flood", console) as booted:
            booted.shell.console.sendline("(while :; do echo 0123456789012345678901234567890123456789; done) &")
            time.sleep(6)  # nobody reads: the socket fills up
            strategy = booted.target.get_driver("UBootNetbootStrategy")

            def power_off():
                t0 = time.monotonic()
                strategy.transition("off")
                took.append(time.monotonic() - t0)

            worker = threading.Thread(target=power_off, daemon=True)
            worker.start()
            worker.join(30)
            qemu = booted.target.get_driver("TwinQEMUDriver", activate=False)
            if worker.is_alive() and qemu._child is not None:
                qemu._child.kill()  # the old hang: free the test, then fail it
            assert took and took[0] < qemu.quit_timeout, f"power off took {took or 'forever'}"
    assert "0123456789" in (tmp_path / "console" / "maaxboard-twin.log").read_text(errors="replace")
