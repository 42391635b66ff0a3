"""A twin whose Linux powered itself off (``poweroff -f``: QEMU exits 0) is powered off without an error:
labgrid's ``off`` wrote QMP's quit to the dead QEMU (BrokenPipeError, or ValueError: write to closed file, printed by
labgrid's atexit cleanup). Seen when a guest's ``poweroff -f`` reached the host's shell."""

from __future__ import annotations

import time

import pytest

from farm.boot.console_log import ConsoleLog
from farm.boot.session import EnvFile, boot_target

pytestmark = pytest.mark.boot


def test_off_after_the_board_powered_itself_off(project_root, maaxboard_image, tftp_root, tmp_path):
    env = EnvFile.load(project_root / "env" / "qemu-maaxboard.yaml")
    with ConsoleLog(tmp_path / "console") as console:
        with boot_target(env, maaxboard_image, "t-self-off", console) as booted:
            qemu = booted.target.get_driver("QEMUDriver")
            booted.shell.console.sendline("poweroff -f")
            deadline = time.monotonic() + 30
            while qemu._child.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
            assert qemu._child.poll() == 0
            qemu.off()  # raised BrokenPipeError (QMP of a dead QEMU)
            assert qemu.status == 0 and qemu._child is None
