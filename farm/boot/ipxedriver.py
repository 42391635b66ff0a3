"""iPXE's command line as a labgrid driver (as FarmUBootDriver is U-Boot's): the strategy
(farm.boot.ipxe.IPXENetbootStrategy) says what to type, this driver how.

Activating it takes the command line: wait for iPXE's "Press Ctrl-B" after power on and answer it
until ``iPXE>`` shows (a missed prompt is no failure: iPXE autoboots, finds no boot file for the PC
and offers it again). Every line is typed echo-checked (farm.boot.typing). iPXE reports a failure as
a line ending in an error URL and returns to its prompt; :meth:`FarmIPXEDriver.run` waits for the
prompt after a command and raises :class:`InfrastructureError` quoting iPXE's lines as soon as it
gives up, not after a timeout.

    FarmIPXEDriver:
      prompt: "iPXE> "
      interrupt: "Press Ctrl-B for the iPXE command line"
      console_columns: 80     # where the serial console wraps long lines (SeaBIOS' sercon: 80); 0: it does not
      firmware_timeout: 120   # power on -> the Ctrl-B prompt
      echo_timeout: 5         # seconds the console may stay quiet without a typed line's echo before it is erased and retyped
      type_chunk: 8           # keys typed before their echo is awaited (SeaBIOS' sercon queues 15; 0: the whole line)
"""

from __future__ import annotations

import re

import attr
from labgrid.driver.common import Driver
from labgrid.factory import target_factory
from labgrid.protocol import ConsoleProtocol
from labgrid.util import Timeout
from pexpect import TIMEOUT

from ..errors import InfrastructureError
from .typing import type_checked
from .watch import Fatal, raise_fatal

CTRL_B = b"\x02"
#: the firmware gave up before iPXE ran: SeaBIOS' last word, or a PXE ROM error (PXE-E53: No boot filename…)
_FIRMWARE_FAILURE = r"No bootable device|PXE-E[0-9A-F]{2}"
_ERROR_URL = re.compile(r"\(https?://ipxe\.org/[0-9a-f]{8}\)")
_ERROR_PHRASES = ("Could not boot", "Nothing to boot", "No such file or directory", "Connection timed out",
                  "Permission denied", "No configuration methods succeeded", "Exec format error")
_ESCAPES = re.compile(r"\x1b(\[[0-9;?]*[A-Za-z]|[@-Z\\-_a-z])")  # CSI sequences and ESC c (reset)


def console_lines(text: str, columns: int = 80) -> list[str]:
    """The console's lines as iPXE printed them: escape sequences and backspaces applied, and lines the
    console wrapped at ``columns`` (SeaBIOS' serial console wraps at 80; 0: never) joined again."""
    text = _ESCAPES.sub("", text)
    screen: list[str] = []
    line: list[str] = []
    col = 0
    for ch in text:
        if ch == "\n":
            screen.append("".join(line))
            line, col = [], 0
        elif ch == "\r":
            col = 0
        elif ch == "\b":
            col = max(0, col - 1)
        elif ch >= " " or ch == "\t":
            if col < len(line):
                line[col] = ch
            else:
                line.append(ch)
            col += 1
    screen.append("".join(line))
    joined: list[str] = []
    wrapped = False
    for row in screen:
        if wrapped:
            joined[-1] += row
        else:
            joined.append(row)
        wrapped = columns > 0 and len(row) == columns
    return [row.rstrip() for row in joined]


def ipxe_errors(text: str, columns: int = 80) -> list[str]:
    """iPXE's error lines in console output, in order, each once."""
    found: list[str] = []
    for line in console_lines(text, columns):
        line = line.strip()
        if (_ERROR_URL.search(line) or any(p in line for p in _ERROR_PHRASES)) and line not in found:
            found.append(line)
    return found


def _text(data: bytes | str) -> str:
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data


