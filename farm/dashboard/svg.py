"""Charts as inline SVG: readable without JavaScript, and a ``<title>`` on every point shows its
value and run when the mouse is over it. Every text is escaped."""

from __future__ import annotations

import math
from html import escape
from typing import Sequence

import attrs

from farm.measure.units import human

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


def ratio_chart(rows: Sequence[tuple[str, float, str]], title: str) -> str:
    """Horizontal bars of ratios (later / first) around a line at 1.0, one per metric; each row is
    ``(label, ratio, verdict)``, the verdict (better, worse, same, unknown:
    :func:`farm.results.compare.verdict`) its bar's class and colour, named in a legend."""
    finite = [(label, r, v) for label, r, v in rows if math.isfinite(r)]
    if not finite:
        return ""
    bar_h, left, width = 18, 330, WIDTH
    height = TOP + bar_h * len(finite) + 52
    top = max(2.0, max(r for _, r, _ in finite) * 1.05)
    scale = (width - left - RIGHT) / top
    out = [f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
           f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>']
    for i, (label, r, verdict) in enumerate(finite):
        yy = TOP + i * bar_h
        out.append(f'<text x="{left - 6}" y="{yy + 13}" text-anchor="end">{escape(label[:48])}</text>'
                   f'<rect x="{left}" y="{yy + 2}" width="{r * scale:.1f}" height="{bar_h - 4}" '
                   f'class="bar {escape(verdict)}"><title>{escape(f"{label}: {r:.4g} ({verdict})")}</title></rect>')
    one = left + scale
    bottom = TOP + bar_h * len(finite)
    out.append(f'<line x1="{one:.1f}" x2="{one:.1f}" y1="{TOP}" y2="{bottom + 4}" class="one"/>'
               f'<text x="{one:.1f}" y="{bottom + 16}" text-anchor="middle">1.0</text>')
    x = left
    for verdict in ("better", "worse", "same", "unknown"):
        if any(v == verdict for _, _, v in finite):
            text = {"same": "within 1 % of 1.0", "unknown": "no better direction"}.get(verdict, verdict)
            out.append(f'<rect x="{x}" y="{bottom + 28}" width="12" height="12" class="bar {verdict}"/>'
                       f'<text x="{x + 16}" y="{bottom + 38}" class="legend">{escape(text)}</text>')
            x += 30 + 7 * len(text)
    out.append("</svg>")
    return "".join(out)


@attrs.frozen
class Curve:
    """One line of an :func:`xy_chart`: a label (the legend's) and its points."""

    label: str
    points: tuple[tuple[float, float], ...]   # (x, y)


#: at most this many curves get a colour of their own (svg .c0 … .c5 in the page's style); more cycle
CURVE_COLOURS = 6


def xy_chart(curves: Sequence[Curve], x_unit: str, y_unit: str, title: str, *, ideal: bool = False) -> str:
    """Curves on numeric axes (from 0), each its own colour with a legend; ``ideal`` draws ``y = x``
    (achieved against requested). A ``<title>`` on every point gives its values."""
    drawn = [c for c in curves if any(math.isfinite(x) and math.isfinite(y) for x, y in c.points)]
    if not drawn:
        return ""
    xs = [x for c in drawn for x, _ in c.points if math.isfinite(x)]
    ys = [y for c in drawn for _, y in c.points if math.isfinite(y)]
    x_hi = max(xs) * 1.05 or 1.0
    y_hi = max(ys + (xs if ideal else [])) * 1.1 or 1.0
    height = HEIGHT - BOTTOM + 40 + 18 * len(drawn)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(v: float) -> float:
        return LEFT + plot_w * v / x_hi

    def y(v: float) -> float:
        return TOP + plot_h * (1 - v / y_hi)

    out = [f'<svg class="chart xy" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" '
           f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>',
           f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" class="plot"/>']
    for t in _ticks(0.0, y_hi):
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(t):.1f}" y2="{y(t):.1f}" class="grid"/>'
                   f'<text x="{LEFT - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{escape(human(t, y_unit))}</text>')
    x_ticks = _ticks(0.0, x_hi)
    for i, t in enumerate(x_ticks):
        anchor = "end" if i == len(x_ticks) - 1 else "middle"  # the last one stays inside the picture
        out.append(f'<text x="{x(t):.1f}" y="{TOP + plot_h + 16}" text-anchor="{anchor}">'
                   f'{escape(human(t, x_unit))}</text>')
    if ideal:
        top = min(x_hi, y_hi)
        out.append(f'<line x1="{x(0):.1f}" y1="{y(0):.1f}" x2="{x(top):.1f}" y2="{y(top):.1f}" class="ideal">'
                   f'<title>ideal: achieved = requested</title></line>')
    for i, c in enumerate(drawn):
        colour = f"c{i % CURVE_COLOURS}"
        pts = [(px, py) for px, py in c.points if math.isfinite(px) and math.isfinite(py)]
        out.append(f'<polyline points="{" ".join(f"{x(px):.1f},{y(py):.1f}" for px, py in pts)}" '
                   f'class="curve {colour}"/>')
        for px, py in pts:
            out.append(f'<circle cx="{x(px):.1f}" cy="{y(py):.1f}" r="3.5" class="dot {colour}"><title>'
                       f'{escape(f"{c.label}: {human(py, y_unit)} at {human(px, x_unit)}")}</title></circle>')
        ly = TOP + plot_h + 34 + 18 * i
        out.append(f'<line x1="{LEFT}" x2="{LEFT + 24}" y1="{ly - 4}" y2="{ly - 4}" class="curve {colour}"/>'
                   f'<text x="{LEFT + 30}" y="{ly}" class="legend">{escape(c.label)}</text>')
    out.append("</svg>")
    return "".join(out)
