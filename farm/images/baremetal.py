"""farm's own bare-metal programs (C and assembly under ``images/baremetal/``), built with the cross gcc
into farm's cache, content-addressed like every image.

A **system image** of farm's own, from a recipe (``images/standin.yaml``)::

      name: farm-standin
      arch: arm64
      baremetal:
        sources: [baremetal/start.S, baremetal/runtime.c, baremetal/standin.c]
        load_addr: 0x40200000

  built (:func:`build_baremetal`) into an image of kind ``system`` (farm.images.system) that U-Boot
  boots three ways: ``bootm`` (``<name>.uimg``, a uImage), ``bootelf`` (``<name>.elf``) and ``go``
  (``<name>.bin``, the raw binary at the load address) — the stand-in for a system image a lab brings;
  and :func:`program` for a benchmark's own (``farm-exitcost``, farm.bench.exitcost, run as a KVM guest).

The programs run with the MMU off (bootm hands over so): no libc, no
floating point, no unaligned access (``-mstrict-align -mgeneral-regs-only``), one loadable segment
linked at the load address (``images/baremetal/link.ld``). The same sources, flags and compiler give
the same bytes (no build ids, no paths in the output).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import attrs

from ..config import load_yaml
from ..schema import Invalid, setting
from ..errors import JobError
from ..values import name_problem
from .image import SYSTEM, Image, default_cache, load_image

BUILDER_VERSION = "1"
SOURCES = Path(__file__).resolve().parents[2] / "images" / "baremetal"
LINK_SCRIPT = SOURCES / "link.ld"
#: the target C compiler's flags: freestanding, the MMU off or a guest's first code (module docstring)
CFLAGS = ("-O2", "-g0", "-ffreestanding", "-fno-builtin", "-nostdlib", "-nostartfiles", "-static", "-fno-pic",
          "-fno-stack-protector", "-mstrict-align", "-mgeneral-regs-only", "-Wall", "-Wextra",
          "-Wl,--build-id=none", "-Wl,-n", "-Wl,--no-warn-rwx-segments")
#: the GNU tools of a target architecture (the cross toolchain farm.images.programs names)
BINUTILS_PREFIX = {"arm64": "aarch64-linux-gnu-"}
DEFAULT_LOAD_ADDR = 0x40200000  # QEMU virt's RAM starts at 0x40000000; the DTB of a bare ELF is put there


@attrs.frozen
class BareMetal:
    """A bare-metal program: its sources (``.S`` and ``.c``, with the headers they include) and load address."""

    name: str
    sources: tuple[Path, ...]
    load_addr: int = DEFAULT_LOAD_ADDR

    def fingerprint(self) -> dict:
        """What its bytes depend on, besides the compiler: every source, the headers next to them, the
        link script and the flags."""
        files = sorted({*self.sources, LINK_SCRIPT, *(h for s in self.sources for h in s.parent.glob("*.h"))})
        return {"name": self.name, "load_addr": f"{self.load_addr:#x}", "cflags": list(CFLAGS),
                "files": {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}}

    def compile(self, arch: str) -> tuple[bytes, bytes]:
        """The ELF file and its raw binary (objcopy -O binary); errors name the source."""
        from .programs import compiler

        if arch not in BINUTILS_PREFIX:
            raise JobError(f"bare-metal program {self.name}: farm builds them for {', '.join(BINUTILS_PREFIX)}, "
                           f"not {arch}")
        cc = compiler(arch)
        objcopy = cc[:-len("gcc")] + "objcopy" if cc.endswith("gcc") else BINUTILS_PREFIX[arch] + "objcopy"
        with tempfile.TemporaryDirectory(prefix="farm-baremetal-") as tmp:
            elf, binary = Path(tmp) / f"{self.name}.elf", Path(tmp) / f"{self.name}.bin"
            argv = [cc, *CFLAGS, f"-ffile-prefix-map={SOURCES}=.", "-T", str(LINK_SCRIPT),
                    f"-Wl,--defsym=LOAD_ADDR={self.load_addr:#x}", "-o", str(elf), *map(str, self.sources)]
            proc = subprocess.run(argv, capture_output=True, text=True)
            if proc.returncode != 0:
                first = next((line for line in proc.stderr.splitlines() if "error" in line), proc.stderr.strip()[:300])
                raise JobError(f"bare-metal program {self.name}: does not build for {arch}: {first}")
            proc = subprocess.run([objcopy, "-O", "binary", str(elf), str(binary)], capture_output=True, text=True)
            if proc.returncode != 0:
                raise JobError(f"bare-metal program {self.name}: objcopy failed: {proc.stderr.strip()[:300]}")
            return elf.read_bytes(), binary.read_bytes()


def program(name: str, *sources: str, load_addr: int = DEFAULT_LOAD_ADDR) -> BareMetal:
    """One of farm's programs by its source files' names in ``images/baremetal/``."""
    return BareMetal(name, tuple(SOURCES / s for s in sources), load_addr)


# --- a system image of farm's own -------------------------------------------------------------------

@attrs.frozen
class BareMetalRecipe:
    name: str
    arch: str
    program: BareMetal
    source: str


def _load_addr(value: object) -> int:
    from .system import parse_address

    address = parse_address(value, "load_addr")
    if address >= 1 << 32 or address % 4096:
        raise Invalid(f"{address:#x}: expected a 4 KiB-aligned address below 4 GiB (a uImage's)")
    return address


_load_addr.schema = {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^(0[xX][0-9a-fA-F]+|[0-9]+)$"}]}  # type: ignore[attr-defined]


@attrs.frozen
class BareMetalSection:
    """``baremetal``: the program's sources and where it loads."""

    sources: tuple[str, ...] = setting((), doc="its C (.c) and assembly (.S) files, relative to the recipe")
    load_addr: int = setting(DEFAULT_LOAD_ADDR, parse=_load_addr, doc="its load address: 4 KiB-aligned, below 4 GiB")

    def paths(self, given: Any) -> list[Path]:
        """The sources, relative to the recipe's folder (``given``: the section's mapping)."""
        base = Path(getattr(given, "file", ".")).parent
        return [Path(item) if Path(item).is_absolute() else base / item for item in self.sources]

    def validate(self, given: Any) -> None:
        for source in self.paths(given):
            if not source.is_file() or source.suffix not in (".c", ".S"):
                raise Invalid(f"{source}: not a C (.c) or assembly (.S) file", key="sources")
        if not self.sources:
            raise Invalid("at least one source is needed", key="sources")


