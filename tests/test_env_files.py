"""The env files users run load with labgrid's own Environment, drivers and strategy resolvable."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from labgrid import Environment
from labgrid.factory import target_factory

import farm.boot.drivers  # noqa: F401  (registers farm's drivers, as the env files' imports do)
from farm.errors import JobError

from .conftest import ROOT


@pytest.mark.parametrize("name, target, strategy_name, arch", [
    ("maaxboard.yaml", "maaxboard", "UBootNetbootStrategy", "arm64"),
    ("qemu-maaxboard.yaml", "maaxboard-twin", "UBootNetbootStrategy", "arm64"),
    ("qemu-maaxboard-el2.yaml", "maaxboard-twin", "UBootNetbootStrategy", "arm64"),
    ("x86.yaml", "x86", "IPXENetbootStrategy", "amd64"),
    ("qemu-x86.yaml", "x86-twin", "IPXENetbootStrategy", "amd64"),
])
def test_env_file_loads(name, target, strategy_name, arch, monkeypatch, tmp_path):
    monkeypatch.setenv("LG_PLACE", "maaxboard-1")
    monkeypatch.setenv("LG_TFTP_ROOT", str(tmp_path))
    monkeypatch.setenv("LG_QEMU_ACCEL", "tcg")
    env = Environment(str(ROOT / "env" / name))
    config = env.config.data["targets"][target]
    for driver in config["drivers"]:
        assert driver in target_factory.drivers, driver
    for resource in config["resources"]:
        assert resource in target_factory.resources, resource
    assert strategy_name in config["drivers"]
    assert env.config.get_imports() == ["farm.boot.drivers"]
    assert env.config.get_target_option(target, "arch") == arch


def test_twin_env_builds_a_target_with_the_strategy(monkeypatch, tmp_path):
    monkeypatch.setenv("LG_TFTP_ROOT", str(tmp_path))
    monkeypatch.setenv("LG_QEMU_ACCEL", "tcg")
    env = Environment(str(ROOT / "env" / "qemu-maaxboard.yaml"))
    target = env.get_target("maaxboard-twin")
    try:
        strategy = target.get_strategy()
        assert type(strategy).__name__ == "UBootNetbootStrategy"
        assert strategy.tftp_server == "10.0.2.2"
        qemu = target.get_driver("QEMUDriver", activate=False)
        args = qemu.get_qemu_base_args()
        assert args[args.index("-nic") + 1] == f"user,model=virtio-net-pci,tftp={tmp_path}"
        assert args[args.index("-accel") + 1] == "tcg"
    finally:
        target.cleanup()


@pytest.mark.parametrize("name, machine, memory", [
    ("qemu-maaxboard.yaml", "virt", "1G"),
    ("qemu-maaxboard-el2.yaml", "virt,virtualization=on,gic-version=3", "2G"),
])
def test_el2_twin_is_a_driver_option(name, machine, memory, monkeypatch, tmp_path):
    """virtualization: true gives the twin EL2 and a GICv3 (KVM in its Linux); the bare twin has neither."""
    monkeypatch.setenv("LG_TFTP_ROOT", str(tmp_path))
    env = Environment(str(ROOT / "env" / name))
    target = env.get_target("maaxboard-twin")
    try:
        args = target.get_driver("QEMUDriver", activate=False).get_qemu_base_args()
        assert args[args.index("-machine") + 1] == machine
        assert args[args.index("-m") + 1] == memory
    finally:
        target.cleanup()


def test_el2_needs_an_arm64_virt_twin(monkeypatch, tmp_path):
    text = (ROOT / "env" / "qemu-x86.yaml").read_text()
    assert "machine: q35" in text
    env_file = tmp_path / "x86-el2.yaml"
    env_file.write_text(text.replace("machine: q35", "machine: q35\n        virtualization: true")
                        .replace("../images/", f"{ROOT}/images/"))
    monkeypatch.setenv("LG_TFTP_ROOT", str(tmp_path))
    target = Environment(str(env_file)).get_target("x86-twin")
    try:
        with pytest.raises(JobError, match="virtualization: true needs machine: virt"):
            target.get_driver("QEMUDriver", activate=False).get_qemu_base_args()
    finally:
        target.cleanup()


TWINS = [("qemu-maaxboard.yaml", "maaxboard-twin"), ("qemu-maaxboard-el2.yaml", "maaxboard-twin"),
         ("qemu-x86.yaml", "x86-twin")]


@pytest.mark.parametrize("name, target_name", TWINS)
def test_twin_env_needs_no_variable(name, target_name, monkeypatch):
    """Plain labgrid refuses an unset variable in a !template: the twins' files name none; farm's
    drivers give the defaults (~/.cache/farm/tftp, tcg) and still honour LG_TFTP_ROOT/LG_QEMU_ACCEL."""
    for key in ("LG_TFTP_ROOT", "LG_QEMU_ACCEL"):
        monkeypatch.delenv(key, raising=False)
    env = Environment(str(ROOT / "env" / name))
    target = env.get_target(target_name)
    try:
        args = target.get_driver("QEMUDriver", activate=False).get_qemu_base_args()
        default_root = os.path.expanduser("~/.cache/farm/tftp")
        assert args[args.index("-nic") + 1].endswith(f",tftp={default_root}")
        assert args[args.index("-accel") + 1] == "tcg"
        assert target.get_driver("JobTFTPProviderDriver", activate=False).root == default_root
        monkeypatch.setenv("LG_TFTP_ROOT", "/srv/farm-tftp")
        monkeypatch.setenv("LG_QEMU_ACCEL", "kvm")
        args = target.get_driver("QEMUDriver", activate=False).get_qemu_base_args()
        assert args[args.index("-nic") + 1].endswith(",tftp=/srv/farm-tftp")
        assert args[args.index("-accel") + 1] == "kvm"
        assert target.get_driver("JobTFTPProviderDriver", activate=False).root == "/srv/farm-tftp"
    finally:
        target.cleanup()


@pytest.mark.parametrize("name", ["qemu-maaxboard.yaml", "qemu-maaxboard-el2.yaml", "qemu-x86.yaml"])
def test_labgrid_client_parses_twin_env_without_variables(name):
    """The real labgrid-client, no LG_* variable set: the file parses (it used to be a traceback)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LG_")}
    env["PYTHONPATH"] = str(ROOT)
    client = Path(sys.executable).with_name("labgrid-client")
    proc = subprocess.run([str(client), "-c", str(ROOT / "env" / name), "places"], capture_output=True,
                          text=True, env=env, timeout=60)
    assert "unknown variable" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "No RemotePlace found in configuration file" in proc.stderr + proc.stdout


