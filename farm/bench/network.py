"""The network suite: iperf3 between the lab host (client) and the target (server), and the
ipbench-style load sweep.

The sweep's default method, ``ipbench``, is ipbench's latency test with ipbench's own definitions
(:mod:`farm.bench.ipbench_sweep`: the window ended by a sample count, busy-polling clients, the
one-datagram echo, the ``cpu_target_lukem`` CPU target over ipbench's protocol). ``ipbench-echo`` is
farm's faster variant (:mod:`farm.bench.echo`): paced threads blocking in ``recv``, a window of a
duration, RTT by send time, the batching responder. The oldest, ``iperf3-sockperf`` (iperf3 one way
at each rate + a sockperf probe + CPU over the whole point), is kept for comparison. Their records
carry ``method=`` and never join each other's.
"""

from __future__ import annotations

import contextlib
import shlex
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

import attrs

from ..boot.target import ServedTarget, ShellTarget
from ..errors import JobError
from ..images.needs import Needs
from ..images.programs import Program
from ..measure import BenchmarkError, Measurement, cpustat, iperf3
from ..measure import lukem as lukem_figures
from ..measure.ipbench import BENCHMARK as SWEEP
from ..measure.units import human
from . import echo, ipbench_sweep, loadgen, lukem, rtt
from .context import BenchContext, wait_listening
from .ipbench_target import cpu_target as cpu_target_session
from .params import Params, a_bool, a_port, one_of, param

IPERF3_PORT = 5201

# poll until the daemon listens (no fixed sleep): port 5201 is 0x1451, state 0A is LISTEN
#: waits (2 s at most) until the target's iperf3 server listens on 5201: ``iperf3 -s -D`` returns before
#: it does, and a client that comes first gets "unable to connect" (iperf3 3.12 -J still exits 0)
WAIT_IPERF3_LISTEN = ("i=0; while [ $i -lt 100 ]; do "
                "grep -qi ':1451 0\\{8,32\\}:0000 0A' /proc/net/tcp /proc/net/tcp6 2>/dev/null && exit 0; "
                "i=$((i+1)); usleep 20000; done; exit 1")


def start_iperf3_server(ctx: BenchContext) -> None:
    ctx.run(f"pidof iperf3 >/dev/null || iperf3 -s -D -p {IPERF3_PORT}", tool="iperf3")
    ctx.run(WAIT_IPERF3_LISTEN, timeout=10, tool="iperf3")


IPERF3 = Needs(packages=("iperf3",), files=("/usr/bin/iperf3",))


@attrs.frozen(kw_only=True)
class Iperf3Params(Params):
    """``iperf3: {...}`` of a pipeline: one run between the lab host (client) and the target (server)."""

    LABEL = "iperf3"

    protocol: str = param("tcp", kind=str, identity=True, check=one_of(*iperf3.PROTOCOLS))
    duration: int | float = param(3, kind=(int, float), run_length=True, doc="seconds, whole (iperf3's -t)")
    bitrate: str | None = param(None, kind=str, identity=True, doc="iperf3's -b: 50M, 1.5G, 100M/10")
    length: int | None = param(None, kind=int, identity=True, doc="bytes per write (-l)")
    reverse: bool = param(False, kind=bool, identity=True, check=a_bool, doc="target -> host (-R)")
    omit: int | float = param(0, kind=(int, float), run_length=True, doc="seconds left out at the start (-O)")
    bidir: bool = param(False, kind=bool, identity=True, check=a_bool,
                        doc="both directions at once (--bidir, as the lab runs it; not with reverse)")
    served: bool = param(False, kind=bool, check=a_bool,
                         doc="the target runs its iperf3 server itself (port 5201), as a shell-less system does "
                             "(a setup of the flow system): farm starts none there")

    def check(self) -> None:
        iperf3_argv(self)

    def requires(self) -> tuple[type, ...]:
        """The target's network; and its shell, to start the servers, unless ``served: true`` (the target
        serves them itself: a shell-less system image can run it)."""
        return (ServedTarget,) if self.served else (ShellTarget, ServedTarget)

    def needs(self) -> Needs:
        return IPERF3


def iperf3_argv(params: Iperf3Params, host: str = "127.0.0.1", port: int = IPERF3_PORT) -> list[str]:
    """The host-side client's argv for these params; checks every value (pure)."""
    return iperf3.client_command(host, port, duration=params.duration, protocol=params.protocol,
                                 bitrate=params.bitrate, length=params.length, reverse=params.reverse,
                                 omit=params.omit, bidir=params.bidir)


