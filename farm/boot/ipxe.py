"""Boot Linux over the network from iPXE, as the lab's x86 PCs do: the labgrid strategy.

    power on -> "Press Ctrl-B" -> iPXE> dhcp -> iPXE> chain tftp://<server>/<user>/<job>/boot.ipxe
             -> the job's script: kernel, initrd, boot -> ready marker -> shell

A PC's iPXE is in its NIC's flash or chainloaded by its firmware's PXE; either way it offers a Ctrl-B
prompt, so the flow is U-Boot's: interrupt, then type two commands, both through iPXE's driver
(farm.boot.ipxedriver.FarmIPXEDriver, as U-Boot's go through FarmUBootDriver). The job's iPXE script
is staged in the job's TFTP folder next to its kernel and initrd, so nothing on the DHCP or TFTP server
is shared between jobs.

iPXE reports a failure as a line ending in an error URL (``bzImage... No such file or directory
(http://ipxe.org/2d12603b)``) and returns to its prompt. After each command the driver waits for the
prompt (or, after ``chain``, for the ready marker), so a failure is an :class:`InfrastructureError`
quoting iPXE's lines as soon as iPXE gives up, not after a timeout.

States: ``off``, ``ipxe`` (at iPXE's command line), ``shell``. Call
:meth:`IPXENetbootStrategy.set_image` with the staged paths first, then ``transition("shell")``. Every
value that reaches the iPXE command line or script is checked here: env files, images and job ids are
inputs, not trusted script text.
"""

from __future__ import annotations

import enum
import os
import posixpath
import re
import tempfile
from pathlib import Path

import attr
from labgrid.factory import target_factory
from labgrid.step import step
from labgrid.strategy.common import StrategyError, never_retry

from ..errors import JobError
from ..values import BOOTARG
from .ipxedriver import FarmIPXEDriver, console_lines, ipxe_errors  # noqa: F401  (the driver it binds; parsers)
from .netboot import NetbootStrategy
from .watch import LINUX_FATAL

_TFTP_PATH = re.compile(r"[A-Za-z0-9._+/-]+")
_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")  # an IPv4 address or a DNS name

#: iPXE settings, expanded by iPXE itself: the TFTP server and the lease of its DHCP
NEXT_SERVER = "${next-server}"
LEASE_ARG = "farm.ip=${ip}:${netmask}:${gateway} farm.mac=${mac}"  # read by /init (farm/images/init.sh)
SCRIPT_NAME = "boot.ipxe"
#: the strategy's settings of an older farm that are FarmIPXEDriver's now
MOVED_TO_DRIVER = ("interrupt", "prompt", "console_columns", "firmware_timeout")



class Status(enum.Enum):
    unknown = 0
    off = 1
    ipxe = 2
    shell = 3


def checked(value: str, pattern: re.Pattern[str], what: str) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value) or ".." in value:
        raise JobError(f"{what} {value!r} contains characters not allowed in an iPXE command or script")
    return value


def tftp_url(server: str | None, path: str) -> str:
    """``tftp://<server>/<path>``; without a server, the next-server of iPXE's DHCP lease.

    iPXE drops the URL's first '/', so a staged path (relative to the TFTP root, or absolute) is
    requested exactly as staging returned it.
    """
    host = checked(server, _HOST, "TFTP server") if server else NEXT_SERVER
    return f"tftp://{host}/{checked(path, _TFTP_PATH, 'TFTP path')}"


def ipxe_script(*, server: str | None, kernel: str, initrd: str, bootargs: list[str], pass_lease: bool) -> str:
    """The job's iPXE script (pure: easy to read and to test).

    ``initrd=<name>`` tells the kernel's EFI stub which of iPXE's images is the initrd (a PC whose iPXE
    runs under UEFI); booted from BIOS, iPXE hands the kernel its loaded initrds itself.
    ``pass_lease`` hands iPXE's DHCP lease to Linux as ``farm.ip=`` so /init need not ask again.
    """
    args = [f"initrd={posixpath.basename(checked(initrd, _TFTP_PATH, 'initrd path'))}"]
    args += [checked(arg, BOOTARG, "kernel argument") for arg in bootargs]
    if pass_lease:
        args.append(LEASE_ARG)
    return "\n".join([
        "#!ipxe",
        f"kernel {tftp_url(server, kernel)} {' '.join(args)}",
        f"initrd {tftp_url(server, initrd)}",
        "boot",
        "",
    ])


def ipxe_commands(*, server: str | None, script: str) -> list[str]:
    """What is typed at iPXE's prompt: configure the NIC, then run the job's script."""
    return ["dhcp", f"chain {tftp_url(server, script)}"]


