"""A Linux kernel and initrd packed as one FIT image with no shell on its console: farm's stand-in for a
shell-less system that serves the network benchmarks itself (a lab's seL4/sDDF echo server and its CPU
target), so the sweep's shell-less path is tested end to end on the twin.

    name: farm-standin-net
    arch: arm64
    linux_system:
      linux: maaxboard-bench.yaml            # the Linux image whose kernel and initrd it packs (built first)
      serve:                                 # started by its /init instead of a shell, in this order
        - farm_echo -d -p 7 -s
        - farm_lukem -d -p 1236
      kernel_addr: 0x40400000                # where bootm puts the kernel (2 MiB aligned)

The initrd is the Linux image's with a second cpio appended (the kernel unpacks both, the later
entries winning): a ``/init`` that is the image's own up to its last line, which hands the console a
shell, and then starts the ``serve`` commands, prints ``farm-serve: ready`` and sleeps, the console
left without a shell. The FIT (a flattened device tree, devicetree spec 5) holds the kernel, that
ramdisk and one configuration of both; U-Boot's own device tree is passed by bootm's third argument.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
from pathlib import Path

import attrs

from ..config import load_yaml
from ..schema import Invalid, setting
from ..errors import JobError
from ..values import name_problem
from .cpio import Entry, write_newc
from .image import SYSTEM, Image, default_cache, load_image

BUILDER_VERSION = "2"
READY = "farm-serve: ready"
_SHELL_LINE = "exec setsid cttyhack /bin/sh"
_COMMAND = re.compile(r"^[A-Za-z0-9_./ =:,+-]+$")
FDT_MAGIC, FDT_BEGIN_NODE, FDT_END_NODE, FDT_PROP, FDT_END = 0xD00DFEED, 1, 2, 3, 9


# --- a flattened device tree, written (pure) ---------------------------------------------------------

def _pad(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 4)


def fdt_blob(root: dict) -> bytes:
    """A flattened device tree of ``root`` (version 17): a node is a dict whose dict values are child
    nodes and whose other values are properties (str: a NUL-ended string; int: a 32-bit cell; bytes as
    they are)."""
    strings: dict[str, int] = {}
    table = bytearray()
    struct_block = bytearray()

    def name_offset(name: str) -> int:
        if name not in strings:
            strings[name] = len(table)
            table.extend(name.encode() + b"\0")
        return strings[name]

    def node(name: str, content: dict) -> None:
        struct_block.extend(struct.pack(">I", FDT_BEGIN_NODE) + _pad(name.encode() + b"\0"))
        for key, value in content.items():
            if isinstance(value, dict):
                continue
            raw = (value.encode() + b"\0" if isinstance(value, str) else struct.pack(">I", value)
                   if isinstance(value, int) else bytes(value))
            struct_block.extend(struct.pack(">III", FDT_PROP, len(raw), name_offset(key)) + _pad(raw))
        for key, value in content.items():
            if isinstance(value, dict):
                node(key, value)
        struct_block.extend(struct.pack(">I", FDT_END_NODE))

    node("", root)
    struct_block.extend(struct.pack(">I", FDT_END))
    header_size, rsvmap = 40, b"\0" * 16
    off_rsvmap = header_size
    off_struct = off_rsvmap + len(rsvmap)
    off_strings = off_struct + len(struct_block)
    total = off_strings + len(table)
    header = struct.pack(">10I", FDT_MAGIC, total, off_struct, off_strings, off_rsvmap, 17, 16, 0, len(table),
                         len(struct_block))
    return header + rsvmap + bytes(struct_block) + bytes(table)


def make_fit(kernel: bytes, ramdisk: bytes, *, kernel_addr: int, description: str, arch: str = "arm64") -> bytes:
    """A FIT of ``kernel`` (an uncompressed Linux Image, loaded and entered at ``kernel_addr``) and
    ``ramdisk`` (used where it is), each with its sha256 (U-Boot checks it), one configuration of both."""
    def image(data: bytes, kind: str, desc: str, **extra) -> dict:
        return {"description": desc, "data": data, "type": kind, "arch": arch, "os": "linux", "compression": "none",
                **extra, "hash-1": {"value": hashlib.sha256(data).digest(), "algo": "sha256"}}

    return fdt_blob({
        "description": description, "timestamp": 0, "#address-cells": 1,  # U-Boot requires a timestamp: 0, reproducible
        "images": {"kernel-1": image(kernel, "kernel", "Linux kernel", load=kernel_addr, entry=kernel_addr),
                   "ramdisk-1": image(ramdisk, "ramdisk", "initrd")},
        "configurations": {"default": "conf-1",
                           "conf-1": {"description": description, "kernel": "kernel-1", "ramdisk": "ramdisk-1"}},
    })


# --- the /init that serves instead of a shell (pure) -----------------------------------------------------

def serving_init(init: str, serve: list[str]) -> str:
    """The image's /init ``init`` with its last step, a shell on the console, replaced by ``serve``."""
    if _SHELL_LINE not in init:
        raise JobError(f"the Linux image's /init does not end in '{_SHELL_LINE}': farm cannot take its shell away")
    started = "".join(f"{command} || echo \"farm-serve: '{command}' failed\"\n" for command in serve)
    return init.replace(_SHELL_LINE, "# no shell: the services, then nothing on the console\n" + started +
                        f"echo \"{READY}\"\nexec sleep 2147483647\n")


# --- the recipe and its build ------------------------------------------------------------------------------

