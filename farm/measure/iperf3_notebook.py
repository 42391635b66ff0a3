"""The lab's iperf3 "notebook": several runs' summaries pasted into one text file, each after iperf3's
``- - - -`` separator line annotated by hand with the load that run was asked for (pure).

Written by hand, the annotation follows the separator's last dash, with or without a space, in the
spellings the lab's files have: ``- - - … - -bandwidth=100M``, ``…bandwith=200M`` (sic),
``… -b 100M``, ``… -100Mb/s``, ``… -100M``. Each is iperf3's ``-b`` rate: a number with an optional
K, M, G or T (powers of 1000, either case, as iperf3 reads ``-b``), optionally followed by a bit-rate
unit (``b/s``, ``bit/s``, ``bits/sec``, ``bps``). :func:`parse_annotation` gives it as the run's
``bitrate`` param in one spelling (``100M``, ``1.5G``), so that the same load written two ways is
one key; a byte rate (``MB/s``) or anything else it cannot read is a :class:`~farm.errors.ParseError`
naming the line. Only the ``[ ID] Interval…`` header and the sender/receiver lines need follow
(:func:`farm.measure.iperf3.parse_text` reads them).

A run with an annotation has no ``run=`` param: its load identifies it, and a load measured again
in the same file is the next ``repeat`` (:func:`repeats`), as a point repeated in an ipbench CSV.
"""

from __future__ import annotations

import re
from typing import Iterable

from farm.errors import ParseError
from farm.measure import Measurement

_PREFIX = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
# iperf3's -b (either spelling of the flag's dash count), the long option and the lab's misspelling
# of it, or nothing; then the rate; "B" (bytes) is not a unit here
_ANNOTATION = re.compile(
    r"^(?:-{0,2}b\s+|-{0,2}b(?=\d)|-{0,2}(?i:bandwidth|bandwith|bitrate)\s*[=:]?\s*|-)?"
    r"(?P<number>\d+(?:\.\d+)?)\s*(?P<prefix>[kKmMgGtT]?)"
    r"(?P<unit>b/s|bit/s|bits/s|bits/sec|bps)?$")


def parse_annotation(text: str, line: int) -> str:
    """The ``bitrate`` of a separator line's annotation (``text``: what follows the dashes)."""
    note = text.strip()
    m = _ANNOTATION.match(note)
    if not m or float(m["number"]) <= 0:
        raise ParseError(f"iperf3 output line {line}: cannot read the requested load {note[:60]!r} after the "
                         "'- - -' separator (expected e.g. bandwidth=100M, -b 100M, 100Mb/s or 100M: a bit rate)")
    bits = float(m["number"]) * _PREFIX[m["prefix"].lower()]
    return bitrate_text(bits)


def bitrate_text(bits: float) -> str:
    """``bits`` bit/s in iperf3's ``-b`` notation with the largest prefix that keeps it short:
    1e8 -> ``100M``, 1.5e9 -> ``1.5G``, 64000 -> ``64K``."""
    for prefix, scale in (("T", 10**12), ("G", 10**9), ("M", 10**6), ("K", 10**3)):
        value = bits / scale
        if value >= 1 and abs(round(value, 3) - value) < 1e-9:
            return f"{round(value, 3):g}{prefix}"
    return f"{bits:g}"


def repeats(measurements: Iterable[Measurement]) -> list[tuple[int, Measurement]]:
    """(repeat, measurement): a run's ``run=`` number, or for an annotated run (no ``run=``) how
    many times its load (and direction) was measured before it in the file."""
    seen: dict[tuple, int] = {}
    out: list[tuple[int, Measurement]] = []
    for m in measurements:
        if "run" in m.params:
            out.append((int(m.params["run"]), m))
            continue
        key = (m.metric, tuple(sorted((k, str(v)) for k, v in m.params.items())))
        seen[key] = seen.get(key, -1) + 1
        out.append((seen[key], m))
    return out
