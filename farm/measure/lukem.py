"""ipbench's CPU target ``cpu_target_lukem``: its protocol's replies and its figures, read (pure).

The measurement (au-ts/ipbench ``ipbench2/src/tests/cpu_target_lukem/cpu_target_lukem.c``): one
thread at the lowest priority reads the cycle counter in a loop (``idle_thread``); each gap between
two reads is added to ``total``, and a gap shorter than ``PROFILE_CONTEXT_COST`` (300 ticks,
``cpu_target_lukem.h``) to ``idle`` too; the thread runs from the target's SETUP to its STOP, and
the target reports ``(1 - idle/total) * 100`` as ``"%.1f\\n"`` (``cpu_target_lukem_marshall``). The
counter is ``cntvct_el0`` on arm64 and the TSC on x86-64.

The controller reaches a target over TCP with ipbench's line protocol (``ipbench2/src/ipbench.py``
``IpbenchTestTarget``, ``ipbenchd.py`` ``IpbenchTarget``): the target greets with
``100 IPBENCH V1.0``; ``HELLO`` -> ``200 OK (Ready to go)``; ``LOAD cpu_target_lukem`` -> ``200``;
``SETUP args::"..."`` -> ``200``; ``START`` (no reply); ``STOP`` -> ``220 VALID DATA (Data to
follow)``, ``Content-length: N`` and N bytes of data (221: the target says its data is invalid).
Status lines are ``CODE TEXT`` or ``CODE TEXT (MESSAGE)``. The client is
:mod:`farm.bench.ipbench_target`; this module reads what comes back.

Three forms of the STOP data are read (:func:`parse_data`):

* ``12.3\\n``: ipbench's own ``cpu_target_lukem`` on Linux: the utilisation only;
* ``,IDLE,TOTAL`` (a NUL may follow): the seL4/sDDF echo server's benchmark component
  (au-ts/sddf ``examples/echo_server/utilization_socket.c``): the counts only, the utilisation is
  ipbench's formula of them;
* ``12.3,IDLE,TOTAL\\n``: farm's ``farm_lukem`` (``images/src/farm_lukem.c``), which also says in
  its 220 line's message what it counted: ``counter=cntvct_el0 hz=62500000 threshold=300 cpu=-1``.

Appended by ipbench's controller to the latency test's line (``with_cpu_target``), the last two
give the lab's ``...,Median_RTT,CPU_Utilisation,Idle_Cycles,Total_Cycles`` (the sDDF form with the
CPU column empty).
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping

import attrs

from farm.errors import ParseError
from farm.measure import Measurement

#: the lab's target port (``ipbench_benchmark.sh``: ``--target-test-port=1236``; sDDF's UTILIZATION_PORT)
PORT = 1236
TEST = "cpu_target_lukem"
THRESHOLD = 300  # cpu_target_lukem.h: PROFILE_CONTEXT_COST, counter ticks
#: the unit of Idle_Cycles/Total_Cycles: ticks of the target's cycle counter (its frequency recorded apart)
UNIT = "ticks"

_STATUS = re.compile(r"^(?P<code>\d{3})(?: (?P<text>[^(]*?))?\s*(?:\((?P<message>[^)]*)\))?\s*$")
_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
_DATA = re.compile(rf"^(?P<cpu>{_NUMBER})?(?:,(?P<idle>\d+),(?P<total>\d+))?$")


@attrs.frozen
class Status:
    """One status line of ipbench's protocol: ``200 OK (Ready to go)``."""

    code: int
    text: str
    message: str = ""


def parse_status(line: str) -> Status:
    """A status line; anything else is a :class:`~farm.errors.ParseError` quoting it."""
    m = _STATUS.match(line.strip())
    if not m:
        raise ParseError(f"not an ipbench status line: {line.strip()[:100]!r}")
    return Status(int(m["code"]), (m["text"] or "").strip(), (m["message"] or "").strip())


