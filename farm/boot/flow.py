"""A boot flow: how a target gets from power-off to where the benchmarks run, and what that needs.

    flow = NetbootFlow(pin_khz=1000000)        # power -> U-Boot or iPXE -> Linux (the env file's strategy)
    image = flow.images(ImageRequest(recipe))  # the images a boot of it needs, built by the runner
    with flow.boot(BootRequest(env, built, job, console, bootargs)) as booted:
        booted.shell.run_check("uname -a")
        booted.record()                        # what run.json says of the boot

A flow declares the images it needs for a setup (:meth:`BootFlow.images`: the runner builds them,
the benchmarks' needs in the image they run on), boots, pins what the setup pins (the CPU frequency),
says the address the lab host reaches the benchmarks at, and hands over a target that records itself
and implements what the benchmarks ask for (farm.boot.target: a shell, a served network, a system's
console; the netboot flow's :class:`~farm.boot.session.LinuxTarget` gives the first two). Leaving the block always ends what it
started (the board powered off, the job's TFTP folder removed). Flows compose: "host, then a guest on
it" (farm.guest.flow) enters the netboot flow and starts the guest on its shell.

The runner (farm.run.runner) knows only this interface and the registry that makes a setup's flow
(farm.flows), so its tests inject a flow that boots nothing, and a new way of booting (a system image
through ``bootm``/``bootelf``, a DPDK host) is a new flow, not an edit of the runner.
"""

from __future__ import annotations

import contextlib
from typing import ContextManager, Iterator, Protocol

import attrs

from ..images.image import Image
from ..images.request import ImageRequest
from .console_log import ConsoleLog
from .facts import pin_frequency
from .session import EnvFile, LinuxTarget, boot_target
from .target import BootedTarget


@attrs.frozen
class BootRequest:
    env: EnvFile
    image: Image
    job: str  # names the job's TFTP folder: <user>/<job>/
    console: ConsoleLog
    bootargs: tuple[str, ...] = ()
    attempts: int = 1  # boots in all when the lab fails one (infrastructure errors only)


@attrs.frozen
class FlowSetup:
    """What every flow is told of its setup and run, besides its own settings (farm.flows)."""

    #: the setup's CPU frequency, pinned through cpufreq once the target (a guest's host) is up
    cpu_frequency_khz: int | None = None
    #: the target ports the run's benchmarks reach from the lab host (their registrations' ``ports``)
    ports: tuple[int, ...] = ()
    #: the setup's cores: Linux is booted with ``maxcpus=N``, a QEMU twin started with ``-smp N``
    cpus: int | None = None
    #: the target's architecture ("" when the flow is made for no target yet)
    arch: str = ""


class BootFlow(Protocol):
    #: what the flow is, for run.json ("netboot", "netboot+guest")
    kind: str

    def images(self, image: ImageRequest) -> ImageRequest:
        """The image a boot of this flow boots (its request, for the runner to build), given the setup's
        own: its recipe (or the run's ``--image``) with what the run's benchmarks need on it."""

    def boot(self, request: BootRequest) -> ContextManager[BootedTarget]:
        """Boot to where the benchmarks run; the booted target implements what the flow's type says it
        gives (farm.flows.FlowType.gives) and records what was booted (``record()``)."""


@attrs.frozen
class NetbootFlow:
    """The env file's netboot strategy (U-Boot or iPXE): stage on TFTP, power on, boot, the shell;
    the setup's cores (``maxcpus=``; a twin's ``-smp``) and CPU frequency (cpufreq) set there."""

    pin_khz: int | None = None
    cpus: int | None = None
    kind: str = "netboot"
    #: a QEMU twin's NIC as this QEMU device instead of the env file's ``nic`` model (the DPDK flow's
    #: modern virtio-net-pci); a board is left as it is
    twin_nic: str | None = None

    def images(self, image: ImageRequest) -> ImageRequest:
        return image

    @contextlib.contextmanager
    def boot(self, request: BootRequest) -> Iterator[LinuxTarget]:
        bootargs = [*request.bootargs, *cpus_bootargs(self.cpus, request.bootargs)]
        with boot_target(request.env, request.image, request.job, request.console, bootargs,
                         attempts=request.attempts, prepare=self._prepare) as booted:
            if self.pin_khz:
                booted.recorded["cpu_frequency"] = pin_or_nominal(booted, self.pin_khz)
            yield booted

    def _prepare(self, target) -> None:
        use_twin_cpus(target, self.cpus)
        if self.twin_nic:
            _twin(target, lambda driver: driver.use_nic_device(self.twin_nic))


def _twin(target, use) -> None:
    """``use(driver)`` for the target's QEMU twin driver, if it has one (a board has none)."""
    from .qemu import TwinQEMUDriver

    for driver in target.drivers:
        if isinstance(driver, TwinQEMUDriver):
            use(driver)


def cpus_bootargs(cpus: int | None, bootargs) -> list[str]:
    """``maxcpus=N`` for a setup of N cores (none when the setup's own arguments set it)."""
    if not cpus or any(str(a).startswith("maxcpus=") for a in bootargs):
        return []
    return [f"maxcpus={cpus}"]


def use_twin_cpus(target, cpus: int | None) -> None:
    """A QEMU twin of the target is started with ``cpus`` vCPUs (``-smp``), as a board boots with that many
    cores online; a board is left as it is (its kernel's ``maxcpus=`` does it)."""
    if not cpus:
        return
    from .qemu import TwinQEMUDriver

    for driver in target.drivers:
        if isinstance(driver, TwinQEMUDriver):
            driver.use_cpus(cpus)


#: why a twin's CPUs run at no set frequency (run.json says it beside the nominal value)
TWIN_FREQUENCY = ("a QEMU twin has no CPU frequency to set: TCG runs as fast as the host lets it, and its "
                  "one rate control, -icount, ties every vCPU to one thread (no MTTCG), which would change "
                  "what is measured far more than a frequency does; the setup's value is recorded as nominal")


def pin_or_nominal(booted: LinuxTarget, khz: int) -> dict:
    """The setup's CPU frequency: pinned through cpufreq's userspace governor on a board (a board without
    cpufreq cannot run the setup: a TestFailure); on a QEMU twin, recorded as nominal (:data:`TWIN_FREQUENCY`)."""
    if booted.emulated:
        return {"requested_khz": khz, "pinned": False, "nominal_hz": khz * 1000, "why": TWIN_FREQUENCY}
    pin_frequency(booted.shell, booted.name, khz)
    return {"requested_khz": khz, "pinned": True}


def netboot(settings: None, setup: FlowSetup) -> NetbootFlow:
    """The netboot flow of a setup (farm.flows: the default flow, no settings of its own)."""
    return NetbootFlow(pin_khz=setup.cpu_frequency_khz, cpus=setup.cpus)
