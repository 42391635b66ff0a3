"""Boot Linux over the network from U-Boot, exactly as the MaaXBoard does: the labgrid strategy.

    power on -> catch autoboot -> dhcp -> tftpboot kernel, [dtb,] initrd -> boot command -> ready marker -> shell

The boot command hands over to what was loaded: ``booti`` (an arm64 Image, the default), ``bootz`` (an
arm zImage) or ``bootm`` (a uImage/FIT), chosen by the env file (``boot_command``) or a boot flow
(:meth:`UBootNetbootStrategy.use_boot_command`) from :data:`BOOT_COMMANDS`.

A system image (farm.images.system: a lab's loader.img, farm's bare-metal stand-in) is booted as it is:

    power on -> catch autoboot -> dhcp -> tftpboot the file -> bootm | bootelf | go -> its ready line

(:meth:`UBootNetbootStrategy.set_system`, then ``transition("system")``: no shell afterwards; the
env file's ``system_boot`` and ``system_addr`` say how this board boots one).

States: ``off``, ``uboot``, ``shell``, ``system``. Call :meth:`UBootNetbootStrategy.set_image` with the staged
file names first, then ``transition("shell")``. Every value that reaches the U-Boot command line is
checked or quoted here: env files and images are inputs, not trusted shell text.
"""

from __future__ import annotations

import enum
import re

import attr
import attrs
from labgrid.driver import QEMUDriver
from pexpect import TIMEOUT
from labgrid.factory import target_factory
from labgrid.step import step
from labgrid.strategy.common import StrategyError, never_retry

from ..errors import InfrastructureError, JobError
from ..schema import between
from ..values import BOOTARG
from .dtb import dtb_name_problem, dtb_record, image_dtb_problem
from .envfile import attribute
from .netboot import NetbootStrategy
from .ubootdriver import FarmUBootDriver  # noqa: F401  (registers the driver the strategy binds)
from .watch import LINUX_FATAL, UBOOT_FATAL, BootFailure, Fatal, raise_fatal

_TFTP_PATH = re.compile(r"^[A-Za-z0-9._+/-]+$")
_ADDR = re.compile(r"^(0x[0-9a-fA-F]+|\$\{[a-z_]+\})$")
_FIT_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}$")
_IPV4 = re.compile(r"^((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])$")


class Status(enum.Enum):
    unknown = 0
    off = 1
    uboot = 2
    shell = 3
    system = 4  # a system image booted (no shell: only its console and network)


def _check(value: str, pattern: re.Pattern[str], what: str) -> str:
    if not pattern.fullmatch(value) or ".." in value:
        raise JobError(f"{what} {value!r} contains characters not allowed on a U-Boot command line")
    return value


def uboot_boot_commands(*, kernel: str, initrd: str, kernel_addr: str, initrd_addr: str, fdt_addr: str,
                        bootargs: list[str], server: str | None, use_dhcp: bool,
                        blocksize: int | None = None, windowsize: int | None = None,
                        comp_addr: str | None = None, comp_size: int | None = None,
                        pass_lease: bool = True, dtb: str | None = None,
                        fdt_load_addr: str = "${fdt_addr_r}") -> list[str]:
    """The U-Boot commands of a netboot, all values checked (pure: easy to read and to test).

    ``dtb``: the staged path of the image's DTB, loaded at ``fdt_load_addr`` (the boot command then
    hands Linux that address: :func:`boot_command`); None: U-Boot's own device tree at ``fdt_addr``.

    ``comp_addr``/``comp_size``: the kernel is compressed (Image.gz); booti decompresses it through
    ``kernel_comp_addr_r``. ``pass_lease``: hand U-Boot's DHCP lease to Linux as ``farm.ip=`` so /init
    configures the interface at once instead of asking DHCP a second time.
    """
    _check(kernel, _TFTP_PATH, "kernel path")
    _check(initrd, _TFTP_PATH, "initrd path")
    if dtb is not None:
        _check(dtb, _TFTP_PATH, "dtb path")
    for addr in (kernel_addr, initrd_addr, fdt_addr, *([comp_addr] if comp_addr else []),
                 *([fdt_load_addr] if dtb is not None else [])):
        _check(addr, _ADDR, "load address")
    for arg in bootargs:
        _check(arg, BOOTARG, "kernel argument")
    commands = []
    for name, value in (("tftpblocksize", blocksize), ("tftpwindowsize", windowsize)):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 65464:
                raise JobError(f"{name} {value!r}: expected a whole number of bytes/blocks, 1..65464")
            commands.append(f"setenv {name} {value}")
    if use_dhcp:
        commands += ["setenv autoload no", "dhcp"]
    if server:
        commands.append(f"setenv serverip {_check(server, _IPV4, 'TFTP server address')}")
    if comp_addr:
        if isinstance(comp_size, bool) or not isinstance(comp_size, int) or comp_size <= 0:
            raise JobError(f"kernel_comp_size {comp_size!r}: expected a positive number of bytes")
        commands += [f"setenv kernel_comp_addr_r {comp_addr}", f"setenv kernel_comp_size {comp_size:#x}"]
    # double quotes so that U-Boot expands its own lease variables; user values were checked above
    lease = ["farm.ip=${ipaddr}:${netmask}:${gatewayip}", "farm.mac=${ethaddr}"] if pass_lease else []
    dtb_load = [] if dtb is None else [*filter(None, [address_guard(fdt_load_addr)]), f"tftpboot {fdt_load_addr} {dtb}"]
    commands += [
        f"tftpboot {kernel_addr} {kernel}",
        *dtb_load,
        f"tftpboot {initrd_addr} {initrd}",  # last: its ${filesize} is the initrd's
        "setenv farm_initrd_size ${filesize}",
        'setenv bootargs "' + " ".join([*bootargs, *lease]) + '"',
    ]
    return commands


