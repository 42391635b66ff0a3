"""The guest's QEMU command line (the lab's), its forwarded ports, and the line that starts and pins it."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import textwrap

import pytest

from farm.guest.command import (EXIT_LINE, TYPED_MAX, guest_forwards, parse_pins, qemu_command, start_line,
                                 typed_lines)
from farm.guest.spec import GuestSpec


def test_the_labs_arm64_line():
    cmd = qemu_command(GuestSpec(), "/guest/Image", "/guest/initrd.cpio.gz", {5201: 5201}, ["farm.x=1"])
    assert shlex.join(cmd) == (
        "qemu-system-aarch64 -M virt,gic-version=3 -cpu host -enable-kvm -smp 1 -m 512M -nographic "
        "-serial mon:stdio -no-reboot -name guest,debug-threads=on -kernel /guest/Image "
        "-initrd /guest/initrd.cpio.gz -append 'console=ttyAMA0 quiet farm.ip=10.0.3.15:255.255.255.0:10.0.3.2 farm.x=1' "
        "-netdev user,id=n0,net=10.0.3.0/24,hostfwd=tcp::5201-:5201,hostfwd=udp::5201-:5201 -device virtio-net-device,netdev=n0")


def test_spec_values_reach_the_line():
    spec = GuestSpec(vcpus=2, memory_mb=1024, cpu="max", accel="tcg", bootargs=("maxcpus=2",),
                     extra_args=("-overcommit", "mem-lock=on"))
    cmd = qemu_command(spec, "k", "i", {}, arch="arm64")
    assert cmd[cmd.index("-smp") + 1] == "2" and cmd[cmd.index("-m") + 1] == "1024M"
    assert cmd[cmd.index("-cpu") + 1] == "max" and "-enable-kvm" not in cmd
    assert cmd[cmd.index("-accel") + 1] == "tcg"
    assert cmd[cmd.index("-append") + 1] == "console=ttyAMA0 quiet farm.ip=10.0.3.15:255.255.255.0:10.0.3.2 maxcpus=2"
    assert cmd[cmd.index("-netdev") + 1] == "user,id=n0,net=10.0.3.0/24"
    assert cmd[-2:] == ["-overcommit", "mem-lock=on"]


def test_the_guest_gets_the_user_networks_lease_on_its_command_line():
    """QEMU's user network (net=GUEST_NET) leases its guest the network's .15 with the gateway .2: /init takes
    it as a bootloader's lease instead of asking DHCP; a setup's own farm.ip= comes later, and wins."""
    import ipaddress

    from farm.guest.command import GUEST_LEASE, GUEST_NET

    net = ipaddress.ip_network(GUEST_NET)
    assert GUEST_LEASE == f"farm.ip={net[15]}:{net.netmask}:{net[2]}"
    append = qemu_command(GuestSpec(bootargs=("farm.ip=10.0.3.99:255.255.255.0:10.0.3.2",)), "k", "i", {})
    words = append[append.index("-append") + 1].split()
    assert words.index(GUEST_LEASE) < words.index("farm.ip=10.0.3.99:255.255.255.0:10.0.3.2")


def test_amd64_line_is_q35_on_ttyS0_without_an_option_rom():
    cmd = qemu_command(GuestSpec(), "/guest/bzImage", "/guest/initrd.cpio.gz", {}, arch="amd64")
    assert cmd[:3] == ["qemu-system-x86_64", "-M", "q35"]
    assert cmd[cmd.index("-append") + 1].startswith("console=ttyS0 ")
    assert cmd[cmd.index("-device") + 1] == "virtio-net-pci,netdev=n0,romfile="
    assert cmd[cmd.index("-vga") + 1] == "none"  # no VGA card (nor its ROM): the console is serial
    with pytest.raises(ValueError):
        qemu_command(GuestSpec(), "k", "i", {}, arch="riscv64")


def test_forwards_are_identity_unless_the_host_port_is_taken():
    assert guest_forwards([5201, 7, 5201]) == {7: 7, 5201: 5201}
    assert guest_forwards([22, 5201], taken={22: 22}) == {23: 22, 5201: 5201}


@pytest.mark.skipif(not os.path.exists("/usr/bin/busybox") or os.cpu_count() < 2, reason="needs busybox and 2 cores")
def test_start_line_pins_each_vcpu_thread_and_reports_the_exit(tmp_path):
    """The real line in busybox sh (the target's shell), with a stand-in for QEMU whose threads are
    named as QEMU's with debug-threads=on: each is pinned to its core, and QEMU's status printed."""
    fake = tmp_path / "fake-qemu"
    fake.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import ctypes, os, sys, threading, time
        libc = ctypes.CDLL(None)
        def vcpu(i):
            libc.prctl(15, f"CPU {{i}}/KVM".encode(), 0, 0, 0)  # PR_SET_NAME
            time.sleep(2)
        threads = [threading.Thread(target=vcpu, args=(i,)) for i in range(2)]
        [t.start() for t in threads]
        time.sleep(1.5)
        for t in os.listdir("/proc/self/task"):
            name = open(f"/proc/self/task/{{t}}/comm").read().strip()
            if name.startswith("CPU "):
                print("AFFINITY", name, sorted(os.sched_getaffinity(int(t))), flush=True)
        [t.join() for t in threads]
        sys.exit(3)
        """))
    fake.chmod(0o755)
    line = start_line([str(fake)], (1, 0), 2)
    proc = subprocess.run(["busybox", "sh", "-c", line], capture_output=True, timeout=30)
    out = proc.stdout
    pins = parse_pins(out)
    assert sorted(pins) == [0, 1] and pins[0][1] == 1 and pins[1][1] == 0, out
    assert b"AFFINITY CPU 0/KVM [1]" in out and b"AFFINITY CPU 1/KVM [0]" in out, out
    assert EXIT_LINE.search(out).group(1) == b"3"


