"""Charts as inline SVG, readable without JavaScript: where each shape of a chart goes, computed here
(pure), and drawn by ``templates/charts.html``, whose macros take these objects; a ``<title>`` on
every point shows its value and run when the mouse is over it. Coordinates are pixels of the chart's
``viewBox`` (the templates write them to 0.1 px)."""

from __future__ import annotations

import math
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


def polyline(points: Sequence[tuple[float, float]]) -> str:
    """SVG's ``points`` of a line through ``points``."""
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in points)


@attrs.frozen
class Tick:
    at: float           # where on its axis
    label: str


@attrs.frozen
class Frame:
    """A chart's picture: what it shows (its ``<title>``; ``label``, for a screen reader, when it says
    less) and its size."""

    title: str
    width: int
    height: int
    label: str = ""


@attrs.frozen
class Area:
    """Where a chart with axes plots, in its picture, and the y axis' ticks (a grid line and a value each)."""

    y_ticks: tuple[Tick, ...]
    left: int = LEFT
    top: int = TOP
    width: int = WIDTH - LEFT - RIGHT
    height: int = HEIGHT - TOP - BOTTOM


@attrs.frozen
class PlacedPoint:
    """A trend chart's point: the median at (x, y), its interval from ``lo`` to ``hi`` (pixels)."""

    point: ChartPoint
    x: float
    y: float
    lo: float
    hi: float
    labelled: bool      # its x label is written (at most ~12 are)


@attrs.frozen
class TrendChart:
    frame: Frame
    area: Area
    line: str
    points: tuple[PlacedPoint, ...]


def trend_chart(points: Sequence[ChartPoint], unit: str, title: str) -> TrendChart | None:
    """Medians joined by a line, each with its interval as a vertical bar."""
    if not points:
        return None
    values = [v for p in points for v in (p.lo, p.hi, p.median) if math.isfinite(v)] or [0.0]
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.1 or abs(hi) * 0.1 or 1.0
    lo, hi, ticks = nice_axis(max(0.0, lo - pad) if lo >= 0 else lo - pad, hi + pad)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(i: int) -> float:
        return LEFT + (plot_w * (i + 0.5) / len(points))

    def y(v: float) -> float:
        return TOP + plot_h * (1 - (v - lo) / (hi - lo))

    step = max(1, math.ceil(len(points) / 12))  # at most ~12 x labels
    return TrendChart(Frame(title, WIDTH, HEIGHT), Area(tuple(Tick(y(t), human(t, unit)) for t in ticks)),
                      polyline([(x(i), y(p.median)) for i, p in enumerate(points)]),
                      tuple(PlacedPoint(p, x(i), y(p.median), y(p.lo), y(p.hi), i % step == 0)
                            for i, p in enumerate(points)))


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


#: a ratio's bar is this high, and at least 4 px from the next
BAR_H = 14


@attrs.frozen
class Bar:
    """A ratio's bar, from the chart's ``left`` at ``y`` and ``width`` long: its label's lines (y, text), its
    verdict (its class), its ratio written at ``value_x``, its interval (None: none) drawn from ``ci_x[0]``
    to ``ci_x[1]``."""

    label: str
    lines: tuple[tuple[float, str], ...]
    y: float
    width: float
    ratio: float
    verdict: str
    value_x: float
    ci: tuple[float, float] | None
    ci_x: tuple[float, float] | None

    @property
    def mid(self) -> float:
        """Where its interval's line is drawn."""
        return self.y + BAR_H / 2


@attrs.frozen
class RatioChart:
    frame: Frame
    left: int           # where the bars start (their labels end)
    bars: tuple[Bar, ...]
    one: float          # x of the line at 1.0
    bottom: int         # y under the last bar
    legend: tuple[tuple[int, str, str], ...]   # (x, verdict, text)
    top: int = TOP
    bar_h: int = BAR_H


