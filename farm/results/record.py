"""The record: one measured value, the unit of every result farm writes.

Parsers return :class:`Measurement` (what was measured, nothing about the run); the runner stamps
each with a :class:`RunContext` into a :class:`Record`, which is one row of ``results.csv``.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

import attrs

RECORD_FIELDS = (
    "run_id", "timestamp", "target", "arch", "setup", "image", "suite",
    "benchmark", "params", "repeat", "metric", "value", "unit",
)


def format_params(params: Mapping[str, Any]) -> str:
    """Canonical, order-independent text of a parameter set: ``key=value;key=value`` sorted by key."""
    return ";".join(f"{k}={params[k]}" for k in sorted(params))


def parse_params(text: str) -> dict[str, str]:
    """Inverse of :func:`format_params` (values come back as strings)."""
    if not text:
        return {}
    return dict(item.split("=", 1) for item in text.split(";"))


@attrs.frozen
class Measurement:
    """What a parser found: ``benchmark`` measured ``metric`` = ``value`` ``unit`` under ``params``."""

    benchmark: str
    metric: str
    value: float
    unit: str
    params: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class RunContext:
    """Where and how a measurement was taken; shared by every record of one benchmark run."""

    run_id: str
    target: str
    arch: str
    setup: str
    image: str
    suite: str
    repeat: int = 0

    def record(self, m: Measurement, timestamp: str | None = None) -> "Record":
        return Record(
            run_id=self.run_id, timestamp=timestamp or now_iso(), target=self.target, arch=self.arch,
            setup=self.setup, image=self.image, suite=self.suite, benchmark=m.benchmark,
            params=format_params(m.params), repeat=self.repeat, metric=m.metric,
            value=float(m.value), unit=m.unit,
        )


@attrs.frozen
class Record:
    run_id: str
    timestamp: str
    target: str
    arch: str
    setup: str
    image: str
    suite: str
    benchmark: str
    params: str
    repeat: int
    metric: str
    value: float
    unit: str

    def as_row(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_row(cls, row: Mapping[str, str]) -> "Record":
        return cls(**{**{k: row[k] for k in RECORD_FIELDS},
                      "repeat": int(row["repeat"]), "value": float(row["value"])})


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def to_json(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, default=str)


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Replace ``path`` with ``text`` in one step (write a sibling, fsync, rename): a reader, or a
    run that dies half way, sees the old file or the new one, never a truncated one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
