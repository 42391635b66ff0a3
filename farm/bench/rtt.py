"""Round-trip time under load: ``sockperf`` probes while iperf3 carries the load.

This is the sweep's ``iperf3-sockperf`` method, no longer its default: the default,
``ipbench-echo`` (:mod:`farm.bench.echo`), times the load packets themselves with a generator and
an echo responder of ours (C on both sides, so the timing argument below does not apply to it), and
this probe's samples can miss the load entirely with short durations (its warm-up; see
docs/network.md). The decision below is kept as it was made.

Decision: Debian's ``sockperf``, not an echo tool of our own
-----------------------------------------------------------
ipbench measures RTT by having the target echo UDP datagrams. Our target is a busybox initrd made of
Debian arm64 packages, so *something* has to be added to it to echo UDP:

* busybox cannot do it. Debian 12's ``busybox-static`` (1:1.35.0-4+deb12u1+b1; checked by running
  the amd64 build of that version, ``--list`` and ``nc --help``) has the small ``nc`` without
  ``-u`` ("nc: invalid option -- 'u'") and no ``udpsvd``, ``inetd`` or ``socat`` applet. ICMP
  ``ping`` is no way out either: QEMU user-mode networking forwards only TCP and UDP host ports
  into the guest, and answers the guest's pings to the gateway inside the emulator.
* ``sockperf`` 3.7-1 is in Debian 12 for arm64 (and amd64; ``apt-cache show sockperf``). Its server
  echoes every datagram whatever the peer, so it works unchanged through the QEMU twin's UDP host
  port forward. It is C++: the initrd grows by the binary (4.3 MB on amd64) plus ``libstdc++6``
  (2.2 MB); ``libgcc-s1`` and ``libc6`` are already pulled in by today's packages. The builder follows
  ``DT_NEEDED`` and package dependencies, so the recipe change is two lines (``sockperf`` in
  ``initrd.packages``, ``/usr/bin/sockperf`` in ``initrd.files``).
* An own ``udp_echo.c`` would be ~10 kB, but when this was written the recipe could put only
  files of Debian packages into the initrd (locally built target programs such as
  ``images/src/isal_bench.c`` were just appearing, with no build step yet), and the host-side
  client would be Python, whose wake-up latency (tens of µs, more while iperf3 keeps the host
  busy) lands in every sample: the same order as the RTT we want to see on a board. If the recipe
  learns to cross-build local programs, the target-side argument weakens; the timing one stays.

So the target runs ``sockperf server`` (:func:`server_command`) and the host runs
``sockperf under-load --full-rtt --full-log FILE`` (:func:`client_command`) while iperf3 loads the
link: C timestamps on the host, a well-known tool, and the per-packet log lets us compute the
statistics with the same definitions as the lab's ipbench history (:func:`rtt_stats`).

What sockperf prints (3.7, captured on 127.0.0.1 into ``tests/data/sockperf-*``)
-------------------------------------------------------------------------------
* Without ``--full-rtt`` every number is *half* the round trip ("avg-latency", "Latency is");
  with it, "avg-rtt" and "Round trip is". :func:`parse_sockperf` accepts both and doubles the
  former (sockperf stores ``rtt / 2``; doubling is exact to one clock tick).
* ``std-dev`` is the *sample* standard deviation (n-1, ``TicksDuration::stdDev``); "percentile
  50.000" is the nearest-rank element ``round(0.5 n) - 1`` of the sorted samples, the *lower*
  middle for even n. The ``--full-log`` file has one row per valid reply
  (``packet, txTime(sec), rxTime(sec), rtt(usec)``), rtt = rxTime - txTime in µs (checked on the
  capture), i.e. the full round trip.
* sockperf warms up for 400 ms and counts only part of the run: ``-t 1`` gave 0.548 s of
  samples ("[Valid Duration]") and took 3.2 s of wall time, so use ``-t`` of a few seconds.
  ``-t`` is read as a whole number (``-t 1.5`` ran as ``-t 1``), so fractions are refused here,
  as for iperf3.
* sockperf exits 0 even when nothing came back ("No messages were received from the server. Is the
  server down?") or an argument was refused ("'-i' Invalid address: localhost"; it takes only
  IPv4 literals), and colours some lines with ANSI escapes even into a pipe. The parser therefore
  decides success from the text, not from the exit status.

The probe adds ``rate_pps * size * 8`` bit/s to the load in each direction (100 pps of 1472 B is
1.2 Mb/s, 12 % of the lowest 10 Mb/s sweep point): keep the rate low and record it.
"""

from __future__ import annotations

import ipaddress
import math
import subprocess
import tempfile
from pathlib import Path

from farm.errors import JobError
from farm.measure import BenchmarkError
from farm.measure.sockperf import (TOOL, RttStats, parse_sockperf, parse_sockperf_log, rtt_stats,  # noqa: F401
                                   strip_ansi)

