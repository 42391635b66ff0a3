"""System images: one file U-Boot boots as it is (an seL4/Microkit ``loader.img``, a FIT holding a kernel
and its initrd, one of farm's bare-metal programs), as an image of kind ``system`` (farm.images.image).

    image = system_image("build/loader.img", arch="arm64", load_addr=0x50000000)   # a file the lab brings
    image = system_image("results/x/system-image/")       # a directory with a system manifest.json
    image = system_image("images/standin.yaml")           # a recipe of farm's bare-metal programs (farm.images.baremetal)

farm never builds a lab's system image: it takes the file, records its sha256, copies it into its
cache (``<cache>/images/<name>-<key>/``, content-addressed as a built image is, so the file booted is
the one recorded even when the lab's build directory is rebuilt during the run) with a manifest whose
``boot`` says which file each U-Boot command boots:

* a **uImage** (legacy header, magic 0x27051956) or a **FIT** (a flattened device tree): ``bootm``;
* an **ELF** file: ``bootelf``;
* a **raw** binary: ``go`` at its load address, and ``bootm`` of a uImage farm wraps it in
  (``-O linux -T kernel -C none``, load and entry the load address; mkimage's header, written here),
  for a U-Boot whose ``go`` does not work: Debian's 2023.01 on the QEMU twin hangs in ``go`` and
  ``bootelf`` (its PL011 driver reports output pending whenever the FIFO is not full, and both flush
  the console before the jump), while ``bootm`` of the same image as a uImage boots.

What the headers say (a uImage's name, architecture and addresses, a FIT's images and configuration,
an ELF's machine and entry) goes into the manifest too, so run.json says what was booted. All parsing
here is pure; :func:`system_image` does the I/O.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import zlib
from pathlib import Path

import attrs

from ..errors import JobError
from ..values import name_problem
from .image import SYSTEM, Image, default_cache, load_image, verify_artifacts

BUILDER_VERSION = "1"
UIMAGE_MAGIC = 0x27051956
FDT_MAGIC = 0xD00DFEED
ELF_MAGIC = b"\x7fELF"
UIMAGE, FIT, ELF, RAW = "uimage", "fit", "elf", "raw"
#: the U-Boot command that boots each format (a raw binary: go, or bootm once farm wraps it)
BOOT_OF_FORMAT = {UIMAGE: "bootm", FIT: "bootm", ELF: "bootelf", RAW: "go"}
#: legacy uImage header fields (include/image.h), the ones farm writes and records
IH_OS_LINUX, IH_TYPE_KERNEL, IH_COMP_NONE = 5, 2, 0
IH_ARCH = {"arm64": 22, "amd64": 24}
IH_OS = {0: "invalid", 1: "openbsd", 2: "netbsd", 3: "freebsd", 5: "linux", 17: "u-boot", 20: "rtems", 25: "qnx",
         27: "vxworks", 29: "efi", 30: "tee", 31: "opensbi", 32: "arm-trusted-firmware"}
IH_TYPE = {1: "standalone", 2: "kernel", 3: "ramdisk", 4: "multi", 5: "firmware", 6: "script", 8: "flat_dt",
           14: "kernel_noload"}
IH_COMP = {0: "none", 1: "gzip", 2: "bzip2", 3: "lzma", 4: "lzo", 5: "lz4", 6: "zstd"}
EM_ARCH = {183: "arm64", 62: "amd64"}  # ELF e_machine
_ADDRESS_LIMIT = 1 << 64
_NAME_CHARS = re.compile(r"[^A-Za-z0-9._-]")


# --- what a file is (pure) ----------------------------------------------------------------------------

def file_format(data: bytes) -> str:
    """``uimage``, ``fit``, ``elf`` or ``raw``, by the file's first bytes."""
    if len(data) >= 64 and struct.unpack_from(">I", data)[0] == UIMAGE_MAGIC:
        return UIMAGE
    if len(data) >= 40 and struct.unpack_from(">I", data)[0] == FDT_MAGIC:
        return FIT
    if data[:4] == ELF_MAGIC:
        return ELF
    return RAW


