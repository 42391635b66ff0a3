"""The sweep's method ``ipbench`` (the default): ipbench's latency test with its own definitions.

Each point is one ipbench run as the lab makes it (au-ts/ipbench ``helpers/scripts/
ipbench_benchmark.sh``; the definitions, column by column, with file and line: docs/network.md):

* with ``served: true`` the target (a shell-less system image) serves the echo and the CPU target
  itself: nothing is started on it, both are reached at the address its console named;
* the CPU target is set up first (:mod:`farm.bench.lukem`: ``farm_lukem``, ipbench's
  ``cpu_target_lukem`` over ipbench's TCP protocol) and stopped once the clients are done, so its
  figures cover setup to stop;
* ``clients`` clients (default 4, the lab's vb01..vb07 count) each send ``packet_size``-byte UDP
  datagrams (default 1472) at their share of the load (integer bit/s, as the lab's script divides
  it) from ``farm_load -m ipbench`` (``images/src/farm_load.c``): a busy-polling loop on a
  non-blocking socket that reads the clock before each ``recv``;
* each client's window opens after ``warmup`` seconds under load (default 10) and closes when it has
  ``samples // clients`` replies (``samples`` default 200,000: the lab's 50,000 per client), or when
  ``timeout`` seconds have passed (recorded: metric ``window_timeouts``); the load goes on for
  ``cooldown`` seconds more (default 10);
* a sample is a reply *received* in the window whose send time is still in the client's ring of one
  second's packets; RTT = the receive turn's clock - the send turn's clock, truncated to µs;
* the responder on the target is ``farm_echo -s``: one datagram per ``recvfrom``/``sendto``, kernel
  default buffers, as ipbench's UDP echo.

Every record says how long it measured: ``samples``, ``warmup``, ``cooldown`` and ``timeout`` are
params (run lengths, declared so by :class:`farm.bench.network.SweepParams`: they do not split
keys), so a shortened window (a CI pipeline's) is on the record; the RTT samples a point's figures
are of are a value of their own (``rtt_samples``). ``clients`` is a param when it is not 4, and the
CPU figure a ``cpu=proc-stat`` param when the CPU target is off (``cpu_target: false``:
``/proc/stat`` over the window instead). Every CPU figure says which CPU it is of (``cores=board``,
``cores=vcpus``): with ``cpu_target: false`` a guest setup records both, the board's read through its
host's CPU channel and the vCPUs' through the guest's (farm.guest.channel), at the same window edges;
under the CPU target only the vCPUs' (its spinner keeps them, and so the board's threads, busy).
"""

from __future__ import annotations

import math
import tempfile
from typing import TYPE_CHECKING, Any, Callable

import attrs

from ..boot.target import ShellTarget
from ..errors import JobError
from ..measure import BenchmarkError, Measurement, cpustat, lukem as lukem_figures
from ..measure.ipbench import BENCHMARK as SWEEP
from ..measure.units import human
from . import echo, loadgen, lukem
from .context import BenchContext, wait_listening
from .ipbench_target import cpu_target

if TYPE_CHECKING:
    from .network import SweepParams

METHOD = "ipbench"
#: ipbench's defaults: latency.c (warmup, cooldown 10 s), the lab's script (200,000 samples over 4
#: clients, 1472-byte packets), the CPU target on
SAMPLES, WARMUP, COOLDOWN, CLIENTS, PACKET_SIZE = 200_000, 10.0, 10.0, 4, 1472
#: the default time-out: this many times the window's length at the requested rate, at least MIN_TIMEOUT s
TIMEOUT_FACTOR, MIN_TIMEOUT = 10, 60.0
PROC_STAT = "proc-stat"  # the cpu= param of a /proc/stat CPU figure
#: the param naming an echo responder a flow started (farm.boot.target.Responder: DPDK's testpmd)
RESPONDER = "responder"


@attrs.frozen
class PointSpec:
    """One point's run, checked (:func:`point_spec`)."""

    rate_bps: int
    size: int
    clients: int
    samples: int
    warmup: float
    cooldown: float
    timeout: float

    @property
    def per_client_bps(self) -> int:
        return self.rate_bps // self.clients

    def argv(self, binary: str, host: str, port: int) -> list[str]:
        return [binary, "-m", "ipbench", "-a", host, "-p", str(port), "-r", str(self.rate_bps), "-s", str(self.size),
                "-n", str(self.clients), "-w", f"{self.warmup:g}", "-c", f"{self.cooldown:g}", "-N", str(self.samples),
                "-T", f"{self.timeout:g}"]


