"""The flow ``system`` (farm.flows.system): a system image booted by U-Boot as it is, and the target it
leaves: no shell, only the system's console and network.

    flow = SystemFlow(settings, FlowSetup(arch="arm64"))
    image = flow.images(request).given                  # the system image, in farm's cache
    with flow.boot(BootRequest(env, image, job, console)) as booted:   # power -> U-Boot -> bootm -> ready line
        booted.read_facts().address                      # where its services are (the address pattern's)
        booted.stats()                                   # its console lines since the boot, as measurements

The boot is the env file's U-Boot strategy in its ``system`` state (farm.boot.uboot): dhcp, tftpboot
the file the chosen command boots, ``bootm``/``bootelf``/``go``, then the pipeline's ready line, every
fatal line watched (U-Boot refusing the image, a reset, a panic, the pipeline's own). The command is the
setup's ``boot``, else the env file's ``system_boot``, else the first the image offers (bootm, bootelf,
go). What the system printed from the hand-over to the ready line is kept: its banner is read with the
lines after it.
"""

from __future__ import annotations

import contextlib
import re
import time
from typing import Any, Iterator

import attrs

from ..errors import InfrastructureError, JobError
from ..images.image import SYSTEM, Image
from ..images.request import ImageRequest
from ..measure import Measurement
from ..measure.console import parse_stats
from .facts import TargetFacts
from .flow import BootRequest, FlowSetup, use_twin_cpus
from .session import Boot, boot_target
from .system_settings import SystemSettings
from .target import Responder
from .watch import LINUX_FATAL, BootFailure, Fatal, raise_fatal

KIND = "system"
#: the boot commands in the order an image's are tried when neither the setup nor the env file chooses
PREFERENCE = ("bootm", "bootelf", "go")
#: seconds a read of the console waits for more when the system is quiet (a sweep point's stats)
QUIET = 0.5


def choose_boot(setup_boot: str | None, env_boot: str, offered: dict[str, str], image: str) -> str:
    """The command that boots the image: the setup's, else the env file's, else the first it offers."""
    wanted = setup_boot or env_boot
    if wanted:
        if wanted not in offered:
            why = "the setup's system.boot" if setup_boot else "the env file's system_boot"
            raise JobError(f"{why} is {wanted}, but the system image '{image}' is booted by "
                           f"{', '.join(offered)} (a raw binary by go, or by bootm once farm wraps it: give "
                           "system.load_addr; an ELF by bootelf; a uImage or FIT by bootm)")
        return wanted
    return next(c for c in PREFERENCE if c in offered)


def fit_ramdisk_and_fdt(manifest: dict, artifact: str) -> tuple[bool, bool]:
    """For bootm: whether the image is a FIT carrying a ramdisk (bootm's second argument is then the image),
    and whether U-Boot's own device tree is passed (not when the FIT's configuration has one)."""
    if (manifest.get("formats") or {}).get(artifact) != "fit":
        return False, True
    header = manifest.get("header") or {}
    return bool(header.get("ramdisk")), not header.get("fdt")


def fit_parts(manifest: dict, artifact: str) -> tuple[str, str]:
    """A FIT's kernel and ramdisk images by name, as its default configuration names them ("" for others)."""
    if (manifest.get("formats") or {}).get(artifact) != "fit":
        return "", ""
    header = manifest.get("header") or {}
    return header.get("kernel") or "", header.get("ramdisk") or ""