def uimage_header(data: bytes) -> dict:
    """A legacy uImage's header (include/image.h ``struct legacy_img_hdr``), its CRCs checked: a file
    whose header or data CRC is wrong would be refused by U-Boot's bootm, so it is refused here."""
    if len(data) < 64:
        raise ValueError("shorter than a uImage header (64 bytes)")
    magic, hcrc, time, size, load, entry, dcrc, os_, arch, kind, comp = struct.unpack_from(">IIIIIIIBBBB", data)
    if magic != UIMAGE_MAGIC:
        raise ValueError("no uImage magic")
    if zlib.crc32(data[:4] + b"\0\0\0\0" + data[8:64]) != hcrc:
        raise ValueError("the uImage header's CRC is wrong")
    if len(data) < 64 + size:
        raise ValueError(f"truncated: the header says {size} bytes of data, the file has {len(data) - 64}")
    if zlib.crc32(data[64:64 + size]) != dcrc:
        raise ValueError("the uImage data's CRC is wrong")
    arches = {v: k for k, v in IH_ARCH.items()}
    return {"name": data[32:64].split(b"\0", 1)[0].decode("latin-1"), "size": size, "load_addr": f"{load:#x}",
            "entry": f"{entry:#x}", "os": IH_OS.get(os_, str(os_)), "arch": arches.get(arch, str(arch)),
            "type": IH_TYPE.get(kind, str(kind)), "compression": IH_COMP.get(comp, str(comp))}


def make_uimage(payload: bytes, *, load_addr: int, name: str, arch: str = "arm64") -> bytes:
    """``payload`` as a legacy uImage, as ``mkimage -A ARCH -O linux -T kernel -C none -a ADDR -e ADDR
    -n NAME`` makes it, with time 0: the same payload gives the same bytes. bootm copies the payload to
    ``load_addr`` and jumps there as to a Linux kernel (x0: the device tree)."""
    if not 0 <= load_addr < 1 << 32:
        raise JobError(f"load address {load_addr:#x}: a uImage holds 32-bit addresses")
    if arch not in IH_ARCH:
        raise JobError(f"a uImage for {arch!r}: farm writes them for {', '.join(IH_ARCH)}")
    raw_name = name.encode("ascii", "replace")[:31].ljust(32, b"\0")
    header = struct.pack(">IIIIIIIBBBB", UIMAGE_MAGIC, 0, 0, len(payload), load_addr, load_addr,
                         zlib.crc32(payload), IH_OS_LINUX, IH_ARCH[arch], IH_TYPE_KERNEL, IH_COMP_NONE) + raw_name
    header = header[:4] + struct.pack(">I", zlib.crc32(header)) + header[8:]
    return header + payload


@attrs.frozen
class FdtNode:
    name: str
    props: dict[str, bytes]
    children: dict[str, "FdtNode"]

    def text(self, prop: str) -> str | None:
        value = self.props.get(prop)
        return value.split(b"\0", 1)[0].decode("latin-1") if value is not None else None


def parse_fdt(data: bytes) -> FdtNode:
    """A flattened device tree (a FIT is one) as nodes and raw property values (devicetree spec 5.4)."""
    if len(data) < 40 or struct.unpack_from(">I", data)[0] != FDT_MAGIC:
        raise ValueError("no device tree magic")
    total, off_struct, off_strings = struct.unpack_from(">III", data, 4)
    if total > len(data):
        raise ValueError(f"truncated: the header says {total} bytes, the file has {len(data)}")
    pos, stack = off_struct, []
    root: FdtNode | None = None

    def string(at: int) -> str:
        end = data.index(b"\0", at)
        return data[at:end].decode("latin-1")

    while True:
        (token,) = struct.unpack_from(">I", data, pos)
        pos += 4
        if token == 1:  # FDT_BEGIN_NODE
            name = string(pos)
            pos = (pos + len(name) + 1 + 3) & ~3
            node = FdtNode(name, {}, {})
            if stack:
                stack[-1].children[name] = node
            else:
                root = node
            stack.append(node)
        elif token == 2:  # FDT_END_NODE
            stack.pop()
        elif token == 3:  # FDT_PROP
            length, nameoff = struct.unpack_from(">II", data, pos)
            stack[-1].props[string(off_strings + nameoff)] = data[pos + 8:pos + 8 + length]
            pos = (pos + 8 + length + 3) & ~3
        elif token == 4:  # FDT_NOP
            continue
        elif token == 9:  # FDT_END
            break
        else:
            raise ValueError(f"unknown device tree token {token:#x} at offset {pos - 4}")
    if root is None or stack:
        raise ValueError("the structure block does not close its nodes")
    return root


def fit_summary(data: bytes) -> dict:
    """What a FIT holds: its images (type, arch, os, compression, addresses) and the default
    configuration's kernel, ramdisk and fdt, as bootm will pick them."""
    try:
        root = parse_fdt(data)
    except (ValueError, struct.error, IndexError) as exc:
        raise ValueError(f"not a FIT image: {exc}") from None
    images = root.children.get("images")
    if images is None:
        raise ValueError("a device tree, but not a FIT image (no /images node)")
    found = {}
    for name, node in images.children.items():
        entry = {k: node.text(k) for k in ("type", "arch", "os", "compression", "description") if k in node.props}
        for k in ("load", "entry"):
            if k in node.props and len(node.props[k]) in (4, 8):
                value = int.from_bytes(node.props[k], "big")
                entry[k] = f"{value:#x}"
        found[name] = entry
    configs = root.children.get("configurations")
    default = configs.text("default") if configs is not None else None
    chosen = configs.children.get(default) if configs is not None and default else None
    config = {k: chosen.text(k) for k in ("kernel", "ramdisk", "fdt") if chosen is not None and k in chosen.props}
    return {"description": root.text("description") or "", "images": found, "configuration": default,
            **config}