def address_guard(addr: str) -> str | None:
    """A command failing when the U-Boot variable ``addr`` names is unset (None: ``addr`` is a number).

    ``tftpboot ${unset} file`` loads to U-Boot's default address without a word and the boot command then takes
    no device tree at all (the board resets); not every U-Boot defines ``fdt_addr_r`` (QEMU's has none)."""
    return f'test -n "{addr}"' if addr.startswith("${") else None


#: U-Boot's commands that boot a kernel with a raw initrd (``addr:size``) and a device tree, by what they boot
BOOT_COMMANDS = {"booti": "an arm64 Image", "bootz": "an arm zImage", "bootm": "a uImage or FIT image"}
#: the one of them that decompresses a kernel (Image.gz) through ``kernel_comp_addr_r``
DECOMPRESSING = "booti"


def boot_command(command: str, *, kernel_addr: str, initrd_addr: str, fdt_addr: str) -> str:
    """The boot line (typed, not run: it does not return); the initrd's size is the one tftpboot saw."""
    if command not in BOOT_COMMANDS:
        raise JobError(f"boot command {command!r}: expected one of {', '.join(BOOT_COMMANDS)}")
    for addr in (kernel_addr, initrd_addr, fdt_addr):
        _check(addr, _ADDR, "load address")
    return f"{command} {kernel_addr} {initrd_addr}:${{farm_initrd_size}} {fdt_addr}"



#: how U-Boot hands over to a system image, by command (farm.images.image.SYSTEM_BOOTS)
SYSTEM_COMMANDS = ("bootm", "bootelf", "go")
#: console lines that end a system image's boot at once: U-Boot refusing the image (the image's fault)
SYSTEM_FATAL = (
    Fatal(r"Wrong Image Format for bootm command[^\r\n]*", "U-Boot's bootm does not take the image", BootFailure),
    Fatal(r"ERROR: can't get kernel image![^\r\n]*", "U-Boot found no kernel in the image", BootFailure),
    Fatal(r"Bad (Data CRC|Header Checksum)[^\r\n]*", "the image is damaged (uImage CRC)", BootFailure),
    Fatal(r"Bad hash in FIT image[^\r\n]*", "the image is damaged (FIT hash)", BootFailure),
    Fatal(r"## No elf image at address[^\r\n]*", "not an ELF image", BootFailure),
    Fatal(r"Image too large: increase CONFIG_SYS_BOOTM_LEN[^\r\n]*", "the image is too large for bootm", BootFailure),
    Fatal(r"ERROR: (new format image overwritten|Failed to allocate)[^\r\n]*", "the image overlaps its load "
          "address", BootFailure),
)