@attrs.define(kw_only=True)
class SystemTarget(Boot):
    """A booted system image: no shell; its console (the system's statistics: a farm.boot.target.ConsoleTarget)
    and the address its services are at (a ServedTarget)."""

    console_driver: Any = None
    facts: TargetFacts | None = None
    #: a system answers the sweeps with its own echo (``served: true``), never one a flow started
    responder: Responder | None = None
    patterns: tuple = ()  # farm.measure.console.StatsPattern: the setup's stats
    fatal: tuple[Fatal, ...] = ()
    #: console text not read yet by a benchmark: at first, what the system printed up to its ready line
    unread: str = ""
    #: the system powered itself off (its console closed): nothing more will come
    ended: bool = False

    def read_facts(self) -> TargetFacts:
        assert self.facts is not None
        return self.facts

    def take_console(self, *, until: str | None = None, seconds: float = QUIET) -> str:
        """The console text since the last take: up to and including the first line matching ``until``
        (waited for at most ``seconds``; what follows stays unread), or, without ``until``, what arrives
        until the console has been quiet for :data:`QUIET` s (at most ``seconds`` in all). A fatal line
        raises its failure class; a system that powers itself off ends the text (``ended``)."""
        text, self.unread = self.unread, ""
        if until is not None:
            if (m := re.search(until, text)) is None and not self.ended:
                text += self._wait_for(until, seconds)
                m = re.search(until, text)
            if m is None:
                raise BootFailure(f"{self.name}: no console line matching {until!r} within {seconds:g} s"
                                  + (" (the system powered itself off)" if self.ended else ""))
            end = text.find("\n", m.end())
            end = len(text) if end < 0 else end + 1
            text, self.unread = text[:end], text[end:]
        else:
            deadline = time.monotonic() + seconds
            while not self.ended and (remaining := deadline - time.monotonic()) > 0:
                more = self._wait_quiet(min(QUIET, remaining))
                text += more
                if not more:
                    break
        for fatal in self.fatal:  # a fatal line that arrived with the rest (a wait for until already raised it)
            if (m := re.search(fatal.pattern, text)):
                raise_fatal(fatal, f"{self.name}'s console", text[:m.start()], m.group(0))
        return text

    def _wait_for(self, pattern: str, seconds: float) -> str:
        """What arrives up to the end of the line matching ``pattern`` (a fatal line raises)."""
        from pexpect import TIMEOUT

        try:
            index, before, match, _ = self.console_driver.expect([pattern, *(f.pattern for f in self.fatal)],
                                                                 timeout=seconds)
        except TIMEOUT:
            return self._unread_input()
        except InfrastructureError:  # its console closed: the system powered itself off
            self.ended = True
            return self._unread_input()
        if index > 0:
            raise_fatal(self.fatal[index - 1], f"{self.name}'s console", before, match, self.console_driver)
        from .watch import rest_of_line

        return _text(before) + _text(match.group(0)) + _text(rest_of_line(self.console_driver)) + "\n"

    def _wait_quiet(self, seconds: float) -> str:
        """What arrives within ``seconds`` ("" when nothing did)."""
        from pexpect import TIMEOUT

        try:
            _, before, _, _ = self.console_driver.expect([TIMEOUT], timeout=seconds)
        except InfrastructureError:
            self.ended = True
            return self._unread_input()
        return _text(before)

    def _unread_input(self) -> str:
        """What the console read and no expect took (dropped from it: it is in the text now)."""
        from ..lgcompat import drop_console_input, unread_console_input

        data = unread_console_input(self.console_driver)
        drop_console_input(self.console_driver)
        return _text(data)

    def stats(self, params: dict | None = None, *, until: str | None = None, seconds: float = QUIET,
              what: str = "console") -> list[Measurement]:
        """The setup's stats patterns read in :meth:`take_console`'s text, merged over ``params``."""
        return parse_stats(self.take_console(until=until, seconds=seconds), self.patterns, params=params, what=what)


def _text(data: Any) -> str:
    if data is None or not isinstance(data, (bytes, str)):
        return ""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return text.replace("\r", "")


def find_address(settings: SystemSettings, text: str) -> str | None:
    """The system's address: the settings' fixed one, else the address pattern's group in ``text``
    (the last match: a client that took a second lease says so last)."""
    pattern = settings.address_pattern
    if pattern is None:
        return settings.address
    found = [m.group("address") for m in pattern.finditer(text)]
    return found[-1] if found else None


