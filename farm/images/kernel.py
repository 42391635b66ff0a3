"""A Linux kernel built from source for a recipe (``kernel: {source: ..., config: [...], dtbs: [...]}``).

The source is Debian's ``linux-source-6.1`` package (its tarball under /usr/src), a local tarball or a
local tree. The configuration is a make target (``allnoconfig``, ``defconfig``, ...) and the fragments
named in the recipe, merged with the kernel's own ``scripts/kconfig/merge_config.sh`` and resolved by
``make olddefconfig``; a fragment value that does not survive the merge (a missing dependency) is an error
naming the fragment's line. The build is cross-compiled with the architecture's compiler through ccache
(its depend mode: no preprocessor run of its own on a miss), reproducibly (``KBUILD_BUILD_TIMESTAMP`` from
the source, fixed user, host and build number, no absolute build paths), so two builds give the same bytes.

The result is content-addressed in farm's cache under ``kernels/<arch>-<key>/``, laid out like a Debian
kernel package (``boot/vmlinuz-<release>``, ``lib/modules/<release>/`` when there are modules,
``boot/dtbs/<release>/<dtb>``) so the image build takes it as it takes a package. The key hashes the
source (version + sha256), the config's inputs, the compiler and this builder, so an unchanged recipe is
served in milliseconds. The unpacked source and the build directory stay in the cache (``kernel-src/``,
``kernel-build/``) and ccache keeps the objects, so a changed config recompiles only what it must.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Callable, Iterable, Iterator

import attrs

from ..errors import JobError
from . import cachefs
from .programs import compiler

# 2: no CCACHE_BASEDIR (its relative paths defeated the kernel's -fmacro-prefix-map: __FILE__ strings held
# ../../kernel-src/..., so a build through ccache differed from one without it)
KERNEL_BUILDER_VERSION = "2"
KERNEL_ARCH = {"arm64": "arm64", "amd64": "x86_64"}  # farm's arch -> the kernel's ARCH=
IMAGE_TARGET = {"arm64": ("Image", "arch/arm64/boot/Image"), "amd64": ("bzImage", "arch/x86/boot/bzImage")}
BUILD_USER = BUILD_HOST = "farm"
PROGRESS_EVERY_S = 10.0
LOG_TAIL_LINES = 25
_BASE_TARGET = re.compile(r"[a-z0-9][a-z0-9_-]*config")
_DTB = re.compile(r"([a-z0-9][a-z0-9_-]*/)?[A-Za-z0-9][A-Za-z0-9_.,+-]*\.dtb")
_SYMBOL_SET = re.compile(r"(CONFIG_[A-Za-z0-9_]+)=(.*)")
_SYMBOL_UNSET = re.compile(r"# (CONFIG_[A-Za-z0-9_]+) is not set")


@attrs.frozen
class HostTool:
    """A program or header the kernel build needs on the host, and the Debian package that brings it."""

    what: str  # a program on $PATH, or an absolute header path
    package: str

    def present(self) -> bool:
        return os.path.exists(self.what) if self.what.startswith("/") else shutil.which(self.what) is not None


HOST_TOOLS = (  # scripts/setup.sh installs these packages
    HostTool("make", "make"), HostTool("bc", "bc"), HostTool("bison", "bison"), HostTool("flex", "flex"),
    HostTool("ccache", "ccache"), HostTool("xz", "xz-utils"), HostTool("tar", "tar"), HostTool("perl", "perl-base"),
    HostTool("depmod", "kmod"), HostTool("/usr/include/libelf.h", "libelf-dev"),
    HostTool("/usr/include/openssl/opensslv.h", "libssl-dev"),
)


def missing_host_tools(tools: Iterable[HostTool] | None = None) -> list[HostTool]:
    return [tool for tool in (HOST_TOOLS if tools is None else tools) if not tool.present()]


def check_host_tools() -> None:
    missing = missing_host_tools()
    if missing:
        raise JobError("building a kernel from source needs " + ", ".join(t.what for t in missing)
                       + ": Debian packages " + " ".join(sorted({t.package for t in missing}))
                       + " bring them; `make setup` installs them")


@attrs.frozen
class KernelSource:
    """The ``kernel.source`` part of a recipe (paths already made absolute, fragments checked to exist)."""

    kind: str  # "package" | "tarball" | "tree"
    location: str  # a Debian package name, or an absolute path
    base: str  # the make target the configuration starts from: allnoconfig, defconfig, tinyconfig, ...
    fragments: tuple[Path, ...]
    dtbs: tuple[str, ...]  # dtb targets under arch/<arch>/boot/dts, e.g. freescale/imx8mq-evk.dtb

    def fingerprint(self) -> dict:
        """What the recipe says, for the image's key (the source's own identity is :func:`source_identity`)."""
        return {"kind": self.kind, "location": self.location, "base": self.base, "dtbs": list(self.dtbs),
                "fragments": [{"name": p.name, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}
                              for p in self.fragments]}


def base_problem(base: str) -> str | None:
    return None if _BASE_TARGET.fullmatch(base) else \
        "the first config item must be a make target ending in 'config' (allnoconfig, tinyconfig, defconfig, ...)"


def dtb_problem(dtb: str) -> str | None:
    return None if _DTB.fullmatch(dtb) else "is not a device tree blob name like freescale/imx8mq-evk.dtb"


# --- configuration fragments (pure) -------------------------------------------------------------------

@attrs.frozen
class Request:
    """One line of a fragment: ``CONFIG_X=value`` or ``# CONFIG_X is not set`` (value ``n``)."""

    symbol: str
    value: str
    where: str  # "file:line"


