"""The C toolchains for target programs: found on this machine after setup, and named by package when not."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import attrs
import pytest

from farm.errors import JobError
from farm.images import programs
from farm.virtual.lab import REQUIRED

SETUP = Path(__file__).resolve().parents[2] / "scripts" / "setup.sh"


def _setup_packages() -> set[str]:
    """Every word of setup.sh's package lists (APT_PACKAGES and the per-architecture compilers)."""
    text = SETUP.read_text()
    words: set[str] = set()
    for block in re.findall(r"APT_PACKAGES\+?=\(([^)]*)\)", text):
        for line in block.splitlines():
            words.update(line.split("#", 1)[0].split())
    return words


@pytest.mark.parametrize("arch", ["arm64", "amd64"])
def test_setup_gives_a_working_compiler_for_every_target(arch, tmp_path):
    """What `make setup` installed compiles and links a C program for each target architecture."""
    source = tmp_path / "hello.c"
    source.write_text("#include <errno.h>\n#include <stdio.h>\nint main(void) { return errno; }\n")
    out = tmp_path / "hello"
    proc = subprocess.run([programs.compiler(arch), "-o", str(out), str(source)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    machine = {"arm64": b"\xb7\x00", "amd64": b"\x3e\x00"}[arch]  # e_machine: EM_AARCH64, EM_X86_64
    assert out.read_bytes()[18:20] == machine


def test_setup_installs_every_toolchain_package_for_this_host():
    wanted = {pkg for (arch, machine), chain in programs.TOOLCHAINS.items() if machine == os.uname().machine
              for pkg in chain.packages}
    assert wanted and wanted <= _setup_packages()


def test_setup_installs_what_the_virtual_lab_checks_for():
    assert set(REQUIRED.values()) <= _setup_packages()


def test_missing_libc_headers_name_the_packages(monkeypatch):
    """gcc without libc6-dev (a Recommends, skipped by --no-install-recommends) is told apart and named."""
    key = ("arm64", os.uname().machine)
    chain = attrs.evolve(programs.TOOLCHAINS[key], libc_header="/nonexistent/bits/wordsize.h")
    monkeypatch.setitem(programs.TOOLCHAINS, key, chain)
    with pytest.raises(JobError) as err:
        programs.compiler("arm64")
    message = str(err.value)
    assert "no C library headers (/nonexistent/bits/wordsize.h is missing)" in message
    assert " and ".join(chain.packages) in message and "make setup" in message


def test_missing_compiler_names_the_packages(monkeypatch):
    key = ("amd64", os.uname().machine)
    chain = attrs.evolve(programs.TOOLCHAINS[key], compiler="no-such-gcc")
    monkeypatch.setitem(programs.TOOLCHAINS, key, chain)
    with pytest.raises(JobError, match=r"no C compiler for amd64 \(no-such-gcc\): Debian packages .+ bring it"):
        programs.compiler("amd64")


def test_unknown_host_is_a_job_error():
    with pytest.raises(JobError, match="no C toolchain known for arm64 targets on a riscv64 host"):
        programs.toolchain("arm64", "riscv64")
