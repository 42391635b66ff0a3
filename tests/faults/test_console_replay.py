"""Fault 2: the autoboot prompt arrives split across reads and after line noise.

A recorded U-Boot console (tests/data/uboot-qemu-arm64-autoboot.log, from the twin) is replayed in
awkward pieces by a board of this test (a console and power driver in place of the twin's QEMU),
through farm's own path: the target made from env/qemu-maaxboard.yaml by farm.boot.session's
``open_target``, with the env file's U-Boot driver and settings, brought to U-Boot by farm's
``UBootNetbootStrategy`` (power off, console, power on, catch and interrupt autoboot). The replay
starts at power-on and answers the interrupt and the marker echoes as U-Boot does.
"""

from __future__ import annotations

import re
import time
from collections import deque
from pathlib import Path

import attr
import pytest
import yaml
from labgrid.driver.common import Driver
from labgrid.driver.consoleexpectmixin import ConsoleExpectMixin
from labgrid.factory import target_factory
from labgrid.protocol import ConsoleProtocol, PowerProtocol
from pexpect import TIMEOUT

from farm.boot.session import EnvFile, open_target

from ..conftest import ROOT

RECORDED = (Path(__file__).resolve().parent.parent / "data" / "uboot-qemu-arm64-autoboot.log").read_bytes()
NOISE = b"\x00\xff\x1b[0m\x1b[6n\xfe garbage \r\n\x00"
ECHO = re.compile(rb"echo '(\w{4})''(\w{6})'")
TWIN_ENV = ROOT / "env" / "qemu-maaxboard.yaml"
TWIN_DRIVER = "TwinQEMUDriver"  # the twin's console and power, replaced by the replay


@target_factory.reg_driver
@attr.s(eq=False)
class ReplayBoard(ConsoleExpectMixin, Driver, ConsoleProtocol, PowerProtocol):
    """A board whose console plays recorded bytes, in the given pieces, from power-on; at its
    prompt it answers like U-Boot."""

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        self.txdelay = None
        self.pieces: list[bytes] = []
        self.queue: deque[bytes] = deque()
        self.writes: list[bytes] = []
        self.powered = False

    def on(self):
        self.powered = True
        self.queue = deque(self.pieces)

    def off(self):
        self.powered = False
        self.queue.clear()

    def cycle(self):
        self.off()
        self.on()

    def _read(self, size=1, timeout=0.0, max_size=None):
        if not self.queue:
            time.sleep(min(timeout, 0.05))
            raise TIMEOUT("nothing more")
        return self.queue.popleft()

    def _write(self, data: bytes) -> int:
        self.writes.append(data)
        if not self.powered:
            return len(data)
        echo = ECHO.search(data)
        if echo:
            self.queue.append(data.replace(b"\n", b"\r\n") + echo.group(1) + echo.group(2) + b"\r\n=> ")
        elif data == b"\n":  # the autoboot interrupt
            self.queue.append(b"\r\n=> ")
        return len(data)


def replay_env(tmp_path: Path) -> Path:
    """The twin's env file, its QEMU replaced by the replay board; everything else as it is."""
    doc = yaml.safe_load(TWIN_ENV.read_text())
    (target,) = doc["targets"].values()
    drivers = target["drivers"]
    assert TWIN_DRIVER in drivers, f"{TWIN_ENV} has no {TWIN_DRIVER}: update this test"
    target["drivers"] = {("ReplayBoard" if name == TWIN_DRIVER else name): ({} if name == TWIN_DRIVER else args)
                         for name, args in drivers.items()}
    target["resources"]["TFTPProvider"]["internal"] = str(tmp_path / "tftp")
    doc["images"] = {}
    path = tmp_path / "replay.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def split_awkwardly(data: bytes) -> list[bytes]:
    """Cut inside the autoboot line and everywhere else in 7-byte pieces."""
    cut = data.index(b"Hit any key") + len(b"Hit any k")
    head, tail = data[:cut], data[cut:]
    return [NOISE, *(head[i:i + 7] for i in range(0, len(head), 7)), tail[:9], tail[9:]]


@pytest.mark.parametrize("pieces", [split_awkwardly(RECORDED), [NOISE + RECORDED], [NOISE, *[bytes([b]) for b in RECORDED]]],
                         ids=["7-byte pieces", "one read", "byte by byte"])
def test_autoboot_is_caught_and_interrupted_once(tmp_path, monkeypatch, pieces):
    monkeypatch.setenv("LG_TFTP_ROOT", str(tmp_path / "tftp"))
    environment, target = open_target(EnvFile.load(replay_env(tmp_path)))
    board = target.get_driver("ReplayBoard", activate=False)
    board.pieces = pieces
    strategy = target.get_strategy()
    t0 = time.monotonic()
    try:
        strategy.transition("uboot")
        assert strategy.status.name == "uboot"
        assert board.powered
        interrupts = [w for w in board.writes if w == b"\n"]
        assert len(interrupts) == 1, board.writes
        assert board.writes.index(b"\n") < next(i for i, w in enumerate(board.writes) if ECHO.search(w))
        assert time.monotonic() - t0 < 10, "the prompt was found by a timeout, not by the autoboot line"
    finally:
        strategy.transition("off")
    assert not board.powered