def test_start_line_without_pinning_only_runs_qemu():
    line = start_line(["qemu-system-aarch64", "-M", "virt"], None, 1)
    assert line == ("stty -onlcr 2>/dev/null; sh -c 'exec qemu-system-aarch64 -M virt'; s=$?; "
                    "stty onlcr 2>/dev/null; echo FARM-QEMU-EXIT=$s")
    proc = subprocess.run(["sh", "-c", line.replace("qemu-system-aarch64 -M virt", "false")],
                          capture_output=True, timeout=10)
    assert EXIT_LINE.search(proc.stdout).group(1) == b"1"


def test_a_start_line_under_busybox_limit_is_typed_as_it_is():
    assert typed_lines("sh -c 'exec qemu'") == ([], "sh -c 'exec qemu'")


@pytest.mark.skipif(not os.path.exists("/usr/bin/busybox"), reason="needs busybox")
def test_a_long_start_line_is_written_in_pieces_then_run_as_the_same_text(tmp_path):
    """busybox's line editor drops what a typed line has beyond 1024 characters (the guest's line with
    ipbench's and iperf3's forwards and its lease came to ~1100 and never started): each typed line
    stays under the limit, and the script runs exactly the long line's text."""
    args = ["echo", *(f"arg'{i}\"$x" for i in range(150)), "end"]
    line = f"x=X; {shlex.join(args)}; echo FARM-QEMU-EXIT=$?"
    assert len(line) > TYPED_MAX
    script = tmp_path / "d" / "start.sh"
    writes, typed = typed_lines(line, str(script))
    assert writes and all(len(w) < TYPED_MAX - 100 for w in [*writes, typed])
    for write in writes:
        subprocess.run(["busybox", "sh", "-c", write], check=True)
    assert script.read_text() == line
    direct = subprocess.run(["busybox", "sh", "-c", line], capture_output=True, timeout=10).stdout
    assert subprocess.run(["busybox", "sh", "-c", typed], capture_output=True, timeout=10).stdout == direct
    assert b"arg'149\"$x end" in direct
