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
from typing import Any, Callable, Mapping

from ..errors import JobError
from ..measure import BenchmarkError, Measurement, cpustat, iperf3
from ..measure.ipbench import BENCHMARK as SWEEP
from ..measure.units import human
from . import echo, ipbench_sweep, loadgen, lukem, rtt
from .context import BenchContext
from .ipbench_target import cpu_target as cpu_target_session

IPERF3_PORT = 5201

# poll until the daemon listens (no fixed sleep): port 5201 is 0x1451, state 0A is LISTEN
_WAIT_LISTEN = ("i=0; while [ $i -lt 100 ]; do "
                "grep -qi ':1451 0\\{8,32\\}:0000 0A' /proc/net/tcp /proc/net/tcp6 2>/dev/null && exit 0; "
                "i=$((i+1)); usleep 20000; done; exit 1")


def start_iperf3_server(ctx: BenchContext) -> None:
    ctx.run(f"pidof iperf3 >/dev/null || iperf3 -s -D -p {IPERF3_PORT}", tool="iperf3")
    ctx.run(_WAIT_LISTEN, timeout=10, tool="iperf3")


def iperf3_argv(params: Mapping[str, Any], host: str = "127.0.0.1", port: int = IPERF3_PORT) -> list[str]:
    """The host-side client's argv for these params; checks every value (pure)."""
    return iperf3.client_command(host, port, duration=params.get("duration", 3), protocol=params.get("protocol", "tcp"),
                                 bitrate=params.get("bitrate"), length=params.get("length"),
                                 reverse=bool(params.get("reverse", False)), omit=params.get("omit", 0),
                                 bidir=bool(params.get("bidir", False)))


SWEEP_METHODS = ("ipbench", "ipbench-echo", "iperf3-sockperf")
# parameters of each method (the registry's list is their union)
_METHOD_PARAMS = {
    "ipbench": ipbench_sweep.PARAMS,
    "ipbench-echo": {"method", "loads", "packet_size", "duration", "samples", "warmup", "cooldown", "clients",
                     "echo_priority", "echo_cpu", "generator", "cpu_target"},
    "iperf3-sockperf": {"method", "protocol", "loads", "packet_size", "duration", "warmup", "rtt_rate"},
}


def check_sweep(params: Mapping[str, Any]) -> None:
    loads = params.get("loads", DEFAULT_LOADS_MBPS)
    if (not loads or len(loads) > MAX_LOADS
            or any(isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= MAX_LOAD_MBPS for v in loads)):
        raise JobError(f"sweep loads {loads!r}: expected a list of 1-{MAX_LOADS} rates in Mb/s, 0 < rate <= {MAX_LOAD_MBPS}")
    method = params.get("method", SWEEP_METHODS[0])
    if method not in SWEEP_METHODS:
        raise JobError(f"sweep method {method!r}: expected one of {', '.join(SWEEP_METHODS)}")
    other = sorted(set(params) - _METHOD_PARAMS[method])
    if other:
        raise JobError(f"sweep method {method}: {', '.join(other)} not a parameter of this method "
                       f"(it takes {', '.join(sorted(_METHOD_PARAMS[method]))})")
    if method == "ipbench":
        ipbench_sweep.check(params, [float(v) for v in loads])
        return
    if method == "ipbench-echo":
        for load in loads:
            _echo_spec(params, load)
        echo.responder_command(echo.ECHO_PORT, priority=params.get("echo_priority"), cpu=params.get("echo_cpu"))
        loadgen.check_generator(params.get("generator", loadgen.HOST))
        if not isinstance(params.get("cpu_target", True), bool):
            raise JobError(f"sweep cpu_target {params['cpu_target']!r}: expected true or false")
        return
    for load in loads:
        iperf3.client_command("127.0.0.1", IPERF3_PORT, duration=params.get("duration", 5),
                              protocol=params.get("protocol", "udp"), bitrate=f"{float(load):g}M",
                              length=params.get("packet_size", 1472))
    if params.get("warmup", 1):
        iperf3.client_command("127.0.0.1", IPERF3_PORT, duration=params.get("warmup", 1))
    rtt.client_command("127.0.0.1", SOCKPERF_PORT, rate_pps=params.get("rtt_rate", 100),
                       size=params.get("packet_size", 1472), duration=params.get("duration", 5))