def elf_summary(data: bytes) -> dict:
    """An ELF file's machine, entry and loadable segments (where bootelf puts them)."""
    if data[:4] != ELF_MAGIC or len(data) < 64 or data[4] != 2:
        raise ValueError("not a 64-bit ELF file")
    end = "<" if data[5] == 1 else ">"
    machine, = struct.unpack_from(end + "H", data, 18)
    entry, phoff = struct.unpack_from(end + "QQ", data, 24)
    phentsize, phnum = struct.unpack_from(end + "HH", data, 54)
    segments = []
    for i in range(phnum):
        base = phoff + i * phentsize
        p_type, _, _, vaddr, paddr, filesz, memsz = struct.unpack_from(end + "IIQQQQQ", data, base)
        if p_type == 1:  # PT_LOAD
            segments.append({"paddr": f"{paddr:#x}", "filesz": filesz, "memsz": memsz})
    return {"arch": EM_ARCH.get(machine, str(machine)), "entry": f"{entry:#x}", "segments": segments}


def describe(data: bytes) -> tuple[str, dict]:
    """The file's format and what its header says (ValueError: a header that does not hold)."""
    kind = file_format(data)
    if kind == UIMAGE:
        return kind, uimage_header(data)
    if kind == FIT:
        return kind, fit_summary(data)
    if kind == ELF:
        return kind, elf_summary(data)
    return kind, {}


def header_arch(kind: str, header: dict) -> str | None:
    """The architecture a file's header names (None: a raw binary, or a FIT whose kernel says none)."""
    if kind == FIT:
        kernel = header.get("kernel")
        arch = header["images"].get(kernel, {}).get("arch") if kernel else None
        return {"arm64": "arm64", "aarch64": "arm64", "x86_64": "amd64"}.get(arch or "", arch)
    return header.get("arch")


def parse_address(value: object, what: str) -> int:
    """A load address as a pipeline or env file gives it: a number, or text in hex (``0x50000000``)."""
    if isinstance(value, bool):
        raise JobError(f"{what} {value!r}: expected an address such as 0x50000000")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and re.fullmatch(r"0[xX][0-9a-fA-F]+|[0-9]+", value.strip()):
        number = int(value.strip(), 0)
    else:
        raise JobError(f"{what} {value!r}: expected an address such as 0x50000000")
    if not 0 <= number < _ADDRESS_LIMIT:
        raise JobError(f"{what} {value!r}: not a 64-bit address")
    return number


# --- the image in farm's cache ------------------------------------------------------------------------

def _artifact_name(path: Path) -> str:
    name = _NAME_CHARS.sub("_", path.name).lstrip(".") or "system.img"
    return name[:100]


def _stem(path: Path) -> str:
    return _NAME_CHARS.sub("-", path.stem).strip("-.") or "system"


def system_image(path: str | Path, *, name: str | None = None, arch: str | None = None,
                 load_addr: int | None = None, cache: Path | None = None) -> Image:
    """The system image at ``path`` (see the module docstring): a directory with a system manifest.json,
    a recipe of farm's bare-metal programs (``.yaml``), or a file the lab brings, copied into farm's cache.

    ``name`` (default the file's stem), ``arch`` (default what its header says; required for a raw
    binary) and ``load_addr`` (a raw binary's, required for one: where ``go`` jumps and where the uImage
    farm wraps it in is loaded) apply to a file only. Bad input is a JobError naming the path."""
    path = Path(path)
    if path.is_dir():  # booted in place: checked as --image DIR is (a lab's stale manifest is refused)
        image = load_image(path)
        if image.kind != SYSTEM:
            raise JobError(f"{path}: a {image.kind} image (kernel + initrd), not a system image: a netboot setup "
                           "boots it")
        for artifact in image.manifest.get("artifacts") or {}:
            if (path / str(artifact)).is_file():
                _refuse_private(path / str(artifact))
        return content_keyed(verify_artifacts(image))
    if path.suffix in (".yaml", ".yml"):
        from ..config import load_yaml
        from .baremetal import build_baremetal
        from .fit import build_linux_system, is_linux_system_recipe

        if is_linux_system_recipe(load_yaml(path, "system recipe")):
            return build_linux_system(path, cache=cache)
        return build_baremetal(path, cache=cache)
    if not path.is_file():
        raise JobError(f"{path}: no such file or directory (a system image: a file the lab built, a directory "
                       "with a manifest.json, or a recipe of farm's bare-metal programs)")
    _refuse_private(path)
    return _lab_image(path, name=name, arch=arch, load_addr=load_addr, cache=cache or default_cache())


