"""farm.boot.facts.parse_facts on what FACTS_COMMAND prints on a busybox target."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from farm.boot.facts import FACTS_COMMAND, TargetFacts, parse_facts

# Recorded on the MaaXBoard's QEMU twin (results/*/console/maaxboard-twin.log): QEMU's virt CPU has no
# cpufreq driver and arm64's /proc/cpuinfo has no "cpu MHz" line.
TWIN = """\
cpus=4
online=0-3
cpufreq_khz=
governor=
cpuinfo_mhz=
kernel=6.1.0-57-arm64
machine=aarch64
addr=10.0.2.16/24""".splitlines()

# An i.MX8MQ board with the imx-cpufreq-dt driver: cpufreq is there (kHz), "cpu MHz" is not (arm64)
BOARD = """\
cpus=4
online=0-3
cpufreq_khz=1300000
governor=schedutil
cpuinfo_mhz=
kernel=6.1.0-57-arm64
machine=aarch64
addr=192.168.1.50/24""".splitlines()

# What busybox sh printed for FACTS_COMMAND on an x86-64 VM (no cpufreq; cut -d: -f2 keeps the leading space)
X86_VM = ["cpus=2", "online=0-1", "cpufreq_khz=", "governor=", "cpuinfo_mhz= 2596.132", "kernel=6.18.44-fc-v857",
          "machine=x86_64", "addr=192.0.2.2/24"]


# What busybox sh printed for today's FACTS_COMMAND on an x86-64 VM: ip's own line, not an addr= line
X86_VM_IP = ["cpus=2", "online=0-1", "cpufreq_khz=", "governor=", "cpuinfo_mhz= 2596.134", "kernel=6.18.44-fc-v1098",
             "machine=x86_64", "4: eth0    inet 192.0.2.2/24 brd 192.0.2.255 scope global eth0\\       valid_lft "
             "forever preferred_lft forever"]


# Today's FACTS_COMMAND on the MaaXBoard's twin (results/speed-r6-1/console/*-cli/maaxboard-twin.log)
TWIN_IP = ["cpus=4", "online=0-3", "cpufreq_khz=", "governor=", "cpuinfo_mhz=", "kernel=6.1.0-57-arm64",
           "machine=aarch64", "2: eth0    inet 10.0.2.15/24 scope global eth0\\       valid_lft forever "
           "preferred_lft forever"]


def test_ips_own_line_gives_the_address():
    facts = parse_facts(X86_VM_IP)
    assert (facts.cpus, facts.online, facts.frequency_source, facts.kernel, facts.machine, facts.address) == (
        2, "0-1", "cpuinfo", "6.18.44-fc-v1098", "x86_64", "192.0.2.2")


def test_the_first_global_address_wins_and_other_lines_are_not_addresses():
    lines = ["2: eth0    inet 10.0.2.15/24 brd 10.0.2.255 scope global eth0\\       valid_lft forever",
             "3: br0    inet 192.168.7.2/24 scope global br0\\       valid_lft forever",
             "kernel=6.1.0 inet 1.2.3.4/8"]
    assert parse_facts(lines).address == "10.0.2.15"
    assert parse_facts(["4: eth0    inet6 fe80::1/64 scope link"]).address == ""
    assert parse_facts(["root@farm-target:~# 2: eth0 inet 10.0.0.1/8 x"]).address == ""


@pytest.mark.parametrize("lines, address", [(TWIN, "10.0.2.16"), (TWIN_IP, "10.0.2.15")], ids=["addr-line", "ip-line"])
def test_twin_has_neither_frequency_source(lines, address):
    """Both forms of the twin's facts: an older FACTS_COMMAND's addr= line and today's ip line."""
    assert parse_facts(lines) == TargetFacts(cpus=4, online="0-3", frequency_hz=None, frequency_source="unknown",
                                             governor="", kernel="6.1.0-57-arm64", machine="aarch64", address=address)


def test_board_with_cpufreq():
    facts = parse_facts(BOARD)
    assert facts.frequency_hz == 1.3e9
    assert facts.frequency_source == "cpufreq"
    assert facts.governor == "schedutil"
    assert facts.address == "192.168.1.50"
    assert facts.as_dict() == {"cpus": 4, "online": "0-3", "frequency_hz": 1.3e9, "frequency_source": "cpufreq",
                               "governor": "schedutil", "kernel": "6.1.0-57-arm64", "machine": "aarch64",
                               "address": "192.168.1.50"}


def test_only_cpuinfo_mhz():
    facts = parse_facts(X86_VM)
    assert facts.frequency_source == "cpuinfo"
    assert facts.frequency_hz == pytest.approx(2596.132e6)
    assert (facts.cpus, facts.online, facts.machine, facts.address) == (2, "0-1", "x86_64", "192.0.2.2")


