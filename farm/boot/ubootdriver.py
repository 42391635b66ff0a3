"""labgrid's UBootDriver, as farm's netboot needs it (subclassed, as FarmShellDriver subclasses ShellDriver).

What it adds to ``run``: every command is typed echo-checked (farm.boot.typing: a character lost on the
serial line is retyped, never executed mangled), and a fatal console line (a TFTP error, a reset, a
panic: farm.boot.watch) ends the wait at once with its failure class instead of a timeout. ``run`` keeps
labgrid's ``@step`` tracing (``farm -v`` shows it) and ``strip_timestamp``.

    FarmUBootDriver:
      prompt: "=> "
      autoboot: "Hit any key to stop autoboot"
      echo_timeout: 5     # seconds the console may stay quiet without a typed line's echo before it is erased and retyped
      type_chunk: 0       # keys typed before their echo is awaited; 0: the whole line (U-Boot reads its UART as keys come)
"""

from __future__ import annotations

import re

import attr
from labgrid.driver import UBootDriver
from labgrid.factory import target_factory
from labgrid.util import gen_marker, re_vt100

from .typing import type_checked
from .watch import UBOOT_FATAL, Fatal, raise_fatal

_TIMESTAMP = re.compile(r"^\[\s+\d+\.\d+\]\s*")  # as labgrid's re_uboot_timestamp


@target_factory.reg_driver
@attr.s(eq=False)
class FarmUBootDriver(UBootDriver):
    #: what it adds to labgrid's UBootDriver (said when an env file names that one instead)
    ADDS = "typing echo-checked"

    echo_timeout = attr.ib(default=5.0, converter=float)
    type_chunk = attr.ib(default=0, validator=[attr.validators.instance_of(int), attr.validators.ge(0)])

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        self.retyped: list[str] = []  # command lines typed again because their echo differed

    def type_line(self, line: str) -> None:
        """Type a line and Enter, checked against its echo."""
        if type_checked(self.console, line, echo_timeout=self.echo_timeout, chunk=self.type_chunk):
            self.retyped.append(line)

    def expect_or_fail(self, wanted: list[str], fatal: tuple[Fatal, ...], where: str, timeout: float):
        """Wait for one of ``wanted``; a fatal line first raises its failure class with an excerpt."""
        index, before, match, _ = self.console.expect([*wanted, *(f.pattern for f in fatal)], timeout=timeout)
        if index >= len(wanted):
            raise_fatal(fatal[index - len(wanted)], where, before, match, self.console)
        return match

    def _run(self, cmd: str, *, timeout: int = 30, codec: str = "utf-8", decodeerrors: str = "strict"):
        """labgrid's ``_run`` (markers around the command and its ``$?``), typed echo-checked and
        watching for fatal lines. ``run`` (labgrid's, with its ``@step``) calls this."""
        if self._status != 1:
            return None
        marker = gen_marker()
        self.type_line(f"echo '{marker[:4]}''{marker[4:]}'; {cmd}; echo \"$?\"; echo '{marker[:4]}''{marker[4:]}';")
        match = self.expect_or_fail([rf"{marker}(.*){marker}\s+{re.escape(self.prompt)}"], UBOOT_FATAL,
                                    f"U-Boot '{cmd}'", timeout)
        lines = re_vt100.sub("", match.group(1).decode(codec, decodeerrors)).replace("\r", "").split("\n")
        if self.strip_timestamp:
            lines = [_TIMESTAMP.sub("", line) for line in lines]
        lines = [line for line in lines if line.strip()]
        return lines[:-1], [], int(lines[-1])
