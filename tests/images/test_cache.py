"""The image cache under hostile and careless use: damaged entries, exports, corrupt metadata, concurrent and
killed builds, stale programs. Each test has a cache of its own (FARM_CACHE in tmp_path), seeded only with
copies of the downloaded .debs, so the real extraction and build run and ~/.cache/farm is never touched."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from farm.images import debian
from farm.images.build import VERIFIED, build, default_cache, read_initrd, verify_cached
from farm.images.cpio import read_newc

from ..conftest import ROOT, run_farm

TINY = ("name: tiny\narch: arm64\nkernel:\n  package: linux-image-arm64\n  modules: [virtio_net]\n"
        "initrd:\n  packages: [busybox-static]\n  files: [/bin/busybox]\n")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _seed_debs(cache: Path) -> None:
    """Copies (never links) of the arm64 .debs the session's cache downloaded: no network, no shared inode."""
    (cache / "debs").mkdir(parents=True)
    for deb in sorted((default_cache() / "debs").glob("*_arm64.deb")):
        shutil.copyfile(deb, cache / "debs" / deb.name)


@pytest.fixture(scope="module")
def base_cache(tmp_path_factory, maaxboard_image) -> Path:
    """A cache in which the tiny recipe was built once (maaxboard_image made sure the .debs are there)."""
    cache = tmp_path_factory.mktemp("base") / "cache"
    _seed_debs(cache)
    recipe = cache.parent / "tiny.yaml"
    recipe.write_text(TINY)
    build(recipe, cache=cache)
    return cache


@pytest.fixture
def tiny(tmp_path, base_cache) -> tuple[Path, Path]:
    """(recipe, cache): a cache of this test's own holding the built tiny image; the extracted packages are
    the base cache's (symlinked: read-only use), resolved/ and images/ are copies this test may damage."""
    cache = tmp_path / "cache"
    cache.mkdir()
    for shared in ("debs", "pkgs"):
        os.symlink(base_cache / shared, cache / shared)
    for private in ("resolved", "images"):
        shutil.copytree(base_cache / private, cache / private, ignore=shutil.ignore_patterns(".*.lock"))
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(TINY)
    return recipe, cache


def _farm_build(recipe: Path, cache: Path, *args: str) -> subprocess.CompletedProcess:
    return run_farm("build", str(recipe), *args, env={"FARM_CACHE": str(cache)})


def _image_dir(cache: Path) -> Path:
    (image_dir,) = [p for p in (cache / "images").iterdir() if not p.name.startswith(".")]
    return image_dir


def _snapshot(cache: Path) -> dict[str, str]:
    return {str(p.relative_to(cache)): _sha(p) for p in sorted((cache / "images").rglob("*"))
            if p.is_file() and not p.name.startswith(".")}


def _assert_matches_manifest(image_dir: Path) -> None:
    manifest = json.loads((image_dir / "manifest.json").read_text())
    for name, info in manifest["artifacts"].items():
        assert (image_dir / name).stat().st_size == info["size"]
        assert _sha(image_dir / name) == info["sha256"]


def test_cached_image_is_served_after_a_stat_check_only(tiny, monkeypatch):
    recipe, cache = tiny
    build(recipe, cache=cache)  # records the fingerprints of this copy's files

    def no_hash(path):
        raise AssertionError(f"{path} rehashed though its stat fingerprint did not change")

    monkeypatch.setattr(debian, "sha256_file", no_hash)
    assert build(recipe, cache=cache).cached


