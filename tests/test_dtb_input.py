"""An env file's ``UBootNetbootStrategy.dtb`` the image cannot give is bad input: exit 2 naming the env
file's field and the DTBs the image has, before anything is staged or powered on (no QEMU here)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from labgrid import Environment
from labgrid.strategy.common import StrategyError

from farm.errors import JobError

from .conftest import ROOT, run_farm

TWIN = ROOT / "env" / "qemu-maaxboard.yaml"


def image_dir(path: Path, dtbs: tuple[str, ...] = ()) -> Path:
    """An image directory as farm build makes it, its DTBs listed under dtbs and artifacts."""
    path.mkdir(parents=True)
    artifacts = {}
    for name, data in (("Image", b"kernel"), ("initrd.cpio.gz", b"initrd"), *((d, b"\xd0\x0d\xfe\xed" + d.encode()) for d in dtbs)):
        (path / name).write_bytes(data)
        artifacts[name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    manifest = {"name": "maaxboard-lean" if dtbs else "maaxboard-bench", "arch": "arm64", "kernel": "Image",
                "initrd": "initrd.cpio.gz", "key": "0123456789abcdef" * 4, "artifacts": artifacts,
                **({"dtbs": sorted(dtbs)} if dtbs else {})}
    (path / "manifest.json").write_text(json.dumps(manifest))
    return path


def twin_env(tmp_path: Path, dtb: str) -> tuple[Path, int]:
    """The twin's env file with ``dtb:`` set, and the line it is on."""
    lines = TWIN.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("fdt_addr:"))
    lines.insert(at + 1, f"        dtb: {json.dumps(dtb)}\n")
    path = tmp_path / "env.yaml"
    path.write_text("".join(lines).replace("../images/", f"{ROOT}/images/"))
    return path, at + 2


