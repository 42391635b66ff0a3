"""What a boot flow hands over, typed: the protocols benchmarks ask for.

    with flow.boot(request) as booted:        # a BootedTarget: its facts and its boot record
        booted.run("uname -a")                #   a ShellTarget: a shell, and the CPUs it reads
        ctx.reach(5201)                       #   a ServedTarget: ports the lab host reaches, a responder
        booted.stats(until="powering off")    #   a ConsoleTarget: a system image's console as records

A flow says which of these its targets implement (``farm.flows.FlowType.gives``) and a benchmark which
it needs (``farm.bench.params.Params.requires``); a setup whose flow cannot give what a benchmark of
the pipeline needs is refused when the pipeline file is read, naming file:line: field. A benchmark
reaches the target through its context (``ctx.shell_target``, ``ctx.served_target``,
``ctx.console_target``: farm.bench.context), which checks the protocol again, so a flow that hands
over less than its type promised fails as a job error naming what was missing.

farm's targets (farm.boot.session.LinuxTarget: the netboot, guest and DPDK flows'; farm.boot.system.
SystemTarget: the system flow's) implement them by their fields and methods; a lab's flow may hand over
any object that does (they are structural: ``isinstance`` checks that every member is there).

Nothing here imports labgrid: the benchmark registrations import it, and ``farm --help`` stays quick.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Protocol, runtime_checkable

import attrs

if TYPE_CHECKING:
    from ..measure import Measurement
    from .facts import TargetFacts


@attrs.frozen
class Responder:
    """An echo responder a flow started on the target (farm.boot.dpdk: DPDK's testpmd): a sweep reaches it
    instead of starting farm's own, tags its records ``responder=<name>``, and calls ``check()`` after each
    point (it raises when the responder is gone)."""

    name: str
    #: the target's cores it busy-polls: 100 % busy by design, left out of the settle rule and CPU figures
    polling_cores: tuple[int, ...] = ()
    check: Callable[[], None] = attrs.field(default=lambda: None, eq=False)
    #: why the sweep reports no CPU utilisation for it (run.json and the sweep's progress say it)
    cpu_note: str = ""


#: a CPU channel's read of per-core times, given how the lab host reaches a port of the target's network
#: (``reach(address, port) -> (host, port)``): farm.guest.channel.CpuChannel
CpuReader = Callable[[Callable[[str, int], tuple[str, int]]], dict]


class Shell(Protocol):
    """A shell on the target (labgrid's CommandProtocol: farm.boot.shell.FarmShellDriver)."""

    def run(self, command: str, timeout: float = 60) -> tuple[list[str], list[str], int]: ...

    def run_check(self, command: str, timeout: float = 60) -> list[str]: ...


@runtime_checkable
class BootedTarget(Protocol):
    """Every target a flow hands over: what the runner records of the boot and reads of the target."""

    name: str
    arch: str
    #: a QEMU twin: its clocks and cycle counters are QEMU's, not a board's
    emulated: bool
    boot_seconds: float
    failed_attempts: list[str]
    retyped: list[str]

    def read_facts(self) -> "TargetFacts":
        """Its cores, CPU frequency, kernel and the address the lab host reaches (farm.boot.facts)."""

    def record(self) -> dict:
        """The boot as run.json records it."""


@runtime_checkable
class ShellTarget(BootedTarget, Protocol):
    """A Linux shell the benchmarks run commands on, and the CPUs their CPU figures are of."""

    shell: Shell
    #: which CPU the shell's /proc/stat is: the board's cores ("board"), or a guest's vCPUs ("vcpus")
    cpu_scope: str
    #: CPUs read through a channel of their own, not the shell: scope -> a reader (a guest's board and vCPUs)
    cpu_channels: Mapping[str, CpuReader]

    def run(self, command: str, timeout: float = 60) -> list[str]:
        """Run ``command``; a non-zero exit raises labgrid's ExecutionError."""


@runtime_checkable
class ServedTarget(BootedTarget, Protocol):
    """Services on the target's network that the lab host reaches (at ``read_facts().address``)."""

    #: labgrid's target: its QEMU forwards (a twin's ports), its place's load generators; None: neither
    target: Any
    #: the echo responder the flow started (a DPDK echo); None: a sweep starts farm's own, or the system its own
    responder: Responder | None


@runtime_checkable
class ConsoleTarget(BootedTarget, Protocol):
    """A system image's console, read as records by its setup's stats patterns (farm.measure.console)."""

    def stats(self, params: dict | None = None, *, until: str | None = None, seconds: float = 0.5,
              what: str = "console") -> "list[Measurement]":
        """The console's lines since the last read, up to ``until`` (waited for ``seconds``), as records."""


#: what each protocol is, as messages name it
OFFERS: dict[type, str] = {
    ShellTarget: "a shell",
    ServedTarget: "a network the lab host reaches",
    ConsoleTarget: "a system image's console",
}


def what(protocols: Iterable[type]) -> str:
    """The protocols as a message names them: "a shell and a network the lab host reaches"."""
    names = [OFFERS.get(p, p.__name__) for p in protocols]
    return " and ".join(names) if names else "nothing a benchmark can use"


def lacking(needs: Iterable[type], gives: Iterable[type]) -> list[type]:
    """What of ``needs`` is not in ``gives`` (a benchmark's needs against a flow's promise)."""
    given = set(gives)
    return [p for p in needs if p not in given]


def not_implemented(booted: object, protocols: Iterable[type]) -> list[type]:
    """The protocols ``booted`` does not implement (a flow's target against its flow's promise)."""
    return [p for p in protocols if not isinstance(booted, p)]
