"""A kernel built from linux-source-6.1 for real, on a tiny config so it is quick: two builds are
bit-identical (the second in another cache at another path, through a ccache store of its own, compiled
in every run; the first kept in its cache from the machine's first run, as a user's cache keeps it), an
unchanged recipe is served without make in well under a second, and a fragment line the merged config does
not honour is a job error naming it. The tiny kernel is x86's (bzImage, the host's own gcc): the arm64
builder (Image, the cross compiler) is the lean MaaXBoard kernel's, built and booted in tests/boot.

These compile a kernel (a minute or two with a warm ccache, more without): marked ``boot`` with the other
slow tests."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from farm.images import build as build_mod
from farm.images import kernel as kernel_mod
from farm.images.build import build, default_cache

from ..conftest import run_farm

pytestmark = [pytest.mark.boot, pytest.mark.timeout(3600), pytest.mark.skipif(not Path("/usr/src/linux-source-6.1.tar.xz").is_file(),
                                                    reason="linux-source-6.1 is not installed (make setup)")]

RECIPE = """\
name: tiny-kernel
arch: amd64
kernel:
  source: {{package: linux-source-6.1}}
  config: [tinyconfig, tiny.config]
initrd:
  packages: [busybox-static]
  files: [/bin/busybox]
"""
FRAGMENT = ("# the smallest kernel that still takes farm's initrd\nCONFIG_BLK_DEV_INITRD=y\nCONFIG_RD_GZIP=y\n"
            # BUG() tables that name their source files (__FILE__): the paths a build must not leak
            "CONFIG_BUG=y\nCONFIG_DEBUG_BUGVERBOSE=y\n")


def _cache(path: Path) -> Path:
    """A cache of its own that shares only the Debian packages with the user's (no downloads)."""
    path.mkdir()
    for shared in ("debs", "pkgs", "resolved"):
        if (default_cache() / shared).is_dir():
            os.symlink(default_cache() / shared, path / shared)
    return path


def _share_source(cache: Path) -> None:
    """linux-source-6.1 unpacked once in the user's cache (as the lean recipes have it) and copied into
    ``cache`` as hard links (a second, ~1 s): a real directory inside the cache, as a build has it. (Not a
    symlink: the kernel's make resolves its source's real path, which would then lie outside the cache,
    and a build through ccache would not meet the paths it meets for real.)"""
    source = kernel_mod.KernelSource("package", "linux-source-6.1", "tinyconfig", (), ())
    kernel_mod._unpacked(kernel_mod.source_identity(source, default_cache(), "test"), default_cache())
    copy = subprocess.run(["cp", "-al", str(default_cache() / "kernel-src"), str(cache / "kernel-src")],
                          capture_output=True, text=True)
    if copy.returncode != 0:  # another file system: a real copy (slower)
        shutil.rmtree(cache / "kernel-src", ignore_errors=True)
        shutil.copytree(default_cache() / "kernel-src", cache / "kernel-src", symlinks=True)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-kernel")
    (root / "tiny.config").write_text(FRAGMENT)
    recipe = root / "tiny-kernel.yaml"
    recipe.write_text(RECIPE.format())
    # A cache at the same path in every run, kept: a machine's first run builds the kernel in it (CI's fresh
    # machine does); later runs are served it, as a user's cache serves an unchanged recipe. The second build
    # (test_two_builds_in_two_places_are_bit_identical) compiles every object again, into another cache, in
    # every run: a change of the builder that changes the kernel without a new KERNEL_BUILDER_VERSION (which
    # would keep serving the old one) fails there.
    cache = default_cache() / "test-tiny-kernel"
    if not (cache / "kernel-src").is_dir():
        shutil.rmtree(cache, ignore_errors=True)
        _cache(cache)
        _share_source(cache)
    started = time.monotonic()
    image = build(recipe, cache=cache)
    return recipe, cache, image, time.monotonic() - started


def test_tiny_kernel_is_built_with_its_config_and_source_in_the_manifest(tiny):
    recipe, cache, image, seconds = tiny
    info = image.manifest["kernel_source"]
    assert info["source"]["version"].startswith("linux-source-6.1 ") and info["source_kind"] == "package"
    assert info["source"]["sha256"] == hashlib.sha256(Path("/usr/src/linux-source-6.1.tar.xz").read_bytes()).hexdigest()
    assert (info["config_base"], info["config_fragments"], info["modules"]) == ("tinyconfig", ["tiny.config"], False)
    kernels = [p for p in (cache / "kernels").iterdir() if p.is_dir() and not p.name.startswith(".")
               and json.loads((p / "kernel.json").read_text())["config_sha256"] == info["config_sha256"]]
    assert len(kernels) == 1  # (a kernel of an earlier builder version may be beside it)
    release = image.manifest["kernel_version"]
    config = (kernels[0] / "boot" / f"config-{release}").read_bytes()
    assert info["config_sha256"] == hashlib.sha256(config).hexdigest()
    assert b"CONFIG_RD_GZIP=y\n" in config and b"CONFIG_CC_OPTIMIZE_FOR_SIZE=y\n" in config  # tinyconfig + the fragment
    log = kernels[0].with_name(kernels[0].name + ".log")
    assert "LD      vmlinux" in log.read_text()  # make's whole output, beside the kernel
    assert json.loads((kernels[0] / "kernel.json").read_text())["build_seconds"] > 0
    assert image.kernel.name == "bzImage" and image.kernel.read_bytes()[0x202:0x206] == b"HdrS"  # x86's boot header
    print(f"tiny kernel: {'served from the cache' if image.cached else 'built'} in {seconds:.0f} s")


