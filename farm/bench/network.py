"""The network suite: iperf3 between the lab host (client) and the target (server), and the
ipbench-style load sweep.

The sweep's default method, ``ipbench-echo``, is ipbench's latency test done by programs of ours
(:mod:`farm.bench.echo`): ``farm_load`` on the lab host sends the load, ``farm_echo`` on the target
echoes it, and the RTT of every load packet in the measured window is timed; the target's CPU
utilisation comes from ``/proc/stat`` read at the window's edges. The older method,
``iperf3-sockperf`` (iperf3 one way at each rate + a sockperf probe + CPU over the whole point),
is kept for comparison.
"""

from __future__ import annotations

import shlex
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

import attrs

from ..errors import JobError
from ..images.needs import Needs
from ..images.programs import Program
from ..measure import BenchmarkError, Measurement, cpustat, iperf3
from ..measure.ipbench import BENCHMARK as SWEEP
from ..measure.units import human
from . import cputarget, echo, loadgen, rtt
from .context import BenchContext
from .params import Params, a_bool, one_of, param

IPERF3_PORT = 5201

# poll until the daemon listens (no fixed sleep): port 5201 is 0x1451, state 0A is LISTEN
_WAIT_LISTEN = ("i=0; while [ $i -lt 100 ]; do "
                "grep -qi ':1451 0\\{8,32\\}:0000 0A' /proc/net/tcp /proc/net/tcp6 2>/dev/null && exit 0; "
                "i=$((i+1)); usleep 20000; done; exit 1")


def start_iperf3_server(ctx: BenchContext) -> None:
    ctx.run(f"pidof iperf3 >/dev/null || iperf3 -s -D -p {IPERF3_PORT}", tool="iperf3")
    ctx.run(_WAIT_LISTEN, timeout=10, tool="iperf3")


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

    def check(self) -> None:
        iperf3_argv(self)

    def needs(self) -> Needs:
        return IPERF3


def iperf3_argv(params: Iperf3Params, host: str = "127.0.0.1", port: int = IPERF3_PORT) -> list[str]:
    """The host-side client's argv for these params; checks every value (pure)."""
    return iperf3.client_command(host, port, duration=params.duration, protocol=params.protocol,
                                 bitrate=params.bitrate, length=params.length, reverse=params.reverse,
                                 omit=params.omit)


