"""The device tree a U-Boot netboot hands Linux: one of the image's DTBs, or U-Boot's own.

A recipe kernel built from source ships the DTBs its ``kernel.dtbs`` names beside the kernel (the
manifest lists them under ``dtbs`` and ``artifacts``). The env file's ``UBootNetbootStrategy.dtb``
picks one by file name; empty, booti gets U-Boot's DT (``fdt_addr``), as before. Pure checks here;
the strategy stages the file (farm.boot.uboot).
"""

from __future__ import annotations

import re

#: a DTB's file name in an image: one path component, typed on a U-Boot command line
_DTB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}")

#: what run.json says when booti was given U-Boot's own device tree
UBOOT_DT = "u-boot"


def dtb_name_problem(value: object) -> str | None:
    """Why ``value`` is not a DTB file name an env file may give (``""``: U-Boot's DT), or None."""
    if not isinstance(value, str):
        return f"a DTB file name must be a string, not {type(value).__name__}"
    if value and (not _DTB_NAME.fullmatch(value) or ".." in value):
        return (f"{value!r} is not a DTB file name of an image (letters, digits and . _ + -, not first, "
                "no '/' or '..'): characters not allowed on a U-Boot command line")
    return None


def image_dtbs(manifest: dict) -> list[str]:
    """The DTBs an image ships: listed under ``dtbs`` and, with their sha256, under ``artifacts``."""
    artifacts = manifest.get("artifacts") or {}
    dtbs = manifest.get("dtbs") or []
    return [d for d in dtbs if isinstance(d, str) and d in artifacts] if isinstance(dtbs, list) else []


def image_dtb_problem(name: str, manifest: dict) -> str | None:
    """Why the image of ``manifest`` cannot boot with its DTB ``name``, or None."""
    if (problem := dtb_name_problem(name)):
        return problem
    have = image_dtbs(manifest)
    if name in have:
        return None
    image = manifest.get("name", "?")
    if not have:
        return (f"{name!r}: image '{image}' has no DTB (only a recipe kernel built from source with "
                "kernel.dtbs ships one); leave dtb empty to boot U-Boot's own device tree")
    return f"{name!r} is not a DTB of image '{image}' (it has: {', '.join(have)})"


def dtb_record(name: str, manifest: dict) -> dict | str:
    """What run.json says of the device tree booted: the image's DTB (name, sha256), or ``"u-boot"``."""
    if not name:
        return UBOOT_DT
    return {"name": name, "sha256": manifest["artifacts"][name]["sha256"]}