@target_factory.reg_driver
@attr.s(eq=False)
class FarmIPXEDriver(Driver):
    #: what it is (said when an env file lacks it: farm.boot.netboot.NetbootStrategy.binding_problem)
    ADDS = "iPXE's command line: Ctrl-B, typing echo-checked, iPXE's errors"

    bindings = {"console": ConsoleProtocol}
    interrupt = attr.ib(default="Press Ctrl-B for the iPXE command line", validator=attr.validators.instance_of(str))
    prompt = attr.ib(default="iPXE> ", validator=attr.validators.instance_of(str))
    console_columns = attr.ib(default=80, validator=[attr.validators.instance_of(int), attr.validators.ge(0)])
    firmware_timeout = attr.ib(default=120, validator=attr.validators.instance_of(int))
    echo_timeout = attr.ib(default=5.0, converter=float)
    type_chunk = attr.ib(default=8, validator=[attr.validators.instance_of(int), attr.validators.ge(0)])

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        self.retyped: list[str] = []  # command lines typed again because their echo differed

    def on_activate(self) -> None:
        self.take_command_line()

    def take_command_line(self) -> None:
        """Wait for iPXE's Ctrl-B prompt and answer it, until iPXE shows its command line."""
        deadline = Timeout(float(self.firmware_timeout))
        patterns = [re.escape(self.interrupt), re.escape(self.prompt), _FIRMWARE_FAILURE]
        while True:
            try:
                index, before, match, _ = self.console.expect(patterns, timeout=deadline.remaining)
            except TIMEOUT:
                raise InfrastructureError(
                    f"no iPXE prompt ('{self.interrupt}') within {self.firmware_timeout} s of power on: "
                    "does the PC boot from the network, and is its NIC's iPXE enabled?") from None
            if index == 0:
                self.console.write(CTRL_B)
            elif index == 1:
                return
            else:
                line = _text(match.group(0)) + self._rest_of_line()
                raise InfrastructureError(f"the firmware gave up before iPXE: {line.strip()}")

    def _rest_of_line(self) -> str:
        try:
            _, before, _, _ = self.console.expect(r"\n", timeout=2)
        except TIMEOUT:
            return ""
        return _text(before)

    def type_line(self, line: str) -> None:
        """Type a command and Enter, checked against its echo (characters get lost on serial lines)."""
        if type_checked(self.console, line, echo_timeout=self.echo_timeout, chunk=self.type_chunk):
            self.retyped.append(line)

    def run(self, command: str, timeout: int) -> None:
        """Type ``command`` and wait for the prompt; iPXE's error lines raise InfrastructureError."""
        self.type_line(command)
        before = self.expect(command, [self.prompt], timeout)[1]
        if (errors := ipxe_errors(self.prompt + before, self.console_columns)):
            raise InfrastructureError(f"iPXE command '{command}' failed: {' | '.join(errors)}")

    def run_until(self, command: str, wanted: str, timeout: int, fatal: tuple[Fatal, ...] = ()) -> None:
        """Type ``command`` (which does not return to iPXE when it works: ``chain``) and wait for
        ``wanted``; iPXE back at its prompt means it failed (its error lines in the InfrastructureError)."""
        self.type_line(command)
        index, before = self.expect(command, [wanted, self.prompt], timeout, fatal=fatal)
        if index == 1:  # iPXE is back at its prompt: the script, a download or the boot failed
            output = self.prompt + before
            errors = ipxe_errors(output, self.console_columns)
            detail = " | ".join(errors) or " | ".join(console_lines(output, self.console_columns)[-3:])
            raise InfrastructureError(f"iPXE command '{command}' failed: {detail}")

    def expect(self, command: str, texts: list[str], timeout: int, fatal: tuple[Fatal, ...] = ()) -> tuple[int, str]:
        """Which of ``texts`` came first after ``command``, and the console text before it; a
        ``fatal`` line (a kernel panic after the chain) raises at once."""
        try:
            index, before, match, _ = self.console.expect([*(re.escape(t) for t in texts), *(f.pattern for f in fatal)],
                                                          timeout=timeout)
        except TIMEOUT:
            raise InfrastructureError(f"after iPXE command '{command}', none of {texts} within {timeout} s "
                                      "(no iPXE error on the console either)") from None
        if index >= len(texts):
            raise_fatal(fatal[index - len(texts)], f"after iPXE command '{command}'", before, match, self.console)
        return index, _text(before)
