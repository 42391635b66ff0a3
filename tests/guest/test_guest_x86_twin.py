"""A KVM guest on the x86 twin, for real: the twin's `-cpu max` under TCG offers AMD-V (QEMU's TCG
emulates SVM with nested paging), so the host's kvm_amd loads, /dev/kvm is there, and the x86 bench
image runs as a KVM guest of the twin's Linux with the lab's x86 line (q35, ttyS0, virtio-net-pci
without a ROM, SeaBIOS). Costly: the x86 host image's first build downloads QEMU's x86 packages
(~8 min here), the twin boots in ~35 s and the guest in ~45 s."""

from __future__ import annotations

import pytest

from farm.boot.console_log import ConsoleLog
from farm.boot.session import EnvFile, boot_target
from farm.guest.spec import GuestSpec
from farm.guest.start import start_guest, stop_guest
from farm.images.build import build
from farm.images.host import guest_files

pytestmark = pytest.mark.boot


def test_kvm_guest_on_the_x86_twin(project_root, tftp_root, tmp_path):
    guest = build(project_root / "images" / "x86-bench.yaml")
    host = build(project_root / "images" / "x86-bench.yaml", guest=guest)
    kernel, initrd = guest_files(host.manifest)
    env = EnvFile.load(project_root / "env" / "qemu-x86.yaml")
    with ConsoleLog(tmp_path / "console") as console:
        with boot_target(env, host, "t-guest-x86", console) as booted:
            info = start_guest(booted.shell, booted.shell.console, GuestSpec(boot_timeout=240), kernel, initrd, {},
                               arch="amd64")
            try:
                assert info.accel == "kvm" and info.command[:3] == ("qemu-system-x86_64", "-M", "q35")
                assert info.kernel == guest.manifest["kernel_version"] and info.cpus == 1
                assert any("Nested Paging enabled" in line for line in info.host_dmesg), info.host_dmesg
                assert booted.run("dmesg | grep -o 'Hypervisor detected: KVM'") == ["Hypervisor detected: KVM"]
                speed = booted.run("openssl speed -seconds 1 sha256", timeout=120)
                assert any(line.startswith("sha256") for line in speed), speed
            finally:
                # a KVM guest of the TCG-emulated PC powers off slowly when the machine is loaded (a full
                # suite run saw neither poweroff -f nor Ctrl-A x end it within the default 20 s each)
                assert stop_guest(booted.shell, booted.shell.console, timeout=60) == 0
            assert booted.run("grep -c ^processor /proc/cpuinfo") == ["2"]  # the twin's own shell again
    print(f"x86 guest boot: {info.boot_seconds:.1f} s")
