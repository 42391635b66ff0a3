"""Faults injected into the real QEMU + U-Boot + labgrid stack, and how each one ends.

Numbers refer to the list in the reliability issue. Each test says what it breaks and checks the
failure class (exit code / junit kind), the message and that nothing measured is lost.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import attr
import pytest
from labgrid.factory import target_factory

from farm.boot.console_log import ConsoleLog
from farm.boot.qemu import TwinQEMUDriver
from farm.boot.session import EnvFile, boot_target
from farm.boot.watch import BootFailure
from farm.errors import InfrastructureError, JobError
from farm.results.csvout import read_records

from ..conftest import ROOT, run_farm, wait_for_console_line

pytestmark = pytest.mark.boot

QEMU = "/usr/bin/qemu-system-aarch64"


def twin_env(tmp_path: Path, *, qemu: str = QEMU, login_timeout: int = 60) -> EnvFile:
    """env/qemu-maaxboard.yaml with another QEMU binary and U-Boot prompt timeout."""
    text = (ROOT / "env" / "qemu-maaxboard.yaml").read_text()
    text = text.replace("qemu-system-aarch64: /usr/bin/qemu-system-aarch64", f"qemu-system-aarch64: {qemu}")
    text = text.replace("        login_timeout: 60\n        boot_timeout: 60",
                        f"        login_timeout: {login_timeout}\n        boot_timeout: 60")
    assert qemu == QEMU or qemu in text
    path = tmp_path / "twin.yaml"
    path.write_text(text)
    return EnvFile.load(path)


def silent_first_qemu(tmp_path: Path, silent_boots: int) -> str:
    """A QEMU wrapper whose first ``silent_boots`` boards run a firmware that prints nothing:
    the U-Boot autoboot prompt never appears. Later boards are the real twin."""
    counter, blank = tmp_path / "boots", tmp_path / "blank.bin"
    blank.write_bytes(b"\0" * 4096)
    wrapper = tmp_path / "qemu-wrapper"
    wrapper.write_text(f"""#!{sys.executable}
import os, sys
args = sys.argv[1:]
if "-version" not in args:
    n = int(open({str(counter)!r}).read()) if os.path.exists({str(counter)!r}) else 0
    open({str(counter)!r}, "w").write(str(n + 1))
    if n < {silent_boots}:
        args[args.index("-bios") + 1] = {str(blank)!r}
os.execv({QEMU!r}, [{QEMU!r}, *args])
""")
    wrapper.chmod(0o755)
    return str(wrapper)


# 1. U-Boot's autoboot prompt never appears -> infrastructure error, power-cycle, retried
def test_no_autoboot_prompt_is_retried_after_a_power_cycle(maaxboard_image, tftp_root, tmp_path):
    env = twin_env(tmp_path, qemu=silent_first_qemu(tmp_path, silent_boots=1), login_timeout=4)
    with ConsoleLog(tmp_path / "console") as console:
        with boot_target(env, maaxboard_image, "fault-1", console, attempts=2) as booted:
            assert booted.run("echo alive") == ["alive"]
    assert len(booted.failed_attempts) == 1
    assert booted.failed_attempts[0].startswith("attempt 1: maaxboard-twin: boot failed: timed out")
    assert (tmp_path / "boots").read_text() == "2"


def test_no_autoboot_prompt_every_time_ends_as_infrastructure(maaxboard_image, tftp_root, tmp_path):
    env = twin_env(tmp_path, qemu=silent_first_qemu(tmp_path, silent_boots=5), login_timeout=3)
    with ConsoleLog(tmp_path / "console") as console:
        with pytest.raises(InfrastructureError) as info:
            with boot_target(env, maaxboard_image, "fault-1b", console, attempts=2):
                pass
    assert "no boot in 2 attempts" in str(info.value)
    assert len(info.value.failed_attempts) == 2
    assert (tmp_path / "boots").read_text() == "2"


# 3. Kernel panic during boot -> fails within seconds with the panic excerpt, never retried
def test_kernel_panic_fails_at_once_with_the_panic_line(maaxboard_image, tftp_root, tmp_path):
    env = twin_env(tmp_path)
    t0 = time.monotonic()
    with ConsoleLog(tmp_path / "console") as console:
        with pytest.raises(BootFailure) as info:
            # no such init in the initrd, and no /bin/sh in it before /init installs busybox
            with boot_target(env, maaxboard_image, "fault-3", console, ["rdinit=/nonexistent"], attempts=2):
                pass
    seconds = time.monotonic() - t0
    message = str(info.value)
    assert "kernel panic: Kernel panic - not syncing" in message
    assert "--- console ---" in message
    assert seconds < 40, f"took {seconds:.0f} s: the 120 s ready timeout, not the panic line, ended it"
    assert not getattr(info.value, "failed_attempts", None), "a panic of the image is never retried"


# 3b. the panic's line whole everywhere a run reports it: stdout, junit.xml, summary.md, the store's stage
def test_a_panic_is_reported_whole_by_farm_run(maaxboard_image, tftp_root, tmp_path):
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(f"""name: fault-3b
image: {ROOT / 'images' / 'maaxboard-bench.yaml'}
targets: [{{env: {ROOT / 'env' / 'qemu-maaxboard.yaml'}}}]
boot_attempts: 1
benchmarks:
  - openssl-speed: {{algorithms: [sha256], seconds: 1}}