def staged_folder(path: str, external: str) -> str:
    """The job folder (``<user>/<job>``) of a path returned by ``JobTFTPProviderDriver.stage_as``."""
    folder = posixpath.dirname(path)
    prefix = external.rstrip("/")
    if prefix:
        if not folder.startswith(prefix + "/"):
            raise JobError(f"staged path {path!r} is not under the TFTP provider's external path {external!r}")
        folder = folder[len(prefix) + 1:]
    if not folder:
        raise JobError(f"staged path {path!r} is in no job folder")
    return folder


@target_factory.reg_driver
@attr.s(eq=False)
class IPXENetbootStrategy(NetbootStrategy):
    """iPXE + TFTP + the job's iPXE script to a busybox shell; the PC's values come from the env file."""

    BOOTLOADER = "ipxe"

    bindings = {
        "power": "PowerProtocol",
        "console": "ConsoleProtocol",
        "ipxe": "FarmIPXEDriver",  # iPXE's command line (farm.boot.ipxedriver), as U-Boot's is its driver's
        "shell": "ShellDriver",
        "tftp": "JobTFTPProviderDriver",
    }

    #: the strategy's attributes of an older farm, refused when the env file is read (farm.boot.envfile)
    RETIRED = MOVED_TO_DRIVER
    RETIRED_WHY = "settings of iPXE's command line, now of FarmIPXEDriver (farm.boot.ipxedriver): move them there"

    status = attr.ib(default=Status.unknown)

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        self._scratch: tempfile.TemporaryDirectory | None = None  # holds the job's script while it boots

    def set_image(self, kernel_path: str, initrd_path: str, extra_bootargs: list[str] | None = None,
                  kernel_compressed: bool = False) -> None:
        """The TFTP paths (as returned by staging) to boot at the next transition to ``shell``.

        Checks every value at once, so bad input is a JobError before the PC is powered on.
        """
        if kernel_compressed:
            raise JobError("iPXE boots a bzImage, which decompresses itself: build the image without kernel.compress")
        super().set_image(kernel_path, initrd_path, extra_bootargs)
        self.script()
        if staged_folder(kernel_path, self._external()) != staged_folder(initrd_path, self._external()):
            raise JobError(f"kernel {kernel_path!r} and initrd {initrd_path!r} are staged in different folders")

    def script(self) -> str:
        kernel, initrd = self.staged()
        return ipxe_script(server=self.tftp_server or None, kernel=kernel, initrd=initrd, bootargs=self.kernel_args(),
                           pass_lease=self.pass_lease)

    def _external(self) -> str:
        return self.tftp.provider.external

    @never_retry
    @step(args=["status"])
    def transition(self, status):
        if not isinstance(status, Status):
            status = Status[status]
        if status == Status.unknown:
            raise StrategyError(f"can not transition to {status}")
        if status == self.status:
            return
        if status == Status.off:
            self.target.deactivate(self.shell)
            self.target.deactivate(self.ipxe)
            self.target.activate(self.power)
            self.power.off()
            self._drop_script()
        elif status == Status.ipxe:
            self.transition(Status.off)
            self.target.activate(self.console)
            self.power.on()
            self.target.activate(self.ipxe)  # waits for the Ctrl-B prompt and answers it
        elif status == Status.shell:
            script = self.script()  # fail on bad input before touching the PC
            self.transition(Status.ipxe)
            self._netboot(ipxe_commands(server=self.tftp_server or None, script=self._stage_script(script)))
            self.target.activate(self.shell)
        self.status = status

    def _stage_script(self, script: str) -> str:
        """Stage the job's script in the job's folder, next to its kernel; returns its TFTP path.

        The local copy lives until the PC is powered off (a local TFTP provider links to it).
        """
        self._drop_script()
        self._scratch = tempfile.TemporaryDirectory(prefix="farm-ipxe-")
        os.chmod(self._scratch.name, 0o755)  # a local TFTP server follows the link into it
        local = Path(self._scratch.name) / SCRIPT_NAME
        local.write_text(script)
        local.chmod(0o644)
        self.target.activate(self.tftp)
        return self.tftp.stage_as(str(local), staged_folder(self.kernel_path, self._external()), SCRIPT_NAME)

    def _drop_script(self) -> None:
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    @step(args=["commands"])
    def _netboot(self, commands: list[str]) -> None:
        *setup, chain = commands
        for command in setup:
            self.ipxe.run(command, self.tftp_timeout)
        self.ipxe.run_until(chain, self.ready_marker, self.tftp_timeout + self.ready_timeout, fatal=LINUX_FATAL)
        self.retyped.extend(self.ipxe.retyped)
        self.ipxe.retyped.clear()
