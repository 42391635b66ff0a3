"""The host image of a setup with a guest: the target's recipe plus QEMU, and the guest's kernel and initrd.

    host = build(recipe, guest=guest_image)   # farm.images.build

The host is a recipe *setting*, not a copy of the recipe: the same packages, files, programs and
modules, plus Debian's QEMU system emulator for the architecture (its ELF closure, no firmware: the
guest's ``virtio-net-device`` needs no option ROM), util-linux's ``chrt`` and ``taskset`` (pinning and
real-time policies), KVM's modules where the kernel has them as modules (amd64), and the guest image's kernel and initrd at :data:`GUEST_DIR` in the initrd. Its
cache key includes the guest image's key, its manifest the guest's artifacts with their sha256.
"""

from __future__ import annotations

import hashlib
import json
import posixpath

import attrs

from ..errors import JobError
from ..values import name_problem
from .cpio import Entry
from .recipe import Recipe

GUEST_DIR = "/guest"
#: arch -> (Debian package, the emulator it ships)
QEMU = {"arm64": ("qemu-system-arm", "/usr/bin/qemu-system-aarch64"),
        "amd64": ("qemu-system-x86", "/usr/bin/qemu-system-x86_64")}
#: arch -> (packages, files): the firmware QEMU loads even with -kernel. arm64's virt needs none;
#: x86's q35 needs SeaBIOS and the option ROM that boots a -kernel (linuxboot_dma), kvmvapic under KVM
FIRMWARE = {"arm64": ((), ()),
            "amd64": (("qemu-system-data", "seabios"),
                      ("/usr/share/seabios/bios-256k.bin", "/usr/share/qemu/linuxboot_dma.bin",  # Debian: both on the firmware path
                       "/usr/share/qemu/kvmvapic.bin"))}
#: arch -> KVM's kernel modules (Debian's arm64 kernel has KVM built in; amd64 builds it as modules)
KVM_MODULES = {"arm64": (), "amd64": ("kvm_intel", "kvm_amd")}
TOOLS_PACKAGE = "util-linux"
TOOLS = ("/usr/bin/chrt", "/usr/bin/taskset")
HOST_SUFFIX = "-host"


def host_recipe(recipe: Recipe, guest_manifest: dict) -> Recipe:
    """``recipe`` with QEMU and the pinning tools added, named ``<name>-host``."""
    if guest_manifest["arch"] != recipe.arch:
        raise JobError(f"{recipe.source}: the guest image '{guest_manifest['name']}' is {guest_manifest['arch']} "
                       f"but the host is {recipe.arch}: a KVM guest runs the host's architecture")
    name = recipe.name + HOST_SUFFIX
    if (problem := name_problem(name, "image name")):
        raise recipe.error("name", f"the host image's name: {problem}")
    package, binary = QEMU[recipe.arch]
    return attrs.evolve(recipe, name=name,
                        modules=tuple(dict.fromkeys([*recipe.modules, *KVM_MODULES[recipe.arch]])),
                        packages=tuple(dict.fromkeys([*recipe.packages, package, TOOLS_PACKAGE,
                                                      *FIRMWARE[recipe.arch][0]])),
                        files=tuple(dict.fromkeys([*(recipe.files or ("/bin/busybox",)), binary, *TOOLS,
                                                   *FIRMWARE[recipe.arch][1]])))


def host_key(key: str, guest_manifest: dict) -> str:
    """The host image's cache key: its own (recipe + packages) and the guest image's, with the guest's bytes."""
    guest = {"key": guest_manifest["key"],
             "artifacts": {n: a["sha256"] for n, a in sorted(guest_manifest["artifacts"].items())}}
    return hashlib.sha256(json.dumps({"host": key, "guest": guest}, sort_keys=True).encode()).hexdigest()


def guest_paths(guest_manifest: dict) -> dict[str, str]:
    """Where the guest's kernel and initrd are in the host's file system."""
    return {"kernel": posixpath.join(GUEST_DIR, guest_manifest["kernel"]),
            "initrd": posixpath.join(GUEST_DIR, guest_manifest["initrd"])}


def guest_entries(guest_path, guest_manifest: dict) -> dict[str, Entry]:
    """The host initrd's entries for the guest: its kernel, initrd and manifest under /guest/, each
    checked against the guest manifest's sha256 as it is read."""
    entries = {}
    for role, path in guest_paths(guest_manifest).items():
        name = guest_manifest[role]
        data = (guest_path / name).read_bytes()
        if hashlib.sha256(data).hexdigest() != guest_manifest["artifacts"][name]["sha256"]:
            raise JobError(f"{guest_path / name}: does not match its sha256 in the guest image's manifest")
        entries[path] = Entry.file(path, data)
    manifest = posixpath.join(GUEST_DIR, "manifest.json")
    entries[manifest] = Entry.file(manifest, (json.dumps(guest_manifest, indent=2, sort_keys=True) + "\n").encode())
    return entries


def guest_record(guest_manifest: dict) -> dict:
    """What the host manifest says of its guest (run.json's topology takes it from there)."""
    return {"name": guest_manifest["name"], "arch": guest_manifest["arch"], "key": guest_manifest["key"],
            "kernel_version": guest_manifest.get("kernel_version"), "paths": guest_paths(guest_manifest),
            "artifacts": {n: dict(a) for n, a in sorted(guest_manifest["artifacts"].items())}}


def guest_files(host_manifest: dict) -> tuple[str, str]:
    """The guest's kernel and initrd paths on a host image (what start_guest is given)."""
    guest = host_manifest.get("guest")
    if not isinstance(guest, dict):
        raise JobError(f"image '{host_manifest.get('name')}' is not a host image (no guest in its manifest): "
                       "build it with a guest (farm build RECIPE --guest GUEST_RECIPE)")
    return guest["paths"]["kernel"], guest["paths"]["initrd"]