def parse_fragment(text: str, name: str) -> list[Request]:
    """The requests of a fragment; comments and blank lines are skipped, anything else is an error."""
    requests = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        where = f"{name}:{number}"
        if m := _SYMBOL_UNSET.fullmatch(line):
            requests.append(Request(m.group(1), "n", where))
        elif m := _SYMBOL_SET.fullmatch(line):
            requests.append(Request(m.group(1), m.group(2), where))
        elif line and not line.startswith("#"):
            raise JobError(f"{where}: expected CONFIG_NAME=value or '# CONFIG_NAME is not set', got {line[:80]!r}")
    return requests


def parse_config(text: str) -> dict[str, str]:
    """A .config as {symbol: value}; symbols that are not set are absent."""
    values = {}
    for line in text.splitlines():
        if m := _SYMBOL_SET.fullmatch(line.strip()):
            values[m.group(1)] = m.group(2)
    return values


def unmet_requests(requests: Iterable[Request], final: dict[str, str]) -> list[str]:
    """The requests (the last one of each symbol wins, as in merge_config.sh) the final config does not
    honour, as messages naming the fragment's line."""
    last: dict[str, Request] = {}
    for request in requests:
        last[request.symbol] = request
    problems = []
    for request in last.values():
        got = final.get(request.symbol, "n")
        if got != request.value:
            state = "not set" if got == "n" else f"{request.symbol}={got}"
            asked = "not set" if request.value == "n" else f"{request.symbol}={request.value}"
            problems.append(f"{request.where}: {asked} was asked for, the merged config has it {state} "
                            "(a dependency is missing, or the symbol does not exist for this architecture)")
    return problems


# --- progress of a compile (pure) ---------------------------------------------------------------------

_PHASES = ((re.compile(r"  LD      vmlinux"), "linking vmlinux"),
           (re.compile(r"  OBJCOPY arch/arm64/boot/Image"), "making the boot image"),
           (re.compile(r"  BUILD   arch/x86/boot/bzImage"), "making the boot image"),
           (re.compile(r"  DTC     .*\.dtb"), "compiling device trees"), (re.compile(r"  MODPOST .*"), "linking modules"),
           (re.compile(r"  INSTALL .*\.ko"), "installing modules"))


def phase_of(line: str) -> str | None:
    """The phase of the build a line of make's output starts (None for the lines in between)."""
    line = line.rstrip()
    for pattern, phase in _PHASES:
        if pattern.fullmatch(line):
            return phase
    return None


