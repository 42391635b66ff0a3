"""compare.png: a :class:`~farm.results.compare.Comparison`'s ratios as bars, one panel per metric and unit,
each coloured by its verdict (:func:`farm.results.compare.verdict`) with its interval."""

from __future__ import annotations

import math
from pathlib import Path

import attrs

from farm.results.compare import Comparison, PathLike, Row, verdict
from farm.results.identity import MetricKey
from farm.results.ipbench import BENCHMARK as SWEEP_BENCHMARK
from farm.results.ratio import INCONCLUSIVE, RatioEstimate
from farm.results.record import open_atomic
from farm.secrets import mask


@attrs.frozen
class Bar:
    """One bar of compare.png: a row's ratio of one later column to the first, judged."""

    row: Row
    series: int          # which later column (0: the second column)
    ratio: float
    verdict: str         # better | worse | same | unknown (no known better direction) | inconclusive
    estimate: RatioEstimate | None = None

    @property
    def interval(self) -> tuple[float, float] | None:
        return self.estimate.interval if self.estimate is not None else None


def ratio_bars(comparison: Comparison) -> dict[tuple[str, str], list[Bar]]:
    """The bars of compare.png, per panel (metric, unit): every row with a ratio, except the network
    sweep's rows when the sweep is drawn as curves (its requested rate is a setting, its ratio
    always 1)."""
    from farm.results.direction import direction  # here: the registrations load when a picture is drawn

    panels: dict[tuple[str, str], list[Bar]] = {}
    for row in comparison.rows:
        if comparison.sweeps and row.key.benchmark == SWEEP_BENCHMARK:
            continue
        better = direction(row.key.metric, row.key.unit, row.key.benchmark)  # the registration says, then the unit
        for s, (r, e) in enumerate(zip(row.ratios, row.estimates or (None,) * len(row.ratios))):
            if r is not None and math.isfinite(r):
                panels.setdefault((row.key.metric, row.key.unit), []).append(
                    Bar(row, s, r, verdict(r, better, e), e))
    return panels


#: bar colours by verdict: the lab's green/red, grey for no change or no known direction, pale and
#: outlined for an inconclusive ratio (its interval bar shows why)
VERDICT_COLOURS = {"better": "#2e9e44", "worse": "#d0342c", "same": "#9a9a9a", "unknown": "#5b7fb5",
                   INCONCLUSIVE: "#e4e4e4"}
_HATCHES = ("", "//", "..", "xx", "\\\\", "++")