@pytest.mark.parametrize("dtbs, listed", [
    (("imx8mq-evk.dtb",), r"is not a DTB of image 'maaxboard-lean' \(it has: imx8mq-evk\.dtb\)"),
    ((), r"image 'maaxboard-bench' has no DTB .*leave dtb empty to boot U-Boot's own device tree"),
])
def test_farm_boot_refuses_a_dtb_the_image_lacks(tmp_path, dtbs, listed):
    image = image_dir(tmp_path / "img", dtbs)
    env, line = twin_env(tmp_path, "qemu-virt-2cpu.dtb")
    tftp = tmp_path / "tftp"
    proc = run_farm("boot", "--env", str(env), "--image", str(image), "--job", "j1", "--log-dir",
                    str(tmp_path / "console"), env={"LG_TFTP_ROOT": str(tftp), "LG_USERNAME": "alice"}, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert re.search(rf"{re.escape(str(env))}:{line}: targets\.maaxboard-twin\.drivers\.UBootNetbootStrategy\.dtb: "
                     rf"'qemu-virt-2cpu\.dtb'.*{listed}", proc.stderr), proc.stderr
    # before power-on: the twin's QEMU never ran (its console log is empty), nothing is left staged
    log = tmp_path / "console" / "maaxboard-twin.log"
    assert not log.exists() or log.read_text() == ""
    assert not (tftp / "alice" / "j1").exists()


def test_farm_run_refuses_it_as_the_boots_error(tmp_path):
    image = image_dir(tmp_path / "img")
    env, line = twin_env(tmp_path, "imx8mq-evk.dtb")
    proc = run_farm("run", "pipelines/smoke.yaml", "--env", str(env), "--image", str(image), "--out",
                    str(tmp_path / "r"), env={"LG_TFTP_ROOT": str(tmp_path / "tftp")}, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{env}:{line}: targets.maaxboard-twin.drivers.UBootNetbootStrategy.dtb: 'imx8mq-evk.dtb'" in proc.stderr
    assert "has no DTB" in proc.stderr


@pytest.mark.parametrize("bad", ["freescale/imx8mq-evk.dtb", "x.dtb;reset", "../x.dtb", "${fdtfile}"])
def test_a_dtb_name_not_fit_for_uboot_is_refused_when_the_env_file_is_read(tmp_path, bad):
    image = image_dir(tmp_path / "img", ("imx8mq-evk.dtb",))
    env, line = twin_env(tmp_path, bad)
    proc = run_farm("boot", "--env", str(env), "--image", str(image), env={"LG_TFTP_ROOT": str(tmp_path / "tftp")},
                    timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{env}:{line}: targets.maaxboard-twin.drivers.UBootNetbootStrategy.dtb: {bad!r}" in proc.stderr
    assert "characters not allowed on a U-Boot command line" in proc.stderr


def test_the_strategy_stages_the_dtb_and_booti_uses_it(tmp_path, monkeypatch):
    """The commands the twin gets, without booting it: the DTB staged beside kernel and initrd."""
    from farm.boot.session import boot_opened_target  # noqa: F401  (registers farm's drivers)
    from farm.images.build import load_image

    monkeypatch.setenv("LG_TFTP_ROOT", str(tmp_path / "tftp"))
    image = load_image(image_dir(tmp_path / "img", ("imx8mq-evk.dtb", "qemu-virt-2cpu.dtb")))
    env, _ = twin_env(tmp_path, "qemu-virt-2cpu.dtb")
    target = Environment(str(env)).get_target("maaxboard-twin")
    try:
        strategy = target.get_strategy()
        tftp = target.get_driver("JobTFTPProviderDriver")
        strategy.stage_image(tftp, image, "alice/j2")
        assert (tmp_path / "tftp" / "alice" / "j2" / "qemu-virt-2cpu.dtb").read_bytes() == \
            (image.path / "qemu-virt-2cpu.dtb").read_bytes()
        assert strategy.commands()[-5:-2] == ['test -n "${fdt_addr_r}"', "tftpboot ${fdt_addr_r} alice/j2/qemu-virt-2cpu.dtb",
                                              "tftpboot ${ramdisk_addr_r} alice/j2/initrd.cpio.gz"]
        assert strategy.boot_line() == "booti ${kernel_addr_r} ${ramdisk_addr_r}:${farm_initrd_size} ${fdt_addr_r}"
        assert strategy.dtb_used == {"name": "qemu-virt-2cpu.dtb",
                                     "sha256": image.manifest["artifacts"]["qemu-virt-2cpu.dtb"]["sha256"]}
    finally:
        target.cleanup()


def test_without_dtb_the_twin_boots_uboots_device_tree(tmp_path, monkeypatch):
    from farm.boot.session import boot_opened_target  # noqa: F401
    from farm.images.build import load_image

    monkeypatch.setenv("LG_TFTP_ROOT", str(tmp_path / "tftp"))
    image = load_image(image_dir(tmp_path / "img", ("imx8mq-evk.dtb",)))
    target = Environment(str(TWIN)).get_target("maaxboard-twin")
    try:
        strategy = target.get_strategy()
        strategy.stage_image(target.get_driver("JobTFTPProviderDriver"), image, "alice/j3")
        assert not any(".dtb" in c for c in strategy.commands())
        assert strategy.boot_line().endswith(" ${fdtcontroladdr}")
        assert strategy.dtb_used == "u-boot"
        assert sorted(p.name for p in (tmp_path / "tftp" / "alice" / "j3").iterdir()) == ["Image", "initrd.cpio.gz"]
    finally:
        target.cleanup()


def test_set_image_without_the_dtb_is_refused_before_power_on(tmp_path, monkeypatch):
    monkeypatch.setenv("LG_TFTP_ROOT", str(tmp_path / "tftp"))
    env, line = twin_env(tmp_path, "imx8mq-evk.dtb")
    target = Environment(str(env)).get_target("maaxboard-twin")
    try:
        strategy = target.get_strategy()
        strategy.set_image("a/j/Image", "a/j/initrd.cpio.gz")
        with pytest.raises(StrategyError) as info:  # labgrid's never_retry wraps it
            strategy.transition("shell")
        assert isinstance(info.value.__cause__, JobError)
        assert re.search(rf"env.yaml:{line}: .*UBootNetbootStrategy\.dtb: 'imx8mq-evk.dtb' was not staged",
                         str(info.value.__cause__))
        assert strategy.status.name == "unknown"  # never powered on
    finally:
        target.cleanup()


def test_the_env_files_boot_uboots_tree_and_the_boards_shows_the_lean_images_dtb(tmp_path):
    """The twins' and the board's env files boot U-Boot's DT (the virtual lab runs the board's file on a
    QEMU virt twin); the board's commented line names the DTB images/maaxboard-lean.yaml builds."""
    from farm.boot.session import EnvFile
    from farm.config import load_yaml

    for name in ("qemu-maaxboard.yaml", "qemu-maaxboard-el2.yaml", "maaxboard.yaml"):
        drivers = next(iter(load_yaml(ROOT / "env" / name)["targets"].values()))["drivers"]
        assert "dtb" not in drivers["UBootNetbootStrategy"], name
    board = (ROOT / "env" / "maaxboard.yaml").read_text()
    assert board.count("        # dtb: imx8mq-evk.dtb\n") == 1
    uncommented = tmp_path / "maaxboard.yaml"
    uncommented.write_text(board.replace("        # dtb: imx8mq-evk.dtb\n", "        dtb: imx8mq-evk.dtb\n"))
    EnvFile.load(uncommented)  # a valid name
    lean = load_yaml(ROOT / "images" / "maaxboard-lean.yaml")["kernel"]["dtbs"]
    assert "imx8mq-evk.dtb" in [Path(d).name for d in lean]  # the image's DTBs are named by their file name
