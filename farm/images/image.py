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

import attrs

from ..config import load_json
from ..errors import JobError

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
    """What is wrong with a manifest's shape (None when nothing): its names become paths, so they must be
    plain file names, and each artifact must have its size and sha256."""
    if not isinstance(manifest, dict):
        return "not a JSON object"
    kind = manifest.get("kind", LINUX)
    if kind not in (LINUX, SYSTEM):
        return f"field 'kind': {kind!r} is not {LINUX} or {SYSTEM}"
    for key in ("name", "arch", "artifacts", *(("boot",) if kind == SYSTEM else ("kernel", "initrd"))):
        if key not in manifest:
            return f"missing field '{key}'"
    artifacts = manifest["artifacts"]
    if not isinstance(artifacts, dict):
        return "field 'artifacts' is not a mapping"
    for name, info in artifacts.items():
        if not _PLAIN_NAME.fullmatch(name):
            return f"artifacts: {name!r} is not a plain file name"
        if not (isinstance(info, dict) and isinstance(info.get("size"), int)
                and isinstance(info.get("sha256"), str) and _SHA256.fullmatch(info["sha256"])):
            return f"artifacts.{name}: expected size and sha256"
    if kind == SYSTEM:
        boots = manifest["boot"]
        if not isinstance(boots, dict) or not boots:
            return f"field 'boot': expected the file each U-Boot command boots, e.g. {{\"bootm\": \"x.uimg\"}}"
        for command, name in boots.items():
            if command not in SYSTEM_BOOTS:
                return f"boot.{command}: not one of {', '.join(SYSTEM_BOOTS)}"
            if name not in artifacts:
                return f"boot.{command}: {name!r} is not one of the artifacts"
        return None
    for key in ("kernel", "initrd"):
        if manifest[key] not in artifacts:
            return f"field '{key}': {manifest[key]!r} is not one of the artifacts"
    return None


def read_initrd(path: Path) -> bytes:
    """The cpio inside an image's initrd file, whichever way it was compressed (by its name)."""
    data = path.read_bytes()
    if path.name.endswith(".zst"):
        done = subprocess.run(["zstd", "-q", "-d", "-c"], input=data, capture_output=True)
        if done.returncode != 0:
            raise JobError(f"{path}: not a zstd file: {done.stderr.decode(errors='replace').strip()[-200:]}")
        return done.stdout
    return gzip.decompress(data)
