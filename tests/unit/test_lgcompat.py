"""What farm assumes of labgrid's private state (farm.boot.lgcompat, NetbootStrategy.reset_after_failure)
still holds in the installed labgrid: these fail when labgrid changes it, not when a board misbehaves."""

from __future__ import annotations

import enum
import time
from collections import deque

import attr
import pytest
from labgrid import Target
from labgrid.driver.common import Driver
from labgrid.driver.consoleexpectmixin import ConsoleExpectMixin
from labgrid.protocol import ConsoleProtocol
from labgrid.strategy.common import Strategy, StrategyError, never_retry
from pexpect import TIMEOUT

from farm.boot.lgcompat import drop_console_input, unread_console_input
from farm.boot.netboot import NetbootStrategy


@attr.s(eq=False)
class FedConsole(ConsoleExpectMixin, Driver, ConsoleProtocol):
    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        self.txdelay = None
        self.queue: deque[bytes] = deque()

    def _read(self, size=1, timeout=0.0, max_size=None):
        if not self.queue:
            time.sleep(min(timeout, 0.02))
            raise TIMEOUT("nothing more")
        return self.queue.popleft()

    def _write(self, data: bytes) -> int:
        return len(data)


def test_drop_console_input_forgets_what_was_read_but_not_matched():
    target = Target("t")
    console = FedConsole(target, "console")
    target.activate(console)
    console.queue.append(b"booting\r\n=> stale prompt\r\n")
    console.expect("booting", timeout=1)  # the rest of the read stays in labgrid's buffer
    console.expect("=> ", timeout=1)  # ... as this shows: the buffer is where farm drops it from
    console.queue.append(b"booting\r\n=> stale\r\n")
    console.expect("booting", timeout=1)
    assert unread_console_input(console) == b"\r\n=> stale\r\n"
    drop_console_input(console)
    assert unread_console_input(console) == b""
    with pytest.raises(TIMEOUT):
        console.expect("=> ", timeout=0.3)


class _Status(enum.Enum):
    unknown = 0
    shell = 1


@attr.s(eq=False)
class OnceBroken(Strategy):
    bindings = {}
    status = attr.ib(default=_Status.unknown)

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        self.calls = 0

    @never_retry
    def transition(self, status):
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("no U-Boot prompt")
        self.status = _Status.shell

    reset_after_failure = NetbootStrategy.reset_after_failure


def test_reset_after_failure_makes_a_never_retry_strategy_usable_again():
    strategy = OnceBroken(Target("t"), "strategy")
    with pytest.raises(StrategyError):
        strategy.transition("shell")
    with pytest.raises(StrategyError, match="broken state"):  # labgrid refuses again, as farm relies on
        strategy.transition("shell")
    strategy.reset_after_failure()
    assert strategy.status == _Status.unknown
    strategy.transition("shell")
    assert strategy.status == _Status.shell
