"""Charts as inline SVG: readable without JavaScript, and a ``<title>`` on every point shows its
value and run when the mouse is over it. Every text is escaped."""

from __future__ import annotations

import math
from html import escape
from typing import Sequence

import attrs

from farm.results.units import human

WIDTH, HEIGHT = 760, 320
LEFT, RIGHT, TOP, BOTTOM = 130, 20, 16, 90


@attrs.frozen
class ChartPoint:
    label: str          # x tick text
    median: float
    lo: float
    hi: float
    tooltip: str
    href: str | None = None
    flag: str = ""      # "regression" | "baseline" | ""


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    return [lo + (hi - lo) * i / (count - 1) for i in range(count)]


def trend_chart(points: Sequence[ChartPoint], unit: str, title: str) -> str:
    """Medians joined by a line, each with its interval as a vertical bar."""
    if not points:
        return ""
    values = [v for p in points for v in (p.lo, p.hi, p.median) if math.isfinite(v)]
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.1 or abs(hi) * 0.1 or 1.0
    lo, hi = max(0.0, lo - pad) if lo >= 0 else lo - pad, hi + pad
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(i: int) -> float:
        return LEFT + (plot_w * (i + 0.5) / len(points))

    def y(v: float) -> float:
        return TOP + plot_h * (1 - (v - lo) / (hi - lo))

    out = [f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" '
           f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
           f'<title>{escape(title)}</title>',
           f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" class="plot"/>']
    for t in _ticks(lo, hi):
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(t):.1f}" y2="{y(t):.1f}" class="grid"/>'
                   f'<text x="{LEFT - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{escape(human(t, unit))}</text>')
    line = " ".join(f"{x(i):.1f},{y(p.median):.1f}" for i, p in enumerate(points))
    out.append(f'<polyline points="{line}" class="series"/>')
    step = max(1, math.ceil(len(points) / 12))  # at most ~12 x labels
    for i, p in enumerate(points):
        cls = f"point {p.flag}".strip()
        dot = (f'<line x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{y(p.lo):.1f}" y2="{y(p.hi):.1f}" class="interval"/>'
               f'<circle cx="{x(i):.1f}" cy="{y(p.median):.1f}" r="{6 if p.flag else 4}" class="{cls}">'
               f'<title>{escape(p.tooltip)}</title></circle>')
        out.append(f'<a href="{escape(p.href)}">{dot}</a>' if p.href else dot)
        if i % step == 0:
            out.append(f'<text x="{x(i):.1f}" y="{TOP + plot_h + 14}" text-anchor="end" '
                       f'transform="rotate(-25 {x(i):.1f} {TOP + plot_h + 14})">{escape(p.label[:22])}</text>')
    out.append("</svg>")
    return "".join(out)


def ratio_chart(rows: Sequence[tuple[str, float]], title: str) -> str:
    """Horizontal bars of ratios (later / first) around 1, one per metric."""
    finite = [(label, r) for label, r in rows if math.isfinite(r)]
    if not finite:
        return ""
    bar_h, left, width = 18, 330, WIDTH
    height = TOP + bar_h * len(finite) + 30
    top = max(2.0, max(r for _, r in finite) * 1.05)
    scale = (width - left - RIGHT) / top
    out = [f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
           f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>']
    for i, (label, r) in enumerate(finite):
        yy = TOP + i * bar_h
        cls = "bar up" if r >= 1 else "bar down"
        out.append(f'<text x="{left - 6}" y="{yy + 13}" text-anchor="end">{escape(label[:48])}</text>'
                   f'<rect x="{left}" y="{yy + 2}" width="{r * scale:.1f}" height="{bar_h - 4}" class="{cls}">'
                   f'<title>{escape(f"{label}: {r:.4g}")}</title></rect>')
    one = left + scale
    out.append(f'<line x1="{one:.1f}" x2="{one:.1f}" y1="{TOP}" y2="{height - 24}" class="one"/>'
               f'<text x="{one:.1f}" y="{height - 8}" text-anchor="middle">1.0</text></svg>')
    return "".join(out)
