"""``farm_load``'s output read (pure): the measured window of one load (:func:`parse_load`) and its
per-sample file (:func:`parse_samples`). The generator (``images/src/farm_load.c``) and the responder
are run by :mod:`farm.bench.echo` (method ``ipbench-echo``, farm_load's paced mode, described here)
and :mod:`farm.bench.ipbench_sweep` (method ``ipbench``, ``farm_load -m ipbench``: its header says
``mode=ipbench``, its result line adds ``late`` and ``timeouts``; its definitions are that module's).

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
* ``n``: how many such samples there were (max and stdev depend on it): the ``rtt_samples`` value;
* ``rtt_p10``/``rtt_p90``: the 10th and 90th percentile of the same samples (``sorted[floor(n p)]``,
  as the median is ``sorted[n/2]``), farm's own figures for the plots' band (not in ipbench's form;
  output of generators built before them has none).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

import attrs

from farm.errors import ParseError
from farm.measure import BenchmarkError, Measurement, check_value
from farm.measure.ipbench import BENCHMARK as SWEEP

TOOL = "farm_load"
METHOD = "ipbench-echo"
#: the metric of how many RTT samples a point's figures are of (``n`` in farm_load's output)
SAMPLES = "rtt_samples"


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
    #: ``-m ipbench`` only: replies in the window older than the send-time ring (ipbench's late
    #: packets), and clients whose window the time-out ended before they had their samples
    late: int | None = None
    timeouts: int | None = None
    mode: str = "paced"  # farm_load's -m: paced (ipbench-echo) or ipbench

    def measurements(self, params: Mapping[str, Any] | None = None, *, benchmark: str = SWEEP,
                     method: str = METHOD) -> list[Measurement]:
        """The sweep point's metrics under ``params`` (plus ``method``); the samples behind its RTTs are
        a value of their own (``rtt_samples``), never a param: a count is measured, not what was."""
        point = {**(params or {}), "method": method}
        values = (("requested_throughput", self.requested, "bit/s"), ("sent_throughput", self.send, "bit/s"),
                  ("received_throughput", self.receive, "bit/s"), ("rtt_min", self.rtt_min, "us"),
                  ("rtt_avg", self.rtt_avg, "us"), ("rtt_max", self.rtt_max, "us"),
                  ("rtt_stdev", self.rtt_stdev, "us"), ("rtt_median", self.rtt_median, "us"),
                  ("lost", float(self.lost), "count"), (SAMPLES, float(self.samples), "count"),
                  *((("rtt_p10", self.rtt_p10, "us"), ("rtt_p90", self.rtt_p90, "us"))
                    if self.rtt_p10 is not None and self.rtt_p90 is not None else ()),
                  *((("late", float(self.late), "count"),) if self.late is not None else ()),
                  *((("window_timeouts", float(self.timeouts), "count"),) if self.timeouts is not None else ()))
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
    mode = "paced"
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if m := _HEADER.match(line):
            if header:
                raise ParseError(f"farm_load output line {number}: a second run's header (two runs pasted together?)")
            header = True
            mode = "ipbench" if "mode=ipbench" in m["kv"].split() else "paced"
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
    for key in ("size", "n", "lost", *(k for k in ("late", "timeouts") if k in kv)):
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
                      rtt_p10=kv.get("p10"), rtt_p90=kv.get("p90"),
                      late=int(kv["late"]) if "late" in kv else None,
                      timeouts=int(kv["timeouts"]) if "timeouts" in kv else None, mode=mode)


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
