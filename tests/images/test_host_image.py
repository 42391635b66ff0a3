"""The host image of a setup with a guest: the bench recipe plus QEMU, util-linux's chrt/taskset and the
guest's kernel and initrd at /guest/, built for real (from the user's cache once built)."""

from __future__ import annotations

import hashlib

import pytest

from farm.images.build import build, read_initrd
from farm.images.cpio import read_newc
from farm.images.host import guest_files


@pytest.fixture(scope="module")
def host_image(project_root, maaxboard_image):
    return build(project_root / "images" / "maaxboard-bench.yaml", guest=maaxboard_image)


def test_host_initrd_holds_qemu_the_tools_and_the_guest(host_image, maaxboard_image):
    entries = {e.path: e for e in read_newc(read_initrd(host_image.initrd))}
    for binary in ("usr/bin/qemu-system-aarch64", "usr/bin/chrt", "usr/bin/taskset", "usr/bin/openssl"):
        assert binary in entries and entries[binary].mode & 0o111, binary
    assert any(p.startswith("lib/aarch64-linux-gnu/libglib-2.0.so") for p in entries)  # QEMU's ELF closure
    assert not any(p.endswith("efi-virtio.rom") for p in entries)  # no firmware: virtio-net-device needs none
    kernel, initrd = guest_files(host_image.manifest)
    assert (kernel, initrd) == ("/guest/Image", f"/guest/{maaxboard_image.initrd.name}")  # initrd.cpio.zst
    for path, artifact in ((kernel, maaxboard_image.kernel), (initrd, maaxboard_image.initrd)):
        assert hashlib.sha256(entries[path.lstrip("/")].data).hexdigest() == hashlib.sha256(artifact.read_bytes()).hexdigest()


def test_host_manifest_records_the_guest_and_its_key(host_image, maaxboard_image):
    guest = host_image.manifest["guest"]
    assert host_image.name == "maaxboard-bench-host"
    assert guest["key"] == maaxboard_image.manifest["key"]
    assert guest["artifacts"] == maaxboard_image.manifest["artifacts"]
    assert guest["kernel_version"] == maaxboard_image.manifest["kernel_version"]
    assert host_image.manifest["key"] != maaxboard_image.manifest["key"]
    used = {p["name"] for p in host_image.manifest["packages"]}
    assert {"qemu-system-arm", "util-linux", "busybox-static", "openssl"} <= used
    print(f"host initrd: {host_image.initrd.stat().st_size / 1e6:.1f} MB gzipped")