def test_truncated_initrd_is_rebuilt_not_served_as_cached(tiny):
    recipe, cache = tiny
    image_dir = _image_dir(cache)
    initrd = image_dir / "initrd.cpio.gz"
    size = initrd.stat().st_size
    with open(initrd, "r+b") as f:
        f.truncate(size // 2)
    proc = _farm_build(recipe, cache)
    assert proc.returncode == 0, proc.stderr
    assert f"farm: cached image {image_dir} is damaged (initrd.cpio.gz has {size // 2} bytes, " \
           f"the manifest says {size}): rebuilding it" in proc.stderr
    assert "\nbuilt tiny" in "\n" + proc.stderr and "cached tiny" not in proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == str(image_dir)
    _assert_matches_manifest(image_dir)
    assert read_newc(read_initrd(initrd))


@pytest.mark.parametrize("keep_mtime", [False, True], ids=["edited", "edited-mtime-restored"])
def test_kernel_edited_in_place_is_rebuilt(tiny, keep_mtime):
    """Same size: only the sha256 tells, and the changed fingerprint (mtime, or ctime that no user can
    set back) is what makes farm hash again."""
    recipe, cache = tiny
    build(recipe, cache=cache)
    kernel = _image_dir(cache) / "Image"
    before = kernel.stat()
    with open(kernel, "r+b") as f:
        f.seek(4096)
        f.write(b"\xde\xad\xbe\xef")
    if keep_mtime:
        os.utime(kernel, ns=(before.st_atime_ns, before.st_mtime_ns))
    proc = _farm_build(recipe, cache)
    assert proc.returncode == 0, proc.stderr
    assert "(Image does not match its sha256 in the manifest): rebuilding it" in proc.stderr
    _assert_matches_manifest(_image_dir(cache))


@pytest.mark.parametrize("damage", [
    pytest.param(lambda d: (d / "manifest.json").write_text('{"kernel": '), id="manifest-truncated"),
    pytest.param(lambda d: (d / "manifest.json").write_bytes(b"\xff\xfe garbage"), id="manifest-not-utf8"),
    pytest.param(lambda d: (d / "manifest.json").write_text("[]"), id="manifest-not-object"),
    pytest.param(lambda d: (d / "manifest.json").write_text(
        (d / "manifest.json").read_text().replace('"initrd.cpio.gz": {', '"../../../etc/passwd": {')),
        id="manifest-path-artifact"),
    pytest.param(lambda d: (d / "initrd.cpio.gz").unlink(), id="initrd-missing"),
])
def test_damaged_entry_metadata_is_rebuilt_without_traceback(tiny, damage):
    recipe, cache = tiny
    damage(_image_dir(cache))
    proc = _farm_build(recipe, cache)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "is damaged (" in proc.stderr and "rebuilding it" in proc.stderr
    _assert_matches_manifest(_image_dir(cache))


@pytest.mark.parametrize("content", [b'{"kernel": ', b"\xff\xfe\x00", b"[]",
                                     b'{"kernel": {"name": 1}, "packages": []}'],
                         ids=["truncated", "not-utf8", "not-object", "bad-fields"])
def test_corrupt_verified_record_is_discarded_and_files_hashed_again(tiny, content):
    recipe, cache = tiny
    (_image_dir(cache) / VERIFIED).write_bytes(content)
    proc = _farm_build(recipe, cache)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{_image_dir(cache) / VERIFIED}: corrupt cache file, discarded" in proc.stderr
    assert "cached tiny" in proc.stderr


@pytest.mark.parametrize("content", [  # each resolves again through apt (~5 s): three shapes of damage
    b'{"kernel": ', b"\xff\xfe\x00",
    b'{"kernel": {"name": "../../../x", "version": "1", "arch": "arm64", "sha256": ""}, "packages": []}',
], ids=["truncated", "not-utf8", "path-in-name"])
def test_corrupt_resolved_json_is_resolved_again(tiny, content):
    recipe, cache = tiny
    (resolved,) = (cache / "resolved").glob("*.json")
    good = resolved.read_text()
    resolved.write_bytes(content)
    proc = _farm_build(recipe, cache)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"farm: {resolved}: corrupt cache file (" in proc.stderr
    assert "discarded; resolving the recipe again" in proc.stderr
    assert "cached tiny" in proc.stderr
    assert resolved.read_text() == good
    assert not list(cache.rglob("x"))


def test_exported_files_are_copies_and_editing_them_leaves_the_cache_alone(tiny, tmp_path):
    recipe, cache = tiny
    out = tmp_path / "exported"
    proc = _farm_build(recipe, cache, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    image_dir = _image_dir(cache)
    for name in ("Image", "initrd.cpio.gz", "manifest.json"):
        assert (out / name).read_bytes() == (image_dir / name).read_bytes()
        assert (out / name).stat().st_ino != (image_dir / name).stat().st_ino
        assert (image_dir / name).stat().st_nlink == 1
    with open(out / "initrd.cpio.gz", "r+b") as f:
        f.truncate(100)
    again = _farm_build(recipe, cache)
    assert again.returncode == 0 and "cached tiny" in again.stderr, again.stderr
    _assert_matches_manifest(image_dir)


def test_out_over_an_old_hard_link_into_the_cache_does_not_write_through(tiny, tmp_path):
    """An --out directory exported by an older farm holds hard links into the cache: exporting again
    replaces them by rename, it never opens them for writing."""
    recipe, cache = tiny
    image_dir = _image_dir(cache)
    out = tmp_path / "old-export"
    out.mkdir()
    os.link(image_dir / "manifest.json", out / "manifest.json")
    before = _snapshot(cache)
    proc = _farm_build(recipe, cache, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert _snapshot(cache) == before
    assert (out / "manifest.json").stat().st_ino != (image_dir / "manifest.json").stat().st_ino


@pytest.mark.parametrize("where", ["printed-image-dir", "cache-root", "symlink-to-image-dir", "new-dir-in-cache"])
def test_out_inside_the_cache_is_refused_and_deletes_nothing(tiny, tmp_path, where):
    recipe, cache = tiny
    printed = _farm_build(recipe, cache).stdout.strip().splitlines()[-1]
    out = {"printed-image-dir": printed, "cache-root": str(cache),
           "new-dir-in-cache": str(cache / "images" / "mine")}.get(where)
    if where == "symlink-to-image-dir":
        os.symlink(printed, tmp_path / "link")
        out = str(tmp_path / "link")
    before = _snapshot(cache)
    proc = _farm_build(recipe, cache, "--out", out)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"farm: job error: --out {out}: is inside farm's cache {cache}, whose images are served to every "
        "later build; choose a directory outside it (the printed image directory can be used as it is)"]
    assert _snapshot(cache) == before
    assert not (cache / "images" / "mine").exists()
    again = _farm_build(recipe, cache)
    assert again.returncode == 0 and "cached tiny" in again.stderr, again.stderr


def test_concurrent_first_builds_on_an_empty_cache_all_succeed(tmp_path, maaxboard_image):
    """Three `farm build` at once on a cache holding only the .debs: they share the extraction of each
    package (one extracts, the others wait on its lock) and the image (one builds, the others serve it)."""
    cache = tmp_path / "cache"
    _seed_debs(cache)
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(TINY)
    env = {**os.environ, "FARM_CACHE": str(cache)}
    procs = [subprocess.Popen([sys.executable, "-m", "farm.cli", "build", str(recipe)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    for rc, out, err in results:
        assert rc == 0, err
        assert "Traceback" not in err
    dirs = {out.strip().splitlines()[-1] for _, out, _ in results}
    assert len(dirs) == 1
    states = sorted(err.strip().splitlines()[-1].split()[0] for _, _, err in results)  # after a build's progress
    assert states == ["built", "cached", "cached"], states
    assert verify_cached(Path(dirs.pop()), json.loads((_image_dir(cache) / "manifest.json").read_text())["key"]) is None
    leftovers = [p.name for d in ("images", "pkgs", "debs") for p in (cache / d).iterdir()
                 if p.name.startswith((".build-", ".extract-", ".trash-", ".download-"))]
    assert leftovers == []


def _kill_inside_build_dir(recipe: Path, cache: Path) -> list[Path]:
    """Start a build, SIGKILL it once its .build-* directory exists; the directories seen (none if the
    build finished first)."""
    shutil.rmtree(cache / "images", ignore_errors=True)  # packages stay extracted: .build-* comes quickly
    env = {**os.environ, "FARM_CACHE": str(cache)}
    proc = subprocess.Popen([sys.executable, "-m", "farm.cli", "build", str(recipe)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    seen: list[Path] = []
    while not seen and proc.poll() is None and time.monotonic() < deadline:
        if (cache / "images").is_dir():
            seen = [p for p in (cache / "images").glob(".build-*") if p.is_dir()]
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return seen


def test_sigkilled_build_leaves_a_dir_the_next_build_removes(tiny):
    recipe, cache = tiny
    for _attempt in range(3):  # the window is a fraction of a second: a loaded machine may miss it
        build_dirs = _kill_inside_build_dir(recipe, cache)
        if build_dirs:
            break
    assert build_dirs, "the build finished before its .build-* directory was seen, three times"
    assert build_dirs[0].is_dir()  # left behind by the killed build
    again = _farm_build(recipe, cache)
    assert again.returncode == 0, again.stderr
    assert f"farm: removed {build_dirs[0]}, left by a build that was killed" in again.stderr
    assert [p.name for p in (cache / "images").iterdir() if p.name.startswith(".build-")] == []


def test_a_changed_local_header_rebuilds_the_program(tmp_path, base_cache):
    """The cache key hashes every file a program includes with #include "...", not only its .c."""
    cache = tmp_path / "cache"
    cache.mkdir()
    for shared in ("debs", "pkgs"):
        os.symlink(base_cache / shared, cache / shared)
    src = tmp_path / "src"
    (src / "inc").mkdir(parents=True)
    (src / "hello.c").write_text('#include <stdio.h>\n#include "inc/msg.h"\n'
                                 'int main(void) { puts(MESSAGE); return 0; }\n')
    (src / "inc" / "msg.h").write_text('#include "text.h"\n#define MESSAGE TEXT\n')
    (src / "inc" / "text.h").write_text('#define TEXT "farm-first-text"\n')
    recipe = tmp_path / "hello.yaml"
    recipe.write_text(TINY.replace("name: tiny", "name: hello").replace("[busybox-static]", "[busybox-static, libc6]")
                      + "programs:\n  - {name: hello, source: src/hello.c}\n")
    first = build(recipe, cache=cache)
    assert b"farm-first-text" in read_initrd(first.initrd)
    (src / "inc" / "text.h").write_text('#define TEXT "farm-second-text"\n')
    second = build(recipe, cache=cache)
    assert not second.cached and second.path != first.path
    assert b"farm-second-text" in read_initrd(second.initrd)


def test_a_zstd_initrd_holds_the_same_cpio_and_is_reproducible(tmp_path, base_cache):
    """initrd.compress: zstd gives initrd.cpio.zst with the very cpio of the gzip build, the same bytes in
    another cache, and a new cache key (the gzip image stays where it was)."""
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(TINY)
    gz = build(recipe, cache=base_cache)
    recipe.write_text(TINY.replace("initrd:\n", "initrd:\n  compress: zstd\n"))
    images = []
    for name in ("one", "two"):
        cache = tmp_path / name
        cache.mkdir()
        for shared in ("debs", "pkgs"):
            os.symlink(base_cache / shared, cache / shared)
        images.append(build(recipe, cache=cache))
    zst = images[0]
    assert zst.initrd.name == "initrd.cpio.zst" and zst.manifest["initrd"] == "initrd.cpio.zst"
    assert zst.manifest["initrd_compression"] == "zstd" and zst.initrd.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
    assert read_initrd(zst.initrd) == read_initrd(gz.initrd)
    assert images[1].manifest["artifacts"] == zst.manifest["artifacts"]
    assert zst.manifest["key"] != gz.manifest["key"]
    assert zst.initrd.stat().st_size < gz.initrd.stat().st_size


def test_a_zstd_initrd_without_zstd_names_the_field(tmp_path, base_cache, monkeypatch):
    from farm.images import build as build_mod
    from farm.errors import JobError

    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(TINY.replace("initrd:\n", "initrd:\n  compress: zstd\n"))
    cache = tmp_path / "cache"
    cache.mkdir()
    for shared in ("debs", "pkgs"):
        os.symlink(base_cache / shared, cache / shared)
    real_which = shutil.which
    monkeypatch.setattr(build_mod.shutil, "which", lambda name, *a, **k: None if name == "zstd" else real_which(name, *a, **k))
    with pytest.raises(JobError) as info:
        build(recipe, cache=cache)
    assert str(info.value) == (f"{recipe}:7: initrd.compress: zstd needs the zstd program (Debian package zstd; "
                               "make setup installs it)")
    assert not list((cache / "images").glob("tiny-*"))