@attrs.frozen
class CpuWindow:
    """What a CPU target measured from SETUP to STOP.

    ``utilisation`` in percent; ``idle``/``total`` in counter ticks (None: the target sent only the
    percentage); ``counter``, ``hz`` (its frequency) and ``threshold`` when the target said them."""

    utilisation: float
    idle: int | None = None
    total: int | None = None
    counter: str | None = None
    hz: float | None = None
    threshold: int | None = None

    def measurements(self, benchmark: str, params: Mapping[str, Any] | None = None) -> list[Measurement]:
        """``cpu_utilisation`` (percent), ``idle_cycles`` and ``total_cycles`` (ticks) and the
        counter's ``counter_frequency`` (Hz), those the target gave, under ``params``."""
        point = dict(params or {})
        found = [Measurement(benchmark, "cpu_utilisation", self.utilisation, "percent", point)]
        if self.idle is not None and self.total is not None:
            found += [Measurement(benchmark, "idle_cycles", float(self.idle), UNIT, point),
                      Measurement(benchmark, "total_cycles", float(self.total), UNIT, point)]
        if self.hz:
            found.append(Measurement(benchmark, "counter_frequency", float(self.hz), "Hz", point))
        return found


def utilisation(idle: float, total: float) -> float:
    """``(1 - idle/total) * 100``: cpu_target_lukem's figure (unrounded; it prints ``%.1f``)."""
    if total <= 0 or idle < 0 or idle > total:
        raise ValueError(f"idle {idle:g} and total {total:g} ticks: expected 0 <= idle <= total, total > 0")
    return (1.0 - idle / total) * 100.0


def parse_data(data: bytes, message: str = "") -> CpuWindow:
    """The STOP reply's data (one of the three forms of the module docstring) and its 220 line's
    ``message``. With counts, the utilisation is computed from them (a printed percentage is
    ``%.1f``: the counts are the exact figure; the two must agree to that rounding). Raises
    :class:`~farm.errors.ParseError` quoting what it cannot read."""
    text = data.rstrip(b"\0").decode("ascii", errors="replace").strip()
    m = _DATA.match(text)
    if not text or not m or (m["cpu"] is None and m["idle"] is None):
        raise ParseError(f"CPU target data {text[:80]!r}: expected PERCENT, ,IDLE,TOTAL or PERCENT,IDLE,TOTAL")
    facts = _message_facts(message)
    hz = facts.get("hz")
    threshold = facts.get("threshold")
    if m["idle"] is None:
        return CpuWindow(_percent(text, m["cpu"]), counter=facts.get("counter"),
                         hz=float(hz) if hz else None, threshold=int(threshold) if threshold else None)
    idle, total = int(m["idle"]), int(m["total"])
    try:
        cpu = utilisation(idle, total)
    except ValueError as e:
        raise ParseError(f"CPU target data {text[:80]!r}: {e}") from None
    if m["cpu"] is not None and abs(_percent(text, m["cpu"]) - cpu) > 0.05 + 1e-9:
        raise ParseError(f"CPU target data {text[:80]!r}: {m['cpu']} % but the counts give {cpu:.3f} %")
    return CpuWindow(cpu, idle, total, counter=facts.get("counter"), hz=float(hz) if hz else None,
                     threshold=int(threshold) if threshold else None)


def _percent(text: str, value: str) -> float:
    cpu = float(value)
    if not math.isfinite(cpu) or not 0 <= cpu <= 100:
        raise ParseError(f"CPU target data {text[:80]!r}: {value} is not a percentage")
    return cpu


_FACT = re.compile(r"(?P<key>counter|hz|threshold|cpu)=(?P<value>[A-Za-z0-9_.-]+)")


def _message_facts(message: str) -> dict[str, str]:
    """``counter=tsc hz=2596167734 threshold=300 cpu=-1`` of farm_lukem's 220 line (other targets
    say ``Data to follow`` only); a malformed number is a ParseError."""
    facts = {m["key"]: m["value"] for m in _FACT.finditer(message)}
    for key in ("hz", "threshold"):
        if key in facts and not facts[key].isdigit():
            raise ParseError(f"CPU target's 220 line: {key}={facts[key]!r} is not a whole number")
    return facts