def run_iperf3(ctx: BenchContext, params: Mapping[str, Any]) -> list[Measurement]:
    """One iperf3 run, host -> target (or target -> host with ``reverse: true``, both at once with
    ``bidir: true``: the records' ``bidir=client-to-server`` is host -> target)."""
    protocol = params.get("protocol", "tcp")
    duration = params.get("duration", 3)
    protos = ("tcp", "udp") if protocol == "udp" else ("tcp",)
    start_iperf3_server(ctx)
    host, port = ctx.reach(IPERF3_PORT, protos)
    argv = iperf3_argv(params, host, port)
    output = _host_iperf3(argv, duration)
    recorded = {"protocol": protocol, "duration": duration}
    if not params.get("bidir"):  # --bidir's records say their direction themselves (bidir=)
        recorded["direction"] = "target-to-host" if params.get("reverse") else "host-to-target"
    for key in ("bitrate", "length"):
        if params.get(key) is not None:
            recorded[key] = params[key]
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


def _wait_listening(ctx: BenchContext, port: int, proto: str, tool: str) -> None:
    """Poll /proc/net until ``port`` is bound (no fixed sleep); UDP sockets show state 07."""
    files, state = ("/proc/net/tcp /proc/net/tcp6", "0A") if proto == "tcp" else ("/proc/net/udp /proc/net/udp6", "07")
    ctx.run(f"i=0; while [ $i -lt 100 ]; do grep -qi ':{port:04X} 0\\{{8,32\\}}:0000 {state}' {files} 2>/dev/null "
            f"&& exit 0; i=$((i+1)); usleep 20000; done; exit 1", timeout=10, tool=tool)


def _cpu_times(ctx: BenchContext) -> cpustat.CpuTimes:
    return cpustat.parse_proc_stat("\n".join(ctx.run("head -n1 /proc/stat", tool="cpu")))


def _echo_spec(params: Mapping[str, Any], load: float) -> echo.LoadSpec:
    samples = params.get("samples")
    return echo.load_spec(float(load) * 1e6, size=params.get("packet_size", 1472), clients=params.get("clients", 4),
                          warmup=params.get("warmup", 1), cooldown=params.get("cooldown", 1),
                          duration=params.get("duration", None if samples is not None else 5), samples=samples)


def _cpu_cores(ctx: BenchContext) -> dict[str, cpustat.CpuTimes]:
    return cpustat.parse_proc_stat_cores("\n".join(ctx.run("grep '^cpu' /proc/stat", tool="cpu")))


def run_sweep(ctx: BenchContext, params: Mapping[str, Any]) -> list[Measurement]:
    """The load sweep by its ``method`` (default ``ipbench``, :mod:`farm.bench.ipbench_sweep`)."""
    method = params.get("method", SWEEP_METHODS[0])
    if method == "iperf3-sockperf":
        return run_iperf3_sweep(ctx, params)
    if method == "ipbench-echo":
        return run_echo_sweep(ctx, params)
    return ipbench_sweep.run(ctx, params, [float(v) for v in params.get("loads", DEFAULT_LOADS_MBPS)])


