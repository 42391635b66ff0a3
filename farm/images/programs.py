"""Benchmark programs of our own (C sources under ``images/src/``), built for the target's architecture.

A program is compiled with the cross compiler of the architecture (``aarch64-linux-gnu-gcc`` for
arm64) against the headers and libraries of Debian ``-dev`` packages *for that architecture*,
extracted into farm's package cache like the initrd's packages (no ``apt-get install`` of foreign
``-dev`` packages, which would conflict with the host's). The binary goes into the initrd, and its
shared libraries follow it there through the ELF closure like any other program's.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import attrs

from ..errors import JobError

COMPILERS = {"arm64": "aarch64-linux-gnu-gcc", "amd64": "x86_64-linux-gnu-gcc"}
CFLAGS = ("-O2", "-g0", "-s", "-Wall", "-Wl,--build-id=none")


@attrs.frozen
class Program:
    name: str  # installed as /usr/bin/<name>
    source: Path
    packages: tuple[str, ...]  # Debian -dev packages for the target architecture
    libs: tuple[str, ...]  # -l names

    def fingerprint(self) -> dict:
        return {"name": self.name, "source_sha256": hashlib.sha256(self.source.read_bytes()).hexdigest(),
                "packages": list(self.packages), "libs": list(self.libs), "cflags": list(CFLAGS)}


def compiler(arch: str) -> str:
    found = shutil.which(COMPILERS[arch])
    if found is None and arch == "amd64" and os.uname().machine == "x86_64":
        found = shutil.which("gcc")
    if found is None:
        raise JobError(f"no C compiler for {arch} ({COMPILERS[arch]}): `make setup` installs it")
    return found


def compiler_fingerprint(arch: str) -> str:
    """Changes when the compiler package is upgraded (path, size, mtime: no need to run it)."""
    path = Path(os.path.realpath(compiler(arch)))
    st = path.stat()
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


def merge_trees(trees: list[Path], into: Path) -> None:
    """One sysroot from several extracted packages: ``libfoo.so`` of a -dev package is a relative
    symlink to ``libfoo.so.N`` of the runtime package, so they must sit in one tree for the linker."""
    for tree in trees:
        for dirpath, _dirnames, filenames in os.walk(tree):
            rel = Path(dirpath).relative_to(tree)
            if rel.parts[:1] not in (("usr",), ("lib",)):
                continue
            (into / rel).mkdir(parents=True, exist_ok=True)
            for name in filenames:
                src, dst = Path(dirpath, name), into / rel / name
                if dst.exists() or dst.is_symlink():
                    continue
                os.symlink(os.readlink(src) if src.is_symlink() else src, dst)


def build_program(program: Program, arch: str, trees: list[Path], triplet: str) -> bytes:
    """Compile ``program`` for ``arch``; returns the stripped binary. Errors name the source file."""
    with tempfile.TemporaryDirectory(prefix="farm-cc-") as tmp:
        root = Path(tmp) / "sysroot"
        merge_trees(trees, root)
        includes = [f"-I{root / 'usr' / 'include'}"]
        libdirs = []
        for d in (root / "usr" / "lib" / triplet, root / "lib" / triplet):
            if d.is_dir():
                libdirs += [f"-L{d}", f"-Wl,-rpath-link,{d}"]
        out = Path(tmp) / program.name
        # -ffile-prefix-map keeps build paths out of the binary: the same source gives the same bytes
        argv = [compiler(arch), *CFLAGS, f"-ffile-prefix-map={program.source.parent}=.", *includes,
                "-o", str(out), str(program.source), *libdirs, *[f"-l{lib}" for lib in program.libs]]
        proc = subprocess.run(argv, capture_output=True, text=True)
        if proc.returncode != 0:
            first = next((line for line in proc.stderr.splitlines() if "error" in line), proc.stderr.strip()[:300])
            raise JobError(f"{program.source}: does not compile for {arch}: {first}")
        return out.read_bytes()
