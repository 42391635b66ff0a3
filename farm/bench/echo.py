"""The ipbench-style echo load test: ``farm_load`` on the lab host, ``farm_echo`` on the target.

Both are C programs of ours (``images/src/farm_load.c``, ``images/src/farm_echo.c``). The
responder is a recipe program of the target image; the generator is built on demand for the host
with the host's ``gcc`` into farm's cache (:func:`host_generator`), keyed by the source's hash.

The method, and its figures, follow ipbench's latency test: N clients (default 4, as the lab's
vb04..vb07) each send a share of the requested rate as paced UDP datagrams of ``size`` bytes
(default 1472); the target echoes each one; every packet's round trip is timed by the client that
sent it (its own clock: no clock of another machine is trusted). The load runs through a warm-up,
the measured window (by duration, or by sample count like ipbench's 200,000) and a cool-down.
The figures of a window (see :class:`LoadResult`):

* ``Requested_Throughput``: the rate asked for, bit/s of UDP payload (1 Gb/s of 1472-byte packets
  is 84,918 packets/s);
* ``Send_Throughput``: payload bits the clients sent in the window / the window's length;
* ``Receive_Throughput``: payload bits that came back to the clients in the window / its length,
  summed over clients (echoes of packets sent before the window count, as in ipbench);
* RTT min/avg/max/stdev/median in µs over *every* packet sent in the window that came back before
  the load ended: population standard deviation, the median the upper middle sample;
* ``n``: how many such samples there were (max and stdev depend on it);
* ``rtt_p10``/``rtt_p90``: the 10th and 90th percentile of the same samples (``sorted[floor(n p)]``,
  as the median is ``sorted[n/2]``), farm's own figures for the plots' band (not in ipbench's form;
  output of generators built before them has none).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Mapping

import attrs

from farm.errors import JobError, ParseError
from farm.measure import BenchmarkError, Measurement, check_value
from farm.measure.ipbench import BENCHMARK as SWEEP

TOOL = "farm_load"
RESPONDER = "farm_echo"
ECHO_PORT = 7  # the echo service's port
SOURCE = Path(__file__).resolve().parents[2] / "images" / "src" / "farm_load.c"
MIN_SIZE, MAX_SIZE = 24, 65507  # the generator's header is 24 bytes; 65507 is the largest UDP/IPv4 payload
MAX_CLIENTS = 64
MAX_SECONDS = 86400  # a window, warm-up or cool-down longer than a day is a typo (as iperf3's -t limit)
MAX_SAMPLES = 100_000_000
METHOD = "ipbench-echo"


# --- the generator's output --------------------------------------------------------------------


@attrs.frozen
class ClientCounts:
    client: int
    sent: int
    window_sent: int
    received: int
    samples: int
    duplicates: int
    send_errors: int
    bad: int


@attrs.frozen
class LoadResult:
    """One measured window of ``farm_load``. Throughputs in bit/s, RTTs in µs, times in seconds
    since the load started (the generator's monotonic clock)."""

    requested: float
    send: float
    receive: float
    size: int
    samples: int
    rtt_min: float
    rtt_avg: float
    rtt_max: float
    rtt_stdev: float
    rtt_median: float
    window_start: float
    window_end: float
    load_end: float
    first_tx: float
    last_rx: float
    lost: int
    clients: tuple[ClientCounts, ...]
    rtt_p10: float | None = None
    rtt_p90: float | None = None

    def measurements(self, params: Mapping[str, Any] | None = None, *, benchmark: str = SWEEP) -> list[Measurement]:
        """The sweep point's metrics under ``params`` (plus ``method`` and ``n``)."""
        point = {**(params or {}), "method": METHOD, "n": self.samples}
        values = (("requested_throughput", self.requested, "bit/s"), ("sent_throughput", self.send, "bit/s"),
                  ("received_throughput", self.receive, "bit/s"), ("rtt_min", self.rtt_min, "us"),
                  ("rtt_avg", self.rtt_avg, "us"), ("rtt_max", self.rtt_max, "us"),
                  ("rtt_stdev", self.rtt_stdev, "us"), ("rtt_median", self.rtt_median, "us"),
                  ("lost", float(self.lost), "count"),
                  *((("rtt_p10", self.rtt_p10, "us"), ("rtt_p90", self.rtt_p90, "us"))
                    if self.rtt_p10 is not None and self.rtt_p90 is not None else ()))
        return [Measurement(benchmark, metric, float(value), unit, point) for metric, value, unit in values]


_HEADER = re.compile(r"^farm_load 1 (?P<kv>.*)$")
EDGE = _EDGE = re.compile(r"^window_(?P<edge>start|end) t=(?P<t>\S+)$")  # a window edge, as printed
_CLIENT = re.compile(r"^client (?P<id>\d+) (?P<kv>.*)$")
_RESULT = re.compile(r"^result (?P<kv>.*)$")
_RESULT_KEYS = ("requested", "send", "receive", "size", "n", "min", "avg", "max", "stdev", "median",
                "window_start", "window_end", "load_end", "first_tx", "last_rx", "lost")
_CLIENT_KEYS = ("sent", "window_sent", "received", "samples", "duplicates", "send_errors", "bad")


def parse_load(text: str) -> LoadResult:
    """The measured window from ``farm_load``'s output (format: ``images/src/farm_load.c``).

    Raises :class:`~farm.errors.ParseError` naming the line for a malformed line or value, a
    second ``result`` line (two runs pasted together), no ``result`` line (the run was cut short)
    or per-client counts that do not add up to the result. Zero samples is
    :class:`~farm.measure.BenchmarkError` (nothing came back: is the responder running?).
    """
    result: tuple[int, dict[str, float]] | None = None
    clients: list[ClientCounts] = []
    header = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if _HEADER.match(line):
            if header:
                raise ParseError(f"farm_load output line {number}: a second run's header (two runs pasted together?)")
            header = True
        elif _EDGE.match(line):
            continue
        elif m := _CLIENT.match(line):
            kv = _pairs(number, m["kv"], _CLIENT_KEYS)
            clients.append(ClientCounts(int(m["id"]), *(int(kv[k]) for k in _CLIENT_KEYS)))
        elif m := _RESULT.match(line):
            if result is not None:
                raise ParseError(f"farm_load output line {number}: a second result (first on line {result[0]})")
            result = (number, _pairs(number, m["kv"], _RESULT_KEYS))
        else:
            raise ParseError(f"farm_load output line {number}: not farm_load output: {line[:80]!r}")
    if not header:
        raise ParseError("farm_load output: no 'farm_load 1' header line (not farm_load output?)")
    if result is None:
        raise ParseError("farm_load output: no result line (was the run cut short?)")
    number, kv = result
    for key in ("size", "n", "lost"):
        if not kv[key].is_integer():
            raise ParseError(f"farm_load output line {number}: {key}={kv[key]} is not a whole number")
    if clients and sum(c.samples for c in clients) != kv["n"]:
        raise ParseError(f"farm_load output line {number}: n={kv['n']:g} but the clients' samples add up to "
                         f"{sum(c.samples for c in clients)}")
    if kv["n"] == 0:
        raise BenchmarkError(TOOL, f"no packet came back in the measured window ({sum(c.sent for c in clients)} "
                             "sent): is the echo responder running and reachable?")
    return LoadResult(requested=kv["requested"], send=kv["send"], receive=kv["receive"], size=int(kv["size"]),
                      samples=int(kv["n"]), rtt_min=kv["min"], rtt_avg=kv["avg"], rtt_max=kv["max"],
                      rtt_stdev=kv["stdev"], rtt_median=kv["median"], window_start=kv["window_start"],
                      window_end=kv["window_end"], load_end=kv["load_end"], first_tx=kv["first_tx"],
                      last_rx=kv["last_rx"], lost=int(kv["lost"]), clients=tuple(clients),
                      rtt_p10=kv.get("p10"), rtt_p90=kv.get("p90"))


def _pairs(number: int, text: str, keys: tuple[str, ...]) -> dict[str, float]:
    found: dict[str, float] = {}
    for item in text.split():
        key, sep, value = item.partition("=")
        if not sep:
            raise ParseError(f"farm_load output line {number}: {item!r} is not key=value")
        try:
            found[key] = check_value(TOOL, f"farm_load output line {number}: {key}", float(value))
        except ValueError:
            raise ParseError(f"farm_load output line {number}: {key} is {value!r}, expected a number") from None
    missing = [k for k in keys if k not in found]
    if missing:
        raise ParseError(f"farm_load output line {number}: no {', '.join(missing)}")
    return found


def parse_samples(text: str) -> list[tuple[int, int, float, float]]:
    """The ``-o`` file: ``client seq tx rx`` per sample (seconds since the load started)."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if len(fields) != 4:
            raise ParseError(f"farm_load samples line {number}: {len(fields)} fields, expected 4 (client seq tx rx)")
        try:
            out.append((int(fields[0]), int(fields[1]), float(fields[2]), float(fields[3])))
        except ValueError:
            raise ParseError(f"farm_load samples line {number}: not numbers: {line[:80]!r}") from None
    return out


# --- commands ------------------------------------------------------------------------------------


@attrs.frozen
class LoadSpec:
    """A run of the generator; checked when built (:func:`load_spec`)."""

    rate_bps: float
    size: int = 1472
    clients: int = 4
    warmup: float = 1.0
    cooldown: float = 1.0
    duration: float | None = None
    samples: int | None = None


def _positive(name: str, value: Any, *, zero: bool = False, whole: bool = False) -> None:
    kinds = (int,) if whole else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value) \
            or value < 0 or (value == 0 and not zero):
        what = "a whole number" if whole else "a number"
        raise JobError(f"echo load {name} {value!r}: expected {what} {'>= 0' if zero else '> 0'}")


def load_spec(rate_bps: float, *, size: int = 1472, clients: int = 4, warmup: float = 1.0, cooldown: float = 1.0,
              duration: float | None = None, samples: int | None = None) -> LoadSpec:
    """A checked :class:`LoadSpec`: exactly one of ``duration`` (s) and ``samples``; raises JobError."""
    _positive("rate", rate_bps)
    if rate_bps < 1000:
        raise JobError(f"echo load rate {rate_bps!r} bit/s: expected at least 1000 bit/s")
    _positive("packet_size", size, whole=True)
    if not MIN_SIZE <= size <= MAX_SIZE:
        raise JobError(f"echo load packet_size {size!r}: expected {MIN_SIZE}-{MAX_SIZE} bytes")
    _positive("clients", clients, whole=True)
    if clients > MAX_CLIENTS:
        raise JobError(f"echo load clients {clients!r}: expected 1-{MAX_CLIENTS}")
    _positive("warmup", warmup, zero=True)
    _positive("cooldown", cooldown, zero=True)
    for name, value in (("warmup", warmup), ("cooldown", cooldown), ("duration", duration)):
        if value is not None and not isinstance(value, bool) and isinstance(value, (int, float)) and value > MAX_SECONDS:
            raise JobError(f"echo load {name} {value!r}: expected at most {MAX_SECONDS} s")
    if isinstance(samples, int) and not isinstance(samples, bool) and samples > MAX_SAMPLES:
        raise JobError(f"echo load samples {samples!r}: expected at most {MAX_SAMPLES}")
    if (duration is None) == (samples is None):
        raise JobError("echo load: give the measured window as duration (s) or samples, not both or neither")
    if duration is not None:
        _positive("duration", duration)
    if samples is not None:
        _positive("samples", samples, whole=True)
    return LoadSpec(float(rate_bps), size, clients, float(warmup), float(cooldown),
                    None if duration is None else float(duration), samples)


def load_command(binary: str, host: str, port: int, spec: LoadSpec, *, dump: str | None = None) -> list[str]:
    argv = [binary, "-a", host, "-p", str(port), "-r", f"{spec.rate_bps:.0f}", "-s", str(spec.size),
            "-n", str(spec.clients), "-w", f"{spec.warmup:g}", "-c", f"{spec.cooldown:g}"]
    argv += ["-d", f"{spec.duration:g}"] if spec.duration is not None else ["-N", str(spec.samples)]
    return argv + (["-o", dump] if dump else [])


def responder_command(port: int = ECHO_PORT, *, priority: int | None = None, cpu: int | None = None) -> str:
    """The target's shell command: (re)start the responder as a daemon with these options."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise JobError(f"echo port {port!r}: expected 1-65535")
    argv = [RESPONDER, "-d", "-p", str(port)]
    if priority is not None:
        if isinstance(priority, bool) or not isinstance(priority, int) or not 1 <= priority <= 99:
            raise JobError(f"echo_priority {priority!r}: expected a SCHED_FIFO priority 1-99")
        argv += ["-P", str(priority)]
    if cpu is not None:
        if isinstance(cpu, bool) or not isinstance(cpu, int) or cpu < 0:
            raise JobError(f"echo_cpu {cpu!r}: expected a core number >= 0")
        argv += ["-c", str(cpu)]
    # the pidof loop: a previous responder (other options) must be gone before the port is bound again
    return (f"kill $(pidof {RESPONDER}) 2>/dev/null; i=0; while pidof {RESPONDER} >/dev/null && [ $i -lt 50 ]; "
            f"do i=$((i+1)); usleep 20000; done; {' '.join(argv)}")


# --- the host-side binary ------------------------------------------------------------------------


def host_generator(cache: Path | None = None, source: Path = SOURCE) -> Path:
    """``farm_load`` built for this host with ``gcc`` into ``<cache>/host/farm_load-<hash>/``."""
    return host_program(source, "farm_load", cache)


def host_program(source: Path, name: str, cache: Path | None = None) -> Path:
    """The C program ``source`` built for this host with ``gcc`` into ``<cache>/host/<name>-<hash>/<name>``
    (``farm_load``; a stand-in board's ``farm_echo``, farm.virtual.standin).

    The hash covers the source and the compiler (path, size, mtime), so an edited source or an
    upgraded compiler gives a new binary; a finished build is moved into place atomically (two jobs
    may build it at once). A compile error is a :class:`~farm.errors.JobError` naming the source.
    """
    from farm.images.build import default_cache
    from farm.images.cachefs import tool_fingerprint

    cc = shutil.which("gcc")
    if cc is None:
        raise JobError(f"no host C compiler (gcc) to build {name}: `make setup` installs it")
    digest = hashlib.sha256(source.read_bytes() + f"\0{tool_fingerprint(cc)}".encode()).hexdigest()[:16]
    home = (cache or default_cache()) / "host" / f"{name}-{digest}"
    binary = home / name
    if binary.is_file() and os.access(binary, os.X_OK):
        return binary
    home.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{name}-", dir=home.parent) as tmp:
        out = Path(tmp) / name
        proc = subprocess.run([cc, "-O2", "-Wall", "-pthread", "-o", str(out), str(source), "-lm"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            first = next((line for line in proc.stderr.splitlines() if "error" in line), proc.stderr.strip()[:300])
            raise JobError(f"{source}: does not compile for the host: {first}")
        built = Path(tmp) / "done"
        built.mkdir()
        out.rename(built / name)
        try:
            built.rename(home)
        except OSError:
            if not binary.is_file():  # another job's rename won only if it left a binary
                raise
    return binary


def run_load(argv: list[str], *, on_edge: Callable[[str], None], timeout: float) -> str:
    """Run the generator; ``on_edge("start"|"end")`` is called as each window edge is printed
    (to sample the target's CPU there). Returns the whole output."""
    lines: list[str] = []
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
                if m := _EDGE.match(line.strip()):
                    on_edge(m["edge"])
            stderr = proc.stderr.read() if proc.stderr else ""
            code = proc.wait(timeout=timeout)
        except BaseException:
            proc.kill()
            raise
        finally:
            timer.cancel()
    if code < 0:
        raise BenchmarkError(TOOL, f"did not finish within {timeout:.0f} s (killed)")
    if code != 0:
        raise BenchmarkError(TOOL, f"exit {code}: {stderr.strip() or ''.join(lines)[-300:]}")
    return "".join(lines)