#: the verdicts a ratio chart's legend names, and how (farm.results.compare.verdict)
VERDICTS = {"better": "better", "worse": "worse", "same": "the same", "unknown": "no better direction",
            "inconclusive": "inconclusive"}


def ratio_chart(rows: Sequence[tuple], title: str) -> RatioChart | None:
    """Horizontal bars of ratios (later / first) around a line at 1.0, one per metric; each row is
    ``(label, ratio, verdict)`` or ``(label, ratio, verdict, interval)``, the verdict (better, worse,
    same, unknown, inconclusive: :func:`farm.results.compare.verdict`) its bar's class and colour,
    named in a legend, the interval (low, high) drawn as a line with caps. Labels are shown whole
    (wrapped over lines when long), each bar ends in its ratio."""
    finite = [(row[0], row[1], row[2]) for row in rows if math.isfinite(row[1])]
    intervals = [row[3] if len(row) > 3 else None for row in rows if math.isfinite(row[1])]
    if not finite:
        return None
    width, line_h, bar_h = WIDTH + 140, 13, BAR_H + 4
    longest = max(len(label) for label, _, _ in finite)
    left = int(min(max(120, longest * CHAR_PX + 12), width * 0.5))
    chars = max(12, int((left - 12) / CHAR_PX))
    wrapped = [wrap_label(label, chars) for label, _, _ in finite]
    heights = [max(bar_h, line_h * len(lines) + 5) for lines in wrapped]
    bottom = TOP + sum(heights)
    value_w = 48  # room for the ratio written after the longest bar
    top = max(2.0, max(max(r, (ci or (0, 0))[1]) for (_, r, _), ci in zip(finite, intervals)) * 1.05)
    scale = (width - left - RIGHT - value_w) / top
    bars = []
    yy = TOP
    for (label, r, verdict), lines, h, ci in zip(finite, wrapped, heights, intervals):
        first = yy + (h - line_h * len(lines)) / 2 + 10
        bars.append(Bar(label, tuple((first + i * line_h, line) for i, line in enumerate(lines)),
                        yy + (h - (bar_h - 4)) / 2, r * scale, r, verdict, left + max(r, (ci or (0, 0))[1]) * scale + 4,
                        ci, (left + ci[0] * scale, left + ci[1] * scale) if ci is not None else None))
        yy += h
    legend, x = [], left
    for verdict, text in VERDICTS.items():
        if any(v == verdict for _, _, v in finite):
            legend.append((x, verdict, text))
            x += 30 + 7 * len(text)
    return RatioChart(Frame(title, width, bottom + 52), left, tuple(bars), left + scale, bottom, tuple(legend))


@attrs.frozen
class Sparkline:
    frame: Frame
    line: str
    last: tuple[float, float]   # its last point, a dot
    flag: str