def test_cpufreq_wins_over_cpuinfo():
    lines = [l if not l.startswith("cpuinfo_mhz=") else "cpuinfo_mhz= 1800.000" for l in BOARD]
    facts = parse_facts(lines)
    assert (facts.frequency_hz, facts.frequency_source) == (1.3e9, "cpufreq")


def test_integer_cpuinfo_mhz():
    facts = parse_facts(["cpuinfo_mhz= 1500"])
    assert (facts.frequency_hz, facts.frequency_source) == (1.5e9, "cpuinfo")


@pytest.mark.parametrize("junk", ["<unknown>", "-1", "1.3e6", "abc", "1 300 000"])
def test_unreadable_cpufreq_falls_back(junk):
    facts = parse_facts([f"cpufreq_khz={junk}", "cpuinfo_mhz= 1200.000"])
    assert (facts.frequency_hz, facts.frequency_source) == (1.2e9, "cpuinfo")
    facts = parse_facts([f"cpufreq_khz={junk}", f"cpuinfo_mhz={junk}"])
    assert (facts.frequency_hz, facts.frequency_source) == (None, "unknown")


def test_address_without_prefix_length():
    assert parse_facts(["addr=10.0.2.16"]).address == "10.0.2.16"
    assert parse_facts(["addr=10.0.2.16/24"]).address == "10.0.2.16"
    assert parse_facts(["addr="]).address == ""
    assert parse_facts([]).address == ""


def test_carriage_returns_and_noise_lines():
    # a serial console's \r, a stray prompt line and a value containing '=' (kernel command line style)
    lines = [l + "\r" for l in TWIN] + ["root@farm-target:~# ", "governor=a=b"]
    facts = parse_facts(lines)
    assert facts.cpus == 4 and facts.address == "10.0.2.16" and facts.kernel == "6.1.0-57-arm64"
    assert facts.governor == "a=b"


def test_missing_or_bad_cpus():
    assert parse_facts(["cpus="]).cpus is None
    assert parse_facts(["cpus=four"]).cpus is None
    assert parse_facts([]) == TargetFacts(None, "", None, "unknown", "", "", "", "")


def test_facts_command_on_this_machine():
    """Run FACTS_COMMAND in busybox sh here and compare with what Python reads itself."""
    busybox = shutil.which("busybox") or ("/bin/busybox" if os.path.exists("/bin/busybox") else None)
    if busybox is None:
        pytest.skip("busybox is not installed")
    out = subprocess.run([busybox, "sh", "-c", FACTS_COMMAND], capture_output=True, text=True, timeout=30, check=True)
    facts = parse_facts(out.stdout.splitlines())
    assert facts.cpus == len(os.sched_getaffinity(0))
    assert facts.kernel == os.uname().release
    assert facts.machine == os.uname().machine
    online = Path("/sys/devices/system/cpu/online")
    assert facts.online == (online.read_text().strip() if online.exists() else "")
    cpufreq = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq")
    cpuinfo_mhz = any(line.lower().startswith("cpu mhz") for line in Path("/proc/cpuinfo").read_text().splitlines())
    expected = "cpufreq" if cpufreq.exists() else "cpuinfo" if cpuinfo_mhz else "unknown"
    assert facts.frequency_source == expected
    if expected != "unknown":
        assert 1e8 < facts.frequency_hz < 1e10
    assert "/" not in facts.address


def test_pin_frequency_command_runs_in_busybox_sh_on_a_fake_sysfs(tmp_path):
    """The command against a directory tree shaped like cpufreq's (paths rewritten), in real busybox sh."""
    import shutil
    import subprocess

    from farm.boot.facts import pin_frequency_command

    busybox = shutil.which("busybox")
    if busybox is None:
        pytest.skip("busybox not installed")
    root = tmp_path / "sys/devices/system/cpu"
    for cpu in ("cpu0", "cpu1"):
        d = root / cpu / "cpufreq"
        d.mkdir(parents=True)
        for f in ("scaling_max_freq", "scaling_min_freq", "scaling_cur_freq", "scaling_setspeed"):
            (d / f).write_text("1500000\n")
        # no userspace governor here: a directory instead of a file makes the write fail
        (d / "scaling_governor").mkdir()
    command = pin_frequency_command(1000000).replace("/sys/", f"{tmp_path}/sys/")
    proc = subprocess.run([busybox, "sh", "-c", command], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    for cpu in ("cpu0", "cpu1"):
        assert (root / cpu / "cpufreq" / "scaling_max_freq").read_text().strip() == "1000000"
        assert (root / cpu / "cpufreq" / "scaling_min_freq").read_text().strip() == "1000000"
    empty = pin_frequency_command(1000000).replace("/sys/", f"{tmp_path}/none/")
    assert subprocess.run([busybox, "sh", "-c", empty]).returncode == 3
    with pytest.raises(ValueError):
        pin_frequency_command(0)
