"""Numbers as people read them: ``812 Mbit/s``, ``1.23 GB/s``, ``45.2 µs``, ``6.78 %``.

One function, :func:`human`, for every place a person reads a measured value (summary.md and the
GitHub step summary, the dashboard, qualify's and compare's reports, console lines, ``farm history``);
files for machines (results.csv, metrics.txt, the wide CSVs, JSON) keep the raw value in the
record's unit. Three significant digits (never an exponent for values of one or more), decimal SI
prefixes (k = 1000, as iperf3's and openssl's rates are), times scaled to the unit that gives a
number from 1 to 999 (ns, µs, ms, s).
"""

from __future__ import annotations

import math

from farm.measure.params import parse_params

#: rate and size units scaled with k/M/G/T, and the name shown
_SCALED = {"bit/s": "bit/s", "bits/s": "bit/s", "bps": "bit/s", "bytes/s": "B/s", "byte/s": "B/s", "B/s": "B/s",
           "bytes": "B", "byte": "B", "B": "B", "Hz": "Hz", "hz": "Hz", "ops/s": "ops/s", "op/s": "ops/s",
           "packets/s": "packets/s", "pps": "packets/s"}
_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
#: time units, in seconds
_TIMES = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3,
          "s": 1.0, "sec": 1.0, "seconds": 1.0}
_TIME_STEPS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
_PERCENT = {"percent", "%"}
_COUNTS = {"", "count", "counts"}

#: parameters whose value is in a unit (farm's benchmark parameters): shown scaled too
PARAM_UNITS = {"requested": "bit/s", "rate": "bit/s", "bitrate": "bit/s", "bandwidth": "bit/s",
               "packet_size": "bytes", "block": "bytes", "length": "bytes", "size": "bytes"}


def number(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, without an exponent from 1 up and no trailing zeros:
    ``812``, ``1.23``, ``45.2``, ``12200``, ``0.000123``."""
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("∞" if value > 0 else "-∞")
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    if magnitude >= digits - 1:
        return f"{round(value):d}" if abs(value) < 1e15 else f"{value:.{digits}g}"
    text = f"{value:.{max(0, digits - 1 - magnitude)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def human(value: float, unit: str) -> str:
    """A measured value in the unit a person reads: ``(32139119.19, "bytes/s")`` → ``"32.1 MB/s"``,
    ``(812e6, "bit/s")`` → ``"812 Mbit/s"``, ``(12200, "us")`` → ``"12.2 ms"``, ``(6.775, "percent")``
    → ``"6.78 %"``, ``(3, "count")`` → ``"3"``; any other unit is kept, after the number."""
    if not math.isfinite(value):
        return f"{number(value)} {unit}".rstrip()
    if unit in _SCALED:
        shown = _SCALED[unit]
        for factor, prefix in _PREFIXES:
            if abs(value) >= factor * 0.9995:
                return f"{number(value / factor)} {prefix}{shown}"
        return f"{number(value)} {shown}"
    if unit in _TIMES:
        seconds = value * _TIMES[unit]
        if seconds == 0:
            return f"0 {'µs' if unit in ('us', 'µs', 'μs', 'usec') else unit}"
        for factor, name in _TIME_STEPS:
            if abs(seconds) >= factor * 0.9995 or factor == 1e-9:
                return f"{number(seconds / factor)} {name}"
    if unit in _PERCENT:
        return f"{number(value)} %"
    if unit in _COUNTS:
        return number(value) if value != int(value) or abs(value) >= 1e15 else f"{int(value):d}"
    return f"{number(value)} {unit}"


def human_params(text: str) -> str:
    """A params text for people: values with a unit (:data:`PARAM_UNITS`) scaled, ``; `` between
    pairs: ``packet_size=1472;requested=10000000`` → ``packet_size=1472 B; requested=10 Mbit/s``.
    Parameters that are not numbers stay as they are."""
    if not text:
        return text
    out = []
    for key, value in parse_params(text).items():
        unit = PARAM_UNITS.get(key)
        shown = str(value)
        try:
            amount = float(value) if unit is not None else math.nan
        except (TypeError, ValueError):
            amount = math.nan
        if math.isfinite(amount):
            # a size is a setting people type exactly (1472, 16384): bytes as they are, rates scaled
            exact = unit == "bytes" and amount == int(amount)
            shown = f"{int(amount)} B" if exact else human(amount, unit)
        out.append(f"{key}={shown}")
    return "; ".join(out)
