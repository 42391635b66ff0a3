"""What a benchmark run gets: the booted target, as the protocols it asks for (farm.boot.target: a shell
to run commands on, a network the lab host reaches, a system's console), and how to reach it."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Callable, TypeVar

import attrs

from ..boot.target import OFFERS, BootedTarget, ConsoleTarget, ServedTarget, ShellTarget
from ..errors import JobError
from ..measure import BenchmarkError

if TYPE_CHECKING:
    from ..boot.facts import TargetFacts

T = TypeVar("T")


# where each booted target's ports were reached: one forward per port for the whole boot. A second
# QEMU user-mode UDP forward to the same guest port is never answered: slirp finds a reply's socket by
# the guest's address and port, so the first forward's socket sends it (to a peer long gone).
_REACHED: "weakref.WeakKeyDictionary[object, dict[tuple, tuple[str, int]]]" = weakref.WeakKeyDictionary()


@attrs.define
class BenchContext:
    #: what the setup's flow handed over: a farm.boot.target.BootedTarget implementing the protocols the
    #: benchmark asks for (the pipeline file was refused otherwise)
    booted: BootedTarget
    facts: "TargetFacts"
    say: Callable[[str], None] = lambda text: None  # live progress, e.g. one line per sweep point
    #: (name, entry): a program the benchmark built and runs outside the image, for run.json's ``programs``
    program_built: Callable[[str, dict], None] = lambda name, entry: None

    @property
    def shell_target(self) -> ShellTarget:
        """The booted target as a shell target (a JobError when the flow handed over none)."""
        return self._as(ShellTarget)

    @property
    def served_target(self) -> ServedTarget:
        """The booted target as a served one: its network, reached from the lab host."""
        return self._as(ServedTarget)

    @property
    def console_target(self) -> ConsoleTarget:
        """The booted target as a system image's console."""
        return self._as(ConsoleTarget)

    def _as(self, protocol: type[T]) -> T:
        if not isinstance(self.booted, protocol):
            raise JobError(f"the benchmark needs {OFFERS[protocol]} on the target ({protocol.__name__}), and its "
                           f"setup's flow handed over a {type(self.booted).__name__}, which has none")
        return self.booted

    @property
    def cpu_scope(self) -> str:
        """Which CPU a CPU figure is of when it does not say: the shell's (a guest's vCPUs, ``vcpus``), else the
        board's (a shell-less system's figures, from its own CPU target, are its board's)."""
        return self.booted.cpu_scope if isinstance(self.booted, ShellTarget) else "board"

    def run(self, command: str, *, timeout: float = 60, tool: str = "target") -> list[str]:
        """Run on the target's shell; a non-zero exit is a :class:`BenchmarkError` with the output."""
        from labgrid.driver.exception import ExecutionError  # labgrid loads in ~0.3 s: not for `farm --help`

        try:
            return self.shell_target.shell.run_check(command, timeout=timeout)
        except ExecutionError as exc:
            output = " | ".join(line for line in (exc.stdout or [])[-5:] if line.strip())
            raise BenchmarkError(tool, f"'{command}' failed: {output or exc.msg}") from None

    def cpu_readers(self, shell_read: Callable[[], dict] | None = None) -> dict[str, Callable[[], dict]]:
        """Per CPU the benchmarks are measured on, a reader of its per-core times (``{"cpu": ...,
        "cpu0": ...}``, farm.measure.cpustat): the shell's own /proc/stat under the booted target's
        ``cpu_scope`` (a bare board's cores, ``board``; a guest's vCPUs, ``vcpus``), and the flow's
        other channels (farm.guest.channel: a guest's board, ``board``, read through its host's CPU
        server, and its vCPUs, ``vcpus``, through the guest's): a channel replaces the shell for its
        scope, so that no read crosses the console. ``shell_read``: the shell's reader instead of the
        whole SNAPSHOT (a sweep's ``head -n1 /proc/stat``)."""
        from ..measure import cpustat

        def shell() -> dict:
            return cpustat.parse_proc_stat_cores("\n".join(self.run(cpustat.SNAPSHOT, tool="cpu")))

        if not isinstance(self.booted, ShellTarget):  # a system image's CPU is read by its own CPU target
            return {}
        readers = {self.booted.cpu_scope: shell_read or shell}
        for scope, channel in self.booted.cpu_channels.items():
            readers[scope] = lambda channel=channel: channel(self.reach_at)
        return readers

    def cpu_windows(self) -> dict[str, Callable[[float], tuple[dict, dict]]]:
        """Per CPU of :meth:`cpu_readers`, a window of its per-core times ``seconds`` long: on the
        shell, both reads and the sleep between them in one command with shell builtins, so that the
        window holds no process farm started (a reader forked per sample kept a guest's one vCPU 20-40 %
        busy on the twin); through a channel, two reads ``seconds`` apart."""
        import time

        from ..measure import cpustat

        responder = self.booted.responder if isinstance(self.booted, ServedTarget) else None
        polling = {f"cpu{c}" for c in (responder.polling_cores if responder is not None else ())}

        def shell(seconds: float) -> tuple[dict, dict]:
            before, after = cpustat.parse_window(self.run(cpustat.window_command(seconds), timeout=seconds + 30,
                                                          tool="cpu"))
            if not polling:
                return before, after
            # a busy-polling responder's cores are busy by design: the others (and not the aggregate) are read
            kept = [k for k in before if k not in polling and k != "cpu" and k in after]
            if not kept:  # every core polls: nothing quiet to wait for, the window as it is
                return before, after
            return {k: before[k] for k in kept}, {k: after[k] for k in kept}

        def channel_window(read: Callable[[], dict]) -> Callable[[float], tuple[dict, dict]]:
            def window(seconds: float) -> tuple[dict, dict]:
                before = read()
                time.sleep(seconds)
                return before, read()
            return window

        readers = self.cpu_readers()
        scope = self.cpu_scope
        # a guest's busy-polling responder (DPDK in the guest) keeps its vCPU's host thread, a board core,
        # busy by design: the board's cores through the channel are then never quiet to wait for
        return {name: shell if name == scope else channel_window(read)
                for name, read in readers.items() if name == scope or not polling}

    def reach(self, port: int, protos: tuple[str, ...] = ("tcp",)) -> tuple[str, int]:
        """(host, port) at which the lab host reaches ``port`` on the target; the same for every
        benchmark of one boot (one forward per port, see ``_REACHED``)."""
        if not self.facts.address:
            raise BenchmarkError("network", "the target has no IPv4 address (did DHCP answer? see the console log)")
        return self.reach_at(self.facts.address, port, protos)

    def reach_at(self, address: str, port: int, protos: tuple[str, ...] = ("tcp",)) -> tuple[str, int]:
        """:meth:`reach` of ``port`` at another ``address`` of the target's network (a guest's host: its
        CPU channel, farm.guest.channel); one forward per address and port for the boot."""
        from ..boot.network import reach

        target = self.served_target.target
        known = _REACHED.setdefault(target, {})
        key = (address, port, tuple(sorted(protos)))
        if key not in known:
            known[key] = reach(target, address, port, protos)
        return known[key]


def wait_listening(ctx: BenchContext, port: int, proto: str, tool: str) -> None:
    """Poll the target's /proc/net until ``port`` is bound (no fixed sleep); UDP sockets show state 07,
    listening TCP ones 0A."""
    files, state = ("/proc/net/tcp /proc/net/tcp6", "0A") if proto == "tcp" else ("/proc/net/udp /proc/net/udp6", "07")
    ctx.run(f"i=0; while [ $i -lt 100 ]; do grep -qi ':{port:04X} 0\\{{8,32\\}}:0000 {state}' {files} 2>/dev/null "
            f"&& exit 0; i=$((i+1)); usleep 20000; done; exit 1", timeout=10, tool=tool)
