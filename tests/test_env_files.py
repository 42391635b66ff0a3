"""The env files users run load with labgrid's own Environment, drivers and strategy resolvable."""

from __future__ import annotations

import pytest
from labgrid import Environment
from labgrid.factory import target_factory

import farm.boot.drivers  # noqa: F401  (registers farm's drivers, as the env files' imports do)

from .conftest import ROOT


@pytest.mark.parametrize("name, target, strategy_name, arch", [
    ("maaxboard.yaml", "maaxboard", "UBootNetbootStrategy", "arm64"),
    ("qemu-maaxboard.yaml", "maaxboard-twin", "UBootNetbootStrategy", "arm64"),
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
        assert f"tftp={tmp_path}" in qemu.nic
        assert "-accel tcg" in qemu.extra_args
    finally:
        target.cleanup()
