"""A boot flow: how a target gets from power-off to the shell the benchmarks run on.

    flow = NetbootFlow()                       # power -> U-Boot or iPXE -> Linux (the env file's strategy)
    with flow.boot(BootRequest(env, image, job, console, bootargs)) as booted:
        booted.shell.run_check("uname -a")

A flow is a context manager factory: leaving the block always ends what it started (the board
powered off, the job's TFTP folder removed). Flows compose: "host, then a guest on it" enters the
netboot flow and starts the guest on its shell (farm.boot.guestflow). The runner (farm.run.runner)
only knows this interface, so its tests inject a flow that boots nothing.
"""

from __future__ import annotations

import contextlib
from typing import ContextManager, Iterator, Protocol

import attrs

from ..images.image import Image
from .console_log import ConsoleLog
from .session import BootedTarget, EnvFile, boot_target


@attrs.frozen
class BootRequest:
    env: EnvFile
    image: Image
    job: str  # names the job's TFTP folder: <user>/<job>/
    console: ConsoleLog
    bootargs: tuple[str, ...] = ()
    attempts: int = 1  # boots in all when the lab fails one (infrastructure errors only)


class BootFlow(Protocol):
    #: what the flow is, for run.json ("netboot", "netboot+guest")
    kind: str

    def boot(self, request: BootRequest) -> ContextManager[BootedTarget]:
        """Boot to a shell; the booted target's ``topology`` says what was booted (kernels, QEMU, ...)."""


@attrs.frozen
class NetbootFlow:
    """The env file's netboot strategy (U-Boot or iPXE): stage on TFTP, power on, boot, the shell."""

    kind: str = "netboot"

    @contextlib.contextmanager
    def boot(self, request: BootRequest) -> Iterator[BootedTarget]:
        with boot_target(request.env, request.image, request.job, request.console, list(request.bootargs),
                         attempts=request.attempts) as booted:
            yield booted
