"""ipbench's latency figures, computed as its code computes them (pure): the reference against which
``farm_load -m ipbench`` (``images/src/farm_load.c``) is checked, and a reader of its sample dumps.

From au-ts/ipbench ``ipbench2/src/tests/latency/latency.c``:

* each client (``measure_latency``, lines 351-358): ``microseconds = tick_to_usec(cooldown_time -
  warmup_time)``; ``bps = 8 * received_packets * size * 10^6 / microseconds`` and ``bps_sent = 8 *
  sent_packets * size * 10^6 / microseconds``, unsigned 64-bit integer division; its RTT samples
  are ``tick_to_usec`` of each round trip (``latency_marshall``, line 579), truncated;
* the controller (``latency_output``, lines 649-745): the three throughputs summed over clients;
  over all clients' samples ``min``, ``max``, ``avg = sum / n`` (integer division, ``avg_rtt``),
  ``dev = sum((avg - x)^2) / n`` in unsigned 64-bit arithmetic (``dev_rtt``), printed as
  ``sqrt(dev)`` with ``%.2f``, and the median ``sorted[n / 2]`` (``med_rtt``).
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import attrs

_U64 = (1 << 64) - 1


@attrs.frozen
class ClientRun:
    """What one client marshals: its requested bit/s, its window in µs, the packets it sent in the
    window, and its samples in µs."""

    requested: int
    window_us: int
    sent: int
    rtts_us: Sequence[int]
    size: int

    @property
    def achieved(self) -> int:
        return (8 * len(self.rtts_us) * self.size * 1_000_000) // self.window_us if self.window_us else 0

    @property
    def sent_bps(self) -> int:
        return (8 * self.sent * self.size * 1_000_000) // self.window_us if self.window_us else 0


@attrs.frozen
class LatencyLine:
    """The controller's line: ``requested,achieved,sent,size,min,avg,max,stdev,median``."""

    requested: int
    achieved: int
    sent: int
    size: int
    rtt_min: int
    rtt_avg: int
    rtt_max: int
    rtt_stdev: float  # sqrt of the integer variance; printed %.2f
    rtt_median: int
    n: int

    def text(self) -> str:
        """As ipbench prints it (``latency_output``'s printf)."""
        return (f"{self.requested},{self.achieved},{self.sent},{self.size},{self.rtt_min},{self.rtt_avg},"
                f"{self.rtt_max},{self.rtt_stdev:.2f},{self.rtt_median}")


def latency_line(clients: Iterable[ClientRun]) -> LatencyLine:
    """The controller's figures over ``clients``; no sample at all is a ValueError (ipbench's
    controller would divide by zero)."""
    runs = list(clients)
    samples = sorted(x for c in runs for x in c.rtts_us)
    n = len(samples)
    if not n:
        raise ValueError("no RTT samples")
    avg = (sum(samples) & _U64) // n
    dev = 0
    for x in samples:
        d = (avg - x) & _U64
        dev = (dev + d * d) & _U64
    dev //= n
    return LatencyLine(requested=sum(c.requested for c in runs), achieved=sum(c.achieved for c in runs),
                       sent=sum(c.sent_bps for c in runs), size=runs[-1].size, rtt_min=samples[0], rtt_avg=avg,
                       rtt_max=samples[-1], rtt_stdev=math.sqrt(dev), rtt_median=samples[n // 2], n=n)