def sparkline(values: Sequence[float], title: str, *, flag: str = "", width: int = 120,
              height: int = 26) -> Sparkline | None:
    """A series' newest medians as a small line (oldest left), its last point a dot (red when
    ``flag`` is ``regression``); the ``<title>`` says what it shows. Scaled to its own range."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return None
    lo, hi = min(finite), max(finite)
    span = (hi - lo) or (abs(hi) or 1.0)
    pad = 3

    def x(i: int) -> float:
        return pad + (width - 2 * pad) * (i / (len(values) - 1) if len(values) > 1 else 0.5)

    def y(v: float) -> float:
        return height - pad - (height - 2 * pad) * ((v - lo) / span if hi > lo else 0.5)

    pts = [(x(i), y(v)) for i, v in enumerate(values) if math.isfinite(v)]
    return Sparkline(Frame(title, width, height), polyline(pts), pts[-1], flag)


@attrs.frozen
class Curve:
    """One line of an :func:`xy_chart`: a label (the legend's) and its points."""

    label: str
    points: tuple[tuple[float, float], ...]   # (x, y)


#: at most this many curves get a colour of their own (svg .c0 … .c5 in the page's style); more cycle
CURVE_COLOURS = 6


@attrs.frozen
class PlacedCurve:
    label: str
    colour: str                 # its class: c0 … c5
    line: str
    dots: tuple[tuple[float, float, str], ...]   # (x, y, hover text)
    legend_y: int


@attrs.frozen
class XYChart:
    frame: Frame
    area: Area
    x_ticks: tuple[tuple[Tick, str], ...]   # each with its text-anchor
    ideal: tuple[float, float, float, float] | None   # y = x from (x1, y1) to (x2, y2)
    curves: tuple[PlacedCurve, ...]


def xy_chart(curves: Sequence[Curve], x_unit: str, y_unit: str, title: str, *,
             ideal: bool = False) -> XYChart | None:
    """Curves on numeric axes (from 0), each its own colour with a legend; ``ideal`` draws ``y = x``
    (achieved against requested). A ``<title>`` on every point gives its values."""
    drawn = [c for c in curves if any(math.isfinite(x) and math.isfinite(y) for x, y in c.points)]
    if not drawn:
        return None
    xs = [x for c in drawn for x, _ in c.points if math.isfinite(x)]
    ys = [y for c in drawn for _, y in c.points if math.isfinite(y)]
    _, x_hi, x_ticks = nice_axis(0.0, max(xs) or 1.0)
    _, y_hi, y_ticks = nice_axis(0.0, max(ys + (xs if ideal else [])) or 1.0)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(v: float) -> float:
        return LEFT + plot_w * v / x_hi

    def y(v: float) -> float:
        return TOP + plot_h * (1 - v / y_hi)

    top = min(x_hi, y_hi)
    placed = []
    for i, c in enumerate(drawn):
        pts = [(px, py) for px, py in c.points if math.isfinite(px) and math.isfinite(py)]
        placed.append(PlacedCurve(c.label, f"c{i % CURVE_COLOURS}", polyline([(x(px), y(py)) for px, py in pts]),
                                  tuple((x(px), y(py), f"{c.label}: {human(py, y_unit)} at {human(px, x_unit)}")
                                        for px, py in pts), TOP + plot_h + 34 + 18 * i))
    return XYChart(Frame(title, WIDTH, HEIGHT - BOTTOM + 40 + 18 * len(drawn)),
                   Area(tuple(Tick(y(t), human(t, y_unit)) for t in y_ticks)),
                   # the last x tick's text ends at its tick: it stays inside the picture
                   tuple((Tick(x(t), human(t, x_unit)), "end" if i == len(x_ticks) - 1 else "middle")
                         for i, t in enumerate(x_ticks)),
                   (x(0), y(0), x(top), y(top)) if ideal else None, tuple(placed))


@attrs.frozen
class StripCell:
    """A run in a :func:`strip`: its hover text, its link, its class (its junit outcome) and the place's
    health it recorded ("" when none)."""

    tooltip: str
    href: str
    cls: str
    health: str = ""


@attrs.frozen
class Strip:
    frame: Frame
    cell: int           # a cell's width
    cells: tuple[tuple[int, StripCell], ...]   # (x, the run)
    first: str
    last: str
    height: int = 22    # a cell's


def strip(cells: Sequence[StripCell], first: str, last: str) -> Strip | None:
    """A place's runs over time as a strip of cells, oldest left, each a link to its run; a black bar over
    a cell where the run recorded the place's health (its text in the hover); ``first`` and ``last`` under
    its ends."""
    if not cells:
        return None
    cell, gap, height = max(4, min(24, 760 // len(cells) - 1)), 1, 22
    return Strip(Frame("its runs, oldest left", max(200, len(cells) * (cell + gap) + 10), height + 34,
                       "runs over time"), cell, tuple((5 + i * (cell + gap), c) for i, c in enumerate(cells)),
                 first, last, height)
