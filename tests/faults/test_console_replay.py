"""Fault 2: the autoboot prompt arrives split across reads and after line noise.

A recorded U-Boot console (tests/data/uboot-qemu-arm64-autoboot.log, from the twin) is replayed in
awkward pieces through a console driver of this test, to labgrid's real UBootDriver configured as
in env/qemu-maaxboard.yaml; the replay answers the interrupt and the marker echoes as U-Boot does.
"""

from __future__ import annotations

import re
import time
from collections import deque
from pathlib import Path

import attr
import pytest
from labgrid import Target
from labgrid.driver import UBootDriver
from labgrid.driver.common import Driver
from labgrid.driver.consoleexpectmixin import ConsoleExpectMixin
from labgrid.protocol import ConsoleProtocol
from pexpect import TIMEOUT

RECORDED = (Path(__file__).resolve().parent.parent / "data" / "uboot-qemu-arm64-autoboot.log").read_bytes()
NOISE = b"\x00\xff\x1b[0m\x1b[6n\xfe garbage \r\n\x00"
ECHO = re.compile(rb"echo '(\w{4})''(\w{6})'")


@attr.s(eq=False)
class ReplayConsole(ConsoleExpectMixin, Driver, ConsoleProtocol):
    """Plays recorded bytes in the given pieces; answers like U-Boot at its prompt."""

    pieces = attr.ib(factory=list)

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        self.txdelay = None
        self.queue = deque(self.pieces)
        self.writes: list[bytes] = []

    def _read(self, size=1, timeout=0.0, max_size=None):
        if not self.queue:
            time.sleep(min(timeout, 0.05))
            raise TIMEOUT("nothing more")
        return self.queue.popleft()

    def _write(self, data: bytes) -> int:
        self.writes.append(data)
        echo = ECHO.search(data)
        if echo:
            self.queue.append(data.replace(b"\n", b"\r\n") + echo.group(1) + echo.group(2) + b"\r\n=> ")
        elif data == b"\n":  # the autoboot interrupt
            self.queue.append(b"\r\n=> ")
        return len(data)


def split_awkwardly(data: bytes) -> list[bytes]:
    """Cut inside the autoboot line and everywhere else in 7-byte pieces."""
    cut = data.index(b"Hit any key") + len(b"Hit any k")
    head, tail = data[:cut], data[cut:]
    return [NOISE, *(head[i:i + 7] for i in range(0, len(head), 7)), tail[:9], tail[9:]]


@pytest.mark.parametrize("pieces", [split_awkwardly(RECORDED), [NOISE + RECORDED], [NOISE, *[bytes([b]) for b in RECORDED]]],
                         ids=["7-byte pieces", "one read", "byte by byte"])
def test_autoboot_is_caught_and_interrupted_once(pieces):
    target = Target("replay")
    console = ReplayConsole(target, "console", pieces=pieces)
    uboot = UBootDriver(target, "uboot", prompt="=> ", autoboot="Hit any key to stop autoboot", login_timeout=10)
    target.activate(uboot)
    try:
        assert uboot._status == 1
        interrupts = [w for w in console.writes if w == b"\n"]
        assert len(interrupts) == 1, console.writes
        assert console.writes.index(b"\n") < next(i for i, w in enumerate(console.writes) if ECHO.search(w))
    finally:
        target.deactivate(uboot)