@attrs.frozen
class SystemBoot:
    """What a transition to ``system`` boots (farm.boot.system makes it): a staged file, the command that
    boots it and where, and the console line that says the system is up."""

    command: str  # SYSTEM_COMMANDS
    artifact: str  # the image's file the command boots (its name in the image directory)
    #: where tftpboot loads the file (go: the raw binary's own load address, where it is started)
    load_addr: str
    ready: str  # a regex of the ready line
    ready_timeout: float = 120.0
    fatal: tuple[Fatal, ...] = ()  # the pipeline's own fatal lines, besides U-Boot's and a reset
    #: bootm's ramdisk argument: the image itself (a FIT holding one), else "-" (none)
    ramdisk: bool = False
    #: bootm's device tree argument: U-Boot's own (the env file's fdt_addr), unless the image holds one
    fdt: bool = True
    #: a FIT's kernel and ramdisk by name (``ADDR:kernel-1``): a U-Boot built with FIT_BEST_MATCH (Debian's)
    #: looks for a configuration matching its own device tree, not the default one, when none is named
    fit_kernel: str = ""
    fit_ramdisk: str = ""


def system_boot_line(boot: SystemBoot, *, fdt_addr: str) -> str:
    """The line that hands over to a system image (typed, not run: it does not return)."""
    if boot.command not in SYSTEM_COMMANDS:
        raise JobError(f"system boot command {boot.command!r}: expected one of {', '.join(SYSTEM_COMMANDS)}")
    addr = _check(boot.load_addr, _ADDR, "load address")
    if boot.command == "go":
        return f"go {addr}"
    if boot.command == "bootelf":
        return f"bootelf -p {addr}"  # by its program headers, as a loader's segments are placed
    kernel = f"{addr}:{_check(boot.fit_kernel, _FIT_NAME, 'FIT image name')}" if boot.fit_kernel else addr
    ramdisk = f"{addr}:{_check(boot.fit_ramdisk, _FIT_NAME, 'FIT image name')}" if boot.fit_ramdisk else addr
    if boot.ramdisk or boot.fdt:
        fdt = f" {_check(fdt_addr, _ADDR, 'device tree address')}" if boot.fdt else ""
        return f"bootm {kernel} {ramdisk if boot.ramdisk else '-'}{fdt}"
    return f"bootm {kernel}"


def system_commands(boot: SystemBoot, staged: str, *, server: str | None, use_dhcp: bool,
                    blocksize: int | None = None, windowsize: int | None = None) -> list[str]:
    """The U-Boot commands before a system image's boot line: the network, the file loaded (pure)."""
    _check(staged, _TFTP_PATH, "system image path")
    commands = [c for c in uboot_boot_commands(kernel=staged, initrd=staged, kernel_addr=boot.load_addr,
                                               initrd_addr=boot.load_addr, fdt_addr="${fdtcontroladdr}",
                                               bootargs=[], server=server, use_dhcp=use_dhcp, blocksize=blocksize,
                                               windowsize=windowsize, pass_lease=False)
                if not c.startswith(("tftpboot", "setenv farm_initrd_size", "setenv bootargs"))]
    commands.append(f"tftpboot {boot.load_addr} {staged}")
    if boot.command == "bootelf":
        commands.append("setenv autostart yes")  # else bootelf loads the segments and returns without a word
    return commands