def run_echo_sweep(ctx: BenchContext, params: Mapping[str, Any], *,
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

    Every record's params are the point (``requested`` bit/s, ``packet_size``), ``method=ipbench-echo``
    and ``n`` (RTT samples of the window). ``observe(load, result, samples_text, cpu_seconds)`` gets
    each point's result, its per-sample file (``client seq tx rx``) and the host's time between the
    two ``/proc/stat`` reads, for tests.
    """
    loads = [float(v) for v in params.get("loads", DEFAULT_LOADS_MBPS)]
    source = loadgen.generator(loadgen.check_generator(params.get("generator", loadgen.HOST)),
                               getattr(getattr(ctx, "booted", None), "target", None))
    binary = source.prepare()
    ctx.run(echo.responder_command(echo.ECHO_PORT, priority=params.get("echo_priority"), cpu=params.get("echo_cpu")),
            tool=echo.RESPONDER)
    _wait_listening(ctx, echo.ECHO_PORT, "udp", echo.RESPONDER)
    host, port = ctx.reach(echo.ECHO_PORT, ("udp",))
    with_target = bool(params.get("cpu_target", True))
    target = lukem.start(ctx) if with_target else None
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


def _echo_points(ctx: BenchContext, params: Mapping[str, Any], loads: list[float], source: Any, binary: str,
                 host: str, port: int, target: tuple[str, int] | None,
                 observe: Callable[[float, echo.LoadResult, str, float], None] | None) -> list[Measurement]:
    measurements: list[Measurement] = []
    for load in loads:
        spec = _echo_spec(params, load)
        edges: dict[str, tuple[float, dict[str, cpustat.CpuTimes]]] = {}

        def on_edge(edge: str) -> None:
            if target is None:
                now = time.monotonic()
                lines = ctx.run("grep '^cpu' /proc/stat", tool="cpu")
                edges[edge] = (now, cpustat.parse_proc_stat_cores("\n".join(lines)))

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
        if target is None and set(edges) != {"start", "end"}:
            raise BenchmarkError(echo.TOOL, f"{source.where}: the output has no window edges: {output[:200]!r}")
        if observe is not None:
            observe(load, result, samples or "", edges["end"][0] - edges["start"][0] if target is None else 0.0)
        point = {"requested": int(load * 1e6), "packet_size": spec.size}
        found = result.measurements(point)
        tagged = {**point, "method": echo.METHOD, "n": result.samples}
        if target is None:
            (_, before), (_, after) = edges["start"], edges["end"]
            cpu = cpustat.utilisation(before["cpu"], after["cpu"])
            found.append(Measurement(SWEEP, "cpu_utilisation", cpu, "percent", tagged))
            for core in sorted((c for c in before if c != "cpu"), key=lambda c: int(c[3:])):
                if core in after:
                    found.append(Measurement(SWEEP, f"{core}_utilisation",
                                             cpustat.utilisation(before[core], after[core]), "percent", tagged))
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


def run_iperf3_sweep(ctx: BenchContext, params: Mapping[str, Any]) -> list[Measurement]:
    """Method ``iperf3-sockperf``. For each requested load: iperf3 (host -> target) at that rate, sockperf RTT probes at the
    same time, and the target's CPU utilisation from /proc/stat around the point.

    Each point first runs the load for ``warmup`` seconds unmeasured, then for ``duration``
    seconds measured. The RTT probe is sockperf's under-load client at ``rtt_rate`` packets/s of
    ``packet_size`` bytes (sockperf server on the target), during the measured seconds; its own
    load (100 pps x 1472 B = 1.2 Mb/s by default) adds to the requested one. Points are keyed
    like the lab's ipbench files (``requested``, ``packet_size``) so that history and live runs
    join in ``farm compare``.
    """
    protocol = params.get("protocol", "udp")
    loads = [float(v) for v in params.get("loads", DEFAULT_LOADS_MBPS)]
    size = int(params.get("packet_size", 1472))
    duration = params.get("duration", 5)
    warmup = params.get("warmup", 1)
    rtt_rate = int(params.get("rtt_rate", 100))
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
        measurements += stats.measurements({**point, "n": stats.samples})
        cpu = cpustat.utilisation(before, after)
        measurements.append(Measurement(SWEEP, "cpu_utilisation", cpu, "percent", point))
        received = next((m.value for m in found if m.metric == "received_throughput"), 0.0)
        ctx.say(f"  sweep {human(load * 1e6, 'bit/s')}: received {human(received, 'bit/s')}, RTT median "
                f"{human(stats.median_us, 'us')} (max {human(stats.max_us, 'us')}), CPU {human(cpu, 'percent')}")
    return measurements