def run_iperf3(ctx: BenchContext, params: Iperf3Params) -> list[Measurement]:
    """One iperf3 run, host -> target (or target -> host with ``reverse: true``, both at once with
    ``bidir: true``: the records' ``bidir=client-to-server`` is host -> target)."""
    protos = ("tcp", "udp") if params.protocol == "udp" else ("tcp",)
    if not params.served:  # else the target's own server (a shell-less system's) is there already
        start_iperf3_server(ctx)
    host, port = ctx.reach(IPERF3_PORT, protos)
    output = _host_iperf3(iperf3_argv(params, host, port), params.duration)
    recorded = {"protocol": params.protocol, "duration": params.duration,
                **{key: value for key in ("bitrate", "length") if (value := getattr(params, key)) is not None}}
    if not params.bidir:  # --bidir's records say their direction themselves (bidir=)
        recorded["direction"] = "target-to-host" if params.reverse else "host-to-target"
    return iperf3.parse_json(output, params=recorded)


def _host_iperf3(argv: list[str], duration: float) -> str:
    """Run the host-side iperf3 client; returns its JSON text (errors inside it are parsed later)."""
    limit = float(duration) + 60
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        raise BenchmarkError("iperf3", f"client did not finish within {limit:.0f} s") from None
    if not proc.stdout.strip():
        raise BenchmarkError("iperf3", f"client printed nothing (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


# --- the ipbench-style load sweep ------------------------------------------------------------

DEFAULT_LOADS_MBPS = (10, 20, 50, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000)
MAX_LOADS, MAX_LOAD_MBPS = 100, 400_000  # points of a sweep; 400 Gb/s, beyond any NIC of the lab
SOCKPERF_PORT = rtt.DEFAULT_PORT
IPBENCH, ECHO, SOCKPERF = ipbench_sweep.METHOD, "ipbench-echo", "iperf3-sockperf"
#: the sweep's methods, the default first (a new method: its name here, its fields' ``methods``, its run)
SWEEP_METHODS = (IPBENCH, ECHO, SOCKPERF)
#: the window of a point when neither duration nor (ipbench-echo) samples is given, seconds
DEFAULT_SECONDS = 5
_SOURCES = Path(__file__).resolve().parents[2] / "images" / "src"


def _loads(name: str, loads: Any) -> None:
    if (isinstance(loads, (str, bytes)) or not loads or len(loads) > MAX_LOADS or any(
            isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= MAX_LOAD_MBPS for v in loads)):
        shown = list(loads) if isinstance(loads, tuple) else loads  # as the pipeline file wrote it
        raise JobError(f"{name} {shown!r}: expected a list of 1-{MAX_LOADS} rates in Mb/s, 0 < rate <= {MAX_LOAD_MBPS}")


def _generator(name: str, value: Any) -> None:
    loadgen.check_generator(value)


@attrs.frozen(kw_only=True)
class SweepParams(Params):
    """``sweep: {...}`` of a pipeline: the ipbench-style load sweep, by its ``method``. A field's
    ``methods`` says which methods take it (another method refuses it when the file is read), its
    ``by_method`` where a method's default differs (``ipbench``'s are ipbench's own)."""

    LABEL = "sweep"

    method: str = param(IPBENCH, kind=str, identity=True, check=one_of(*SWEEP_METHODS))
    loads: tuple[float, ...] = param(DEFAULT_LOADS_MBPS, kind=list, check=_loads, doc="requested rates, Mb/s")
    packet_size: int = param(ipbench_sweep.PACKET_SIZE, kind=int, identity=True, doc="UDP payload bytes")
    duration: int | float | None = param(None, kind=(int, float), run_length=True, methods=(ECHO, SOCKPERF),
                                         doc=f"the measured window, seconds (default {DEFAULT_SECONDS}; "
                                             "ipbench-echo: unless samples is given)")
    samples: int | None = param(None, kind=int, run_length=True, methods=(IPBENCH, ECHO),
                                by_method={IPBENCH: ipbench_sweep.SAMPLES},
                                doc="the measured window as RTT samples, over all clients (ipbench: default "
                                    "200,000, the lab's; each client's window ends at samples // clients replies)")
    warmup: int | float = param(1, kind=(int, float), run_length=True, by_method={IPBENCH: ipbench_sweep.WARMUP},
                                doc="seconds of load before the window (ipbench: default 10, latency.c's)")
    cooldown: int | float = param(1, kind=(int, float), run_length=True, methods=(IPBENCH, ECHO),
                                  by_method={IPBENCH: ipbench_sweep.COOLDOWN},
                                  doc="seconds of load after the window (ipbench: default 10, latency.c's)")
    timeout: int | float | None = param(None, kind=(int, float), run_length=True, methods=(IPBENCH,),
                                        doc="seconds a client's window may last short of its samples (then it "
                                            "ends, recorded as window_timeouts); default 10x the window at the "
                                            "requested rate, at least 60")
    clients: int = param(ipbench_sweep.CLIENTS, kind=int, methods=(IPBENCH, ECHO),
                         doc="generator clients sharing the load")
    echo_priority: int | None = param(None, kind=int, methods=(IPBENCH, ECHO),
                                      doc="the responder's SCHED_FIFO priority")
    echo_cpu: int | None = param(None, kind=int, methods=(IPBENCH, ECHO), doc="the core the responder is pinned to")
    generator: str = param(loadgen.HOST, kind=str, methods=(IPBENCH, ECHO), check=_generator,
                           doc="where the load comes from: the lab host, or a load generator resource")
    cpu_target: bool = param(True, kind=bool, methods=(IPBENCH, ECHO), check=a_bool,
                             doc="CPU from the cpu_target_lukem CPU target (farm_lukem, over ipbench's TCP "
                                 "protocol); false: /proc/stat over the window")
    served: bool = param(False, kind=bool, methods=(IPBENCH,), check=a_bool,
                         doc="the target serves the echo (UDP echo_port) and the CPU target (TCP cpu_target_port) "
                             "itself, as a shell-less system does (a setup of the flow system): farm starts "
                             "nothing there")
    # where the services listen, not what is measured: on no record, so not identity (records of one
    # echo at port 7 and at 1235 join), and not a run length either
    echo_port: int = param(echo.ECHO_PORT, kind=int, methods=(IPBENCH, ECHO), check=a_port,
                           doc="the echo's UDP port: farm_echo's, or with served: true the target's own "
                               "(sDDF's echo server: 1235)")
    cpu_target_port: int = param(lukem_figures.PORT, kind=int, methods=(IPBENCH, ECHO), check=a_port,
                                 doc="the CPU target's TCP port (ipbench's START/STOP protocol): farm_lukem's, or "
                                     "with served: true the target's own (sDDF's benchmark component: 1236)")
    protocol: str = param("udp", kind=str, identity=True, methods=(SOCKPERF,), check=one_of(*iperf3.PROTOCOLS))
    rtt_rate: int = param(100, kind=int, methods=(SOCKPERF,), doc="sockperf probe packets/s")

    @property
    def seconds(self) -> float | None:
        """The measured window of a point in seconds; None when it is given as samples (always, for ``ipbench``)."""
        if self.method == IPBENCH:
            return None
        if self.duration is not None:
            return self.duration
        return None if self.method == ECHO and self.samples is not None else DEFAULT_SECONDS

    @property
    def with_cpu_target(self) -> bool:
        """The CPU target measures CPU (``ipbench``, ``ipbench-echo`` with ``cpu_target: true``)."""
        return self.method in (IPBENCH, ECHO) and self.cpu_target

    def check(self) -> None:
        if self.method == IPBENCH:
            ipbench_sweep.check(self)
            if self.served and not self.cpu_target:
                raise JobError("sweep served: true: the CPU is the target's CPU target's (cpu_target: true); "
                               "/proc/stat needs a shell the target does not have")
            if self.served and (self.echo_priority is not None or self.echo_cpu is not None):
                raise JobError("sweep served: true: the target starts its own echo server (echo_priority and "
                               "echo_cpu are for farm's)")
            return
        if self.method == ECHO:
            for load in self.loads:
                _echo_spec(self, load)
            echo.responder_command(self.echo_port, priority=self.echo_priority, cpu=self.echo_cpu)
            return
        for load in self.loads:
            iperf3.client_command("127.0.0.1", IPERF3_PORT, duration=self.seconds, protocol=self.protocol,
                                  bitrate=f"{float(load):g}M", length=self.packet_size)
        if self.warmup:
            iperf3.client_command("127.0.0.1", IPERF3_PORT, duration=self.warmup)
        rtt.client_command("127.0.0.1", SOCKPERF_PORT, rate_pps=self.rtt_rate, size=self.packet_size,
                           duration=self.seconds)

    def requires(self) -> tuple[type, ...]:
        """The target's network; and its shell, to start the servers, unless ``served: true`` (the target
        serves them itself: a shell-less system image can run it)."""
        return (ServedTarget,) if self.served else (ShellTarget, ServedTarget)

    def ports(self) -> tuple[int, ...]:
        """The echo's and the CPU target's ports (``ipbench``, ``ipbench-echo``): forwarded into a guest."""
        return (self.echo_port, self.cpu_target_port) if self.method in (IPBENCH, ECHO) else ()

    def needs(self) -> Needs:
        if self.served:
            return Needs()
        if self.method == SOCKPERF:
            return IPERF3 | Needs(packages=("sockperf",), files=("/usr/bin/sockperf",))
        programs = (Program(echo.RESPONDER, _SOURCES / "farm_echo.c", (), ()),)
        if self.with_cpu_target:
            programs += (Program(lukem.PROGRAM, _SOURCES / "farm_lukem.c", (), ()),)
        return Needs(programs=programs)


def _cpu_times(ctx: BenchContext) -> cpustat.CpuTimes:
    return cpustat.parse_proc_stat("\n".join(ctx.run("head -n1 /proc/stat", tool="cpu")))


def _echo_spec(params: SweepParams, load: float) -> echo.LoadSpec:
    return echo.load_spec(float(load) * 1e6, size=params.packet_size, clients=params.clients, warmup=params.warmup,
                          cooldown=params.cooldown, duration=params.seconds, samples=params.samples)


def _cpu_cores(ctx: BenchContext) -> dict[str, cpustat.CpuTimes]:
    return cpustat.parse_proc_stat_cores("\n".join(ctx.run("grep '^cpu' /proc/stat", tool="cpu")))


#: the run of each sweep method
SWEEP_RUNS: dict[str, Callable[[BenchContext, SweepParams], list[Measurement]]] = {}


def run_sweep(ctx: BenchContext, params: SweepParams) -> list[Measurement]:
    """The load sweep by its ``method`` (default ``ipbench``, :func:`farm.bench.ipbench_sweep.run`)."""
    return SWEEP_RUNS[params.method](ctx, params)


def run_echo_sweep(ctx: BenchContext, params: SweepParams, *,
                   observe: Callable[[float, echo.LoadResult, str, float], None] | None = None) -> list[Measurement]:
    """Method ``ipbench-echo``. For each requested load (Mb/s): ``farm_load`` from the lab host to
    ``farm_echo`` on the target, the figures of the measured window (:class:`farm.bench.echo.LoadResult`),
    and the target's CPU: by default the ``cpu_target_lukem`` CPU target (:mod:`farm.bench.lukem`,
    from before the load to after it, as ipbench's), ``cpu_utilisation`` with param ``cpu=lukem``,
    ``idle_cycles``/``total_cycles`` in counter ticks and ``counter_frequency``; with
    ``cpu_target: false`` ``/proc/stat``, read on the target when the generator says the window opens
    and again when it closes (not over warm-up or cool-down), in total (``cpu_utilisation``) and per
    core (``cpu<N>_utilisation``). (No /proc/stat figures with the target: it would count its
    spinning thread as busy.) The generator is ``generator`` (default the lab host;
    :mod:`farm.bench.loadgen`).

    Every record's params are the point (``requested`` bit/s, ``packet_size``) and ``method=ipbench-echo``;
    the RTT samples of the window are a value of their own (``rtt_samples``).
    ``observe(load, result, samples_text, cpu_seconds)`` gets each point's result, its per-sample file
    (``client seq tx rx``) and the host's time between the two ``/proc/stat`` reads (0 with the CPU
    target), for tests.
    """
    served = ctx.served_target
    if served.responder is not None:
        raise BenchmarkError(echo.TOOL, f"the setup's flow answers the echo itself ({served.responder.name}): "
                                        f"sweep method {ECHO} starts farm_echo; use method {IPBENCH}")
    loads = [float(v) for v in params.loads]
    source = loadgen.generator(params.generator, served.target)
    binary = source.prepare()
    ctx.run(echo.responder_command(params.echo_port, priority=params.echo_priority, cpu=params.echo_cpu),
            tool=echo.RESPONDER)
    wait_listening(ctx, params.echo_port, "udp", echo.RESPONDER)
    host, port = ctx.reach(params.echo_port, ("udp",))
    with_target = params.with_cpu_target
    target = lukem.start(ctx, params.cpu_target_port) if with_target else None
    try:
        points = _echo_points(ctx, params, loads, source, binary, host, port, target, observe)
    except BaseException:
        if with_target:  # best effort: the error that stopped the sweep is the one to report
            lukem.stop(ctx, quiet=True)
        raise
    if with_target:
        lukem.stop(ctx)
    return points


#: the cpu= param of ipbench-echo's CPU figure from the CPU target (its untagged figure is /proc/stat's)
CPU_LUKEM = "lukem"


def _echo_points(ctx: BenchContext, params: SweepParams, loads: list[float], source: Any, binary: str,
                 host: str, port: int, target: tuple[str, int] | None,
                 observe: Callable[[float, echo.LoadResult, str, float], None] | None) -> list[Measurement]:
    measurements: list[Measurement] = []
    for load in loads:
        spec = _echo_spec(params, load)
        # per CPU (the shell's; a guest's board and vCPUs through their channels, farm.guest.channel)
        readers = ctx.cpu_readers(lambda: _cpu_cores(ctx)) if target is None else {}
        edges: dict[tuple[str, str], tuple[float, dict[str, cpustat.CpuTimes]]] = {}

        def on_edge(edge: str) -> None:
            if target is None:
                for scope, read in readers.items():
                    now = time.monotonic()
                    edges[scope, edge] = (now, read())

        length = spec.duration if spec.duration is not None else spec.samples * spec.size * 8 / spec.rate_bps
        with contextlib.ExitStack() as stack:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="farm-load-"))
            session = stack.enter_context(cpu_target_session(*target)) if target is not None else None
            output, samples = source.run(echo.load_command(binary, host, port, spec), on_edge=on_edge,
                                         timeout=spec.warmup + length + spec.cooldown + 60,
                                         dump=f"{tmp}/samples.txt" if observe else None)
        try:
            result = echo.parse_load(output)
        except BenchmarkError as exc:
            raise BenchmarkError(echo.TOOL, f"{source.where}: {exc.message}") from None
        if target is None and {edge for _, edge in edges} != {"start", "end"}:
            raise BenchmarkError(echo.TOOL, f"{source.where}: the output has no window edges: {output[:200]!r}")
        first = next(iter(readers), None)
        if observe is not None:
            observe(load, result, samples or "", edges[first, "end"][0] - edges[first, "start"][0]
                    if target is None else 0.0)
        point = {"requested": int(load * 1e6), "packet_size": spec.size}
        found = result.measurements(point)
        tagged = {**point, "method": echo.METHOD}
        if target is None:
            cpus = {}
            for scope in readers:
                (_, before), (_, after) = edges[scope, "start"], edges[scope, "end"]
                cpus[scope] = cpustat.utilisation(before["cpu"], after["cpu"])
                scoped = {**tagged, cpustat.CORES: scope}
                found.append(Measurement(SWEEP, "cpu_utilisation", cpus[scope], "percent", scoped))
                for core in sorted((c for c in before if c != "cpu"), key=lambda c: int(c[3:])):
                    if core in after:
                        found.append(Measurement(SWEEP, f"{core}_utilisation",
                                                 cpustat.utilisation(before[core], after[core]), "percent", scoped))
            cpu = cpus.get(cpustat.BOARD, cpus[first])
        else:  # the CPU target's figures, as ipbench's; /proc/stat would count its thread as busy
            assert session is not None and session.window is not None
            cpu = session.window.utilisation
            found += session.window.measurements(SWEEP, {**tagged, "cpu": CPU_LUKEM})
        measurements += found
        ctx.say(f"  sweep {human(load * 1e6, 'bit/s')}: sent {human(result.send, 'bit/s')}, received "
                f"{human(result.receive, 'bit/s')}, RTT median {human(result.rtt_median, 'us')} (max "
                f"{human(result.rtt_max, 'us')}, n {result.samples}), CPU {human(cpu, 'percent')}"
                + (" (cpu_target_lukem)" if target is not None else ""))
    return measurements