def run_iperf3(ctx: BenchContext, params: Iperf3Params) -> list[Measurement]:
    """One iperf3 run, host -> target (or target -> host with ``reverse: true``)."""
    protos = ("tcp", "udp") if params.protocol == "udp" else ("tcp",)
    start_iperf3_server(ctx)
    host, port = ctx.reach(IPERF3_PORT, protos)
    output = _host_iperf3(iperf3_argv(params, host, port), params.duration)
    recorded = {"protocol": params.protocol, "duration": params.duration,
                "direction": "target-to-host" if params.reverse else "host-to-target",
                **{key: value for key in ("bitrate", "length") if (value := getattr(params, key)) is not None}}
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
ECHO, SOCKPERF = "ipbench-echo", "iperf3-sockperf"
#: the sweep's methods, the default first (a new method: its name here, its fields' ``methods``, its run)
SWEEP_METHODS = (ECHO, SOCKPERF)
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
    ``methods`` says which methods take it (another method refuses it when the file is read)."""

    LABEL = "sweep"

    method: str = param(ECHO, kind=str, identity=True, check=one_of(*SWEEP_METHODS))
    loads: tuple[float, ...] = param(DEFAULT_LOADS_MBPS, kind=list, check=_loads, doc="requested rates, Mb/s")
    packet_size: int = param(1472, kind=int, identity=True, doc="UDP payload bytes")
    duration: int | float | None = param(None, kind=(int, float), run_length=True,
                                         doc=f"the measured window, seconds (default {DEFAULT_SECONDS}; "
                                             "ipbench-echo: unless samples is given)")
    samples: int | None = param(None, kind=int, run_length=True, methods=(ECHO,),
                                doc="the measured window as RTT samples (ipbench's 200,000)")
    warmup: int | float = param(1, kind=(int, float), run_length=True, doc="seconds of load before the window")
    cooldown: int | float = param(1, kind=(int, float), run_length=True, methods=(ECHO,),
                                  doc="seconds of load after the window")
    clients: int = param(4, kind=int, methods=(ECHO,), doc="generator clients sharing the load")
    echo_priority: int | None = param(None, kind=int, methods=(ECHO,), doc="the responder's SCHED_FIFO priority")
    echo_cpu: int | None = param(None, kind=int, methods=(ECHO,), doc="the core the responder is pinned to")
    generator: str = param(loadgen.HOST, kind=str, methods=(ECHO,), check=_generator,
                           doc="where the load comes from: the lab host, or a load generator resource")
    cpu_target: bool = param(False, kind=bool, methods=(ECHO,), check=a_bool,
                             doc="the idle-cycle CPU target (farm_spin) measures CPU, as ipbench's cpu_target")
    protocol: str = param("udp", kind=str, identity=True, methods=(SOCKPERF,), check=one_of(*iperf3.PROTOCOLS))
    rtt_rate: int = param(100, kind=int, methods=(SOCKPERF,), doc="sockperf probe packets/s")

    @property
    def seconds(self) -> float | None:
        """The measured window of a point in seconds; None when it is given as samples."""
        if self.duration is not None:
            return self.duration
        return None if self.method == ECHO and self.samples is not None else DEFAULT_SECONDS

    def check(self) -> None:
        if self.method == ECHO:
            for load in self.loads:
                _echo_spec(self, load)
            echo.responder_command(echo.ECHO_PORT, priority=self.echo_priority, cpu=self.echo_cpu)
            return
        for load in self.loads:
            iperf3.client_command("127.0.0.1", IPERF3_PORT, duration=self.seconds, protocol=self.protocol,
                                  bitrate=f"{float(load):g}M", length=self.packet_size)
        if self.warmup:
            iperf3.client_command("127.0.0.1", IPERF3_PORT, duration=self.warmup)
        rtt.client_command("127.0.0.1", SOCKPERF_PORT, rate_pps=self.rtt_rate, size=self.packet_size,
                           duration=self.seconds)

    def needs(self) -> Needs:
        if self.method == SOCKPERF:
            return IPERF3 | Needs(packages=("sockperf",), files=("/usr/bin/sockperf",))
        programs = (Program(echo.RESPONDER, _SOURCES / "farm_echo.c", (), ()),)
        if self.cpu_target:
            programs += (Program(cputarget.TOOL, _SOURCES / "farm_spin.c", (), ()),)
        return Needs(programs=programs)


def _wait_listening(ctx: BenchContext, port: int, proto: str, tool: str) -> None:
    """Poll /proc/net until ``port`` is bound (no fixed sleep); UDP sockets show state 07."""
    files, state = ("/proc/net/tcp /proc/net/tcp6", "0A") if proto == "tcp" else ("/proc/net/udp /proc/net/udp6", "07")
    ctx.run(f"i=0; while [ $i -lt 100 ]; do grep -qi ':{port:04X} 0\\{{8,32\\}}:0000 {state}' {files} 2>/dev/null "
            f"&& exit 0; i=$((i+1)); usleep 20000; done; exit 1", timeout=10, tool=tool)


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
    """The load sweep by its ``method`` (default ``ipbench-echo``, :func:`run_echo_sweep`)."""
    return SWEEP_RUNS[params.method](ctx, params)


def run_echo_sweep(ctx: BenchContext, params: SweepParams, *,
                   observe: Callable[[float, echo.LoadResult, str, float], None] | None = None) -> list[Measurement]:
    """For each requested load (Mb/s): ``farm_load`` from the lab host to ``farm_echo`` on the target,
    ipbench's figures of the measured window (:class:`farm.bench.echo.LoadResult`), and the target's
    CPU utilisation over that window: ``/proc/stat`` is read on the target when the generator says
    the window opens and again when it closes (not over warm-up or cool-down), in total
    (``cpu_utilisation``) and per core (``cpu<N>_utilisation``). With ``cpu_target: true`` the
    idle-cycle target runs too (:mod:`farm.bench.cputarget`): ``idle_cycles``, ``total_cycles``, and
    ``cpu_utilisation`` is the target's (param ``cpu=farm_spin``), as ipbench's CPU figure is; no
    /proc/stat figures then (they would count the spinners as busy). The generator is ``generator`` (default the lab
    host; :mod:`farm.bench.loadgen`).

    Every record's params are the point (``requested`` bit/s, ``packet_size``) and ``method=ipbench-echo``;
    the RTT samples of the window are a value of their own (``rtt_samples``).
    ``observe(load, result, samples_text, cpu_seconds)`` gets each point's result, its per-sample file
    (``client seq tx rx``) and the host's time between the two ``/proc/stat`` reads, for tests.
    """
    loads = [float(v) for v in params.loads]
    source = loadgen.generator(params.generator, getattr(getattr(ctx, "booted", None), "target", None))
    binary = source.prepare()
    ctx.run(echo.responder_command(echo.ECHO_PORT, priority=params.echo_priority, cpu=params.echo_cpu),
            tool=echo.RESPONDER)
    _wait_listening(ctx, echo.ECHO_PORT, "udp", echo.RESPONDER)
    host, port = ctx.reach(echo.ECHO_PORT, ("udp",))
    spinning = params.cpu_target
    rate = _start_cpu_target(ctx) if spinning else None
    try:
        points = _echo_points(ctx, params, loads, source, binary, host, port, rate, observe)
    except BaseException:
        if spinning:  # best effort: the error that stopped the sweep is the one to report
            try:
                ctx.run(cputarget.STOP, tool=cputarget.TOOL)
            except Exception:
                pass
        raise
    if spinning:
        ctx.run(cputarget.STOP, tool=cputarget.TOOL)
    return points


def _start_cpu_target(ctx: BenchContext) -> float:
    """Start farm_spin and calibrate its idle rate (the responder is idle: no load runs yet)."""
    ctx.run(cputarget.START, tool=cputarget.TOOL)
    reads = cputarget.parse_reads(ctx.run(cputarget.CALIBRATE, timeout=30, tool=cputarget.TOOL))
    if len(reads) != 2:
        raise BenchmarkError(cputarget.TOOL, f"calibration: {len(reads)} reads of the counters, expected 2")
    return cputarget.idle_rate(*reads)


def _echo_points(ctx: BenchContext, params: SweepParams, loads: list[float], source: Any, binary: str,
                 host: str, port: int, rate: float | None,
                 observe: Callable[[float, echo.LoadResult, str, float], None] | None) -> list[Measurement]:
    read = "grep '^cpu' /proc/stat" + (f"; {cputarget.READ}" if rate is not None else "")
    measurements: list[Measurement] = []
    for load in loads:
        spec = _echo_spec(params, load)
        edges: dict[str, tuple[float, dict[str, cpustat.CpuTimes]]] = {}
        spins: dict[str, cputarget.SpinCounts] = {}

        def on_edge(edge: str) -> None:
            now = time.monotonic()
            lines = ctx.run(read, tool="cpu")
            edges[edge] = (now, cpustat.parse_proc_stat_cores("\n".join(l for l in lines if l.startswith("cpu"))))
            if rate is not None:
                (spins[edge],) = cputarget.parse_reads(lines)

        length = spec.duration if spec.duration is not None else spec.samples * spec.size * 8 / spec.rate_bps
        with tempfile.TemporaryDirectory(prefix="farm-load-") as tmp:
            output, samples = source.run(echo.load_command(binary, host, port, spec), on_edge=on_edge,
                                         timeout=spec.warmup + length + spec.cooldown + 60,
                                         dump=f"{tmp}/samples.txt" if observe else None)
        try:
            result = echo.parse_load(output)
        except BenchmarkError as exc:
            raise BenchmarkError(echo.TOOL, f"{source.where}: {exc.message}") from None
        if set(edges) != {"start", "end"}:
            raise BenchmarkError(echo.TOOL, f"{source.where}: the output has no window edges: {output[:200]!r}")
        if observe is not None:
            observe(load, result, samples or "", edges["end"][0] - edges["start"][0])
        point = {"requested": int(load * 1e6), "packet_size": spec.size}
        found = result.measurements(point)
        tagged = {**point, "method": echo.METHOD}
        (_, before), (_, after) = edges["start"], edges["end"]
        if rate is None:
            cpu = cpustat.utilisation(before["cpu"], after["cpu"])
            found.append(Measurement(SWEEP, "cpu_utilisation", cpu, "percent", tagged))
            for core in sorted((c for c in before if c != "cpu"), key=lambda c: int(c[3:])):
                if core in after:
                    found.append(Measurement(SWEEP, f"{core}_utilisation",
                                             cpustat.utilisation(before[core], after[core]), "percent", tagged))
        else:  # the CPU figure is the target's, as ipbench's is; /proc/stat would count the spinners as busy
            w = cputarget.window(rate, spins["start"], spins["end"])
            cpu = w.utilisation
            found += [Measurement(SWEEP, "cpu_utilisation", cpu, "percent", {**tagged, "cpu": cputarget.TOOL}),
                      Measurement(SWEEP, "idle_cycles", w.idle, cputarget.UNIT, tagged),
                      Measurement(SWEEP, "total_cycles", w.total, cputarget.UNIT, tagged)]
        measurements += found
        ctx.say(f"  sweep {human(load * 1e6, 'bit/s')}: sent {human(result.send, 'bit/s')}, received "
                f"{human(result.receive, 'bit/s')}, RTT median {human(result.rtt_median, 'us')} (max "
                f"{human(result.rtt_max, 'us')}, n {result.samples}), CPU {human(cpu, 'percent')}"
                + (" (farm_spin)" if rate is not None else ""))
    return measurements


def run_iperf3_sweep(ctx: BenchContext, params: SweepParams) -> list[Measurement]:
    """Method ``iperf3-sockperf``. For each requested load: iperf3 (host -> target) at that rate, sockperf RTT probes at the
    same time, and the target's CPU utilisation from /proc/stat around the point.

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
    _wait_listening(ctx, IPERF3_PORT, "tcp", "iperf3")
    _wait_listening(ctx, SOCKPERF_PORT, "udp", "sockperf")
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
        before = _cpu_times(ctx)
        with ThreadPoolExecutor(max_workers=1) as pool:
            probe = pool.submit(rtt.measure_rtt, shost, sport, rate_pps=rtt_rate, size=size, duration=duration)
            output = _host_iperf3(client(duration), duration)
            stats = probe.result()
        after = _cpu_times(ctx)
        found = iperf3.parse_json(output, params=point)
        measurements.append(Measurement(SWEEP, "requested_throughput", load * 1e6, "bit/s", point))
        measurements += [Measurement(SWEEP, m.metric, m.value, m.unit, point) for m in found
                         if m.metric in ("sent_throughput", "received_throughput", "loss", "jitter")]
        measurements += stats.measurements(point)
        cpu = cpustat.utilisation(before, after)
        measurements.append(Measurement(SWEEP, "cpu_utilisation", cpu, "percent", point))
        received = next((m.value for m in found if m.metric == "received_throughput"), 0.0)
        ctx.say(f"  sweep {human(load * 1e6, 'bit/s')}: received {human(received, 'bit/s')}, RTT median "
                f"{human(stats.median_us, 'us')} (max {human(stats.max_us, 'us')}), CPU {human(cpu, 'percent')}")
    return measurements


SWEEP_RUNS.update({ECHO: run_echo_sweep, SOCKPERF: run_iperf3_sweep})
