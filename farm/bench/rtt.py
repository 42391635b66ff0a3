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
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Mapping

import attrs

from farm.errors import JobError, ParseError
from farm.measure import BenchmarkError, Measurement, check_value
from farm.measure.ipbench import BENCHMARK as SWEEP

TOOL = "sockperf"
DEFAULT_PORT = 11111  # sockperf's own default
MAX_DURATION = 86400  # seconds: a day, as iperf3's own limit
MAX_RATE = 1_000_000  # probe packets/s: a probe, not a load generator
MIN_SIZE, MAX_SIZE = 14, 65507  # sockperf refuses -m below 14; 65507 is the largest UDP/IPv4 payload
STARTUP_SECONDS = 3.0  # -t 1 took 3.2 s of wall time here: warm-up, the final 0.1 s wait, reporting


@attrs.frozen
class RttStats:
    """Round-trip times of one measurement, in microseconds."""

    min_us: float
    avg_us: float
    max_us: float
    stdev_us: float
    median_us: float
    samples: int

    def measurements(self, params: Mapping[str, Any] | None = None, *,
                     benchmark: str = SWEEP) -> list[Measurement]:
        """The five ``rtt_*`` metrics (unit ``us``) of a sweep point, under ``params``."""
        values = (("rtt_min", self.min_us), ("rtt_avg", self.avg_us), ("rtt_max", self.max_us),
                  ("rtt_stdev", self.stdev_us), ("rtt_median", self.median_us))
        return [Measurement(benchmark, metric, float(value), "us", dict(params or {}))
                for metric, value in values]


def rtt_stats(samples_us: list[float]) -> RttStats:
    """Statistics of per-packet RTTs, with the definitions of the lab's ipbench history.

    * standard deviation: *population* (divide by n), as ipbench's latency test does
      (``dev_rtt``: ``sum / (nsamples*samples)``, then ``sqrt`` when printing). With the thousands
      of samples of a sweep point the difference to n-1 is below 0.1 %; matching the history
      matters more. (sockperf's own ``std-dev`` divides by n-1.)
    * median: the middle sample, the mean of the two middle ones for even n. (ipbench takes the
      upper middle, ``rtt_sample[n/2]``, sockperf the lower; both differ from this by at most half
      the gap between the two middle samples.)

    Sums use :func:`math.fsum`, so the mean does not drift with 10^5 samples.
    """
    n = len(samples_us)
    if n == 0:
        raise ValueError("no RTT samples: nothing came back")
    ordered = sorted(float(x) for x in samples_us)
    bad = next((x for x in ordered if not (math.isfinite(x) and x >= 0)), None)
    if bad is not None:
        raise ValueError(f"RTT samples must be finite and >= 0, got {bad}")
    mean = math.fsum(ordered) / n
    variance = math.fsum((x - mean) ** 2 for x in ordered) / n
    middle = n // 2
    median = ordered[middle] if n % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return RttStats(min_us=ordered[0], avg_us=mean, max_us=ordered[-1],
                    stdev_us=math.sqrt(variance), median_us=median, samples=n)


# --- sockperf stdout -------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_PREFIX = "sockperf: "
_FAILURES = (
    re.compile(r"^sockperf: (?P<message>No messages were received from the server.*)$"),
    re.compile(r"^sockperf: (?P<message>No valid observations found.*)$"),
    re.compile(r"^sockperf: ERROR: (?P<message>.+)$"),
    re.compile(r"^sockperf: (?P<message>'-[-\w]+' Invalid .+)$"),
)
_SERVER_BLOCK = re.compile(r"^sockperf: =+ Printing statistics for Server No: (?P<n>\d+)")
_AVERAGE = re.compile(r"^sockperf: =+> avg-(?P<kind>rtt|latency)=(?P<avg>\S+) \(std-dev=(?P<std>[^,)]+)")
_TOTAL = re.compile(r"^sockperf: Total (?P<n>\S+) observations")
_MAX = re.compile(r"^sockperf: ---> <MAX> observation =\s*(?P<v>\S+)$")
_MIN = re.compile(r"^sockperf: ---> <MIN> observation =\s*(?P<v>\S+)$")
_MEDIAN = re.compile(r"^sockperf: ---> percentile 50\.0+ =\s*(?P<v>\S+)$")


def strip_ansi(text: str) -> str:
    """sockperf's output without its colour escapes (``ESC[2;35m`` ... ``ESC[0m``)."""
    return _ANSI.sub("", text)


