"""Charts as inline SVG: readable without JavaScript, and a ``<title>`` on every point shows its
value and run when the mouse is over it. Every text is escaped.

A chart is a drawing: hundreds of shapes placed by arithmetic, which read better as the code that
computes them than as a template. So they are written here, each text escaped as it is placed, and
each chart is given to the pages' templates as :class:`~markupsafe.Markup` (:func:`drawing`, the one
place), which they write as it is."""

from __future__ import annotations

import functools
import math
from html import escape
from typing import Callable, Sequence

import attrs
from markupsafe import Markup

from farm.measure.units import human


def drawing(chart: Callable[..., str]) -> Callable[..., Markup]:
    """``chart``'s SVG, marked safe for the templates (every text in it escaped by ``chart``)."""

    @functools.wraps(chart)
    def drawn(*args, **kwargs) -> Markup:
        return Markup(chart(*args, **kwargs))

    return drawn

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


#: tick steps, times a power of ten: values people read off an axis (1, 2, 2.5, 5 ... Mbit/s, µs, %)
_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)


def tick_step(lo: float, hi: float, count: int = 5) -> float:
    """The round step (1, 2, 2.5 or 5 times a power of ten) whose multiples cover ``lo .. hi`` in 3
    to ``count + 1`` intervals with the least room to spare (then the fewest ticks)."""
    magnitude = math.floor(math.log10((hi - lo) / max(1, count - 1)))
    best: tuple[float, int, float] | None = None
    for power in (magnitude - 1, magnitude, magnitude + 1):
        for m in _STEPS:
            step = m * 10.0 ** power
            first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
            if 3 <= last - first <= count + 1 or (best is None and m == _STEPS[-1] and power == magnitude + 1):
                choice = ((last - first) * step, last - first, step)
                best = choice if best is None or choice[:2] < best[:2] else best
    assert best is not None
    return best[2]


