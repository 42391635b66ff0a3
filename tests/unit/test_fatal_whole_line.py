"""A fatal console line is reported whole: the failure waits for the rest of its line (a serial read
can end anywhere, e.g. after "Kernel panic - not syncing: VFS: Unabl"), or for LINE_TIMEOUT when the
board stops mid-line. Through farm's own drivers (the shell's and U-Boot's), on a console that
delivers the line in two reads, as a USB-UART or QEMU's socket does."""

from __future__ import annotations

import time
from collections import deque

import attr
import pytest
from labgrid import Target
from labgrid.driver.common import Driver
from labgrid.driver.consoleexpectmixin import ConsoleExpectMixin
from labgrid.protocol import ConsoleProtocol
from pexpect import TIMEOUT

from farm.boot import watch
from farm.boot.shell import FarmShellDriver
from farm.boot.ubootdriver import FarmUBootDriver
from farm.boot.watch import BootFailure, UBOOT_FATAL
from farm.errors import InfrastructureError

PANIC = b"Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)"


@attr.s(eq=False)
class SlowConsole(ConsoleExpectMixin, Driver, ConsoleProtocol):
    """Gives each piece of bytes only once its time (seconds after the first read) has come."""

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        self.txdelay = None
        self.pieces: deque[tuple[float, bytes]] = deque()
        self.t0: float | None = None
        self.written: list[bytes] = []

    def _read(self, size=1, timeout=0.0, max_size=None):
        now = time.monotonic()
        self.t0 = now if self.t0 is None else self.t0
        if self.pieces:
            at, data = self.pieces[0]
            wait = self.t0 + at - now
            if wait <= timeout:  # it comes within this read's timeout, as a serial line's bytes do
                time.sleep(max(0.0, wait))
                self.pieces.popleft()
                return data
        time.sleep(timeout)
        raise TIMEOUT("nothing within the read's timeout")

    def _write(self, data: bytes) -> int:
        self.written.append(data)
        return len(data)

    def open(self):
        pass

    def close(self):
        pass


def _target(pieces, driver_cls=None, **driver_args):
    target = Target("replay")
    console = SlowConsole(target, "console")
    console.pieces = deque(pieces)
    target.activate(console)
    driver = driver_cls(target, "driver", **driver_args) if driver_cls else None
    return target, console, driver


def test_a_panic_line_cut_between_two_reads_is_reported_whole():
    target, _, shell = _target([(0.0, b"# mount /\r\n[    3.1] " + PANIC[:36]), (0.3, PANIC[36:] + b"\r\nCPU: 0 PID: 1\r\n")],
                               FarmShellDriver, prompt="# ", login_prompt="login: ", username="root")
    shell._at_prompt = True  # as after a command that ended at the prompt
    with pytest.raises(BootFailure) as info:
        shell._run("mount /", timeout=10)
    message = str(info.value)
    assert message.splitlines()[0] == f"while running 'mount /': kernel panic: {PANIC.decode()}"
    assert message.splitlines()[-1].endswith(PANIC.decode())  # the excerpt ends with the whole line too
    target.cleanup()


def test_a_line_that_never_ends_is_reported_after_the_line_timeout(monkeypatch):
    monkeypatch.setattr(watch, "LINE_TIMEOUT", 0.5)
    target, _, shell = _target([(0.0, b"# x\r\n" + PANIC[:36])], FarmShellDriver, prompt="# ",
                               login_prompt="login: ", username="root")
    shell._at_prompt = True
    t0 = time.monotonic()
    with pytest.raises(BootFailure) as info:
        shell._run("x", timeout=30)
    assert time.monotonic() - t0 < 5, "the command's timeout, not the line's, ended it"
    assert str(info.value).splitlines()[0].endswith("VFS: Una")  # as far as it came
    target.cleanup()


def test_a_uboot_fatal_line_is_whole_too():
    target, _, uboot = _target([(0.0, b"Loading: *\r\nTFTP error: 'File not f"), (0.2, b"ound' (1)\r\nNot retrying...\r\n")],
                               FarmUBootDriver, prompt="=> ")
    with pytest.raises(InfrastructureError) as info:
        uboot.expect_or_fail(["never"], UBOOT_FATAL, "tftpboot", 10)
    assert str(info.value).splitlines()[0] == "tftpboot: TFTP error: TFTP error: 'File not found' (1)"
    target.cleanup()
