"""farm.images.elf on real binaries of this machine (and arm64 ones from the package cache), against readelf."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from farm.images.elf import ElfDeps, elf_deps, is_elf

CACHE = Path(os.path.expanduser("~/.cache/farm/pkgs"))


def _first(*patterns: str) -> str | None:
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            if os.path.isfile(path):
                return os.path.realpath(path)
    return None


LS = _first("/bin/ls", "/usr/bin/ls")
LIBC = _first("/lib/x86_64-linux-gnu/libc.so.6", "/lib/*-linux-gnu*/libc.so.6", "/usr/lib/*-linux-gnu*/libc.so.6")
LIBM = _first("/lib/x86_64-linux-gnu/libm.so.6", "/lib/*-linux-gnu*/libm.so.6", "/usr/lib/*-linux-gnu*/libm.so.6")


def _host(path: str | None) -> str:
    if path is None:
        pytest.skip("no such file on this machine")
    return path


def _readelf() -> str:
    path = shutil.which("readelf")
    if path is None:
        pytest.skip("readelf (binutils) is not installed")
    return path


def readelf_deps(path: str) -> ElfDeps:
    """What GNU readelf says: the PT_INTERP request (readelf -l) and the NEEDED entries (readelf -d)."""
    readelf = _readelf()
    env = {**os.environ, "LC_ALL": "C"}
    segments = subprocess.run([readelf, "-W", "-l", path], capture_output=True, text=True, check=True, env=env).stdout
    dynamic = subprocess.run([readelf, "-W", "-d", path], capture_output=True, text=True, check=True, env=env).stdout
    interp = re.findall(r"\[Requesting program interpreter: (.+)\]", segments)
    assert len(interp) <= 1
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]", dynamic)
    return ElfDeps(interp[0] if interp else None, tuple(needed))


def test_ls_matches_readelf():
    path = _host(LS)
    deps = elf_deps(Path(path).read_bytes())
    assert deps == readelf_deps(path)
    assert deps.interpreter is not None and deps.interpreter.startswith("/lib")
    assert "libc.so.6" in deps.needed


def test_ls_on_debian_amd64_exactly():
    if LS is None or not os.path.exists("/lib64/ld-linux-x86-64.so.2"):
        pytest.skip("not an x86-64 glibc machine")
    deps = elf_deps(Path(LS).read_bytes())
    assert deps.interpreter == "/lib64/ld-linux-x86-64.so.2"
    assert deps.needed[-1] == "libc.so.6"  # coreutils' ls: [libselinux.so.1, libc.so.6] on Debian 12


def test_libc_matches_readelf():
    # glibc's libc.so.6 is a shared library that can also be run: it has PT_INTERP too
    path = _host(LIBC)
    deps = elf_deps(Path(path).read_bytes())
    assert deps == readelf_deps(path)
    assert deps.needed and deps.needed[0].startswith("ld-linux")


def test_library_without_interpreter():
    path = _host(LIBM)
    deps = elf_deps(Path(path).read_bytes())
    assert deps == readelf_deps(path)
    assert deps.interpreter is None
    assert "libc.so.6" in deps.needed


def test_static_busybox_has_no_dependencies():
    path = _host(_first("/bin/busybox", "/usr/bin/busybox"))
    data = Path(path).read_bytes()
    if b"ld-linux" in data[:4096]:
        pytest.skip("this busybox is dynamically linked")
    assert elf_deps(data) == ElfDeps(None, ())
    assert readelf_deps(path) == ElfDeps(None, ())


def test_python_interpreter_matches_readelf():
    path = os.path.realpath(sys.executable)
    assert elf_deps(Path(path).read_bytes()) == readelf_deps(path)


# --- aarch64 binaries from the package cache the image builder fills ---

def _arm64(pattern: str) -> str:
    path = _first(str(CACHE / pattern))
    if path is None:
        pytest.skip(f"no {pattern} under {CACHE} (run a build first)")
    return path


def test_aarch64_iperf3():
    path = _arm64("iperf3_*_arm64/usr/bin/iperf3")
    deps = elf_deps(Path(path).read_bytes())
    assert deps == ElfDeps("/lib/ld-linux-aarch64.so.1", ("libiperf.so.0", "libc.so.6"))
    assert deps == readelf_deps(path)


def test_aarch64_shared_library():
    path = _arm64("libiperf0_*_arm64/usr/lib/aarch64-linux-gnu/libiperf.so.0.0.0")
    deps = elf_deps(Path(path).read_bytes())
    assert deps == ElfDeps(None, ("libcrypto.so.3", "libsctp.so.1", "libc.so.6", "ld-linux-aarch64.so.1"))
    assert deps == readelf_deps(path)


def test_aarch64_static_busybox():
    path = _arm64("busybox-static_*_arm64/bin/busybox")
    assert elf_deps(Path(path).read_bytes()) == ElfDeps(None, ())


# --- not ELF ---

@pytest.mark.parametrize("data", [b"", b"\x7fEL", b"#!/bin/sh\necho hi\n", b"\x1f\x8b\x08\x00", b"ELF\x7f" + b"\0" * 60])
def test_non_elf_raises_value_error(data):
    assert not is_elf(data)
    with pytest.raises(ValueError, match="not an ELF file"):
        elf_deps(data)


def test_real_non_elf_file_raises():
    path = _host(_first("/etc/os-release", "/etc/passwd"))
    with pytest.raises(ValueError, match="not an ELF file"):
        elf_deps(Path(path).read_bytes())


def test_is_elf_on_real_binary():
    assert is_elf(Path(_host(LS)).read_bytes())


def test_truncated_elf_raises_value_error():
    data = Path(_host(LS)).read_bytes()
    for cut in (4, 200):
        with pytest.raises(ValueError):
            elf_deps(data[:cut])