def nice_axis(lo: float, hi: float, count: int = 5) -> tuple[float, float, list[float]]:
    """An axis that covers ``lo .. hi`` from one round value to another, and its ticks: every
    multiple of a round step (1, 2, 2.5 or 5 times a power of ten) in it. The values are in the
    unit's base (bit/s, µs, bytes/s), whose prefixes are powers of 1000, so a round value is round in
    the unit people read too: 0, 25, 50, 75, 100 Mbit/s, not 0, 26.2, 52.5 ..."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return 0.0, 1.0, [0.0, 1.0]
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    step = tick_step(lo, hi, count)
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    ticks = [round(k * step, 12) for k in range(first, last + 1)]
    return ticks[0], ticks[-1], ticks


@drawing
def trend_chart(points: Sequence[ChartPoint], unit: str, title: str) -> str:
    """Medians joined by a line, each with its interval as a vertical bar."""
    if not points:
        return ""
    values = [v for p in points for v in (p.lo, p.hi, p.median) if math.isfinite(v)] or [0.0]
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.1 or abs(hi) * 0.1 or 1.0
    lo, hi, ticks = nice_axis(max(0.0, lo - pad) if lo >= 0 else lo - pad, hi + pad)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(i: int) -> float:
        return LEFT + (plot_w * (i + 0.5) / len(points))

    def y(v: float) -> float:
        return TOP + plot_h * (1 - (v - lo) / (hi - lo))

    out = [f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" '
           f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
           f'<title>{escape(title)}</title>',
           f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" class="plot"/>']
    for t in ticks:
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


#: about how wide a character of the charts' 11 px text is, for fitting labels (a little generous)
CHAR_PX = 6.6


def wrap_label(label: str, chars: int) -> list[str]:
    """``label`` in lines of at most ``chars`` characters, broken after a space, ``;``, ``,`` or ``]``
    where it can be (a word longer than a line is cut into pieces, never dropped)."""
    lines: list[str] = []
    rest = label
    while len(rest) > chars:
        cut = max(rest.rfind(sep, 0, chars + 1) for sep in (" ", ";", ",", "[", "]"))
        cut = cut + 1 if cut > chars // 3 else chars
        lines.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    return lines + [rest] if rest or not lines else lines


@drawing
def ratio_chart(rows: Sequence[tuple], title: str) -> str:
    """Horizontal bars of ratios (later / first) around a line at 1.0, one per metric; each row is
    ``(label, ratio, verdict)`` or ``(label, ratio, verdict, interval)``, the verdict (better, worse,
    same, unknown, inconclusive: :func:`farm.results.compare.verdict`) its bar's class and colour,
    named in a legend, the interval (low, high) drawn as a line with caps. Labels are shown whole
    (wrapped over lines when long), each bar ends in its ratio."""
    finite = [(row[0], row[1], row[2]) for row in rows if math.isfinite(row[1])]
    intervals = [row[3] if len(row) > 3 else None for row in rows if math.isfinite(row[1])]
    if not finite:
        return ""
    width, line_h, bar_h = WIDTH + 140, 13, 18
    longest = max(len(label) for label, _, _ in finite)
    left = int(min(max(120, longest * CHAR_PX + 12), width * 0.5))
    chars = max(12, int((left - 12) / CHAR_PX))
    wrapped = [wrap_label(label, chars) for label, _, _ in finite]
    heights = [max(bar_h, line_h * len(lines) + 5) for lines in wrapped]
    bottom = TOP + sum(heights)
    height = bottom + 52
    value_w = 48  # room for the ratio written after the longest bar
    top = max(2.0, max(max(r, (ci or (0, 0))[1]) for (_, r, _), ci in zip(finite, intervals)) * 1.05)
    scale = (width - left - RIGHT - value_w) / top
    out = [f'<svg class="chart ratio" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
           f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>']
    yy = TOP
    for (label, r, verdict), lines, h, ci in zip(finite, wrapped, heights, intervals):
        first = yy + (h - line_h * len(lines)) / 2 + 10
        text = "".join(f'<tspan x="{left - 6}" y="{first + i * line_h:.1f}">{escape(line)}</tspan>'
                       for i, line in enumerate(lines))
        bar_y = yy + (h - (bar_h - 4)) / 2
        out.append(f'<text text-anchor="end" class="label">{text}</text>'
                   f'<rect x="{left}" y="{bar_y:.1f}" width="{r * scale:.1f}" height="{bar_h - 4}" '
                   f'class="bar {escape(verdict)}"><title>{escape(f"{label}: {r:.4g} ({verdict})")}</title></rect>'
                   f'<text x="{left + max(r, (ci or (0, 0))[1]) * scale + 4:.1f}" y="{bar_y + 11:.1f}" '
                   f'class="value">{r:.3g}' + (f' [{ci[0]:.3g}–{ci[1]:.3g}]' if ci else "") + '</text>')
        if ci is not None:
            mid, x0, x1 = bar_y + (bar_h - 4) / 2, left + ci[0] * scale, left + ci[1] * scale
            out.append(f'<g class="ci"><title>{escape(f"{label}: 95 % interval {ci[0]:.4g} – {ci[1]:.4g}")}</title>'
                       f'<line x1="{x0:.1f}" x2="{x1:.1f}" y1="{mid:.1f}" y2="{mid:.1f}" class="ci"/>'
                       f'<line x1="{x0:.1f}" x2="{x0:.1f}" y1="{mid - 4:.1f}" y2="{mid + 4:.1f}" class="ci"/>'
                       f'<line x1="{x1:.1f}" x2="{x1:.1f}" y1="{mid - 4:.1f}" y2="{mid + 4:.1f}" class="ci"/></g>')
        yy += h
    one = left + scale
    out.append(f'<line x1="{one:.1f}" x2="{one:.1f}" y1="{TOP}" y2="{bottom + 4}" class="one"/>'
               f'<text x="{one:.1f}" y="{bottom + 16}" text-anchor="middle">1.0</text>')
    x = left
    for verdict in ("better", "worse", "same", "unknown", "inconclusive"):
        if any(v == verdict for _, _, v in finite):
            text = {"same": "the same", "unknown": "no better direction"}.get(verdict, verdict)
            out.append(f'<rect x="{x}" y="{bottom + 28}" width="12" height="12" class="bar {verdict}"/>'
                       f'<text x="{x + 16}" y="{bottom + 38}" class="legend">{escape(text)}</text>')
            x += 30 + 7 * len(text)
    out.append("</svg>")
    return "".join(out)


@drawing
def sparkline(values: Sequence[float], title: str, *, flag: str = "", width: int = 120, height: int = 26) -> str:
    """A series' newest medians as a small line (oldest left), its last point a dot (red when
    ``flag`` is ``regression``); the ``<title>`` says what it shows. Scaled to its own range."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return ""
    lo, hi = min(finite), max(finite)
    span = (hi - lo) or (abs(hi) or 1.0)
    pad = 3

    def x(i: int) -> float:
        return pad + (width - 2 * pad) * (i / (len(values) - 1) if len(values) > 1 else 0.5)

    def y(v: float) -> float:
        return height - pad - (height - 2 * pad) * ((v - lo) / span if hi > lo else 0.5)

    pts = [(x(i), y(v)) for i, v in enumerate(values) if math.isfinite(v)]
    last_x, last_y = pts[-1]
    line = " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
    return (f'<svg class="spark" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
            f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
            f'<polyline points="{line}" class="spark-line"/>'
            f'<circle cx="{last_x:.1f}" cy="{last_y:.1f}" r="2.5" class="spark-last {escape(flag)}"/></svg>')


