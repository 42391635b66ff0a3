"""The host side of a guest: the host recipe and its cache key, and what the host's dmesg says of KVM."""

from __future__ import annotations

import pytest

from farm.errors import JobError
from farm.guest.start import HostCheck, kvm_problem, pin_problem
from farm.images.host import guest_entries, guest_paths, host_key, host_recipe
from farm.images.recipe import Recipe

# dmesg of Debian's 6.1 arm64 kernel on the twin, with and without virtualization=on (timestamps cut)
EL2 = ("CPU: All CPU(s) started at EL2", "kvm [1]: IPA Size Limit: 40 bits",
       "kvm [1]: Hyp mode initialized successfully")
EL1 = ("CPU: All CPU(s) started at EL1", "kvm [1]: HYP mode not available")


def _recipe(**kw) -> Recipe:
    return Recipe(name="bench", arch="arm64", kernel_package="linux-image-arm64", kernel_compress="none",
                  modules=("virtio_net",), packages=("busybox-static", "openssl"), files=("/bin/busybox",),
                  programs=(), source="images/bench.yaml", **kw)


def _manifest(key="k" * 64, sha="a" * 64, arch="arm64"):
    return {"name": "bench", "arch": arch, "key": key, "kernel": "Image", "initrd": "initrd.cpio.gz",
            "kernel_version": "6.1.0-57-arm64",
            "artifacts": {"Image": {"sha256": sha, "size": 1}, "initrd.cpio.gz": {"sha256": sha, "size": 1}}}


def test_host_recipe_is_the_recipe_plus_qemu_and_the_pinning_tools():
    host = host_recipe(_recipe(), _manifest())
    assert host.name == "bench-host"
    assert host.packages == ("busybox-static", "openssl", "qemu-system-arm", "util-linux")
    assert host.files == ("/bin/busybox", "/usr/bin/qemu-system-aarch64", "/usr/bin/chrt", "/usr/bin/taskset")
    assert host.modules == ("virtio_net",) and host.kernel_package == "linux-image-arm64"


def test_an_amd64_host_loads_kvm_modules():
    recipe = Recipe(name="pc", arch="amd64", kernel_package="linux-image-amd64", kernel_compress="none",
                    modules=("e1000e",), packages=("busybox-static",), files=(), programs=(), source="x.yaml")
    host = host_recipe(recipe, _manifest(arch="amd64"))
    assert host.modules == ("e1000e", "kvm_intel", "kvm_amd")
    assert {"qemu-system-x86", "seabios", "qemu-system-data"} <= set(host.packages)
    assert host.files[:2] == ("/bin/busybox", "/usr/bin/qemu-system-x86_64")
    assert "/usr/share/seabios/bios-256k.bin" in host.files  # q35 loads SeaBIOS even with -kernel


def test_a_guest_of_another_architecture_is_refused():
    with pytest.raises(JobError, match="guest image 'bench' is amd64 but the host is arm64"):
        host_recipe(_recipe(), _manifest(arch="amd64"))


def test_host_key_changes_with_the_guest_image():
    base = host_key("h" * 64, _manifest())
    assert base == host_key("h" * 64, _manifest())
    assert base != host_key("h" * 64, _manifest(key="x" * 64))  # another guest build
    assert base != host_key("h" * 64, _manifest(sha="b" * 64))  # other guest bytes
    assert base != host_key("i" * 64, _manifest())  # another host recipe


def test_guest_files_go_to_guest_and_are_checked(tmp_path):
    import hashlib
    for name in ("Image", "initrd.cpio.gz"):
        (tmp_path / name).write_bytes(name.encode())
    manifest = _manifest()
    for name in ("Image", "initrd.cpio.gz"):
        manifest["artifacts"][name] = {"sha256": hashlib.sha256(name.encode()).hexdigest(), "size": len(name)}
    entries = guest_entries(tmp_path, manifest)
    assert sorted(entries) == ["/guest/Image", "/guest/initrd.cpio.gz", "/guest/manifest.json"]
    assert guest_paths(manifest) == {"kernel": "/guest/Image", "initrd": "/guest/initrd.cpio.gz"}
    (tmp_path / "Image").write_bytes(b"changed")
    with pytest.raises(JobError, match="does not match its sha256"):
        guest_entries(tmp_path, manifest)


def test_kvm_on_an_el2_host():
    assert kvm_problem(HostCheck(True, EL2, "QEMU emulator version 7.2.19", 4)) is None


def test_no_kvm_quotes_the_hosts_dmesg():
    problem = kvm_problem(HostCheck(False, EL1, "QEMU emulator version 7.2.19", 4))
    assert "no /dev/kvm" in problem
    assert "'CPU: All CPU(s) started at EL1'" in problem and "'kvm [1]: HYP mode not available'" in problem
    assert "no line about EL2" in kvm_problem(HostCheck(False, (), "", 4))
    # a /dev/kvm whose hypervisor says it did not initialize is no KVM either
    assert "KVM not initialized" in kvm_problem(HostCheck(True, EL1, "", 4))
    # /dev/kvm, and dmesg's start wrapped away (a long-running host): KVM it is
    assert kvm_problem(HostCheck(True, (), "", 4)) is None


def test_pinning_to_a_core_the_host_lacks():
    assert pin_problem((2, 3), 4) is None and pin_problem(None, 1) is None
    assert "host core 4 does not exist (the host has 4 cores: 0-3)" in pin_problem((1, 4), 4)


def test_guest_info_for_run_json():
    from farm.guest.start import GuestInfo

    info = GuestInfo(command=("qemu-system-aarch64", "-append", "console=ttyAMA0 quiet"), line="sh -c ...",
                     qemu_version="QEMU emulator version 7.2.19", accel="kvm", vcpus=1, memory_mb=512,
                     pinning={0: 2}, threads={0: 176}, forwards={5201: 5201}, boot_seconds=9.1834,
                     kernel="6.1.0-57-arm64", cpus=1, host_dmesg=EL2)
    data = info.to_json()
    assert data["qemu_command_line"] == "qemu-system-aarch64 -append 'console=ttyAMA0 quiet'"
    assert data["pinning"] == {"0": 2} and data["forwards"] == {"5201": 5201} and data["boot_seconds"] == 9.183
    import json
    assert json.loads(json.dumps(data)) == data