def _number(name: str, value: Any, *, whole: bool = False, zero: bool = False, most: float | None = None) -> None:
    kinds = (int,) if whole else (int, float)
    if (isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value)
            or value < 0 or (value == 0 and not zero) or (most is not None and value > most)):
        what = "a whole number" if whole else "a number"
        bound = f", at most {most:g}" if most is not None else ""
        raise JobError(f"sweep {name} {value!r}: expected {what} {'>= 0' if zero else '> 0'}{bound}")


def point_spec(params: "SweepParams", load_mbps: float) -> PointSpec:
    """The run of one load (Mb/s) under ``params``; every value checked (JobError naming it)."""
    size, clients, samples = params.packet_size, params.clients, params.samples
    warmup, cooldown = params.warmup, params.cooldown
    _number("packet_size", size, whole=True)
    if not echo.MIN_SIZE <= size <= echo.MAX_SIZE:
        raise JobError(f"sweep packet_size {size!r}: expected {echo.MIN_SIZE}-{echo.MAX_SIZE} bytes")
    _number("clients", clients, whole=True, most=echo.MAX_CLIENTS)
    _number("samples", samples, whole=True, most=echo.MAX_SAMPLES)
    if samples < clients:
        raise JobError(f"sweep samples {samples!r}: fewer than the {clients} clients (each needs samples // clients)")
    _number("warmup", warmup, zero=True, most=echo.MAX_SECONDS)
    _number("cooldown", cooldown, zero=True, most=echo.MAX_SECONDS)
    rate = int(float(load_mbps) * 1e6)
    if rate // clients < 1000:
        raise JobError(f"sweep load {load_mbps!r} Mb/s over {clients} clients: expected at least 1000 bit/s each")
    timeout = params.timeout
    if timeout is None:
        window = (samples // clients) * size * 8 / (rate // clients)
        timeout = max(MIN_TIMEOUT, math.ceil(TIMEOUT_FACTOR * window))
    _number("timeout", timeout, most=echo.MAX_SECONDS)
    return PointSpec(rate, size, clients, samples, float(warmup), float(cooldown), float(timeout))


def check(params: "SweepParams") -> None:
    """Every value of an ``ipbench`` sweep across its fields, before anything is booted (JobError;
    each field's own check ran when the params were made)."""
    for load in params.loads:
        point_spec(params, float(load))
    echo.responder_command(params.echo_port, priority=params.echo_priority, cpu=params.echo_cpu, single=True)


Observer = Callable[[float, echo.LoadResult, str, lukem_figures.CpuWindow | None], None]


def run(ctx: BenchContext, params: "SweepParams", *, observe: Observer | None = None) -> list[Measurement]:
    """The ``ipbench`` sweep over ``params.loads`` (Mb/s); see the module docstring. ``observe(load,
    result, samples_text, cpu_window)`` gets each point's result, its per-sample file (``client seq tx
    rx``) and the CPU target's window, for tests."""
    loads = [float(v) for v in params.loads]
    served = ctx.served_target
    source = loadgen.generator(params.generator, served.target)
    binary = source.prepare()
    responder = served.responder
    if responder is not None:  # the flow's own echo (a DPDK echo): reached, tagged, checked after each point
        host, port = ctx.reach(params.echo_port, ("udp",))
        points = []
        for load in loads:
            points += _point(ctx, params, load, source, binary, host, port, None, observe, responder=responder)
            responder.check()
        return points
    if getattr(params, "served", False):  # a shell-less system serves both itself: farm only reaches them
        host, port = ctx.reach(params.echo_port, ("udp",))
        target = ctx.reach(params.cpu_target_port, ("tcp",))
        return [m for load in loads for m in _point(ctx, params, load, source, binary, host, port, target, observe)]
    ctx.run(echo.responder_command(params.echo_port, priority=params.echo_priority, cpu=params.echo_cpu,
                                   single=True), tool=echo.RESPONDER)
    wait_listening(ctx, params.echo_port, "udp", echo.RESPONDER)
    host, port = ctx.reach(params.echo_port, ("udp",))
    with_target = params.cpu_target
    target = lukem.start(ctx, params.cpu_target_port) if with_target else None
    try:
        points = [m for load in loads
                  for m in _point(ctx, params, load, source, binary, host, port, target, observe)]
    except BaseException:
        if with_target:
            lukem.stop(ctx, quiet=True)  # the error that stopped the sweep is the one to report
        raise
    if with_target:
        lukem.stop(ctx)
    return points


def _point(ctx: BenchContext, params: "SweepParams", load: float, source: Any, binary: str, host: str, port: int,
           target: tuple[str, int] | None, observe: Observer | None, responder: Any = None) -> list[Measurement]:
    spec = point_spec(params, load)
    # /proc/stat at the window's edges when there is no CPU target: of each CPU (the shell's, and what the
    # flow's channels read: a guest's board and vCPUs, farm.guest.channel), (scope, edge) -> times
    proc_stat = target is None and responder is None
    readers = ctx.cpu_readers(lambda: cpustat.parse_proc_stat_cores("\n".join(ctx.run("head -n1 /proc/stat",
                                                                                        tool="cpu")))) if proc_stat else {}
    edges: dict[tuple[str, str], cpustat.CpuTimes] = {}

    def on_edge(edge: str) -> None:
        if proc_stat:
            for scope, read in readers.items():
                edges[scope, edge] = read()["cpu"]

    limit = spec.warmup + spec.timeout + spec.cooldown + 60
    with tempfile.TemporaryDirectory(prefix="farm-load-") as tmp:
        dump = f"{tmp}/samples.txt" if observe else None
        if target is None:
            output, samples = source.run(spec.argv(binary, host, port), on_edge=on_edge, timeout=limit, dump=dump)
            window = None
        else:
            with cpu_target(*target) as session:  # SETUP before the clients start, STOP after they are done
                output, samples = source.run(spec.argv(binary, host, port), on_edge=on_edge, timeout=limit,
                                             dump=dump)
            window = session.window
    try:
        result = echo.parse_load(output)
    except BenchmarkError as exc:
        raise BenchmarkError(echo.TOOL, f"{source.where}: {exc.message}") from None
    if result.mode != "ipbench":
        raise BenchmarkError(echo.TOOL, f"{source.where}: the generator did not run ipbench's client "
                                        f"(an old farm_load?): {output[:120]!r}")
    if observe is not None:
        observe(load, result, samples or "", window)
    point: dict[str, Any] = {"requested": spec.rate_bps, "packet_size": spec.size}
    if spec.clients != CLIENTS:
        point["clients"] = spec.clients
    # how long it measured, on every record (run lengths: they do not split keys)
    if responder is not None:  # who answered: records join only records of the same responder
        point[RESPONDER] = responder.name
    tagged = {**point, "method": METHOD, "samples": spec.samples, "warmup": spec.warmup,
              "cooldown": spec.cooldown, "timeout": spec.timeout}
    found = result.measurements({k: v for k, v in tagged.items() if k != "method"}, method=METHOD)
    if responder is not None:
        # a busy-polling responder's cores are 100 % busy at any load: no utilisation figure is made for it
        # (the wide CSV's CPU_Utilisation stays empty; run.json's topology says why: responder.cpu_note)
        cpu = None
    elif window is not None:
        found += window.measurements(SWEEP, tagged)
        cpu = window.utilisation
    else:
        if {edge for _, edge in edges} != {"start", "end"}:
            raise BenchmarkError(echo.TOOL, f"{source.where}: the output has no window edges: {output[:200]!r}")
        scopes = proc_stat_figures(edges)
        found += [Measurement(SWEEP, "cpu_utilisation", value, "percent",
                              {**tagged, "cpu": PROC_STAT, cpustat.CORES: scope}) for scope, value in scopes.items()]
        cpu = scopes.get(cpustat.BOARD, next(iter(scopes.values())))
    timed_out = f", {result.timeouts} client(s) timed out" if result.timeouts else ""
    ctx.say(f"  sweep {human(load * 1e6, 'bit/s')}: sent {human(result.send, 'bit/s')}, received "
            f"{human(result.receive, 'bit/s')}, RTT median {human(result.rtt_median, 'us')} (max "
            f"{human(result.rtt_max, 'us')}, n {result.samples}{timed_out}), "
            + (f"CPU: {responder.name} busy-polls (not measured)" if cpu is None else
               f"CPU {human(cpu, 'percent')} (cpu_target_lukem{_unmeasured_board(ctx)})" if window is not None else
               "CPU " + ", ".join(f"{scope} {human(v, 'percent')}" for scope, v in scopes.items()) + " (/proc/stat)"))
    return found


def proc_stat_figures(edges: dict[tuple[str, str], cpustat.CpuTimes]) -> dict[str, float]:
    """Per CPU (scope) read at both edges of a window, its utilisation over the window (pure)."""
    return {scope: cpustat.utilisation(times, edges[scope, "end"])
            for (scope, edge), times in edges.items() if edge == "start" and (scope, "end") in edges}


def _unmeasured_board(ctx: BenchContext) -> str:
    """What the progress line says of a guest's board under the CPU target: it is not measured, the CPU
    target's spinner keeps the guest's vCPUs (host threads) busy; with cpu_target: false it is."""
    if isinstance(ctx.booted, ShellTarget) and cpustat.BOARD in ctx.booted.cpu_channels:
        return ", the guest's vCPUs; the board's CPU is measured only with cpu_target: false"
    return ""
