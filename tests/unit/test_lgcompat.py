"""What farm assumes of labgrid's private state and shapes (farm.lgcompat, NetbootStrategy.reset_after_failure)
still holds in the installed labgrid: these fail when labgrid changes it, not when a board misbehaves."""

from __future__ import annotations

import asyncio
import enum
import inspect
import shlex
import time
from collections import deque

import attr
import grpc
import pytest
from labgrid import Target
from labgrid.driver.common import Driver
from labgrid.driver.consoleexpectmixin import ConsoleExpectMixin
from labgrid.protocol import ConsoleProtocol
from labgrid.strategy.common import Strategy, StrategyError, never_retry
from pexpect import TIMEOUT

from farm.lgcompat import (PROMPT_CHECK, RUN_HELPER, SESSION_CHANNEL_OPTIONS, SHELL_TYPED, UBOOT_TYPED,
                           drop_console_input, own_connection, unread_console_input)
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


@attr.s(eq=False)
class TypedConsole(ConsoleExpectMixin, Driver, ConsoleProtocol):
    """A console that keeps each line a driver types and answers nothing."""

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        self.txdelay = None
        self.lines: list[str] = []

    def _read(self, size=1, timeout=0.0, max_size=None):
        raise TIMEOUT("nothing answers")

    def _write(self, data: bytes) -> int:
        return len(data)

    def sendline(self, line):
        self.lines.append(line)

    def expect(self, pattern, timeout=-1):
        raise TIMEOUT("nothing answers")


def _typed_by_labgrid(command: str) -> list[str]:
    """What labgrid's ShellDriver (its prompt check, its run helper, a command) and UBootDriver (a command)
    type on a console."""
    from labgrid.driver import ShellDriver, UBootDriver

    target = Target("t")
    console = TypedConsole(target, "console")
    target.activate(console)
    shell = ShellDriver(target, "shell", prompt=r"\$ ", login_prompt="login: ", username="root")
    uboot = UBootDriver(target, "uboot", prompt="=> ")
    uboot._status = 1  # a U-Boot prompt was seen (labgrid types nothing before)
    for typing in (shell._check_prompt, shell._inject_run):
        with pytest.raises(TIMEOUT):
            typing()
    shell._check_prompt = lambda: None  # _run checks the prompt first: its line is typed above
    for typing in (lambda: shell._run(command), lambda: uboot._run("dhcp")):
        with pytest.raises(TIMEOUT):
            typing()
    return console.lines


def test_the_lines_labgrids_drivers_type_are_the_forms_farm_reads_in_a_console_log():
    from farm.dashboard.console import CHECK, TYPED, fold

    command = "grep ^cpu /proc/stat; echo it's"
    check, helper, run, uboot = _typed_by_labgrid(command)
    assert PROMPT_CHECK.fullmatch(check) and RUN_HELPER.fullmatch(helper)
    assert shlex.split(SHELL_TYPED.fullmatch(run)["cmd"]) == [command]
    assert UBOOT_TYPED.fullmatch(uboot)["cmd"] == "dhcp"
    # as a console log has them: after the prompt; the view shows the commands and folds the checks away
    folded = fold("\n".join([f"# {check}", f"# {helper}", f"# {run}", f"=> {uboot}"]) + "\n")
    assert [(line.kind, line.text) for line in folded] == [
        (CHECK, f"# {check}"), (CHECK, f"# {helper}"), (TYPED, f"# {command}"), (TYPED, "=> dhcp")]


def test_a_session_gets_a_connection_of_its_own_where_labgrid_makes_its_channel():
    from labgrid.remote.client import ClientSession
    from labgrid.remote.generated.labgrid_coordinator_pb2_grpc import CoordinatorStub

    made = inspect.getsource(ClientSession.__attrs_post_init__)
    assert "self.channel = grpc.aio.insecure_channel(" in made and "self.stub = " in made
    for name, value in SESSION_CHANNEL_OPTIONS:  # the options farm keeps are labgrid's
        assert f'("{name}", {value})' in made, name
    others = [name for name, member in inspect.getmembers(ClientSession, inspect.isfunction)
              if name != "__attrs_post_init__" and "insecure_channel" in inspect.getsource(member)]
    assert others == []  # no other method makes a channel the session would use instead
    assert "self.stub.ClientStream(" in inspect.getsource(ClientSession.message_pump)

    loop = asyncio.new_event_loop()
    try:
        session = ClientSession("127.0.0.1:1", loop)
        labgrids = session.channel
        own_connection(session)
        assert session.channel is not labgrids and isinstance(session.stub, CoordinatorStub)
        loop.run_until_complete(asyncio.sleep(0))  # labgrid's channel is closed by the task own_connection made
        assert labgrids.get_state() == grpc.ChannelConnectivity.SHUTDOWN
        assert session.channel.get_state() != grpc.ChannelConnectivity.SHUTDOWN
        loop.run_until_complete(session.channel.close())
    finally:
        loop.close()