def parse_sockperf(text: str) -> RttStats:
    """:class:`RttStats` from the summary sockperf prints (``ping-pong`` or ``under-load``).

    Reads ``avg-rtt`` (or ``avg-latency``, doubled) and its ``std-dev``, ``Total N observations``,
    ``<MIN>``, ``<MAX>`` and ``percentile 50.000`` (as the median). These are sockperf's
    definitions (sample std-dev, lower-middle median); for the ipbench ones parse the
    ``--full-log`` file with :func:`parse_sockperf_log` and pass it to :func:`rtt_stats`.
    Newer sockperf adds ``mean-ad=...`` etc. after ``std-dev`` on the same line; they are ignored.

    Raises :class:`~farm.measure.BenchmarkError` with sockperf's words when it says nothing came back
    or it refused an argument, and :class:`~farm.errors.ParseError` naming the line for anything
    unreadable, a missing summary line, or statistics of more than one server (``--srv-num``).
    """
    found: dict[str, tuple[int, float]] = {}
    kind = None
    for number, raw in enumerate(strip_ansi(text).splitlines(), start=1):
        line = raw.strip()
        if not line.startswith(_PREFIX):
            continue
        for failure in _FAILURES:
            if m := failure.match(line):
                raise BenchmarkError(TOOL, m["message"].strip())
        if (m := _SERVER_BLOCK.match(line)) and m["n"] != "0":
            raise ParseError(f"sockperf output line {number}: statistics for server {m['n']}; "
                             "only one server (no --srv-num) is supported")
        if m := _AVERAGE.match(line):
            _once(found, "avg", number, _float(number, "avg", m["avg"]))
            _once(found, "std", number, _float(number, "std-dev", m["std"]))
            kind = m["kind"]
        elif m := _TOTAL.match(line):
            _once(found, "n", number, _float(number, "observations", m["n"]))
        else:
            for key, pattern in (("max", _MAX), ("min", _MIN), ("median", _MEDIAN)):
                if m := pattern.match(line):
                    _once(found, key, number, _float(number, key, m["v"]))
    labels = {"avg": "'====> avg-rtt=' line", "std": "std-dev", "n": "'Total N observations' line",
              "min": "'<MIN> observation' line", "max": "'<MAX> observation' line",
              "median": "'percentile 50.000' line"}
    missing = [label for key, label in labels.items() if key not in found]
    if missing:
        raise ParseError(f"sockperf output: no {', no '.join(missing)} (was the run cut short?)")
    scale = 2.0 if kind == "latency" else 1.0  # latency = rtt / 2
    n = found["n"][1]
    if not n.is_integer() or n <= 0:
        raise ParseError(f"sockperf output line {found['n'][0]}: {n} observations")
    return RttStats(min_us=found["min"][1] * scale, avg_us=found["avg"][1] * scale,
                    max_us=found["max"][1] * scale, stdev_us=found["std"][1] * scale,
                    median_us=found["median"][1] * scale, samples=int(n))


def _once(found: dict[str, tuple[int, float]], key: str, number: int, value: float) -> None:
    if key in found:
        raise ParseError(f"sockperf output line {number}: second {key} value (first on line "
                         f"{found[key][0]}); two runs pasted together?")
    found[key] = (number, value)


def _float(number: int, what: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ParseError(f"sockperf output line {number}: {what} is {text!r}, expected a number >= 0") from None
    return check_value("sockperf", f"sockperf output line {number}: {what} {text!r}", value)


# --- sockperf --full-log ---------------------------------------------------------------------

_LOG_HEADER = "packet, txTime(sec), rxTime(sec), rtt(usec)"
_LOG_SEPARATOR = re.compile(r"^-{10,}$")


def parse_sockperf_log(text: str) -> list[float]:
    """Per-packet RTTs in µs from a ``sockperf --full-log`` file, in the order sent.

    The file repeats the summary, then a ``packet, txTime(sec), rxTime(sec), rtt(usec)`` header,
    one row per valid reply, and a ``-----`` line. A file without the header (sockperf got no
    valid reply) gives an empty list; a row that is not four numbers raises
    :class:`~farm.errors.ParseError` naming the line.
    """
    rtts: list[float] = []
    inside = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line == _LOG_HEADER:
            if inside or rtts:
                raise ParseError(f"sockperf log line {number}: a second table (two servers, or "
                                 "two logs pasted together?)")
            inside = True
        elif inside and (not line or _LOG_SEPARATOR.match(line)):
            inside = False
        elif inside:
            fields = [f.strip() for f in line.split(",")]
            if len(fields) != 4:
                raise ParseError(f"sockperf log line {number}: {len(fields)} fields, expected 4 "
                                 f"({_LOG_HEADER}): {line[:80]!r}")
            rtts.append(_float(number, "rtt", fields[3]))
    return rtts


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
