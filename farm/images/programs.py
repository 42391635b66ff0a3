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
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import attrs

from ..errors import JobError
from .cachefs import tool_fingerprint


@attrs.frozen
class Toolchain:
    """The C compiler for one target architecture on one host architecture, and the Debian packages that
    bring it and its target's C library headers (gcc only *recommends* those, and setup installs without
    recommends, so a compiler without them is a real state)."""

    compiler: str
    packages: tuple[str, ...]
    libc_header: str  # a header of the target's libc6-dev: missing means the compiler cannot build anything


TOOLCHAINS = {  # (target arch, host machine) -> toolchain; scripts/setup.sh installs the packages
    ("amd64", "x86_64"): Toolchain("x86_64-linux-gnu-gcc", ("gcc", "libc6-dev"),
                                   "/usr/include/x86_64-linux-gnu/bits/wordsize.h"),
    ("arm64", "x86_64"): Toolchain("aarch64-linux-gnu-gcc", ("gcc-aarch64-linux-gnu", "libc6-dev-arm64-cross"),
                                   "/usr/aarch64-linux-gnu/include/bits/wordsize.h"),
    ("arm64", "aarch64"): Toolchain("aarch64-linux-gnu-gcc", ("gcc", "libc6-dev"),
                                    "/usr/include/aarch64-linux-gnu/bits/wordsize.h"),
    ("amd64", "aarch64"): Toolchain("x86_64-linux-gnu-gcc", ("gcc-x86-64-linux-gnu", "libc6-dev-amd64-cross"),
                                    "/usr/x86_64-linux-gnu/include/bits/wordsize.h"),
}

CFLAGS = ("-O2", "-g0", "-s", "-Wall", "-Wl,--build-id=none")


@attrs.frozen
class Program:
    name: str  # installed as /usr/bin/<name>
    source: Path
    packages: tuple[str, ...]  # Debian -dev packages for the target architecture
    libs: tuple[str, ...]  # -l names

    def fingerprint(self) -> dict:
        """What the binary depends on, for the image's cache key: the main source *and* every local file
        it includes (a changed header must rebuild), the packages, libraries and flags."""
        fp: dict = {"name": self.name, "source_sha256": hashlib.sha256(self.source.read_bytes()).hexdigest(),
                    "packages": list(self.packages), "libs": list(self.libs), "cflags": list(CFLAGS)}
        includes = local_includes(self.source)
        if includes:  # absent when there are none, so the keys of images built before this stay valid
            fp["includes"] = {os.path.relpath(path, self.source.parent): hashlib.sha256(path.read_bytes()).hexdigest()
                              for path in includes}
        return fp


_QUOTED_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.MULTILINE)


def local_includes(source: Path) -> list[Path]:
    """The local files ``source`` includes with ``#include "..."``, recursively, as the compiler finds them:
    relative to the including file's directory, then to the main source's. Names found in neither come from
    the sysroot (the -dev packages, keyed by their versions). Sorted, without ``source`` itself."""
    roots = (source.parent,)
    seen: dict[Path, None] = {}
    queue = [source]
    while queue:
        current = queue.pop()
        for match in _QUOTED_INCLUDE.finditer(current.read_bytes()):
            name = match.group(1).decode(errors="surrogateescape")
            for base in (current.parent, *roots):
                candidate = Path(os.path.normpath(base / name))
                if candidate.is_file():
                    if candidate != source and candidate not in seen:
                        seen[candidate] = None
                        queue.append(candidate)
                    break
    return sorted(seen)


def toolchain(arch: str, machine: str | None = None) -> Toolchain:
    machine = machine or os.uname().machine
    try:
        return TOOLCHAINS[(arch, machine)]
    except KeyError:
        raise JobError(f"no C toolchain known for {arch} targets on a {machine} host") from None


def compiler(arch: str) -> str:
    """The compiler's path, checked to have its C library headers; the error names the Debian packages."""
    chain = toolchain(arch)
    found = shutil.which(chain.compiler)
    if found is None or not os.path.exists(chain.libc_header):
        what = f"no C compiler for {arch} ({chain.compiler})" if found is None else \
            f"the {arch} C compiler has no C library headers ({chain.libc_header} is missing)"
        raise JobError(f"{what}: Debian packages {' and '.join(chain.packages)} bring it; "
                       f"`make setup` installs them")
    return found


def compiler_fingerprint(arch: str) -> str:
    """Changes when the compiler package is upgraded (path, size, mtime: no need to run it)."""
    return tool_fingerprint(compiler(arch))


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
        # Debian's multiarch headers (opensslconf.h, configuration.h of libssl-dev) are in usr/include/<triplet>
        includes = [f"-I{root / 'usr' / 'include'}"] + [f"-I{d}" for d in (root / "usr" / "include" / triplet,) if d.is_dir()]
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
