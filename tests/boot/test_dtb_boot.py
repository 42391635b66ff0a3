"""The image's DTB is what Linux boots with when the env file names it (UBootNetbootStrategy dtb): on
the MaaXBoard twin, with a DTB that differs from U-Boot's in a way Linux shows. QEMU's own device tree
for the twin's machine with 2 CPUs instead of the twin's 4: booted with it, Linux brings up 2 CPUs;
had booti been given U-Boot's DT (${fdtcontroladdr}, QEMU's 4-CPU tree), it would see 4."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import struct
import subprocess

import pytest

from farm.boot.console_log import ConsoleLog
from farm.boot.facts import read_facts
from farm.boot.session import EnvFile, boot_target
from farm.config import load_yaml
from farm.images.build import load_image
from farm.run import given_images

from ..conftest import ROOT, run_farm

pytestmark = pytest.mark.boot

TWIN = ROOT / "env" / "qemu-maaxboard.yaml"
DTB = "qemu-virt-2cpu.dtb"


def dump_twin_dtb(path, cpus: int) -> None:
    """QEMU's device tree for the twin's machine, CPU and memory (from its env file), with ``cpus`` CPUs."""
    doc = load_yaml(TWIN, "env file")
    qemu = doc["targets"]["maaxboard-twin"]["drivers"]["TwinQEMUDriver"]
    assert "-smp 4" in qemu["extra_args"]  # what the twin runs: the DTB's count must differ from it
    # -bios too: with firmware QEMU's virt machine has no PL061 GPIO, so its tree must not list one
    proc = subprocess.run([doc["tools"][qemu["qemu_bin"]], "-machine", f"{qemu['machine']},dumpdtb={path}",
                           "-cpu", qemu["cpu"], "-m", qemu["memory"], "-smp", str(cpus),
                           "-bios", doc["images"][qemu["bios"]], "-nographic"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and path.read_bytes()[:4] == b"\xd0\x0d\xfe\xed", proc.stderr
    pack_fdt(path)


def pack_fdt(path) -> None:
    """Cut a flattened device tree to its used size, as dtc and Kbuild write one. QEMU dumps its 1 MiB
    working buffer, mostly free space; the twin's Debian kernel hangs before its first message on that."""
    blob = bytearray(path.read_bytes())
    _, total, off_struct, off_strings, off_rsvmap, *_, size_strings, size_struct = struct.unpack(">10I", blob[:40])
    assert off_rsvmap < off_struct <= off_struct + size_struct <= off_strings  # the order dtc uses too
    end = off_strings + size_strings
    blob[4:8] = struct.pack(">I", end)
    path.write_bytes(bytes(blob[:end]))


def with_dtb(image, path, dtb_file):
    """A copy of ``image`` at ``path`` that ships ``dtb_file``, listed as `farm build` lists a recipe's DTBs."""
    shutil.copytree(image.path, path)
    shutil.copyfile(dtb_file, path / dtb_file.name)
    manifest = json.loads((path / "manifest.json").read_text())
    data = (path / dtb_file.name).read_bytes()
    manifest["artifacts"][dtb_file.name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    manifest["dtbs"] = sorted([*manifest.get("dtbs", []), dtb_file.name])
    (path / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return load_image(path)


def twin_env(path, *lines: str):
    """The twin's env file with ``lines`` added to its UBootNetbootStrategy."""
    fdt = '        fdt_addr: "${fdtcontroladdr}"'
    text = TWIN.read_text().replace(fdt, "\n".join([fdt, *(f"        {line}" for line in lines)]))
    assert all(line in text for line in lines)
    path.write_text(text.replace("../images/", f"{ROOT}/images/"))
    return path


def test_the_staged_dtb_is_the_one_linux_sees(maaxboard_image, tftp_root, tmp_path):
    dump_twin_dtb(tmp_path / DTB, cpus=2)
    image = with_dtb(maaxboard_image, tmp_path / "image", tmp_path / DTB)
    given_images([image.path], {"arm64"})  # what `farm run --image DIR` checks: every sha256 matches
    # QEMU's U-Boot has no ${fdt_addr_r}: its scriptaddr, between QEMU's DT (0x40000000) and the kernel
    env = EnvFile.load(twin_env(tmp_path / "env.yaml", f"dtb: {DTB}", 'fdt_load_addr: "0x40200000"'))
    with ConsoleLog(tmp_path / "console") as console:
        with boot_target(env, image, "t-dtb-1", console) as booted:
            staged = sorted(p.name for p in tftp_root.glob("*/t-dtb-1/*"))
            assert staged == sorted(["Image", image.initrd.name, DTB])
            facts = read_facts(booted.shell)
            assert facts.cpus == 2, f"Linux saw {facts.cpus} CPUs: the staged DTB was not booted"
            assert booted.run("ls -d /sys/firmware/devicetree/base/cpus/cpu@*") == [
                "/sys/firmware/devicetree/base/cpus/cpu@0", "/sys/firmware/devicetree/base/cpus/cpu@1"]
            assert booted.dtb == {"name": DTB, "sha256": image.manifest["artifacts"][DTB]["sha256"]}
        log = console.path("maaxboard-twin").read_text(errors="replace")
    assert re.search(rf"tftpboot 0x40200000 [^ ]+/t-dtb-1/{DTB};", log)
    assert f"Bytes transferred = {image.manifest['artifacts'][DTB]['size']}" in log
    assert "booti ${kernel_addr_r} ${ramdisk_addr_r}:${farm_initrd_size} 0x40200000" in log


def test_a_load_address_this_uboot_lacks_is_the_env_files_error(maaxboard_image, tftp_root, tmp_path):
    """The default fdt_load_addr, ${fdt_addr_r}, is not defined by QEMU's U-Boot: refused at U-Boot's
    prompt (a job error naming the field, not retried), never a DTB loaded to wherever and a reset."""
    dump_twin_dtb(tmp_path / DTB, cpus=2)
    image = with_dtb(maaxboard_image, tmp_path / "image", tmp_path / DTB)
    env = twin_env(tmp_path / "env.yaml", f"dtb: {DTB}")
    proc = run_farm("boot", "--env", str(env), "--image", str(image.path), "--log-dir", str(tmp_path / "console"),
                    timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "attempt" not in proc.stderr  # not retried
    assert re.search(rf"{re.escape(str(env))}:\d+: targets\.maaxboard-twin\.drivers\.UBootNetbootStrategy\."
                     r"fdt_load_addr: this U-Boot has no \$\{fdt_addr_r\}", proc.stderr), proc.stderr
    log = (tmp_path / "console" / "maaxboard-twin.log").read_text(errors="replace")
    assert "booti" not in log and "resetting" not in log
