"""A setup's cores and frequency on the MaaXBoard's twin: ``cpus: 1`` starts QEMU with ``-smp 1`` (the
env file's ``-smp 4`` replaced) and boots Linux with ``maxcpus=1``; the setup's frequency cannot be set on
a twin, so it is recorded as the nominal value, with why."""

from __future__ import annotations

import pytest

from farm.boot.console_log import ConsoleLog
from farm.boot.flow import BootRequest, NetbootFlow
from farm.boot.session import EnvFile

pytestmark = pytest.mark.boot


def test_one_core_at_a_nominal_1ghz(project_root, maaxboard_image, tftp_root, tmp_path):
    env = EnvFile.load(project_root / "env" / "qemu-maaxboard.yaml")
    flow = NetbootFlow(pin_khz=1000000, cpus=1)
    with ConsoleLog(tmp_path / "console") as console:
        with flow.boot(BootRequest(env, maaxboard_image, "t-cpus-1", console)) as booted:
            qemu = booted.target.get_driver("QEMUDriver")
            smp = [qemu._cmd[i + 1] for i, a in enumerate(qemu._cmd) if a == "-smp"]
            assert smp == ["1"]
            facts = booted.read_facts()
            assert facts.cpus == 1 and facts.online == "0"
            assert "maxcpus=1" in booted.run("cat /proc/cmdline")[0].split()
            frequency = booted.record()["cpu_frequency"]
    assert frequency["pinned"] is False and frequency["nominal_hz"] == 1e9 and "MTTCG" in frequency["why"]
