"""Building the real image: reproducible, cached, and clear about bad recipes."""

from __future__ import annotations

import os

import pytest

from farm.images import build as build_mod
from farm.images import debian
from farm.images.build import build, default_cache, read_initrd
from farm.images.cpio import read_newc

from ..conftest import ROOT, run_farm


def test_rebuild_from_scratch_gives_identical_artifacts(maaxboard_image, tmp_path):
    """A second cache shares only the downloaded/extracted packages: the image is assembled anew."""
    cache = tmp_path / "cache"
    cache.mkdir()
    for shared in ("debs", "pkgs", "resolved"):
        os.symlink(default_cache() / shared, cache / shared)
    again = build(ROOT / "images" / "maaxboard-bench.yaml", cache=cache)
    assert not again.cached
    assert again.path != maaxboard_image.path
    assert again.manifest["artifacts"] == maaxboard_image.manifest["artifacts"]
    assert (again.path / "manifest.json").read_bytes() == (maaxboard_image.path / "manifest.json").read_bytes()


def test_unchanged_recipe_is_served_from_cache_without_apt(maaxboard_image, monkeypatch):
    def no_apt(*args, **kwargs):
        raise AssertionError(f"apt called for a cached build: {args}")

    monkeypatch.setattr(debian.subprocess, "run", no_apt)
    monkeypatch.setattr(build_mod.subprocess, "run", no_apt)
    again = build(ROOT / "images" / "maaxboard-bench.yaml")
    assert again.cached and again.path == maaxboard_image.path


def test_initrd_holds_what_the_board_needs(maaxboard_image):
    entries = {e.path: e for e in read_newc(read_initrd(maaxboard_image.initrd))}
    kver = maaxboard_image.manifest["kernel_version"]
    assert "init" in entries and entries["init"].mode & 0o111
    assert "dev/console" in entries
    for binary in ("bin/busybox", "usr/bin/iperf3", "usr/bin/openssl"):
        assert binary in entries
    assert any(p.startswith("lib/aarch64-linux-gnu/libssl.so") for p in entries)
    order = entries["etc/farm/modules"].data.decode().split()
    names = [p.rsplit("/", 1)[-1] for p in order]
    for module in ("virtio_net.ko", "virtio_mmio.ko", "virtio_pci.ko", "fec.ko"):
        assert module in names
        assert f"lib/modules/{kver}/" + order[names.index(module)].split("/", 1)[1] in entries
    assert names.index("failover.ko") < names.index("net_failover.ko") < names.index("virtio_net.ko")
    used = {p["name"] for p in maaxboard_image.manifest["packages"]}
    assert {"busybox-static", "iperf3", "openssl", "libssl3", "libc6"} <= used
    assert any(n.startswith("linux-image-") and n != "linux-image-arm64" for n in used)


def test_farm_build_prints_image_dir_last(maaxboard_image, tmp_path):
    proc = run_farm("build", "images/maaxboard-bench.yaml", "--out", str(tmp_path / "img"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == str(tmp_path / "img")
    assert (tmp_path / "img" / "manifest.json").exists()
    assert (tmp_path / "img" / "Image").stat().st_size == maaxboard_image.kernel.stat().st_size


@pytest.mark.parametrize("recipe, expected", [
    ("name: x\narch: arm64\nkernel:\n  package: linux-image-doesnotexist\ninitrd:\n  packages: [busybox-static]\n",
     ":4: kernel.package: Debian package 'linux-image-doesnotexist' not found for arm64"),
    ("name: x\narch: arm64\nkernel:\n  package: linux-image-arm64\ninitrd:\n  packages: [busybox-static, no-such-pkg-farm]\n",
     ":6: initrd.packages: Debian package 'no-such-pkg-farm' not found for arm64"),
    ("name: x\narch: sparc\nkernel:\n  package: linux-image-arm64\ninitrd:\n  packages: [busybox-static]\n",
     ":2: arch: unsupported architecture 'sparc'"),
    ("name: x\narch: arm64\nkernel: [oops\n", ": invalid YAML"),
    ("name: x\narch: arm64\ninitrd:\n  packages: [busybox-static]\n", "missing required field 'kernel'"),
])
def test_bad_recipe_is_one_clear_line(tmp_path, recipe, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(recipe)
    proc = run_farm("build", str(path), env={"FARM_CACHE": str(tmp_path / "cache")})
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"farm: job error: {path}")
    assert expected in lines[0]


def test_missing_file_in_packages_names_the_field(tmp_path, maaxboard_image):
    path = tmp_path / "nofile.yaml"
    path.write_text("name: x\narch: arm64\nkernel:\n  package: linux-image-arm64\n"
                    "initrd:\n  packages: [busybox-static]\n  files: [/bin/busybox, /usr/bin/nothing-here]\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    for shared in ("debs", "pkgs"):
        os.symlink(default_cache() / shared, cache / shared)
    proc = run_farm("build", str(path), env={"FARM_CACHE": str(cache)})
    assert proc.returncode == 2
    assert f"{path}:7: initrd.files: '/usr/bin/nothing-here'" in proc.stderr
