"""The image recipe (``images/*.yaml``): which Debian kernel, which packages and files, which modules.

Example::

    name: maaxboard-bench
    arch: arm64
    kernel:
      package: linux-image-arm64          # a metapackage is followed to the real image package
      modules: [virtio_net, virtio_mmio, virtio_pci, fec]
      compress: gzip                      # ship Image.gz: a third of the TFTP transfer; booti unpacks it
    initrd:
      packages: [busybox-static, iperf3, openssl]
      files: [/bin/busybox, /usr/bin/iperf3, /usr/bin/openssl]
      compress: zstd                      # default gzip; the kernel unpacks zstd ~3x faster (CONFIG_RD_ZSTD)
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from ..config import Node, field, load_yaml, reject_unknown, require, string_list
from ..errors import JobError
from ..values import name_problem
from .kernel import KernelSource, base_problem, dtb_problem
from .programs import Program

ARCHES = ("arm64", "amd64")
# initrd.compress -> the file's suffix; each needs the kernel's CONFIG_RD_<NAME> (Debian's kernels have both)
INITRD_COMPRESSIONS = {"gzip": ".gz", "zstd": ".zst"}
_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")
_MODULE = re.compile(r"^[A-Za-z0-9_-]+$")
_PATH = re.compile(r"^(/[A-Za-z0-9._+@-]+)+$")


@attrs.frozen
class Recipe:
    name: str
    arch: str
    kernel_package: str  # "" when the kernel is built from source (kernel_source)
    kernel_compress: str  # "none" or "gzip": a gzip'ed arm64 Image that U-Boot's booti unpacks
    modules: tuple[str, ...]
    packages: tuple[str, ...]
    files: tuple[str, ...]
    programs: tuple[Program, ...]
    source: str  # the recipe file, for messages
    where: dict[str, str] = attrs.field(factory=dict, eq=False)  # field -> "file:line: field", for messages
    kernel_source: KernelSource | None = None  # kernel: {source: ..., config: [...], dtbs: [...]}
    initrd_compress: str = "gzip"  # INITRD_COMPRESSIONS: how the cpio is compressed (the kernel unpacks it)

    def error(self, field_name: str, message: str) -> JobError:
        return JobError(f"{self.where.get(field_name, self.source + ': ' + field_name)}: {message}")

    def canonical(self) -> dict:
        """What the build depends on, for the cache key (not the file name or its comments)."""
        return {"name": self.name, "arch": self.arch, "kernel_package": self.kernel_package,
                "kernel_compress": self.kernel_compress,
                "modules": list(self.modules), "packages": list(self.packages), "files": list(self.files),
                "programs": [p.fingerprint() for p in self.programs],
                # only when set, so the keys of package-kernel images stay what they were
                **({"kernel_source": self.kernel_source.fingerprint()} if self.kernel_source else {}),
                **({"initrd_compress": self.initrd_compress} if self.initrd_compress != "gzip" else {})}


def _check(pattern: re.Pattern[str], what: str):
    def check(value: str) -> str | None:
        return None if pattern.fullmatch(value) and ".." not in value.split("/") else f"is not a valid {what}"
    return check


def load_recipe(path: str | Path) -> Recipe:
    doc = load_yaml(path, "image recipe")
    reject_unknown(doc, {"name", "arch", "kernel", "initrd", "programs", "description"})
    name = require(doc, "name", str)
    if (problem := name_problem(name, "image name")):
        raise doc.error("name", problem)
    arch = require(doc, "arch", str)
    if arch not in ARCHES:
        raise doc.error("arch", f"unsupported architecture {arch!r} (one of: {', '.join(ARCHES)})")
    kernel = require(doc, "kernel", Node)
    reject_unknown(kernel, {"package", "modules", "compress", "source", "config", "dtbs"})
    if "package" in kernel and "source" in kernel:  # neither: require() below says package is missing
        raise kernel.error(None, "exactly one of kernel.package (a Debian kernel) and kernel.source (built "
                                 "from source) is needed, not both")
    kernel_source = _kernel_source(kernel, Path(path)) if "source" in kernel else None
    for key in ("config", "dtbs"):
        if key in kernel and kernel_source is None:
            raise kernel.error(key, "only a kernel built from source (kernel.source) takes a config and dtbs")
    kernel_package = "" if kernel_source else require(kernel, "package", str)
    if kernel_package and _check(_PACKAGE, "Debian package name")(kernel_package):
        raise kernel.error("package", f"{kernel_package!r} is not a valid Debian package name")
    modules = string_list(kernel, "modules", check=_check(_MODULE, "kernel module name"))
    compress = field(kernel, "compress", str, "none")
    if compress not in ("none", "gzip"):
        raise kernel.error("compress", f"{compress!r}: expected none or gzip")
    if compress == "gzip" and arch != "arm64":
        raise kernel.error("compress", "only an arm64 Image is compressed by farm (x86 bzImage already is)")
    initrd = require(doc, "initrd", Node)
    reject_unknown(initrd, {"packages", "files", "compress"})
    initrd_compress = field(initrd, "compress", str, "gzip")
    if initrd_compress not in INITRD_COMPRESSIONS:
        raise initrd.error("compress", f"{initrd_compress!r}: expected one of {', '.join(INITRD_COMPRESSIONS)}")
    packages = string_list(initrd, "packages", check=_check(_PACKAGE, "Debian package name"))
    if not packages:
        raise initrd.error("packages", "at least one package is needed (busybox-static gives the shell)")
    files = string_list(initrd, "files", check=_check(_PATH, "absolute file path"))
    field(doc, "description", str, "")
    programs = []
    for i, item in enumerate(field(doc, "programs", list, None) or []):
        if not isinstance(item, Node):
            raise doc.error("programs", f"item {i} must be a mapping with name and source")
        reject_unknown(item, {"name", "source", "packages", "libs"})
        prog_name = require(item, "name", str)
        if (problem := name_problem(prog_name, "program name")):
            raise item.error("name", problem)
        source = Path(require(item, "source", str))
        source = source if source.is_absolute() else Path(path).parent / source
        if not source.is_file():
            raise item.error("source", f"{source} not found")
        programs.append(Program(prog_name, source,
                                tuple(string_list(item, "packages", check=_check(_PACKAGE, "Debian package name"))),
                                tuple(string_list(item, "libs", check=_check(_MODULE, "library name")))))
    return Recipe(name=name, arch=arch, kernel_package=kernel_package, kernel_compress=compress, modules=tuple(modules),
                  packages=tuple(packages), files=tuple(files), programs=tuple(programs), source=str(path),
                  kernel_source=kernel_source, initrd_compress=initrd_compress,
                  where={"initrd.compress": initrd.where("compress") if "compress" in initrd else f"{path}: initrd.compress",
                         "kernel.package": kernel.where("package"), "kernel.modules": kernel.where("modules"),
                         "kernel.source": kernel.where("source") if "source" in kernel else f"{path}: kernel.source",
                         "initrd.packages": initrd.where("packages"), "initrd.files": initrd.where("files"),
                         "programs": doc.where("programs") if "programs" in doc else f"{path}: programs"})


def _kernel_source(kernel: Node, recipe_path: Path) -> KernelSource:
    """``source: {package: NAME} | {tarball: PATH} | {tree: PATH}``, ``config: [BASE, FRAGMENT...]``,
    ``dtbs: [DIR/NAME.dtb...]``; paths relative to the recipe's directory."""
    source = require(kernel, "source", Node)
    reject_unknown(source, {"package", "tarball", "tree"})
    kinds = [k for k in ("package", "tarball", "tree") if k in source]
    if len(kinds) != 1:
        raise kernel.error("source", "expected exactly one of package (e.g. linux-source-6.1), tarball or tree")
    kind = kinds[0]
    location = require(source, kind, str)
    if kind == "package":
        if _check(_PACKAGE, "Debian package name")(location):
            raise source.error(kind, f"{location!r} is not a valid Debian package name")
    else:
        resolved = Path(location).expanduser()
        resolved = resolved if resolved.is_absolute() else recipe_path.parent / resolved
        if not (resolved.is_file() if kind == "tarball" else resolved.is_dir()):
            raise source.error(kind, f"{resolved} is not a {'file' if kind == 'tarball' else 'directory'}")
        location = str(resolved.resolve())
    config = string_list(kernel, "config")
    if not config:
        raise kernel.error("config", "a make target to start from (allnoconfig, defconfig, ...) and fragments are needed")
    if (problem := base_problem(config[0])):
        raise kernel.error("config", f"item 0 {config[0]!r}: {problem}")
    fragments = []
    for i, name in enumerate(config[1:], start=1):
        fragment = Path(name) if Path(name).is_absolute() else recipe_path.parent / name
        if not fragment.is_file():
            raise kernel.error("config", f"item {i}: fragment {fragment} not found")
        fragments.append(fragment.resolve())
    dtbs = string_list(kernel, "dtbs", check=dtb_problem)
    return KernelSource(kind, location, config[0], tuple(fragments), tuple(dtbs))
