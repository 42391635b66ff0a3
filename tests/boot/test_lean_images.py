"""The lean image (a kernel built from linux-source-6.1 with every driver built in) boots the MaaXBoard twin
for real, to FARM-READY with the network up, and /init loaded no module (there are none to load).

The x86 lean image is the same recipe shape on the other arch: booting it costs ~8 core-minutes of kernel
build on a fresh machine for no path of its own (the x86 twin's iPXE path boots the bench image:
tests/boot/test_x86_twin.py; the kernel builder's x86 arch is the tiny kernel's, tests/images/
test_kernel_build.py). Both lean images boot in ``benchmarks/lean_boot.py`` (docs/images.md)."""

from __future__ import annotations

import re

import pytest

from farm.boot.console_log import ConsoleLog
from farm.boot.facts import read_facts
from farm.boot.session import EnvFile, boot_target

from ..conftest import ROOT

pytestmark = [pytest.mark.boot, pytest.mark.lean, pytest.mark.timeout(3600)]  # may wait for the background build


@pytest.mark.parametrize("recipe, env_file, target, machine, cpus", [
    ("maaxboard-lean", "qemu-maaxboard", "maaxboard-twin", "aarch64", 4),
])
def test_lean_image_boots_its_twin_with_builtin_drivers(recipe, env_file, target, machine, cpus, tftp_root, tmp_path):
    from ..prebuild import lean_image

    image = lean_image(recipe)  # the user's cache: compiled once (in the background from the session's start)
    assert image.manifest["modules"] == [] and image.manifest["kernel_source"]["modules"] is False
    env = EnvFile.load(ROOT / "env" / f"{env_file}.yaml")
    with ConsoleLog(tmp_path / "console") as console:
        with boot_target(env, image, f"t-lean-{recipe}", console) as booted:
            facts = read_facts(booted.shell)
            assert facts.machine == machine
            assert facts.kernel == image.manifest["kernel_version"] and facts.kernel.endswith("-farm")
            assert facts.cpus == cpus
            assert facts.address.startswith("10.0.2.")
            # the twin's NIC is driven by the built-in virtio_net; the kernel has no module support at all
            assert booted.run("basename $(readlink /sys/class/net/eth0/device/driver)") == ["virtio_net"]
            assert booted.run("test -e /proc/modules && echo modules || echo none") == ["none"]
            assert booted.run("iperf3 --version")[0].startswith("iperf 3")
            # the bootloader's seed is trusted: the crng is ready at once, so getrandom() (iperf3's first
            # call) does not block for seconds waiting for entropy, as it did without RANDOM_TRUST_*
            crng = booted.run("dmesg | grep -m1 'crng init done' || echo never")[0]
            assert crng != "never" and float(re.search(r"\[\s*([0-9.]+)\]", crng)[1]) < 2.0, crng
            print(f"{recipe} on {target}: power on to shell in {booted.boot_seconds:.1f} s")
        log = console.path(target).read_text(errors="replace")
    assert "farm-init: insmod" not in log
    assert re.search(r"farm-init: modules loaded at [0-9.]+s", log)  # /init copes with an empty module list
    assert "FARM-READY" in log
