"""labgrid's ShellDriver, watching for a board that panics or resets while a command runs.

The stock driver waits for its marker until the command's timeout (minutes, for a benchmark) if
the board dies under it; this one fails at the fatal console line. It also skips the prompt check
before a command when the previous one ended cleanly at the prompt (one round trip less per
command); after a timeout or an error it checks again.
"""

from __future__ import annotations

import shlex

import attr
from labgrid.driver import ShellDriver
from labgrid.factory import target_factory
from labgrid.util import gen_marker, re_vt100

from .watch import LINUX_FATAL, raise_fatal


@target_factory.reg_driver
@attr.s(eq=False)
class FarmShellDriver(ShellDriver):
    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        self._at_prompt = False

    def on_deactivate(self):
        self._at_prompt = False
        super().on_deactivate()

    def release_console(self) -> None:
        """Another program takes the console over (a guest's QEMU): the next command checks the prompt."""
        self._at_prompt = False

    def resync(self, mark: str | None = None) -> None:
        """Take over the shell now on the console (a guest's, or the host's again after it): check its
        prompt with a fresh marker and define labgrid's ``run`` helper there, which that shell never saw.
        ``mark``: a line for that shell itself first (labgrid's ``run`` runs each command in a child
        ``sh -c``, where an ``export`` would not last)."""
        self._at_prompt = False
        self._check_prompt()
        if mark:
            self.console.sendline(mark)
            self.console.expect(self.prompt, timeout=10)
        self._inject_run()
        self._at_prompt = True

    def _run(self, cmd, *, timeout=30.0, codec="utf-8", decodeerrors="strict"):
        if not self._at_prompt:
            self._check_prompt()
        self._at_prompt = False
        marker = gen_marker()
        self.console.sendline(f"MARKER='{marker[:4]}''{marker[4:]}' run {shlex.quote(cmd)}")
        patterns = [rf"{marker}(.*){marker}\s+(\d+)\s+{self.prompt}", *(f.pattern for f in LINUX_FATAL)]
        index, before, match, _ = self.console.expect(patterns, timeout=timeout)
        if index > 0:
            raise_fatal(LINUX_FATAL[index - 1], f"while running '{cmd}'", before, match, self.console)
        self._at_prompt = True
        data = re_vt100.sub("", match.group(1).decode(codec, decodeerrors)).split("\r\n")
        if data and not data[-1]:
            del data[-1]
        return (data, [], int(match.group(2)))