""")
    out = tmp_path / "run"
    proc = run_farm("run", str(pipeline), "--bootarg", "rdinit=/nonexistent", "--out", str(out), timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    log = (out / "console" / "maaxboard-twin.log").read_text(errors="replace")
    (line,) = {ln.split("] ", 1)[-1].strip() for ln in log.splitlines() if "Kernel panic - not syncing" in ln}
    # the console log's line, whole (on the twin: "... VFS: Unable to mount root fs on unknown-block(0,0)")
    assert line.startswith("Kernel panic - not syncing: ") and len(line) > 40, line
    said = proc.stdout + proc.stderr
    assert f"kernel panic: {line}" in said, said
    (case,) = [tc for tc in ET.parse(out / "junit.xml").getroot().iter("testcase") if tc.get("name").startswith("boot")]
    assert f"kernel panic: {line}" in case.find("failure").get("message")
    assert f"kernel panic: {line}" in (out / "summary.md").read_text()


# 5. QEMU (the board) killed mid-benchmark -> infrastructure error; earlier records kept
def test_board_killed_mid_benchmark_keeps_what_was_measured(maaxboard_image, tftp_root, tmp_path):
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(f"""name: fault-5
image: {ROOT / 'images' / 'maaxboard-bench.yaml'}
targets: [{{env: {ROOT / 'env' / 'qemu-maaxboard.yaml'}}}]
boot_attempts: 1
benchmarks:
  - iperf3: {{duration: 2}}
  - openssl-speed: {{algorithms: [sha512], seconds: 20}}
""")
    out = tmp_path / "run"
    farm = subprocess.Popen([sys.executable, "-m", "farm.cli", "run", str(pipeline), "--out", str(out)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait until openssl runs, i.e. iperf3's records are written
        info = json.loads((out / "run.json").read_text()) if (out / "run.json").exists() else {}
        if str(info.get("current_stage", "")).startswith("crypto.openssl-speed"):
            break
        time.sleep(0.2)
    # openssl runs: the line it prints when its first test starts (not the stage's start: it may not be typed yet)
    wait_for_console_line(out / "console" / "maaxboard-twin.log", r"\+DT:sha512:", 60, running=farm)
    qemu = subprocess.run(["pgrep", "-f", f"tftp={tftp_root}"], capture_output=True, text=True).stdout.split()
    assert qemu, "the twin's QEMU is running"
    for pid in qemu:
        os.kill(int(pid), signal.SIGKILL)
    stdout, stderr = farm.communicate(timeout=120)
    assert farm.returncode == 3, stderr
    records = read_records(out / "results.csv")
    assert {r.benchmark for r in records} == {"iperf3"} and records
    cases = {tc.get("name"): tc for tc in ET.parse(out / "junit.xml").getroot().iter("testcase")}
    broken = cases["crypto.openssl-speed maaxboard-twin/default"]
    assert broken.find("error") is not None
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "infrastructure-error"
    assert run["stopped_at"] == "crypto.openssl-speed maaxboard-twin/default"
    assert "Starting kernel" in (out / "console" / "maaxboard-twin.log").read_text(errors="replace")


# 15. iperf3 server not reachable -> a test failure record with the message; the run goes on
def test_unreachable_iperf3_is_a_failure_record_and_the_run_goes_on(maaxboard_image, tftp_root, tmp_path):
    script = tmp_path / "run.py"
    script.write_text(f"""
