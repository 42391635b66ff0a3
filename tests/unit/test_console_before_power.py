"""labgrid's ShellDriver (or any console user) on the twin before the board is powered on: a clear job
error that says to power it on first, not a bare TypeError from select() on QEMU's missing socket."""

from __future__ import annotations

import pytest

from farm.boot.session import EnvFile, open_target
from farm.errors import JobError
from tests.conftest import ROOT


def test_the_shell_driver_before_power_on_says_to_power_on():
    _, target = open_target(EnvFile.load(ROOT / "env" / "qemu-maaxboard.yaml"))
    try:
        with pytest.raises(JobError) as info:
            target.get_driver("ShellDriver")  # activates it: it waits for a login on the console
        message = str(info.value)
        assert message.startswith("maaxboard-twin: its console was")
        assert "powered off" in message and 'strategy.transition("shell")' in message
    finally:
        target.cleanup()