def test_unchanged_kernel_recipe_is_served_without_make_in_under_a_second(tiny, monkeypatch):
    recipe, cache, image, _ = tiny

    def no_build(*args, **kwargs):
        raise AssertionError(f"a cached kernel was built or unpacked again: {args}")

    monkeypatch.setattr(kernel_mod, "_build", no_build)
    monkeypatch.setattr(kernel_mod, "_unpacked", no_build)
    monkeypatch.setattr(build_mod, "_build_into", no_build)
    started = time.monotonic()
    again = build(recipe, cache=cache)
    assert time.monotonic() - started < 1.0
    assert again.cached and again.path == image.path
    # and an image of another initrd reuses the built kernel (kernels/ is its own cache level)
    monkeypatch.undo()
    other = recipe.with_name("tiny-other.yaml")
    other.write_text(recipe.read_text().replace("name: tiny-kernel", "name: tiny-other"))
    for built in (cache / "images").glob("tiny-other-*"):  # an earlier run's (the cache is kept): a new image
        shutil.rmtree(built)
    proc = run_farm("build", str(other), env={"FARM_CACHE": str(cache)})
    assert proc.returncode == 0, proc.stderr
    assert "kernel 6.1." in proc.stderr and ": cached (" in proc.stderr


def test_two_builds_in_two_places_are_bit_identical(tiny, monkeypatch):
    """Another cache at another path (another source tree and build directory) through a ccache store of its
    own: every object compiled there gives the same bytes as the first cache's. The second store holds only
    what was compiled at the second path (a warm run is seconds; the first run of a machine, as in CI, compiles
    everything), so no object of the first build can stand in for one of the second. With CCACHE_BASEDIR set
    (farm's kernel builder 1) the BUG tables named ../../kernel-src/... and a build through ccache differed
    from one without: the build passes make no CCACHE_BASEDIR and ccache no base_dir (checked here too)."""
    recipe, cache, image, _ = tiny
    second = default_cache() / "test-tiny-kernel-b"
    shutil.rmtree(second, ignore_errors=True)
    _cache(second)
    _share_source(second)
    store = default_cache() / "test-tiny-kernel-b.ccache"
    monkeypatch.setenv("CCACHE_DIR", str(store))
    monkeypatch.setenv("CCACHE_BASEDIR", "/")  # a user's setting the builder must not pass on
    seen: list[dict] = []
    real_popen = subprocess.Popen

    def popen(argv, *args, **kwargs):
        if argv and argv[0] == "make":
            seen.append(kwargs.get("env") or {})
        return real_popen(argv, *args, **kwargs)

    monkeypatch.setattr(kernel_mod.subprocess, "Popen", popen)
    again = build(recipe, cache=second)
    assert seen and not [env for env in seen if "CCACHE_BASEDIR" in env]
    # and ccache, as make's environment configures it (its ccache.conf files too), rewrites no path
    base_dir = subprocess.run(["ccache", "--get-config", "base_dir"], capture_output=True, text=True, env=seen[-1])
    assert base_dir.returncode == 0 and base_dir.stdout.strip() == "", base_dir
    assert not again.cached and again.path != image.path  # compiled here and now, every run
    assert again.manifest["artifacts"] == image.manifest["artifacts"], (
        "the kernel built now differs from the first cache's" + (
            " (served from an earlier run: a builder change that changes the kernel needs a new"
            " KERNEL_BUILDER_VERSION, farm/images/kernel.py)" if image.cached else ""))
    assert again.manifest["kernel_source"] == image.manifest["kernel_source"]


def test_a_fragment_value_that_does_not_stick_is_a_job_error_naming_its_line(tiny, tmp_path):
    recipe, cache, _, _ = tiny
    (tmp_path / "tiny.config").write_text(FRAGMENT + "CONFIG_FEC=y\n")  # needs NET and an ARM (i.MX) platform
    bad = tmp_path / "tiny-kernel.yaml"
    bad.write_text(recipe.read_text())
    proc = run_farm("build", str(bad), env={"FARM_CACHE": str(cache)})
    assert proc.returncode == 2, proc.stderr
    line = FRAGMENT.count("\n") + 1  # the added line, after the fragment's own
    assert f"{tmp_path / 'tiny.config'}:{line}: CONFIG_FEC=y was asked for, the merged config has it not set" in proc.stderr
    assert "Traceback" not in proc.stderr