def _arch(value: str) -> str | None:
    return None if value in BINUTILS_PREFIX else \
        f"farm builds bare-metal programs for {', '.join(BINUTILS_PREFIX)}, not {value!r}"


_arch.choices = tuple(BINUTILS_PREFIX)  # type: ignore[attr-defined]


@attrs.frozen
class BareMetalFile:
    """A recipe of farm's bare-metal programs (a system image without Linux: images/standin.yaml)."""

    name: str = setting(check=lambda v: name_problem(v, "image name"), doc="the image's name")
    arch: str = setting(check=_arch, doc="the targets' architecture")
    baremetal: BareMetalSection = setting(doc="the program")
    description: str = setting("", doc="what it is for")


def load_baremetal_recipe(path: str | Path) -> BareMetalRecipe:
    """``images/<name>.yaml`` with a ``baremetal`` section (module docstring); errors name file:line: field."""
    from ..schema.read import structure

    doc = load_yaml(path, "bare-metal recipe")
    recipe = structure(doc, BareMetalFile)
    sources = tuple(p.resolve() for p in recipe.baremetal.paths(doc["baremetal"]))
    return BareMetalRecipe(recipe.name, recipe.arch, BareMetal(recipe.name, sources, recipe.baremetal.load_addr),
                           str(path))


def is_baremetal_recipe(path: str | Path) -> bool:
    """Whether the YAML file at ``path`` is a bare-metal recipe (has a ``baremetal`` section)."""
    try:
        return "baremetal" in load_yaml(path, "recipe")
    except JobError:
        return False


def build_baremetal(path: str | Path, cache: Path | None = None) -> Image:
    """The system image of a bare-metal recipe, from farm's cache when its sources, flags and compiler are
    unchanged (every artifact checked against its sha256 first, as a built image is)."""
    from . import cachefs
    from .build import VERIFIED, _write_record, verify_cached
    from .programs import compiler_fingerprint
    from .system import ELF, RAW, UIMAGE, _write_image, make_uimage

    recipe = load_baremetal_recipe(path)
    cache = cache or default_cache()
    key = hashlib.sha256(json.dumps({"builder": BUILDER_VERSION, "arch": recipe.arch,
                                     "program": recipe.program.fingerprint(),
                                     "compiler": compiler_fingerprint(recipe.arch)}, sort_keys=True).encode()).hexdigest()
    image_dir = cache / "images" / f"{recipe.name}-{key[:16]}"
    with cachefs.locked(image_dir.with_name(f".{image_dir.name}.lock")):
        if verify_cached(image_dir, key) is None:
            return attrs.evolve(load_image(image_dir), cached=True)
        elf, binary = recipe.program.compile(recipe.arch)
        names = {ELF: f"{recipe.name}.elf", RAW: f"{recipe.name}.bin", UIMAGE: f"{recipe.name}.uimg"}
        files = {names[ELF]: elf, names[RAW]: binary,
                 names[UIMAGE]: make_uimage(binary, load_addr=recipe.program.load_addr, name=recipe.name,
                                            arch=recipe.arch)}
        manifest = {
            "kind": SYSTEM, "name": recipe.name, "arch": recipe.arch, "key": key, "builder": BUILDER_VERSION,
            "boot": {"bootm": names[UIMAGE], "bootelf": names[ELF], "go": names[RAW]},
            "formats": {names[UIMAGE]: UIMAGE, names[ELF]: ELF, names[RAW]: RAW},
            "load_addr": f"{recipe.program.load_addr:#x}", "recipe": recipe.program.fingerprint(),
            "artifacts": {n: {"sha256": hashlib.sha256(b).hexdigest(), "size": len(b)} for n, b in files.items()},
        }
        _write_image(image_dir, files, manifest)
        _write_record(image_dir / VERIFIED, {n: cachefs.stat_fingerprint(image_dir / n) for n in files})
        cachefs.say(f"built {recipe.name} ({recipe.arch}, bare metal at {recipe.program.load_addr:#x}): {image_dir}")
    return load_image(image_dir)
