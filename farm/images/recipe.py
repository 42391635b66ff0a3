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

The file is declared by :class:`RecipeFile` (farm.schema: read by farm.schema.read, errors naming
file:line: field; ``farm schema recipe``); :class:`Recipe` is what a build takes from it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import attrs

from ..config import load_yaml
from ..errors import JobError
from ..schema import Invalid, Missing, all_of, each, one_of, setting
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


def _named(check):
    """A check of one value whose problem says the value first (``'x' is not a valid ...``)."""
    return lambda value: f"{value!r} {problem}" if (problem := check(value)) else None


_package = _check(_PACKAGE, "Debian package name")


def _found(path: Path) -> str | None:
    return None if path.is_file() else f"{path} not found"


@attrs.frozen
class KernelSourceFile:
    """``kernel.source``: exactly one of a Debian source package, a tarball or a tree (paths relative to the recipe)."""

    package: str | None = setting(None, check=_named(_package), doc="a Debian source package (linux-source-6.1)")
    tarball: Path | None = setting(None, relative=True, doc="a kernel tarball")
    tree: Path | None = setting(None, relative=True, doc="a kernel source tree")

    def validate(self, given: Any) -> None:
        kinds = [k for k in ("package", "tarball", "tree") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise Invalid("expected exactly one of package (e.g. linux-source-6.1), tarball or tree")
        if self.tarball is not None and not self.tarball.is_file():
            raise Invalid(f"{self.tarball} is not a file", key="tarball")
        if self.tree is not None and not self.tree.is_dir():
            raise Invalid(f"{self.tree} is not a directory", key="tree")


@attrs.frozen
class KernelFile:
    """``kernel``: a Debian kernel package, or a kernel built from source (docs/images.md)."""

    package: str | None = setting(None, check=_named(_package),
                                  doc="a Debian kernel package (a metapackage is followed to the real one)")
    modules: tuple[str, ...] = setting((), check=each(_check(_MODULE, "kernel module name")),
                                       doc="modules put in the initrd")
    compress: str = setting("none", check=one_of(("none", "gzip"), lambda v: f"{v!r}: expected none or gzip"),
                            doc="gzip: ship Image.gz (a third of the TFTP transfer; booti unpacks it)")
    source: KernelSourceFile | None = setting(None, doc="build the kernel from source instead")
    config: tuple[str, ...] | None = setting(None, doc="a source kernel's make target to start from (allnoconfig, "
                                                       "defconfig, ...), then configuration fragments")
    dtbs: tuple[str, ...] = setting((), check=each(dtb_problem), doc="a source kernel's device trees to build")

    def validate(self, given: Any) -> None:
        if self.package is not None and self.source is not None:
            raise Invalid("exactly one of kernel.package (a Debian kernel) and kernel.source (built from source) "
                          "is needed, not both")
        if self.package is None and self.source is None:
            raise Missing("", key="package")
        for key in ("config", "dtbs"):
            if key in given and self.source is None:
                raise Invalid("only a kernel built from source (kernel.source) takes a config and dtbs", key=key)
        if self.source is not None:
            config = self.config or ()
            if not config:
                raise Invalid("a make target to start from (allnoconfig, defconfig, ...) and fragments are needed",
                              key="config")
            if (problem := base_problem(config[0])):
                raise Invalid(f"item 0 {config[0]!r}: {problem}", key="config")
            for i, fragment in enumerate(self.fragments(given), start=1):
                if not fragment.is_file():
                    raise Invalid(f"item {i}: fragment {fragment} not found", key="config")

    def fragments(self, given: Any) -> list[Path]:
        """The configuration fragments, relative to the recipe's folder (``given``: the kernel's mapping)."""
        base = Path(getattr(given, "file", ".")).parent
        return [Path(name) if Path(name).is_absolute() else base / name for name in (self.config or ())[1:]]


@attrs.frozen
class InitrdFile:
    """``initrd``: the Debian packages whose files make it (busybox-static gives the shell)."""

    packages: tuple[str, ...] = setting((), check=all_of(
        lambda p: None if p else "at least one package is needed (busybox-static gives the shell)", each(_package)),
        doc="Debian packages whose files the initrd takes")
    files: tuple[str, ...] = setting((), check=each(_check(_PATH, "absolute file path")),
                                     doc="the files it takes from them (absolute paths)")
    compress: str = setting("gzip", choices=tuple(INITRD_COMPRESSIONS),
                            doc="how the cpio is compressed: zstd unpacks ~3x faster (CONFIG_RD_ZSTD)")


@attrs.frozen
class ProgramFile:
    """A C program farm builds for the target and puts in the initrd (images/src)."""

    SHAPE = "a mapping with name and source"

    name: str = setting(check=lambda v: name_problem(v, "program name"), doc="its name on the target")
    source: Path = setting(relative=True, check=_found, doc="its C source (relative to the recipe)")
    packages: tuple[str, ...] = setting((), check=each(_package), doc="Debian packages it builds with")
    libs: tuple[str, ...] = setting((), check=each(_check(_MODULE, "library name")), doc="libraries it links")


def _arch(value: str) -> str | None:
    return None if value in ARCHES else f"unsupported architecture {value!r} (one of: {', '.join(ARCHES)})"


_arch.choices = ARCHES  # type: ignore[attr-defined]


@attrs.frozen
class RecipeFile:
    """An image recipe (images/*.yaml): which Debian kernel, which packages and files, which programs."""

    name: str = setting(check=lambda v: name_problem(v, "image name"), doc="the image's name")
    arch: str = setting(check=_arch, doc="the targets' architecture")
    kernel: KernelFile = setting(doc="the kernel")
    initrd: InitrdFile = setting(doc="the initrd")
    programs: tuple[ProgramFile, ...] = setting((), doc="farm's C programs built for the target")
    description: str = setting("", doc="what it is for")

    def validate(self, given: Any) -> None:
        if self.kernel.compress == "gzip" and self.arch != "arm64":
            raise Invalid("only an arm64 Image is compressed by farm (x86 bzImage already is)", key=("kernel", "compress"))


def load_recipe(path: str | Path) -> Recipe:
    """Read and check a recipe (farm.schema.read: errors name file:line: field)."""
    from ..schema.read import structure

    doc = load_yaml(path, "image recipe")
    recipe = structure(doc, RecipeFile)
    kernel, initrd = doc["kernel"], doc["initrd"]
    source = recipe.kernel.source
    kernel_source = None
    if source is not None:
        kind = next(k for k in ("package", "tarball", "tree") if getattr(source, k) is not None)
        location = source.package if kind == "package" else str(getattr(source, kind).resolve())
        config = recipe.kernel.config or ()
        kernel_source = KernelSource(kind, location, config[0],
                                     tuple(f.resolve() for f in recipe.kernel.fragments(kernel)), recipe.kernel.dtbs)
    return Recipe(name=recipe.name, arch=recipe.arch, kernel_package=recipe.kernel.package or "",
                  kernel_compress=recipe.kernel.compress, modules=recipe.kernel.modules,
                  packages=recipe.initrd.packages, files=recipe.initrd.files,
                  programs=tuple(Program(p.name, p.source, p.packages, p.libs) for p in recipe.programs),
                  source=str(path), kernel_source=kernel_source, initrd_compress=recipe.initrd.compress,
                  where={"initrd.compress": initrd.where("compress") if "compress" in initrd else f"{path}: initrd.compress",
                         "kernel.package": kernel.where("package"), "kernel.modules": kernel.where("modules"),
                         "kernel.source": kernel.where("source") if "source" in kernel else f"{path}: kernel.source",
                         "initrd.packages": initrd.where("packages"), "initrd.files": initrd.where("files"),
                         "programs": doc.where("programs") if "programs" in doc else f"{path}: programs"})