def plot_ratios(comparison: Comparison, path: PathLike) -> None:
    """compare.png: horizontal bars of each row's ratio(s) to the first column, one panel per
    metric and unit, a vertical line at 1.0, each bar with its 95 % interval drawn as an error bar
    and written beside it with n; a bar is green when the later column is better, red when worse
    (by the metric's direction and the ratio's verdict, :mod:`farm.results.ratio`), grey when the
    same within the rule's band, blue when the metric has no better direction, and pale with a dashed
    outline, labelled "inconclusive", when the ratio is inconclusive. With three or more columns each
    later one has its own hatching. Rows without a
    ratio are left out (the Markdown lists them), and so are a sweep's (compare-sweep.png draws
    them as curves); with none at all the picture says so rather than being blank."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # here: the dashboard imports this module
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    panels = ratio_bars(comparison)
    labels = tuple(mask(label) for label in comparison.labels)  # a picture cannot be masked afterwards
    series = labels[1:]
    keys = {k: list(dict.fromkeys(id(b.row) for b in bars)) for k, bars in panels.items()}
    height = 1.8 + sum(0.9 + 0.28 * len(rows) * max(1, len(series) * 0.6) for rows in keys.values())
    fig = Figure(figsize=(10, min(40.0, max(3.0, height))), layout="constrained")
    FigureCanvasAgg(fig)
    if not panels:
        ax = fig.subplots()
        ax.axis("off")
        why = "only network sweeps: see compare-sweep.png" if comparison.sweeps else "no row has a ratio to plot"
        ax.text(0.5, 0.5, f"{why} (and compare.md)", ha="center", va="center")
    else:
        axes = fig.subplots(len(panels), 1, squeeze=False,
                            height_ratios=[max(1, len(rows)) for rows in keys.values()])[:, 0]
        width = 0.8 / len(series)
        for ax, ((metric, unit), bars) in zip(axes, panels.items()):
            order = keys[metric, unit]
            rows = {id(b.row): b.row for b in bars}
            for b in bars:
                y = order.index(id(b.row)) - 0.4 + width * (b.series + 0.5)
                pale = b.verdict == INCONCLUSIVE
                ax.barh([y], [b.ratio], height=width * 0.9, color=VERDICT_COLOURS[b.verdict],
                        hatch=_HATCHES[b.series % len(_HATCHES)] if len(series) > 1 else None,
                        edgecolor="#555555" if pale else "white", linestyle="--" if pale else "-")
                end = b.ratio
                if b.interval is not None:
                    lo, hi = b.interval
                    ax.errorbar([b.ratio], [y], xerr=[[max(0.0, b.ratio - lo)], [max(0.0, hi - b.ratio)]],
                                fmt="none", ecolor="black", elinewidth=1, capsize=3)
                    end = max(end, hi)
                text = _sig(b.ratio, 3) + (f" [{_sig(b.interval[0], 3)}–{_sig(b.interval[1], 3)}]"
                                           if b.interval is not None else "")
                if b.estimate is not None:
                    text += f" {b.estimate.n_text}" + (" inconclusive" if pale else "")
                ax.annotate(text, (end, y), xytext=(3, 0), textcoords="offset points",
                            va="center", fontsize="x-small")
            ax.axvline(1.0, color="black", linewidth=1.2)
            ax.set_yticks(range(len(order)), [mask(_row_label(rows[i].key)) for i in order], fontsize="small")
            ax.invert_yaxis()  # first row on top, as in the table
            ax.set_title(mask(f"{metric} ({unit})"), fontsize="medium", loc="left")
            ax.grid(True, axis="x", alpha=0.3)
            ax.set_xlabel(f"ratio to {labels[0]}")
        seen = {b.verdict for bars in panels.values() for b in bars}
        same = (f"same (interval within {_sig(1 - comparison.rule.threshold, 3)}–"
                f"{_sig(1 + comparison.rule.threshold, 3)})" if comparison.rule.threshold else "same")
        handles = [Patch(facecolor=VERDICT_COLOURS[v], edgecolor="#555555" if v == INCONCLUSIVE else None,
                         linestyle="--" if v == INCONCLUSIVE else "-", label=text) for v, text in (
            ("better", "better"), ("worse", "worse"), ("same", same),
            ("unknown", "no better direction"), (INCONCLUSIVE, "inconclusive")) if v in seen]
        if len(series) > 1:
            handles += [Patch(facecolor="white", edgecolor="black", hatch=_HATCHES[s % len(_HATCHES)],
                              label=f"{label} / {labels[0]}") for s, label in enumerate(series)]
        fig.legend(handles=handles, loc="outside lower center", ncols=min(4, len(handles)), fontsize="small")
        fig.suptitle(f"{' vs '.join(labels[1:])} relative to {labels[0]} (bars: 95 % interval, n boots a side)")
    path = Path(path)
    with open_atomic(path, "wb") as f:
        fig.savefig(f, format="png", dpi=100)


def _row_label(key: MetricKey) -> str:
    params = f" {key.params}" if key.params else ""
    return f"{key.benchmark}{params}"


def _sig(value: float, digits: int) -> str:
    """``value`` to ``digits`` significant digits, trailing zeros kept (1.00, 0.500, 12.3)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    text = f"{value:#.{digits}g}"
    mantissa, e, exponent = text.partition("e")
    return mantissa.rstrip(".") + (e + exponent if e else "")