def run_iperf3_sweep(ctx: BenchContext, params: SweepParams) -> list[Measurement]:
    """Method ``iperf3-sockperf``. For each requested load: iperf3 (host -> target) at that rate, sockperf RTT probes at the
    same time, and the target's CPU utilisation from /proc/stat around the point: of each CPU the
    benchmarks are measured on (``cores=board``; a guest setup's board through its host's channel
    beside its ``cores=vcpus``, :meth:`BenchContext.cpu_readers`), in total.

    Each point first runs the load for ``warmup`` seconds unmeasured, then for ``duration``
    seconds measured. The RTT probe is sockperf's under-load client at ``rtt_rate`` packets/s of
    ``packet_size`` bytes (sockperf server on the target), during the measured seconds; its own
    load (100 pps x 1472 B = 1.2 Mb/s by default) adds to the requested one. Points are keyed
    like the lab's ipbench files (``requested``, ``packet_size``) so that history and live runs
    join in ``farm compare``.
    """
    protocol, loads, size = params.protocol, [float(v) for v in params.loads], params.packet_size
    duration, warmup, rtt_rate = params.seconds, params.warmup, params.rtt_rate
    ctx.run(f"pidof iperf3 >/dev/null || iperf3 -s -D -p {IPERF3_PORT}", tool="iperf3")
    ctx.run("pidof sockperf >/dev/null || " + shlex.join(rtt.server_command(SOCKPERF_PORT, daemonize=True))
            + " >/dev/null", tool="sockperf")
    wait_listening(ctx, IPERF3_PORT, "tcp", "iperf3")
    wait_listening(ctx, SOCKPERF_PORT, "udp", "sockperf")
    ihost, iport = ctx.reach(IPERF3_PORT, ("tcp", "udp"))
    shost, sport = ctx.reach(SOCKPERF_PORT, ("udp",))

    measurements: list[Measurement] = []
    for load in loads:
        # the point is identified as in the lab's ipbench files (requested, packet size), so live
        # sweeps and imported history join in `farm compare`; UDP is the lab's default protocol
        point = {"requested": int(load * 1e6), "packet_size": size, "method": "iperf3-sockperf",
                 **({"protocol": protocol} if protocol != "udp" else {})}
        def client(seconds: float, rate: float = load) -> list[str]:
            return iperf3.client_command(ihost, iport, duration=seconds, protocol=protocol,
                                         bitrate=f"{rate:g}M", length=size)

        if warmup:
            # the load runs unmeasured first, as in ipbench; not iperf3's --omit, whose receiver
            # counts datagrams still queued from the omitted seconds (received > sent on a twin)
            _host_iperf3(client(warmup), warmup)
        readers = ctx.cpu_readers(lambda: {"cpu": _cpu_times(ctx)})
        before = {scope: read() for scope, read in readers.items()}
        with ThreadPoolExecutor(max_workers=1) as pool:
            probe = pool.submit(rtt.measure_rtt, shost, sport, rate_pps=rtt_rate, size=size, duration=duration)
            output = _host_iperf3(client(duration), duration)
            stats = probe.result()
        after = {scope: read() for scope, read in readers.items()}
        found = iperf3.parse_json(output, params=point)
        measurements.append(Measurement(SWEEP, "requested_throughput", load * 1e6, "bit/s", point))
        measurements += [Measurement(SWEEP, m.metric, m.value, m.unit, point) for m in found
                         if m.metric in ("sent_throughput", "received_throughput", "loss", "jitter")]
        measurements += stats.measurements(point)
        cpus = {scope: cpustat.utilisation(before[scope]["cpu"], after[scope]["cpu"]) for scope in readers}
        measurements += [Measurement(SWEEP, "cpu_utilisation", value, "percent", {**point, cpustat.CORES: scope})
                         for scope, value in cpus.items()]
        cpu = cpus.get(cpustat.BOARD, next(iter(cpus.values()), float("nan")))
        received = next((m.value for m in found if m.metric == "received_throughput"), 0.0)
        ctx.say(f"  sweep {human(load * 1e6, 'bit/s')}: received {human(received, 'bit/s')}, RTT median "
                f"{human(stats.median_us, 'us')} (max {human(stats.max_us, 'us')}), CPU {human(cpu, 'percent')}")
    return measurements


SWEEP_RUNS.update({IPBENCH: ipbench_sweep.run, ECHO: run_echo_sweep, SOCKPERF: run_iperf3_sweep})