@attrs.frozen
class Curve:
    """One line of an :func:`xy_chart`: a label (the legend's) and its points."""

    label: str
    points: tuple[tuple[float, float], ...]   # (x, y)


#: at most this many curves get a colour of their own (svg .c0 … .c5 in the page's style); more cycle
CURVE_COLOURS = 6


@drawing
def xy_chart(curves: Sequence[Curve], x_unit: str, y_unit: str, title: str, *, ideal: bool = False) -> str:
    """Curves on numeric axes (from 0), each its own colour with a legend; ``ideal`` draws ``y = x``
    (achieved against requested). A ``<title>`` on every point gives its values."""
    drawn = [c for c in curves if any(math.isfinite(x) and math.isfinite(y) for x, y in c.points)]
    if not drawn:
        return ""
    xs = [x for c in drawn for x, _ in c.points if math.isfinite(x)]
    ys = [y for c in drawn for _, y in c.points if math.isfinite(y)]
    _, x_hi, x_ticks = nice_axis(0.0, max(xs) or 1.0)
    _, y_hi, y_ticks = nice_axis(0.0, max(ys + (xs if ideal else [])) or 1.0)
    height = HEIGHT - BOTTOM + 40 + 18 * len(drawn)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(v: float) -> float:
        return LEFT + plot_w * v / x_hi

    def y(v: float) -> float:
        return TOP + plot_h * (1 - v / y_hi)

    out = [f'<svg class="chart xy" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" '
           f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>',
           f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" class="plot"/>']
    for t in y_ticks:
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(t):.1f}" y2="{y(t):.1f}" class="grid"/>'
                   f'<text x="{LEFT - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{escape(human(t, y_unit))}</text>')
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


@attrs.frozen
class StripCell:
    """A run in a :func:`strip`: its hover text, its link, its class (its junit outcome) and the place's
    health it recorded ("" when none)."""

    tooltip: str
    href: str
    cls: str
    health: str = ""


@drawing
def strip(cells: Sequence[StripCell], first: str, last: str) -> str:
    """A place's runs over time as a strip of cells, oldest left, each a link to its run; a black bar over
    a cell where the run recorded the place's health (its text in the hover); ``first`` and ``last`` under
    its ends."""
    cell, gap, h = max(4, min(24, 760 // len(cells) - 1)), 1, 22
    width = max(200, len(cells) * (cell + gap) + 10)
    out = [f'<svg class="strip" viewBox="0 0 {width} {h + 34}" width="{width}" height="{h + 34}" role="img" '
           f'aria-label="runs over time" xmlns="http://www.w3.org/2000/svg"><title>its runs, oldest left</title>']
    for i, c in enumerate(cells):
        x = 5 + i * (cell + gap)
        out.append(f'<a href="{escape(c.href)}"><rect x="{x}" y="8" width="{cell}" height="{h}" '
                   f'class="{escape(c.cls)}"><title>{escape(c.tooltip)}</title></rect></a>')
        if c.health:
            out.append(f'<line x1="{x}" x2="{x + cell}" y1="4" y2="4" class="health">'
                       f'<title>{escape(c.health)}</title></line>')
    out.append(f'<text x="5" y="{h + 24}">{escape(first)}</text>'
               f'<text x="{width - 5}" y="{h + 24}" text-anchor="end">{escape(last)}</text></svg>')
    return "".join(out)