@attrs.define
class Progress:
    """Turns make's lines into a few progress lines: one per phase and one every ``every`` seconds."""

    say: Callable[[str], None]
    every: float = PROGRESS_EVERY_S
    clock: Callable[[], float] = time.monotonic
    compiled: int = 0
    started: float = attrs.field(init=False)
    last: float = attrs.field(init=False)
    phases: set[str] = attrs.field(factory=set)

    def __attrs_post_init__(self) -> None:
        self.started = self.last = self.clock()

    def line(self, line: str) -> None:
        if line.startswith(("  CC ", "  AS ")):
            self.compiled += 1
        phase = phase_of(line)
        now = self.clock()
        if phase and phase not in self.phases:
            self.phases.add(phase)
            self._say(now, phase)
        elif now - self.last >= self.every:
            self._say(now, "compiling")

    def _say(self, now: float, what: str) -> None:
        self.last = now
        self.say(f"kernel: {what}, {self.compiled} files compiled, {now - self.started:.0f}s")


def build_timestamp(epoch: int) -> str:
    """``KBUILD_BUILD_TIMESTAMP`` in the form of date(1), which the kernel's scripts parse (``date -d``)."""
    return time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(epoch))


def cross_prefix(compiler_path: str) -> str:
    """``/usr/bin/aarch64-linux-gnu-gcc`` -> ``aarch64-linux-gnu-`` (CROSS_COMPILE)."""
    name = os.path.basename(compiler_path)
    if not name.endswith("gcc"):
        raise JobError(f"{compiler_path}: expected a gcc to derive CROSS_COMPILE from")
    return name[: -len("gcc")]


# --- the source ---------------------------------------------------------------------------------------

@attrs.frozen
class SourceIdentity:
    version: str  # the package's version, the tree's git commit (+dirty), or the tarball's name
    sha256: str  # of the tarball, or of the tree's state
    tarball: Path | None  # what to unpack (None: a tree built in place with O=)

    def to_json(self) -> dict:
        return {"version": self.version, "sha256": self.sha256}


def source_identity(source: KernelSource, cache: Path, where: str) -> SourceIdentity:
    if source.kind == "package":
        proc = subprocess.run(["dpkg-query", "-W", "-f", "${Status}\t${Version}", source.location],
                              capture_output=True, text=True)
        status, _, version = proc.stdout.partition("\t")
        tarball = Path("/usr/src") / f"{source.location}.tar.xz"
        if proc.returncode != 0 or "installed" not in status.split() or not tarball.is_file():
            raise JobError(f"{where}: Debian package {source.location} is not installed (it brings {tarball}); "
                           f"`apt-get install {source.location}` or `make setup` installs it")
        return SourceIdentity(f"{source.location} {version}", _hashed(tarball, cache), tarball)
    path = Path(source.location)
    if source.kind == "tarball":
        if not path.is_file():
            raise JobError(f"{where}: {path} is not a file")
        return SourceIdentity(path.name, _hashed(path, cache), path)
    if not (path / "Makefile").is_file() or not (path / "scripts" / "kconfig" / "merge_config.sh").is_file():
        raise JobError(f"{where}: {path} is not a Linux source tree (no Makefile and scripts/kconfig/merge_config.sh)")
    return SourceIdentity(*_tree_state(path), None)


def _hashed(path: Path, cache: Path) -> str:
    """sha256 of a (large) file, remembered by its stat fingerprint so an unchanged tarball is not read again."""
    record_path = cache / "kernel-src" / "hashes.json"
    try:
        record = json.loads(record_path.read_text())
        assert isinstance(record, dict)
    except (OSError, ValueError, AssertionError):
        record = {}
    fingerprint = cachefs.stat_fingerprint(path)
    known = record.get(str(path))
    if isinstance(known, dict) and known.get("stat") == fingerprint and isinstance(known.get("sha256"), str):
        return known["sha256"]
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    record[str(path)] = {"stat": fingerprint, "sha256": digest.hexdigest()}
    try:
        cachefs.atomic_write(record_path, json.dumps(record, sort_keys=True) + "\n")
    except OSError:
        pass
    return digest.hexdigest()