@target_factory.reg_driver
@attr.s(eq=False)
class UBootNetbootStrategy(NetbootStrategy):
    """U-Boot + TFTP + a boot command to a busybox shell; the board's values come from the env file."""

    BOOTLOADER = "uboot"

    bindings = {
        "power": "PowerProtocol",
        "console": "ConsoleProtocol",
        "uboot": "FarmUBootDriver",  # labgrid's UBootDriver, typing echo-checked (farm.boot.ubootdriver)
        "shell": "ShellDriver",
        "tftp": "JobTFTPProviderDriver",
    }

    console_device = attribute("ttyAMA0", str, "Linux's console device and its settings (console=ttyAMA0)")
    kernel_addr = attribute("${kernel_addr_r}", str, "where U-Boot loads the kernel")
    initrd_addr = attribute("${ramdisk_addr_r}", str, "where U-Boot loads the initrd")
    fdt_addr = attribute("${fdtcontroladdr}", str, "U-Boot's own device tree, booted when dtb is empty")
    dtb = attribute("", str, "a DTB of the image (its file name, e.g. imx8mq-evk.dtb), staged and booted instead "
                             "of U-Boot's device tree", check=dtb_name_problem)
    fdt_load_addr = attribute("${fdt_addr_r}", str, "where U-Boot loads that DTB")
    tftp_blocksize = attribute(None, int, "U-Boot's tftpblocksize, bytes (default: U-Boot's)", optional=True,
                               check=between(1, 65464))
    tftp_windowsize = attribute(None, int, "U-Boot's tftpwindowsize, blocks (default: U-Boot's)", optional=True,
                                check=between(1, 65464))
    kernel_comp_addr = attribute("", str, "where booti may unpack a compressed kernel (Image.gz); the image says "
                                          "whether it is one")
    kernel_comp_size = attribute(0x4000000, int, "how many bytes booti may unpack there")
    dhcp = attribute(True, bool, "ask for a DHCP lease first (false: U-Boot's network settings as they are)")
    boot_command = attribute("booti", str, "how U-Boot hands over to the kernel; a boot flow may choose another",
                             choices=tuple(BOOT_COMMANDS))
    system_boot = attribute("", str, "how this board boots a system image (farm.boot.system): bootm, bootelf or "
                                     "go; empty: the pipeline's choice, else the first the image offers (the QEMU "
                                     "twin's U-Boot hangs in go and bootelf: bootm)", choices=("", *SYSTEM_COMMANDS))
    system_addr = attribute("${kernel_addr_r}", str, "where U-Boot loads a system image for bootm and bootelf (go "
                                                     "loads a raw binary at its own address)")

    status = attr.ib(default=Status.unknown)

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        self.system: SystemBoot | None = None  # what a transition to "system" boots (set_system)
        self.system_path: str | None = None  # its staged TFTP path
        self.system_output = ""  # the console from the boot line to the ready line (the system's first words)

    def use_boot_command(self, command: str) -> None:
        """Boot with ``command`` (:data:`BOOT_COMMANDS`) from the next transition to ``shell`` on: the
        flow's choice for what it stages (a system image's ``bootm``)."""
        if command not in BOOT_COMMANDS:
            raise JobError(f"boot command {command!r}: expected one of {', '.join(BOOT_COMMANDS)}")
        self.boot_command = command

    def set_system(self, boot: SystemBoot) -> None:
        """Boot ``boot`` at the next transition to ``system`` (its file is staged by :meth:`stage_system`)."""
        system_boot_line(boot, fdt_addr=self.fdt_addr)  # bad input fails now, before anything is staged
        self.system, self.system_path = boot, None

    def stage_system(self, tftp, image, folder: str) -> None:
        """Stage the file of ``image`` (a system image) that :meth:`set_system`'s command boots."""
        if self.system is None:
            raise JobError("a system image to stage, but no set_system() said how to boot it")
        self.system_path = tftp.stage_as(str(image.path / self.system.artifact), folder, self.system.artifact)

    def commands(self) -> list[str]:
        kernel, initrd = self.staged()
        return uboot_boot_commands(
            kernel=kernel, initrd=initrd, kernel_addr=self.kernel_addr,
            initrd_addr=self.initrd_addr, fdt_addr=self.fdt_addr, bootargs=self.kernel_args(),
            server=self.tftp_server or None, use_dhcp=self.dhcp,
            blocksize=self.tftp_blocksize, windowsize=self.tftp_windowsize,
            comp_addr=self._comp_addr() if self.kernel_compressed else None, comp_size=self.kernel_comp_size,
            pass_lease=self.pass_lease and self.dhcp, dtb=self._staged_dtb(), fdt_load_addr=self.fdt_load_addr)

    def boot_line(self) -> str:
        return boot_command(self.boot_command, kernel_addr=self.kernel_addr, initrd_addr=self.initrd_addr,
                            fdt_addr=self.fdt_load_addr if self.dtb else self.fdt_addr)

    def image_dtb(self, manifest: dict) -> str | None:
        """The env file's ``dtb``, checked against the image (before anything is staged or powered)."""
        if self.dtb and (problem := image_dtb_problem(self.dtb, manifest)):
            raise JobError(f"{self.field_where('dtb')}: {problem}")
        self.dtb_used = dtb_record(self.dtb, manifest)
        return self.dtb or None

    def _staged_dtb(self) -> str | None:
        if self.dtb and not self.dtb_path:
            raise JobError(f"{self.field_where('dtb')}: {self.dtb!r} was not staged: stage the image with "
                           "stage_image() or give set_image() its dtb_path")
        return self.dtb_path if self.dtb else None

    def _comp_addr(self) -> str:
        if self.boot_command != DECOMPRESSING:
            raise JobError(f"the image's kernel is compressed, which only {DECOMPRESSING} unpacks, not "
                           f"{self.boot_command}: build the image without kernel.compress")
        if not self.kernel_comp_addr:
            raise JobError("the image's kernel is compressed but the env file sets no kernel_comp_addr for "
                           "UBootNetbootStrategy (where U-Boot may decompress it)")
        return self.kernel_comp_addr

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
            self.target.deactivate(self.uboot)
            self.target.activate(self.power)
            self.power.off()
        elif status == Status.uboot:
            self.transition(Status.off)
            self.target.activate(self.console)
            self.power.on()
            self.target.activate(self.uboot)  # waits for autoboot and interrupts it
        elif status == Status.shell:
            commands, boot = self.commands(), self.boot_line()  # fail on bad input before touching the board
            self.transition(Status.uboot)
            self._netboot(commands, boot)
            self.target.activate(self.shell)
        elif status == Status.system:
            if self.system is None or self.system_path is None:
                raise JobError("no system image staged: call set_system() and stage_system() first")
            commands = system_commands(self.system, self.system_path, server=self.tftp_server or None,
                                       use_dhcp=self.dhcp, blocksize=self.tftp_blocksize,
                                       windowsize=self.tftp_windowsize)
            boot = system_boot_line(self.system, fdt_addr=self.fdt_addr)
            self.transition(Status.uboot)
            self._boot_system(commands, boot)
        self.status = status

    def _run_all(self, commands: list[str]) -> None:
        for command in commands:
            timeout = self.tftp_timeout if command.startswith(("tftp", "dhcp")) else 30
            output, _, code = self.uboot.run(command, timeout=timeout)
            if code != 0 and self.dtb and command == address_guard(self.fdt_load_addr):
                raise JobError(f"{self.field_where('fdt_load_addr')}: this U-Boot has no {self.fdt_load_addr} to load "
                               f"the DTB {self.dtb} at: set fdt_load_addr to a free address of the board's RAM")
            if code != 0:
                raise InfrastructureError(f"U-Boot command '{command}' failed (exit {code}): "
                                          + " | ".join(line for line in output[-4:] if line.strip()))

    @step()
    def _netboot(self, commands: list[str], boot: str) -> None:
        self._run_all(commands)
        self.uboot.type_line(boot)
        self.uboot.expect_or_fail([self.uboot.bootstring], UBOOT_FATAL, self.boot_command, self.uboot.boot_timeout)
        self.uboot.expect_or_fail([self.ready_marker], (*LINUX_FATAL, *UBOOT_FATAL), "booting Linux",
                                  self.ready_timeout)
        self.retyped.extend(self.uboot.retyped)
        self.uboot.retyped.clear()

    @step()
    def _boot_system(self, commands: list[str], boot: str) -> None:
        """Load the system image, hand over, wait for its ready line; keep what it said up to there."""
        assert self.system is not None
        self._run_all(commands)
        self.uboot.type_line(boot)
        self.retyped.extend(self.uboot.retyped)
        self.uboot.retyped.clear()
        fatal = (*SYSTEM_FATAL, *LINUX_FATAL, *UBOOT_FATAL, *self.system.fatal)
        try:
            index, before, match, _ = self.console.expect([self.system.ready, *(f.pattern for f in fatal)],
                                                          timeout=self.system.ready_timeout)
        except TIMEOUT:
            missing = f"no line matching {self.system.ready!r} within {self.system.ready_timeout:g} s after '{boot}'"
            if self.system.command in ("go", "bootelf") and any(isinstance(d, QEMUDriver) for d in self.target.drivers):
                # not the lab's fault, and the same on every attempt: a job error, not retried
                raise JobError(f"{missing}: Debian's U-Boot 2023.01 hangs in {self.system.command} on the QEMU twin "
                               "(its PL011 driver says output is pending while the FIFO is not full, and "
                               f"{self.system.command} flushes the console before the jump): boot a uImage with "
                               "bootm (system_boot: bootm in the twin's env file)") from None
            raise InfrastructureError(missing) from None
        if index > 0:
            raise_fatal(fatal[index - 1], f"booting the system image ({self.system.command})", before, match,
                        self.console)
        text = (before + match.group(0)) if isinstance(before, bytes) else (before + match.group(0)).encode()
        self.system_output = text.decode("utf-8", "replace").replace("\r", "")
