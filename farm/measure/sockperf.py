"""sockperf's outputs read (pure): its summary (:func:`parse_sockperf`), its ``--full-log``
(:func:`parse_sockperf_log`) and per-packet RTTs summarised with the lab's ipbench definitions
(:func:`rtt_stats`). What sockperf prints, and why farm uses it, is in :mod:`farm.bench.rtt`, which runs it.
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping

import attrs

from farm.errors import ParseError
from farm.measure import BenchmarkError, Measurement, check_value
from farm.measure.ipbench import BENCHMARK as SWEEP

TOOL = "sockperf"
SAMPLES = "rtt_samples"  # as farm.measure.farmload's


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
        """The five ``rtt_*`` metrics (unit ``us``) of a sweep point, under ``params``, and how many
        samples they are of (``rtt_samples``, a count: a value, never a param)."""
        values = (("rtt_min", self.min_us), ("rtt_avg", self.avg_us), ("rtt_max", self.max_us),
                  ("rtt_stdev", self.stdev_us), ("rtt_median", self.median_us))
        return [*(Measurement(benchmark, metric, float(value), "us", dict(params or {})) for metric, value in values),
                Measurement(benchmark, SAMPLES, float(self.samples), "count", dict(params or {}))]


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
