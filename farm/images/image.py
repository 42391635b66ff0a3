"""A built image as a boot takes it: the directory, its manifest and its artifacts (no builder code: the boot
path imports this, the builder, farm.images.build, only when it builds).

An image is of one of two kinds (its manifest's ``kind``): ``linux`` (the default: a kernel and an initrd,
farm.images.build) or ``system`` (a system image a lab brings, or one of farm's bare-metal programs: one
file U-Boot boots as it is, through ``bootm``, ``bootelf`` or ``go``; farm.images.system). Both are
directories of artifacts with their sha256 in manifest.json, content-addressed alike."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any, Literal

import attrs

from ..config import load_json
from ..errors import JobError
from ..schema import Invalid, Missing, setting

_PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
_SHA256 = re.compile(r"[0-9a-f]{64}")
#: the kinds of image (a manifest's ``kind``; absent: linux)
LINUX, SYSTEM = "linux", "system"
#: how U-Boot hands over to a system image, by its command (the file each boots: a system manifest's ``boot``)
SYSTEM_BOOTS = {"bootm": "a uImage or FIT image", "bootelf": "an ELF file", "go": "a raw binary at its load address"}


def default_cache() -> Path:
    return Path(os.environ.get("FARM_CACHE") or Path.home() / ".cache" / "farm")


@attrs.frozen
class Image:
    """A built image directory: artifacts + manifest.json."""

    path: Path
    manifest: dict
    cached: bool = False

    @property
    def kind(self) -> str:
        """``linux`` (kernel + initrd) or ``system`` (one file booted as it is: :data:`SYSTEM_BOOTS`)."""
        return self.manifest.get("kind", LINUX)

    @property
    def boots(self) -> dict[str, str]:
        """A system image's files by the U-Boot command that boots each (``{"bootm": "x.uimg"}``)."""
        return dict(self.manifest.get("boot") or {})

    @property
    def kernel(self) -> Path:
        return self.path / self.manifest["kernel"]

    @property
    def initrd(self) -> Path:
        return self.path / self.manifest["initrd"]

    @property
    def name(self) -> str:
        return self.manifest["name"]

    @property
    def arch(self) -> str:
        return self.manifest["arch"]


def load_image(path: str | Path) -> Image:
    """An image directory made by :func:`build` (``--image DIR``)."""
    path = Path(path)
    manifest_path = path / "manifest.json"
    if not manifest_path.exists():
        raise JobError(f"{manifest_path}: not an image directory (no manifest.json; make one with `farm build`)")
    manifest = load_json(manifest_path, "manifest.json")  # bounded: a deep one is refused, not a RecursionError
    problem = manifest_problem(manifest)
    if problem:
        raise JobError(f"{manifest_path}: {problem}")
    booted = manifest["boot"].values() if manifest.get("kind") == SYSTEM else (manifest["kernel"], manifest["initrd"])
    for name in booted:
        if not (path / name).is_file():
            raise JobError(f"{path / name}: artifact listed in manifest.json is missing")
    return Image(path, manifest)


def verify_artifacts(image: Image) -> Image:
    """``image`` if every artifact is the one its manifest.json lists (sha256); else a JobError naming the
    directory and the file. An image handed in from outside farm's cache (``--image DIR``, a setup's
    ``system.path`` directory) is checked so before it is booted: a file rebuilt or truncated after its
    manifest was written (a stale manifest) would otherwise boot, and be recorded, as what it is not."""
    for name, meta in image.manifest["artifacts"].items():
        file = image.path / name
        if not file.is_file():
            raise JobError(f"{image.path}: {name}, listed in manifest.json, is missing")
        with file.open("rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
        if digest != meta["sha256"]:
            raise JobError(f"{image.path}: {name} does not match the sha256 in manifest.json (damaged, replaced, "
                           "or the manifest is stale): build it again, or write its manifest again")
    return image


def manifest_problem(manifest: object) -> str | None:
    """What is wrong with a manifest's shape (None when nothing): ``field: problem`` (:class:`Manifest`)."""
    if not isinstance(manifest, dict):
        return "not a JSON object"
    from ..schema.read import structure

    try:
        structure(manifest, Manifest)
    except JobError as exc:
        return str(exc)
    return None


def _sha256_problem(value: str) -> str | None:
    return None if _SHA256.fullmatch(value) else f"{value!r} is not a sha256 (64 lowercase hex digits)"


@attrs.frozen
class Artifact:
    """A file of the image: its sha256 (checked before a boot of a directory handed in) and size."""

    sha256: str = setting(check=_sha256_problem, doc="its sha256 (64 lowercase hex digits)")
    size: int = setting(check=lambda size: None if size >= 0 else f"{size}: not a size in bytes", doc="its size in bytes")


@attrs.frozen
class Manifest:
    """An image directory's manifest.json, farm's (farm build) or a lab's (docs/system-images.md): what a boot
    takes from it. Its names become paths, so they must be plain file names, each artifact with its sha256."""

    OPEN = "what farm records of how it built the image (builder, recipe, packages, modules, ...): not read back"

    name: str = setting(doc="the image's name")
    arch: str = setting(doc="its Debian architecture (arm64, amd64)")
    artifacts: dict[str, Artifact] = setting(doc="every file of the image, by plain file name")
    kind: Literal["linux", "system"] = setting(LINUX, doc="linux: a kernel and an initrd; system: one file U-Boot "
                                                         "boots as it is")
    key: str | None = setting(None, doc="farm's content address of the image (a lab's need not give one)")
    kernel: str | None = setting(None, doc="linux: the kernel, one of the artifacts")
    initrd: str | None = setting(None, doc="linux: the initrd, one of the artifacts")
    boot: dict[Literal["bootm", "bootelf", "go"], str] | None = setting(
        None, doc="system: the file each U-Boot command boots, e.g. {\"bootm\": \"x.uimg\"}")
    load_addr: str | None = setting(None, doc="system: where go loads and jumps, as hex text")
    formats: dict[str, str] | None = setting(None, doc="system: each file's format (fit, uimage, elf, raw)")
    header: dict[str, Any] | None = setting(None, doc="system: what a file's header says (a FIT's configuration)")

    def validate(self, given: Any) -> None:
        for name in self.artifacts:
            if not _PLAIN_NAME.fullmatch(name):
                raise Invalid(f"{name!r} is not a plain file name", key=("artifacts", name))
        booted = {"boot": self.boot} if self.kind == SYSTEM else {"kernel": self.kernel, "initrd": self.initrd}
        for key, value in booted.items():
            if value is None:
                raise Missing("", key=key)
        if self.kind == SYSTEM:
            if not self.boot:
                raise Invalid("expected the file each U-Boot command boots, e.g. {\"bootm\": \"x.uimg\"}", key="boot")
            booted = {("boot", command): name for command, name in self.boot.items()}
        for key, name in booted.items():
            if name not in self.artifacts:
                raise Invalid(f"{name!r} is not one of the artifacts", key=key)


def read_initrd(path: Path) -> bytes:
    """The cpio inside an image's initrd file, whichever way it was compressed (by its name)."""
    data = path.read_bytes()
    if path.name.endswith(".zst"):
        done = subprocess.run(["zstd", "-q", "-d", "-c"], input=data, capture_output=True)
        if done.returncode != 0:
            raise JobError(f"{path}: not a zstd file: {done.stderr.decode(errors='replace').strip()[-200:]}")
        return done.stdout
    return gzip.decompress(data)