import sys
from farm.bench import network
network.start_iperf3_server = lambda ctx: None   # the target's iperf3 server never starts
from farm.cli import main
sys.exit(main(["run", "pipelines/smoke.yaml", "--out", {str(tmp_path / 'run')!r}]))
""")
    proc = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stderr
    out = tmp_path / "run"
    records = read_records(out / "results.csv")
    failed = [r for r in records if r.metric == "failed"]
    assert [(r.benchmark, r.value, r.unit) for r in failed] == [("iperf3", 1.0, "count")]
    assert any(r.benchmark == "openssl-speed" and r.metric == "throughput" for r in records), "the run went on"
    case = next(tc for tc in ET.parse(out / "junit.xml").getroot().iter("testcase")
                if tc.get("name").startswith("network.iperf3"))
    message = case.find("failure").get("message")
    assert message.startswith("iperf3: ") and ("connect" in message or "refused" in message or "reset" in message)
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "failed" and run["failures"][0]["benchmark"] == "iperf3"


# 12. Values like `x; touch /tmp/pwned`, `$(id)`, a newline or a quote -> refused, sentinel never made
@pytest.mark.parametrize("bad", ["x;touch {s}", "$(touch {s})", "a\nb", "x'y", 'x"y', "`touch {s}`"])
def test_shell_and_uboot_metacharacters_are_refused_before_anything_runs(bad, maaxboard_image, tftp_root, tmp_path):
    sentinel = tmp_path / "pwned"
    value = bad.format(s=sentinel)
    boot = run_farm("boot", "--env", "env/qemu-maaxboard.yaml", "--image", str(maaxboard_image.path),
                    "--bootarg", value, "--attempts", "1")
    assert boot.returncode == 2, boot.stderr
    # refused when the argument is parsed, before the image is even looked at
    assert "argument --bootarg:" in boot.stderr and "is not an allowed kernel argument" in boot.stderr
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text("name: x\nimage: " + str(ROOT / "images" / "maaxboard-bench.yaml") + "\n"
                        "targets: [{env: " + str(ROOT / "env" / "qemu-maaxboard.yaml") + "}]\n"
                        "benchmarks:\n  - openssl-speed: {algorithms: [" + json.dumps(value) + "]}\n")
    run = run_farm("run", str(pipeline), "--out", str(tmp_path / "run"))
    assert run.returncode == 2, run.stderr
    assert not sentinel.exists()
    assert not subprocess.run(["pgrep", "-f", f"tftp={tftp_root}"], capture_output=True).stdout


# 16. A character lost on the serial line while U-Boot's command is typed -> the echo differs, the line is
# erased and typed again; U-Boot never runs the mangled command and the board is not power-cycled.
@target_factory.reg_driver
@attr.s(eq=False)
class LossyTwinQEMUDriver(TwinQEMUDriver):
    """The twin, with a serial line that loses one byte of the first write holding ``lose_in``."""

    lose_in = attr.ib(default="tftpboot", validator=attr.validators.instance_of(str))

    def _write(self, data: bytes) -> int:
        needle = self.lose_in.encode()
        if not getattr(self, "lost", None) and needle in data:
            at = data.index(needle) + 3
            self.lost = data
            return super()._write(data[:at] + data[at + 1:]) + 1  # the sender believes all was sent
        return super()._write(data)


def test_a_character_lost_while_typing_is_retyped_not_run(maaxboard_image, tftp_root, tmp_path):
    text = twin_env(tmp_path).path.read_text().replace("      TwinQEMUDriver:", "      LossyTwinQEMUDriver:")
    (tmp_path / "lossy.yaml").write_text(text)
    env = EnvFile.load(tmp_path / "lossy.yaml")
    with ConsoleLog(tmp_path / "console") as console:
        with boot_target(env, maaxboard_image, "fault-16", console, attempts=1) as booted:
            assert booted.run("echo alive") == ["alive"]
            qemu = booted.target.get_driver("ConsoleProtocol")
    assert b"tftpboot" in qemu.lost and b"tftboot" not in qemu.lost  # the byte was really lost
    assert booted.failed_attempts == []
    assert len(booted.retyped) == 1 and "tftpboot" in booted.retyped[0]
    log = (tmp_path / "console" / "maaxboard-twin.log").read_text(errors="replace")
    assert "tftboot" in log  # the mangled echo is in the console log, then the line typed again
    assert "Unknown command" not in log and log.count("Starting kernel") == 1
