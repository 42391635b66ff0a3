"""What farm's netboot strategies share (U-Boot and iPXE): the image to boot, the kernel command
line, the TFTP server, and the wait for the initrd's ready marker. Each bootloader's flow is its own
subclass, read top to bottom in its ``transition``."""

from __future__ import annotations

import attr
from labgrid.strategy.common import Strategy

from ..errors import JobError


@attr.s(eq=False)
class NetbootStrategy(Strategy):
    console_device = attr.ib(default="ttyS0", validator=attr.validators.instance_of(str))
    bootargs = attr.ib(default="", validator=attr.validators.instance_of(str))
    #: empty: the next-server of the bootloader's DHCP lease
    tftp_server = attr.ib(default="", validator=attr.validators.instance_of(str))
    #: hand the bootloader's DHCP lease to Linux (farm.ip=, farm.mac=): /init need not ask again
    pass_lease = attr.ib(default=True, validator=attr.validators.instance_of(bool))
    ready_marker = attr.ib(default="FARM-READY", validator=attr.validators.instance_of(str))
    tftp_timeout = attr.ib(default=120, validator=attr.validators.instance_of(int))  # dhcp and each transfer
    #: seconds to wait for the bootloader's echo of a typed command before erasing and retyping it
    echo_timeout = attr.ib(default=5.0, converter=float)
    ready_timeout = attr.ib(default=120, validator=attr.validators.instance_of(int))  # kernel -> ready marker

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        self.kernel_path: str | None = None
        self.initrd_path: str | None = None
        self.extra_bootargs: list[str] = []
        self.kernel_compressed = False
        self.retyped: list[str] = []  # bootloader commands typed again because their echo differed

    def set_image(self, kernel_path: str, initrd_path: str, extra_bootargs: list[str] | None = None,
                  kernel_compressed: bool = False) -> None:
        """The TFTP paths (as returned by staging) to boot at the next transition to ``shell``."""
        self.kernel_path, self.initrd_path = kernel_path, initrd_path
        self.extra_bootargs = list(extra_bootargs or [])
        self.kernel_compressed = kernel_compressed

    def staged(self) -> tuple[str, str]:
        if not (self.kernel_path and self.initrd_path):
            raise JobError("no image staged: call set_image() before booting")
        return self.kernel_path, self.initrd_path

    def kernel_args(self) -> list[str]:
        """The kernel command line: console, the env file's arguments, the run's (setups, --bootarg)."""
        return [f"console={self.console_device}", *self.bootargs.split(), *self.extra_bootargs]
