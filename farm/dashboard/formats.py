"""How the pages write numbers, sizes, durations and times (the templates' filters: :mod:`.render`)."""

from __future__ import annotations

import math
from datetime import datetime, timezone

from farm.measure.units import human, human_params

__all__ = ["duration", "epoch", "human", "human_params", "number", "px", "size"]


def number(value: float | None, unit: str = "") -> str:
    """``value`` in ``unit`` as people read it (:func:`human`), 4 significant digits without a unit; "" when
    there is no value."""
    if value is None or not math.isfinite(value):
        return ""
    return human(value, unit) if unit else f"{value:.4g}"


def duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return ""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MiB"


def px(value: float) -> str:
    """A chart's coordinate, to a tenth of a pixel."""
    return f"{value:.1f}"


def epoch(seconds: float | None) -> str:
    """Epoch seconds as a UTC time, "" when none."""
    if not seconds:
        return ""
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