def _tree_state(path: Path) -> tuple[str, str]:
    """A tree's version and a hash of its state: git's HEAD and its uncommitted changes, or else every file's
    path, size and mtime."""
    if (path / ".git").exists():
        head = _git(path, "rev-parse", "HEAD").strip()
        diff = _git(path, "diff", "HEAD", "--binary")
        untracked = _git(path, "ls-files", "--others", "--exclude-standard", "-z")
        state = hashlib.sha256(f"{head}\0{diff}\0{untracked}".encode(errors="surrogateescape")).hexdigest()
        return f"git {head[:12]}{'+dirty' if diff or untracked else ''}", state
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            digest.update(f"{os.path.relpath(full, path)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode(errors="surrogateescape"))
    return f"tree {path.name}", digest.hexdigest()


def _git(path: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, errors="surrogateescape")
    if proc.returncode != 0:
        raise JobError(f"{path}: git {' '.join(args)} failed: {proc.stderr.strip()[:200]}")
    return proc.stdout


def _unpacked(identity: SourceIdentity, cache: Path) -> Path:
    """The tarball unpacked once into the cache (``kernel-src/<sha>/``); returns the tree in it."""
    assert identity.tarball is not None
    root = cache / "kernel-src" / identity.sha256[:16]
    with cachefs.locked(root.with_name(f".{root.name}.lock")):
        for path in cachefs.clean_abandoned(root.parent, ".unpack-"):
            cachefs.say(f"removed {path}, left by an unpack that was killed")
        if not (root / ".farm-complete").exists():
            started = time.monotonic()
            cachefs.say(f"kernel: unpacking {identity.tarball}")
            with cachefs.private_dir(root.parent, ".unpack-") as tmp:
                proc = subprocess.run(["tar", "-xf", str(identity.tarball), "-C", str(tmp)],
                                      capture_output=True, text=True)
                if proc.returncode != 0:
                    raise JobError(f"{identity.tarball}: cannot unpack: {proc.stderr.strip()[:300]}")
                (tmp / ".farm-complete").write_text(identity.sha256 + "\n")
                if root.exists():
                    cachefs.discard(root)
                os.replace(tmp, root)
            cachefs.say(f"kernel: unpacked in {time.monotonic() - started:.1f}s")
    trees = [p for p in sorted(root.iterdir()) if (p / "Makefile").is_file()]
    if (root / "Makefile").is_file():
        return root
    if len(trees) != 1:
        raise JobError(f"{identity.tarball}: expected one Linux source tree in it, found {len(trees)}")
    return trees[0]


def source_epoch(tree: Path, identity: SourceIdentity) -> int:
    """When the source was made, for KBUILD_BUILD_TIMESTAMP: the git commit's time, else the Makefile's mtime
    (tar keeps the tarball's, which Debian sets from its changelog)."""
    if identity.tarball is None and (tree / ".git").exists():
        return int(_git(tree, "log", "-1", "--format=%ct").strip())
    return int((tree / "Makefile").stat().st_mtime)


# --- the build ----------------------------------------------------------------------------------------

@attrs.frozen
class KernelBuild:
    """A kernel in the cache, laid out like a Debian kernel package."""

    tree: Path
    release: str
    info: dict  # kernel.json: source, config sha256, release, build seconds
    cached: bool

    @property
    def vmlinuz(self) -> Path:
        return self.tree / "boot" / f"vmlinuz-{self.release}"

    def dtb(self, name: str) -> Path:
        return self.tree / "boot" / "dtbs" / self.release / name


def toolchain_fingerprint(arch: str) -> dict:
    """The compiler and linker the kernel is built with (path, size, mtime: changes with their packages)."""
    gcc = compiler(arch)
    prefix = cross_prefix(gcc)
    fingerprint = {}
    for tool in ("gcc", "ld", "objcopy"):
        found = shutil.which(prefix + tool)
        if found is None:
            raise JobError(f"no {prefix}{tool} for building the {arch} kernel (binutils of the cross compiler)")
        fingerprint[tool] = cachefs.tool_fingerprint(found)
    return fingerprint


def kernel_key(source: KernelSource, identity: SourceIdentity, arch: str) -> str:
    return hashlib.sha256(json.dumps({
        "builder": KERNEL_BUILDER_VERSION, "arch": arch, "source": identity.to_json(),
        "config": {"base": source.base, "fragments": source.fingerprint()["fragments"]},
        "dtbs": list(source.dtbs), "toolchain": toolchain_fingerprint(arch),
    }, sort_keys=True).encode()).hexdigest()


def kernel_for(source: KernelSource, arch: str, cache: Path, where: str) -> KernelBuild:
    """The kernel of ``source`` for ``arch``: from the cache, or built (and then cached)."""
    identity = source_identity(source, cache, where)
    key = kernel_key(source, identity, arch)
    out = cache / "kernels" / f"{arch}-{key[:16]}"
    with cachefs.locked(out.with_name(f".{out.name}.lock")):
        cached = _load(out, key)
        if cached is not None:
            cachefs.say(f"kernel {cached.release}: cached ({out})")
            return cached
        check_host_tools()
        for path in cachefs.clean_abandoned(out.parent, ".build-"):
            cachefs.say(f"removed {path}, left by a kernel build that was killed")
        tree = identity.tarball and _unpacked(identity, cache) or Path(source.location)
        build_dir = build_dir_of(cache, arch, identity)
        with cachefs.locked(build_dir.with_name(f".{build_dir.name}.lock")):
            return _build(source, identity, arch, tree, build_dir, key, out, where)


def build_dir_of(cache: Path, arch: str, identity: SourceIdentity) -> Path:
    """make's output directory for a source and architecture, kept for incremental builds: one per builder
    version, since make does not see what a builder changes outside the compiler's command line (the
    objects of builder 1, compiled through CCACHE_BASEDIR, would otherwise be linked again as they are)."""
    name = f"{arch}-{identity.sha256[:16]}"
    older = cache / "kernel-build" / name  # builder 1's, without a suffix
    if older.is_dir():
        try:
            cachefs.discard(older)
        except FileNotFoundError:  # another build discarded it first
            pass
    return cache / "kernel-build" / f"{name}-b{KERNEL_BUILDER_VERSION}"


def _load(out: Path, key: str) -> KernelBuild | None:
    try:
        info = json.loads((out / "kernel.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or info.get("key") != key or not isinstance(info.get("release"), str):
        return None
    build = KernelBuild(out, info["release"], info, cached=True)
    if not build.vmlinuz.is_file() or not all(build.dtb(d).is_file() for d in info.get("dtbs", [])):
        return None
    return build


def _build(source: KernelSource, identity: SourceIdentity, arch: str, tree: Path, build_dir: Path, key: str,
           out: Path, where: str) -> KernelBuild:
    started = time.monotonic()
    build_dir.mkdir(parents=True, exist_ok=True)
    log_path = out.with_name(out.name + ".log")  # the whole make output, beside the kernel, kept on failure
    gcc = compiler(arch)
    epoch = source_epoch(tree, identity)
    env = {**os.environ, "KBUILD_BUILD_TIMESTAMP": build_timestamp(epoch), "KBUILD_BUILD_USER": BUILD_USER,
           "KBUILD_BUILD_HOST": BUILD_HOST, "KBUILD_BUILD_VERSION": "1", "SOURCE_DATE_EPOCH": str(epoch),
           "LC_ALL": "C", "TZ": "UTC", "CCACHE_NOHASHDIR": "1", "CCACHE_DEPEND": "1"}
    # CCACHE_DEPEND: ccache takes an object's inputs from the .d file the kernel's -MMD writes anyway, so a
    # miss compiles once instead of running the preprocessor first to hash its output: a cold build uses ~30 %
    # less CPU (docs/speed.md round 10), the same bytes, the same hits when warm
    # ccache sees the compiler's real arguments: no CCACHE_BASEDIR, whose rewriting of absolute paths into
    # relative ones defeats the kernel's -fmacro-prefix-map (__FILE__ in BUG/WARN tables would then name
    # ../../kernel-src/...): hits need the same source and build paths, which a cache keeps
    for var in ("ARCH", "CROSS_COMPILE", "KCONFIG_CONFIG", "KBUILD_OUTPUT", "O", "KCFLAGS", "KCPPFLAGS",
                "CCACHE_BASEDIR"):
        env.pop(var, None)
    make = ["make", "-C", str(tree), f"O={build_dir}", f"ARCH={KERNEL_ARCH[arch]}",
            f"CROSS_COMPILE={cross_prefix(gcc)}", f"CC=ccache {cross_prefix(gcc)}gcc"]
    with open(log_path, "w") as log:
        def run(argv: list[str], what: str, progress: Progress | None = None) -> None:
            log.write(f"$ {' '.join(argv)}\n")
            log.flush()
            proc = subprocess.Popen(argv, cwd=build_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, errors="replace")
            assert proc.stdout is not None
            try:
                for line in proc.stdout:
                    log.write(line)
                    if progress:
                        progress.line(line)
            except BaseException:  # interrupted (Ctrl-C, a timeout): make must not go on compiling alone
                proc.kill()
                proc.wait()
                raise
            if proc.wait() != 0:
                log.flush()
                raise JobError(f"{where}: {what} failed (exit {proc.returncode}); the last lines of {log_path}:\n"
                               + _tail(log_path))

        cachefs.say(f"kernel: configuring {identity.version} for {arch} ({source.base} + "
                    f"{', '.join(p.name for p in source.fragments) or 'no fragments'})")
        (build_dir / ".config").unlink(missing_ok=True)
        run([*make, source.base], f"make {source.base}")
        requests = [r for frag in source.fragments for r in parse_fragment(frag.read_text(), str(frag))]
        merge_env = {"ARCH": KERNEL_ARCH[arch], "CROSS_COMPILE": cross_prefix(gcc)}
        run(["env", *(f"{k}={v}" for k, v in merge_env.items()), str(tree / "scripts/kconfig/merge_config.sh"),
             "-m", "-O", str(build_dir), str(build_dir / ".config"), *map(str, source.fragments)], "merge_config.sh")
        run([*make, "olddefconfig"], "make olddefconfig")
        config_text = (build_dir / ".config").read_text()
        problems = unmet_requests(requests, parse_config(config_text))
        if problems:
            raise JobError("the kernel config does not have what its fragments ask for:\n  " + "\n  ".join(problems))
        config = parse_config(config_text)
        has_modules = config.get("CONFIG_MODULES") == "y"
        image_target, image_path = IMAGE_TARGET[arch]
        targets = [image_target, *(["modules"] if has_modules else []), *source.dtbs]
        cachefs.say(f"kernel: compiling {', '.join(targets)} with -j{os.cpu_count() or 1} "
                    f"(log: {log_path})")
        run([*make, f"-j{os.cpu_count() or 1}", *targets], "the kernel build", Progress(cachefs.say))
        release = (build_dir / "include" / "config" / "kernel.release").read_text().strip()
        with cachefs.private_dir(out.parent, ".build-") as tmp:
            boot = tmp / "boot"
            boot.mkdir()
            shutil.copyfile(build_dir / image_path, boot / f"vmlinuz-{release}")
            shutil.copyfile(build_dir / ".config", boot / f"config-{release}")
            for dtb in source.dtbs:
                dst = boot / "dtbs" / release / dtb
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(build_dir / "arch" / _dts_arch(arch) / "boot" / "dts" / dtb, dst)
            if has_modules:
                run([*make, f"INSTALL_MOD_PATH={tmp}", "INSTALL_MOD_STRIP=1", "modules_install"], "modules_install")
                for link in ("build", "source"):  # point into the build directory: not part of the kernel
                    (tmp / "lib" / "modules" / release / link).unlink(missing_ok=True)
            seconds = time.monotonic() - started
            info = {"key": key, "release": release, "arch": arch, "source": identity.to_json(),
                    "source_kind": source.kind, "config_base": source.base,
                    "config_fragments": [p.name for p in source.fragments],
                    "config_sha256": hashlib.sha256(config_text.encode()).hexdigest(),
                    "modules": has_modules, "dtbs": list(source.dtbs), "build_seconds": round(seconds, 1)}
            (tmp / "kernel.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
            if out.exists():
                cachefs.discard(out)
            os.replace(tmp, out)
    cachefs.say(f"kernel {release}: built in {seconds:.0f}s ({out})")
    return KernelBuild(out, release, info, cached=False)


def _dts_arch(arch: str) -> str:
    return "arm64" if arch == "arm64" else "x86"


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    text = path.read_text(errors="replace").splitlines()
    return "\n".join("  " + line for line in text[-lines:])


def iter_dtbs(build: KernelBuild) -> Iterator[tuple[str, Path]]:
    """(file name, path) of each DTB of the build, for the image's artifacts."""
    for dtb in build.info.get("dtbs", []):
        yield os.path.basename(dtb), build.dtb(dtb)