@attrs.frozen
class LinuxSystemRecipe:
    name: str
    arch: str
    linux: Path
    serve: tuple[str, ...]
    kernel_addr: int
    source: str


def _kernel_addr(value: object) -> int:
    from .system import parse_address

    address = parse_address(value, "kernel_addr")
    if address % (2 << 20) or address >= 1 << 32:
        raise Invalid(f"{address:#x}: an arm64 kernel's place is 2 MiB aligned, below 4 GiB")
    return address


_kernel_addr.schema = {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^(0[xX][0-9a-fA-F]+|[0-9]+)$"}]}  # type: ignore[attr-defined]


def _served(command: str) -> str | None:
    return None if _COMMAND.match(command) else f"{command!r}: letters, digits, spaces and _ . / = : , + - only"


def _recipe_found(path: Path) -> str | None:
    return None if path.is_file() else f"{path}: no such recipe"


@attrs.frozen
class LinuxSystemSection:
    """``linux_system``: a Linux image of farm's packed as one FIT image, and what its init serves."""

    linux: Path = setting(relative=True, check=_recipe_found, doc="the Linux recipe packed (relative to this one)")
    serve: tuple[str, ...] = setting((), check=lambda commands: next(
        (p for c in commands if (p := _served(c))), None), doc="commands its init starts (the services it serves)")
    kernel_addr: int = setting(0x40400000, parse=_kernel_addr, doc="the kernel's load address: 2 MiB aligned")


def _arm64(value: str) -> str | None:
    return None if value == "arm64" else f"farm packs FIT stand-ins for arm64, not {value!r}"


_arm64.choices = ("arm64",)  # type: ignore[attr-defined]


@attrs.frozen
class LinuxSystemFile:
    """A system image that is a Linux of farm's in a FIT image (a stand-in: images/standin-net.yaml)."""

    name: str = setting(check=lambda v: name_problem(v, "image name"), doc="the image's name")
    arch: str = setting(check=_arm64, doc="arm64")
    linux_system: LinuxSystemSection = setting(doc="the Linux image packed and what it serves")
    description: str = setting("", doc="what it is for")


def load_linux_system_recipe(path: str | Path) -> LinuxSystemRecipe:
    """``images/<name>.yaml`` with a ``linux_system`` section (module docstring); errors name file:line: field."""
    from ..schema.read import structure

    recipe = structure(load_yaml(path, "system recipe"), LinuxSystemFile)
    section = recipe.linux_system
    return LinuxSystemRecipe(recipe.name, recipe.arch, section.linux.resolve(), section.serve, section.kernel_addr,
                             str(path))


def is_linux_system_recipe(doc: dict) -> bool:
    return "linux_system" in doc


def build_linux_system(path: str | Path, cache: Path | None = None) -> Image:
    """The FIT stand-in of a ``linux_system`` recipe, built from its Linux image (built first, cached)."""
    from . import cachefs
    from .build import VERIFIED, _support_file, _write_record, build, verify_cached
    from .system import FIT, _write_image

    recipe = load_linux_system_recipe(path)
    linux = build(recipe.linux)
    init = _support_file("init.sh").decode()
    cache = cache or default_cache()
    key = hashlib.sha256(json.dumps({"builder": BUILDER_VERSION, "linux": linux.manifest["key"], "serve": recipe.serve,
                                     "kernel_addr": recipe.kernel_addr, "init": init}, sort_keys=True).encode()).hexdigest()
    image_dir = cache / "images" / f"{recipe.name}-{key[:16]}"
    with cachefs.locked(image_dir.with_name(f".{image_dir.name}.lock")):
        if verify_cached(image_dir, key) is None:
            return attrs.evolve(load_image(image_dir), cached=True)
        if linux.manifest.get("kernel_compression", "none") != "none" or linux.kernel.read_bytes()[:2] == b"\x1f\x8b":
            raise JobError(f"{path}: the Linux image's kernel is compressed: the FIT holds an uncompressed Image")
        overlay = write_newc([Entry.file("/init", serving_init(init, list(recipe.serve)).encode(), 0o755)])
        initrd = linux.initrd.read_bytes()
        ramdisk = initrd + b"\0" * (-len(initrd) % 4) + overlay
        fit_name = f"{recipe.name}.itb"
        files = {fit_name: make_fit(linux.kernel.read_bytes(), ramdisk, kernel_addr=recipe.kernel_addr,
                                    description=f"{recipe.name}: {linux.name} with no shell")}
        manifest = {
            "kind": SYSTEM, "name": recipe.name, "arch": recipe.arch, "key": key, "builder": BUILDER_VERSION,
            "boot": {"bootm": fit_name}, "formats": {fit_name: FIT},
            "header": {"ramdisk": "ramdisk-1", "kernel": "kernel-1", "fdt": None},
            "linux": {"image": linux.name, "key": linux.manifest["key"],
                      "kernel_version": linux.manifest.get("kernel_version")},
            "serve": list(recipe.serve), "kernel_addr": f"{recipe.kernel_addr:#x}",
            "artifacts": {n: {"sha256": hashlib.sha256(b).hexdigest(), "size": len(b)} for n, b in files.items()},
        }
        _write_image(image_dir, files, manifest)
        _write_record(image_dir / VERIFIED, {n: cachefs.stat_fingerprint(image_dir / n) for n in files})
        cachefs.say(f"built {recipe.name} (FIT of {linux.name}, no shell): {image_dir}")
    return load_image(image_dir)