def _refuse_private(path: Path) -> None:
    """A JobError when ``path`` (or the file a symlink at it names) is readable by its owner only: farm copies a
    system image into its cache and, when the run ends, into the lab's archive, where every lab member reads
    it, whether or not the boot worked. A private file is not published on a guess: its owner says so."""
    mode = path.stat().st_mode
    if mode & 0o044:
        return
    real = path.resolve()
    shown = f"{path} (a symlink to {real})" if real != path.absolute() else str(path)
    raise JobError(f"{shown}: readable by its owner only (mode {mode & 0o777:04o}): farm copies a system image into "
                   "its cache and the lab's archive, readable by the whole lab; make it readable (chmod go+r) if "
                   "it may be shared, else keep it out of the pipeline")


def content_keyed(image: Image) -> Image:
    """``image`` with a ``key`` in its manifest: a lab's directory manifest need not write one (farm's keys
    are farm's), so it gets the address of what it holds (run.json's ``image_key``, the archive's)."""
    if "key" in image.manifest:
        return image
    content = {k: image.manifest.get(k) for k in ("name", "arch", "boot", "load_addr", "artifacts")}
    key = hashlib.sha256(json.dumps({"builder": BUILDER_VERSION, **content}, sort_keys=True).encode()).hexdigest()
    return attrs.evolve(image, manifest={**image.manifest, "key": key})


def _lab_image(path: Path, *, name: str | None, arch: str | None, load_addr: int | None, cache: Path) -> Image:
    from . import cachefs
    from .build import VERIFIED, _write_record, verify_cached

    data = path.read_bytes()
    try:
        kind, header = describe(data)
    except ValueError as exc:
        raise JobError(f"{path}: {exc}") from None
    said = header_arch(kind, header)
    if arch is not None and said is not None and said != arch:
        raise JobError(f"{path}: its header says {said}, but the target is {arch}")
    arch = arch or said
    if arch is None:
        raise JobError(f"{path}: a raw binary says not what it runs on: give the target's architecture")
    name = name or _stem(path)
    if (problem := name_problem(name, "image name")):
        raise JobError(f"{path}: {problem}")
    if kind == RAW and load_addr is None:
        raise JobError(f"{path}: a raw binary: give its load address (where U-Boot's go jumps, e.g. 0x50000000)")
    sha = hashlib.sha256(data).hexdigest()
    artifact = _artifact_name(path)
    key = hashlib.sha256(json.dumps({"builder": BUILDER_VERSION, "sha256": sha, "name": name, "arch": arch,
                                     "artifact": artifact, "load_addr": load_addr}, sort_keys=True).encode()).hexdigest()
    image_dir = cache / "images" / f"{name}-{key[:16]}"
    with cachefs.locked(image_dir.with_name(f".{image_dir.name}.lock")):
        if verify_cached(image_dir, key) is None:
            return attrs.evolve(load_image(image_dir), cached=True)
        files = {artifact: data}
        boot = {BOOT_OF_FORMAT[kind]: artifact}
        formats = {artifact: kind}
        if kind == RAW:
            wrapped = f"{Path(artifact).stem}.uimg"
            files[wrapped] = make_uimage(data, load_addr=load_addr, name=name, arch=arch)
            boot["bootm"] = wrapped
            formats[wrapped] = UIMAGE
        manifest = {
            "kind": SYSTEM, "name": name, "arch": arch, "key": key, "builder": BUILDER_VERSION,
            "boot": boot, "formats": formats, "header": header,
            "load_addr": f"{load_addr:#x}" if load_addr is not None else header.get("load_addr"),
            "source": {"path": str(path.resolve()), "sha256": sha, "size": len(data)},
            "artifacts": {n: {"sha256": hashlib.sha256(b).hexdigest(), "size": len(b)} for n, b in files.items()},
        }
        _write_image(image_dir, files, manifest)
        _write_record(image_dir / VERIFIED, {n: cachefs.stat_fingerprint(image_dir / n) for n in files})
    return load_image(image_dir)


def _write_image(image_dir: Path, files: dict[str, bytes], manifest: dict) -> None:
    """The image directory, made privately and renamed into place (the caller holds its lock)."""
    from . import cachefs
    from .build import BUILD_PREFIX

    image_dir.parent.mkdir(parents=True, exist_ok=True)
    with cachefs.private_dir(image_dir.parent, BUILD_PREFIX) as tmp:
        for file_name, content in files.items():
            (tmp / file_name).write_bytes(content)
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        if image_dir.exists() or image_dir.is_symlink():
            cachefs.discard(image_dir)
        os.replace(tmp, image_dir)

