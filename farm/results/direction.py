"""Which way is better for a metric: :data:`~farm.measure.HIGHER_IS_BETTER`, :data:`~farm.measure.LOWER_IS_BETTER`
or :data:`~farm.measure.UNKNOWN_DIRECTION`, as its benchmark's registration says (farm.bench.registry), else
from its unit: rates up, times, cycles and per-byte costs down, a percentage of loss or CPU utilisation
down. A unit with no known direction is never guessed: qualify reports its change and never calls it a
regression, compare draws it in its own colour.
"""

from __future__ import annotations

from farm.bench import registry
from farm.measure import HIGHER_IS_BETTER, LOWER_IS_BETTER, UNKNOWN_DIRECTION

# every unit a registered benchmark measures has its direction in the benchmark's registration
# (farm.bench.registry); these tables are for the rest (a pytest test's farm_record, a unit a
# registration does not name)

_HIGHER_UNITS = {
    "bit/s", "bits/s", "bps", "kbit/s", "mbit/s", "gbit/s", "kb/s", "mb/s", "gb/s",
    "byte/s", "bytes/s", "b/s", "kbyte/s", "kbytes/s", "mbyte/s", "mbytes/s", "gbyte/s", "gbytes/s",
    "kib/s", "mib/s", "gib/s",
    "op/s", "ops/s", "operations/s", "packets/s", "pkt/s", "pps", "requests/s", "req/s",
    "transactions/s", "messages/s", "msg/s", "iterations/s", "frames/s", "fps",
}
_LOWER_UNITS = {
    "ns", "us", "µs", "μs", "usec", "ms", "msec", "s", "sec", "seconds",
    "cycles", "cycle", "cycles/byte", "cycles/b", "cpb", "cycles/packet", "cycles/op",
    "ticks", "ticks/byte",  # ISA-L's perf output (farm.measure.isal)
}
_PERCENT_UNITS = {"percent", "%"}
# a percentage is a loss or a utilisation (lower is better) only when the metric says so
_LOWER_PERCENT_WORDS = ("loss", "lost", "drop", "error", "cpu", "util", "busy")


def direction(metric: str, unit: str, benchmark: str = "") -> int:
    """:data:`HIGHER_IS_BETTER`, :data:`LOWER_IS_BETTER` or :data:`UNKNOWN_DIRECTION`: as the
    registration of ``benchmark`` says for ``unit``, else from the unit (and, for a percentage,
    the metric's name)."""
    registered = registry.direction(benchmark, unit, metric)
    if registered is not None:
        return registered
    u = unit.strip().lower()
    if u in _HIGHER_UNITS:
        return HIGHER_IS_BETTER
    if u in _LOWER_UNITS:
        return LOWER_IS_BETTER
    if u in _PERCENT_UNITS and any(word in metric.lower() for word in _LOWER_PERCENT_WORDS):
        return LOWER_IS_BETTER
    return UNKNOWN_DIRECTION