DEFAULT_PORT = 11111  # sockperf's own default
MAX_DURATION = 86400  # seconds: a day, as iperf3's own limit
MAX_RATE = 1_000_000  # probe packets/s: a probe, not a load generator
MIN_SIZE, MAX_SIZE = 14, 65507  # sockperf refuses -m below 14; 65507 is the largest UDP/IPv4 payload
STARTUP_SECONDS = 3.0  # -t 1 took 3.2 s of wall time here: warm-up, the final 0.1 s wait, reporting


# --- commands --------------------------------------------------------------------------------


def server_command(port: int = DEFAULT_PORT, *, bind: str = "0.0.0.0", daemonize: bool = False) -> list[str]:
    """argv of the target's UDP echo server (``--daemonize`` to return at once)."""
    _check_port(port)
    _check_ipv4("bind address", bind)
    argv = [TOOL, "server", "-i", bind, "-p", str(port)]
    return argv + ["--daemonize"] if daemonize else argv


def client_command(host: str, port: int, *, rate_pps: int, size: int, duration: float,
                   full_log: str | None = None) -> list[str]:
    """argv of the host's probe: ``size``-byte datagrams at ``rate_pps``, every one echoed,
    for ``duration`` whole seconds, statistics in full round trips (``--full-rtt``).

    Values are checked here, before a board is booted, and raise :class:`~farm.errors.JobError`:
    sockperf itself exits 0 on a bad argument. ``host`` must be an IPv4 address (sockperf 3.7
    resolves no names).
    """
    _check_ipv4("host", host)
    _check_port(port)
    if isinstance(rate_pps, bool) or not isinstance(rate_pps, int) or not 0 < rate_pps <= MAX_RATE:
        raise JobError(f"sockperf rate {rate_pps!r}: expected a whole number of packets/s, 1-{MAX_RATE}")
    if isinstance(size, bool) or not isinstance(size, int) or not MIN_SIZE <= size <= MAX_SIZE:
        raise JobError(f"sockperf size {size!r}: expected {MIN_SIZE}-{MAX_SIZE} bytes")
    if (isinstance(duration, bool) or not isinstance(duration, (int, float))
            or not math.isfinite(duration) or not float(duration).is_integer() or not 1 <= duration <= MAX_DURATION):
        raise JobError(f"sockperf duration {duration!r}: expected whole seconds, 1-{MAX_DURATION} "
                       "(sockperf truncates fractions)")
    argv = [TOOL, "under-load", "-i", host, "-p", str(port), "-t", str(int(duration)),
            "--mps", str(rate_pps), "-m", str(size), "--reply-every", "1", "--full-rtt"]
    return argv + ["--full-log", full_log] if full_log else argv


def _check_port(port: int) -> None:
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise JobError(f"sockperf port {port!r}: expected 1-65535")


def _check_ipv4(what: str, address: str) -> None:
    try:
        ipaddress.IPv4Address(address)
    except (ipaddress.AddressValueError, TypeError):
        raise JobError(f"sockperf {what} {address!r}: expected an IPv4 address "
                       "(sockperf 3.7 takes no host names)") from None


def measure_rtt(host: str, port: int, *, rate_pps: int, size: int, duration: float,
                timeout: float | None = None) -> RttStats:
    """Run the host-side sockperf probe against a running ``sockperf server`` and return the
    RTT statistics of its per-packet log (:func:`rtt_stats`, ipbench definitions).

    Meant to run in a thread while iperf3 loads the link. Raises
    :class:`~farm.measure.BenchmarkError` when sockperf is missing, overruns ``timeout`` (default
    ``duration`` + 30 s) or reports that nothing came back.
    """
    with tempfile.TemporaryDirectory(prefix="farm-sockperf-") as tmp:
        log = Path(tmp) / "full-log.csv"
        argv = client_command(host, port, rate_pps=rate_pps, size=size, duration=duration,
                              full_log=str(log))
        limit = float(duration) + 30 if timeout is None else timeout
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=limit)
        except FileNotFoundError:
            raise BenchmarkError(TOOL, "sockperf is not installed on the host (apt-get install sockperf)") from None
        except subprocess.TimeoutExpired:
            raise BenchmarkError(TOOL, f"client did not finish within {limit:.0f} s") from None
        summary = parse_sockperf(proc.stdout)  # raises with sockperf's words if nothing came back
        samples = parse_sockperf_log(log.read_text()) if log.exists() else []
    if not samples:
        raise BenchmarkError(TOOL, f"no per-packet log although {summary.samples} observations were reported")
    if len(samples) != summary.samples:
        raise ParseError(f"sockperf: the log has {len(samples)} rows, the summary "
                         f"{summary.samples} observations")
    return rtt_stats(samples)