@attrs.frozen
class SystemFlow:
    """The flow of a setup with ``system`` settings (see the module docstring)."""

    settings: SystemSettings
    setup: FlowSetup
    kind: str = KIND

    def images(self, image: ImageRequest) -> ImageRequest:
        """The system image: the setup's ``path`` (copied into farm's cache, or built: a bare-metal recipe),
        else the run's ``--image`` of a system image."""
        if self.settings.path is None:
            if image.given is None or image.given.kind != SYSTEM:
                raise JobError("a setup of the flow system without system.path boots the run's --image of a system "
                               "image, and the run was given none (farm run --image build/loader.img)")
            return image
        from ..images.system import system_image

        if not self.settings.path.exists():
            raise JobError(f"{self.settings.path_where or 'system.path'}: {self.settings.path}: no such file or "
                           "directory (a system image, a directory with its manifest.json, or a bare-metal recipe)")
        try:
            built = system_image(self.settings.path, name=self.settings.name, arch=self.setup.arch or None,
                                 load_addr=self.settings.load_addr)
        except JobError as exc:  # which setup's path, as well as what is wrong with it
            raise JobError(f"{self.settings.path_where or 'system.path'}: {exc}") from None
        return ImageRequest(given=built, label=built.name)

    @contextlib.contextmanager
    def boot(self, request: BootRequest) -> Iterator[SystemTarget]:
        image: Image = request.image
        if image.kind != SYSTEM:
            raise JobError(f"image '{image.name}' is a {image.kind} image (kernel + initrd): the flow system boots "
                           "system images")
        chosen: dict[str, Any] = {}

        def prepare(target) -> None:
            from .uboot import SystemBoot, UBootNetbootStrategy

            strategy = target.get_strategy()
            if not isinstance(strategy, UBootNetbootStrategy):
                raise JobError(f"{request.env.path}: the flow system boots through U-Boot (UBootNetbootStrategy); "
                               f"target '{target.name}' has {type(strategy).__name__}")
            command = choose_boot(self.settings.boot, strategy.system_boot, image.boots, image.name)
            artifact = image.boots[command]
            if command == "go":
                if not image.manifest.get("load_addr"):
                    raise JobError(f"system image '{image.name}': go needs its load address (system.load_addr)")
                load_addr = image.manifest["load_addr"]
            else:
                load_addr = self.settings.stage_addr or strategy.system_addr
            ramdisk, fdt = fit_ramdisk_and_fdt(image.manifest, artifact) if command == "bootm" else (False, False)
            fit_kernel, fit_ramdisk = fit_parts(image.manifest, artifact) if command == "bootm" else ("", "")
            strategy.set_system(SystemBoot(command, artifact, load_addr, self.settings.ready,
                                           self.settings.ready_timeout,
                                           tuple(Fatal(f, "a fatal line of the pipeline", BootFailure)
                                                 for f in self.settings.fatal), ramdisk=ramdisk, fdt=fdt,
                                           fit_kernel=fit_kernel, fit_ramdisk=fit_ramdisk))
            use_twin_cpus(target, self.setup.cpus)  # a system image's cores are its own on a board
            chosen.update(command=command, artifact=artifact, load_addr=load_addr, strategy=strategy)

        with boot_target(request.env, image, request.job, request.console, attempts=request.attempts,
                         prepare=prepare, state="system") as booted:
            strategy = chosen["strategy"]
            seen = strategy.system_output
            console = booted.target.get_driver("ConsoleProtocol")
            fatal = (*LINUX_FATAL, *strategy.system.fatal)
            target = SystemTarget(**attrs.asdict(booted, recurse=False), console_driver=console,
                                  patterns=self.settings.stats, fatal=fatal, unread=seen)
            address = self.settings.address if self.settings.address_pattern is None else None
            if self.settings.address_pattern is not None:  # in what it said so far, or waited for
                taken = target.take_console(until=self.settings.address, seconds=self.settings.ready_timeout)
                target.unread = taken + target.unread  # the console benchmark still reads all of it
                address = find_address(self.settings, taken)
            target.facts = TargetFacts(cpus=self.setup.cpus, online="", frequency_hz=None, frequency_source="unknown",
                                       governor="", kernel=f"system image {image.name}", machine="",
                                       address=address or "")
            target.recorded = {**target.recorded, "system": {
                "boot": chosen["command"], "artifact": chosen["artifact"],
                "sha256": image.manifest["artifacts"][chosen["artifact"]]["sha256"], "load_addr": chosen["load_addr"],
                "ready": _first_line(self.settings.ready, seen), "address": address,
                **({"cpus": self.setup.cpus} if self.setup.cpus else {})}}
            yield target


def _first_line(pattern: str, text: str) -> str | None:
    """The console line that matched the ready pattern, as it was printed."""
    m = re.search(pattern, text)
    if m is None:
        return None
    start = text.rfind("\n", 0, m.start()) + 1
    end = text.find("\n", m.end())
    return text[start:end if end >= 0 else len(text)].strip()