@pytest.mark.parametrize("name, recipe", [("qemu-maaxboard.yaml", "maaxboard-bench.yaml"),
                                          ("qemu-maaxboard-el2.yaml", "maaxboard-bench.yaml"),
                                          ("maaxboard.yaml", "maaxboard-bench.yaml"),
                                          ("qemu-x86.yaml", "x86-bench.yaml"), ("x86.yaml", "x86-bench.yaml")])
def test_env_files_name_their_image(name, recipe, monkeypatch):
    monkeypatch.setenv("LG_PLACE", "maaxboard-1")
    env = Environment(str(ROOT / "env" / name))
    assert env.config.get_image_path("farm-image") == str(ROOT / "env" / ".." / "images" / recipe)
    assert (ROOT / "images" / recipe).is_file()


def _image_dir(path: Path, key: str = "0123456789abcdef0123") -> Path:
    path.mkdir()
    (path / "Image").write_bytes(b"kernel")
    (path / "initrd.cpio.gz").write_bytes(b"initrd")
    artifacts = {name: {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
                 for name, data in (("Image", b"kernel"), ("initrd.cpio.gz", b"initrd"))}
    (path / "manifest.json").write_text(json.dumps({
        "name": "t", "arch": "arm64", "kernel": "Image", "initrd": "initrd.cpio.gz", "key": key,
        "kernel_compression": "none", "artifacts": artifacts}))
    return path


def _twin_env_with_image(tmp_path: Path, image: str | None) -> Path:
    text = (ROOT / "env" / "qemu-maaxboard.yaml").read_text()
    text = text.replace("  farm-image: ../images/maaxboard-bench.yaml\n", f"  farm-image: {image}\n" if image else "")
    env_file = tmp_path / "env.yaml"
    env_file.write_text(text)
    return env_file


def test_strategy_boots_env_image_when_nothing_staged(tmp_path, monkeypatch):
    """labgrid's convention: with no set_image(), the strategy stages the env file's images: entry."""
    monkeypatch.setenv("LG_TFTP_ROOT", str(tmp_path / "tftp"))
    monkeypatch.setenv("LG_USERNAME", "alice")
    image = _image_dir(tmp_path / "img")
    env = Environment(str(_twin_env_with_image(tmp_path, str(image))))
    target = env.get_target("maaxboard-twin")
    try:
        strategy = target.get_strategy()
        kernel, initrd = strategy.staged()
        assert (kernel, initrd) == ("alice/image-0123456789abcdef/Image", "alice/image-0123456789abcdef/initrd.cpio.gz")
        assert (tmp_path / "tftp" / kernel).read_bytes() == b"kernel"
        assert any(c.startswith("tftpboot ${kernel_addr_r} alice/image-") for c in strategy.commands())
    finally:
        target.cleanup()


def test_strategy_without_image_names_the_images_key(tmp_path, monkeypatch):
    monkeypatch.setenv("LG_TFTP_ROOT", str(tmp_path / "tftp"))
    env = Environment(str(_twin_env_with_image(tmp_path, None)))
    target = env.get_target("maaxboard-twin")
    try:
        with pytest.raises(JobError, match="images: section as 'farm-image'"):
            target.get_strategy().staged()
    finally:
        target.cleanup()


def test_the_uboot_strategy_with_labgrids_plain_driver_names_the_rename(tmp_path):
    from farm.boot.session import EnvFile
    from farm.errors import JobError

    text = (Path(__file__).resolve().parent.parent / "env" / "qemu-maaxboard.yaml").read_text()
    path = tmp_path / "old.yaml"
    path.write_text(text.replace("FarmUBootDriver:", "UBootDriver:"))
    with pytest.raises(JobError, match=r"old.yaml:\d+: .*UBootDriver.*rename UBootDriver to FarmUBootDriver"):
        EnvFile.load(path)


def test_an_ipxe_env_file_of_an_older_farm_is_told_what_moved_to_the_driver(tmp_path):
    """iPXE's command line is its driver's (FarmIPXEDriver), as U-Boot's is FarmUBootDriver's: an env
    file that sets its settings on the strategy, or lacks the driver, says so when it is read."""
    from farm.boot.session import EnvFile
    from farm.errors import JobError

    text = (Path(__file__).resolve().parent.parent / "env" / "qemu-x86.yaml").read_text()
    old = text.replace("      FarmIPXEDriver:                  # iPXE's command line: Ctrl-B, typing echo-checked, its errors\n"
                       "        console_columns: 80            # SeaBIOS' serial console wraps long lines at 80 columns\n"
                       "        firmware_timeout: 120\n", "")
    assert old != text
    path = tmp_path / "old.yaml"
    path.write_text(old)
    with pytest.raises(JobError, match=r"old.yaml:\d+: targets.x86-twin.drivers: IPXENetbootStrategy needs "
                                       r"FarmIPXEDriver \(iPXE's command line.*\): add `FarmIPXEDriver: \{\}`"):
        EnvFile.load(path)
    path.write_text(old.replace("        bootargs: \"quiet\"\n", "        bootargs: \"quiet\"\n        console_columns: 80\n"))
    with pytest.raises(JobError, match=r"old.yaml:\d+: .*IPXENetbootStrategy.console_columns: console_columns: "
                                       r"settings of iPXE's command line, now of FarmIPXEDriver"):
        EnvFile.load(path)
